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
to run, but the filters do what they do in the service: an
ExternalServiceFilter with an endpoint really calls it (``check end`` sends a
real on-end notification). The decision is printed in cliff's formats; the exit
status is 0 when allowed, 1 when denied, 2 when the payload is bad.
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
        chain = serve.load_chain(conf, common.services(self))
        columns = ('decision', 'filter', 'message', 'filters run')
        try:
            chain.run(request)
        except lease_model.PayloadError as exc:
            # A filter refused a value of the payload (su_factor...).
            return self._invalid(exc)
        except base.EnforcementDenied as denial:
            self.exit_status = errors.exit_status(errors.status_of(denial))
            return columns, ('denied', denial.filter_name, str(denial),
                             ', '.join(chain.names))
        except chain_mod.FilterError as exc:
            # Could not answer: one line on stderr, the row on stdout.
            self.app.stderr.write('placement-quota: %s\n' % exc)
            self.exit_status = errors.exit_status(errors.status_of(exc))
            return columns, ('error', exc.filter_name, str(exc),
                             ', '.join(chain.names))
        self.exit_status = ALLOWED
        exempt = request.context.project_id in chain.exemptions
        message = ('project %s is exempted' % request.context.project_id
                   if exempt else '')
        return columns, ('allowed', '', message, ', '.join(chain.names))

    def run(self, parsed_args):
        self.exit_status = ALLOWED
        super().run(parsed_args)
        return self.exit_status


class CheckCreate(_Check):
    """Would the chain allow this new lease? (check-create)"""

    kind = 'check-create'


class CheckUpdate(_Check):
    """Would the chain allow this update? (check-update)"""

    kind = 'check-update'


class CheckEnd(_Check):
    """Send an on-end notification through the chain (on-end)."""

    kind = 'on-end'


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
            rows.append((name, '%s.%s' % (cls.__module__, cls.__qualname__),
                         position))
        return ('Name', 'Class', 'Enabled position'), rows
