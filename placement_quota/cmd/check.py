# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""``placement-quota check``: run a payload through the configured chain.

The payload is the HTTP body Blazar would send (Blazar's "Flexible Reservation
Usage Enforcement" spec), read from a file or ``-`` for stdin. No service needs
to run. By default it is a dry run: the chain decides exactly as the service
does (the ledger filters on the same locked ledger view), then the ledger
admission is rolled back -- no entry, no charge, no denial kept, no lock held
after -- and the filters whose asking changes something elsewhere
(ExternalServiceFilter: its service records what it is asked) are not asked
and are listed under ``not asked``. ``--record`` records as the service does
(and asks every filter: ``check end --record`` sends a real on-end
notification). The decision is printed in cliff's formats; the exit status is 0
when allowed, 1 when denied, 2 when the payload is bad.
"""

import logging as std_logging
import sys

from cliff import lister
from cliff import show

from placement_quota.cmd import common
from placement_quota.cmd import main
from placement_quota.cmd import serve
from placement_quota import errors
from placement_quota.filters import base
from placement_quota.filters import chain as chain_mod
from placement_quota.lease import model as lease_model

#: Exit statuses: allowed, denied, could not answer (those of the HTTP
#: answers the enforcement API gives: placement_quota.errors.exit_status).
ALLOWED, DENIED, BAD_INPUT = 0, 1, main.BAD_INPUT


def _no_traceback(record):
    """A logging filter keeping the record but not its traceback."""
    record.exc_info = None
    record.exc_text = None
    return True


class _Check(common.Guarded, show.ShowOne):
    kind = None

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            'file', metavar='FILE',
            help='JSON request body as Blazar sends it to %s ("-" reads '
                 'stdin).' % self.kind)
        parser.add_argument(
            '--record', action='store_true',
            help='Record the decision in the ledger as the service does '
                 '(%s), and ask every filter, ExternalServiceFilter '
                 'included. Without it, a dry run: nothing is recorded, and '
                 'filters that would change something elsewhere are not '
                 'asked.' % self.records)
        return common.add_backend_arguments(parser)

    def _read(self, path):
        try:
            if path == '-':
                return sys.stdin.buffer.read()
            with open(path, 'rb') as f:
                return f.read()
        except OSError as exc:
            main.fail('cannot read %s: %s' % (path, exc.strerror or exc))

    def _invalid(self, exc):
        """Bad input (exit 2): the payload, or a value a filter refused."""
        self.app.stderr.write('placement-quota: invalid payload: %s\n' % exc)
        self.exit_status = BAD_INPUT
        return ('decision', 'message'), ('invalid', str(exc))

    @staticmethod
    def _row(chain, decision, filter_name, message):
        """The output row: the decision, and what was asked and kept."""
        skipped = chain.not_asked
        asked = [f.name for f in chain.filters if f not in skipped]
        return (decision, filter_name, message, ', '.join(asked),
                ', '.join(f.name for f in skipped),
                'yes' if chain.record else 'no (dry run; --record records)')

    def take_action(self, parsed_args):
        body = self._read(parsed_args.file)
        try:
            request = lease_model.parse_body(self.kind, body)
        except lease_model.PayloadError as exc:
            return self._invalid(exc)
        conf = main.config(self)
        if not conf.debug:
            # The service logs a failing filter's traceback; a command
            # says why in one line (--debug shows it).
            std_logging.getLogger(chain_mod.__name__).addFilter(
                _no_traceback)
        chain = serve.load_chain(conf, common.services(self),
                                 record=parsed_args.record,
                                 strict=main.strict(self))
        columns = ('decision', 'filter', 'message', 'filters run',
                   'not asked', 'recorded')
        try:
            chain.run(request)
        except lease_model.PayloadError as exc:
            # A filter refused a value of the payload (su_factor...).
            return self._invalid(exc)
        except base.EnforcementDenied as denial:
            self.exit_status = errors.exit_status(errors.status_of(denial))
            return columns, self._row(chain, 'denied', denial.filter_name,
                                      str(denial))
        except chain_mod.FilterError as exc:
            # Could not answer: one line on stderr, the row on stdout.
            self.app.stderr.write('placement-quota: %s\n' % exc)
            self.exit_status = errors.exit_status(errors.status_of(exc))
            return columns, self._row(chain, 'error', exc.filter_name,
                                      str(exc))
        self.exit_status = ALLOWED
        exempt = request.context.project_id in chain.exemptions
        message = ('project %s is exempted' % request.context.project_id
                   if exempt else '')
        return columns, self._row(chain, 'allowed', '', message)

    def run(self, parsed_args):
        self.exit_status = ALLOWED
        super().run(parsed_args)
        return self.exit_status


class CheckCreate(_Check):
    """Would the chain allow this new lease? (check-create, dry run)

    Nothing is recorded unless --record: then a pending entry and its
    charge, as the service does.
    """

    kind = 'check-create'
    records = 'a pending entry and its charge'


class CheckUpdate(_Check):
    """Would the chain allow this update? (check-update, dry run)

    Nothing is recorded unless --record: then the lease's new state and
    the change of its charge, as the service does.
    """

    kind = 'check-update'
    records = 'the lease\'s new state and the change of its charge'


class CheckEnd(_Check):
    """Send an on-end notification through the chain (on-end, dry run).

    Nothing is recorded unless --record: then the lease's entry is closed
    now and the unused part of its charge refunded, as the service does.
    """

    kind = 'on-end'
    records = 'the entry closed now and the unused part refunded'


class FilterList(common.Guarded, lister.Lister):
    """List the available enforcement filters and which are enabled."""

    def take_action(self, parsed_args):
        conf = main.config(self)
        try:
            available = chain_mod.available_filter_classes(conf)
        except chain_mod.FilterLoadError as exc:
            main.fail(str(exc))
        enabled = conf.enforcement.enabled_filters
        rows = []
        for name, cls in sorted(available.items()):
            position = enabled.index(name) + 1 if name in enabled else ''
            rows.append((name, _summary(cls), position,
                         '%s.%s' % (cls.__module__, cls.__qualname__)))
        return ('Name', 'Description', 'Enabled position', 'Class'), rows


def _summary(cls):
    """The first line of ``cls``'s docstring (what the filter denies)."""
    doc = (cls.__doc__ or '').strip()
    return doc.splitlines()[0].strip() if doc else ''
