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
"""``placement-quota warn``, ``warnings list`` and ``warnings preview``:
the warnings to users (placement_quota/warning/)."""

import argparse
import logging as std_logging
import signal
import threading

from cliff import command
from cliff import lister
from oslo_log import log as logging

from placement_quota.cmd import common
from placement_quota.cmd import ledger as ledger_cmd
from placement_quota.cmd import main
from placement_quota.ledger import models
from placement_quota.warning import model
from placement_quota.warning import record

LOG = logging.getLogger(__name__)


def dispatcher(command_, channels=None):
    """The :class:`~placement_quota.warning.dispatch.Dispatcher` of the
    running command, or exit 2 saying what is wrong in ``[warnings]``."""
    # Imported here: the notification channel imports oslo.messaging,
    # which loads oslo.service's eventlet backend, which warns on stderr:
    # every other command (and ``placement-quota --help``, which imports
    # all of them) would print that warning (as cmd/listen.py says).
    from placement_quota.warning import dispatch

    conf = main.config(command_)
    try:
        return dispatch.Dispatcher.from_conf(conf, common.services(command_),
                                             channels=channels)
    except ValueError as exc:
        main.fail('configuration error: %s' % exc)


class Warn(common.Guarded, command.Command):
    """Scan the ledger for warnings due, record and send them.

    Every [warnings] scan_interval seconds, until stopped (or once, with
    --once): leases ending within [warnings] lease_end_lead_times, credits
    past [warnings] credit_thresholds, allocations ending within
    [warnings] allocation_end_lead_times and, with [warnings] idle_after,
    idle reservations. Each warning is recorded once in the ledger, then
    sent on [warnings] channels; any number of warn and listen processes
    may run at once.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--once', action='store_true',
                            help='One pass, then exit (from cron).')
        return common.add_backend_arguments(parser)

    def take_action(self, parsed_args):
        conf = main.config(self)
        if not conf.debug:
            std_logging.getLogger().setLevel(std_logging.INFO)
        warner = dispatcher(self)
        try:
            if parsed_args.once:
                warner.run_once()
                counts = warner.counts
                self.app.stdout.write(
                    'Warnings: %d recorded, %d sent, %d to retry, %d '
                    'failed, %d obsolete\n' % tuple(
                        counts[k] for k in ('recorded', 'sent', 'retried',
                                            'failed', 'obsolete')))
                return 0
            self.app.stdout.write(
                'placement-quota sending warnings every %ds (channels: '
                '%s)\n' % (conf.warnings.scan_interval,
                           ', '.join(conf.warnings.channels) or
                           'none: recorded only'))
            self.app.stdout.flush()
            run_until_signal(warner.run)
        finally:
            warner.close()
        return 0


class WarningsList(common.Guarded, lister.Lister):
    """List the warnings recorded in the ledger, newest first.

    A warning is pending until every channel has sent it, then sent;
    failed after [warnings] max_attempts; obsolete when what it said was
    no longer true at its turn (the lease extended or ended).
    """

    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--state', choices=models.WARNING_STATES,
                            help='Only warnings in this state.')
        parser.add_argument('--kind', choices=model.KINDS,
                            help='Only warnings of this kind.')
        parser.add_argument('--project', help='Only this project\'s.')
        parser.add_argument('--limit', type=_positive, default=100,
                            help='At most this many (default 100).')
        return common.add_backend_arguments(parser, placement=False)

    def take_action(self, parsed_args):
        ledger = ledger_cmd.open_ledger(main.config(self))
        try:
            found = record.listing(ledger, state=parsed_args.state,
                                   project_id=parsed_args.project,
                                   kind=parsed_args.kind,
                                   limit=parsed_args.limit)
        finally:
            ledger.dispose()
        return (('ID', 'Kind', 'Project', 'User', 'Lease', 'State',
                 'Attempts', 'Recorded', 'Sent', 'Channels', 'Error'),
                [(w.id, w.notice.kind, w.notice.project_id,
                  w.notice.user_id or '', w.notice.lease_id or '', w.state,
                  w.attempts, model.iso(w.created_at),
                  model.iso(w.sent_at) or '',
                  '; '.join('%s: %s' % item
                            for item in sorted(w.channels_done.items())),
                  w.last_error or '')
                 for w in found])


class WarningsPreview(common.Guarded, lister.Lister):
    """Show the warnings a scan would record and send now, sending none.

    Nothing is recorded, sent or ended; the subjects are rendered with
    the templates in use ([warnings] template_dir).
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--body', action='store_true',
                            help='Add the plain-text body of each.')
        return common.add_backend_arguments(parser)

    def take_action(self, parsed_args):
        warner = dispatcher(self, channels=[])
        try:
            found = warner.preview()
        finally:
            warner.close()
        columns = ('Kind', 'Project', 'User', 'Lease', 'Key', 'Subject')
        rows = [(n.kind, n.project_id, n.user_id or '', n.lease_id or '',
                 n.key, r.subject) + ((r.text,) if parsed_args.body else ())
                for n, r in found]
        if parsed_args.body:
            columns += ('Body',)
        if not rows:
            self.app.stderr.write('No warning is due now.\n')
        return columns, rows


def run_until_signal(run):
    """``run(stopping)`` until SIGTERM or SIGINT sets ``stopping`` (the
    previous handlers are put back on return)."""
    stopping = threading.Event()

    def _stop(signum, frame):
        LOG.info('Signal %d received: stopping', signum)
        stopping.set()

    previous = {sig: signal.signal(sig, _stop)
                for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        run(stopping)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            'must be a whole number from 1 (got %r)' % text)
    return value
