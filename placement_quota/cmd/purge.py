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
"""``placement-quota db purge``: delete closed ledger entries
(:mod:`placement_quota.ledger.purge`)."""

import datetime

from cliff import lister

from placement_quota.cmd import common
from placement_quota.cmd import ledger as ledger_cmd
from placement_quota.cmd import main
from placement_quota.ledger import purge

#: How recent the cut-off may be: a day before now. An entry closed a
#: moment ago may still hear from Blazar (a late notification reopening
#: an abandoned entry); a day later it no longer does.
MIN_AGE = datetime.timedelta(days=1)


def parse_states(value):
    """The states of ``--state`` (comma-separated); exit status 2 naming a
    state that is not final."""
    states = [s.strip().lower() for s in value.split(',') if s.strip()]
    if not states:
        main.fail('--state %r names no state; give some of %s'
                  % (value, ', '.join(purge.FINAL)))
    for state in states:
        if state not in purge.FINAL:
            main.fail('--state %s: only entries in a final state can be '
                      'purged (%s)' % (state, ', '.join(purge.FINAL)))
    return tuple(dict.fromkeys(states))


class DbPurge(common.Guarded, lister.Lister):
    """Delete the ledger entries closed before a date.

    Only entries in a final state (terminated, denied, abandoned) whose
    end, close and last change are all before --before are deleted, in
    batches of --batch-size per transaction; pending and active entries
    never are. What is left of every credit allocation stays the same: the
    charges of the deleted entries are kept as one summed charge per
    allocation. Prints how many entries were deleted per state.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--before', metavar='DATE', required=True,
            help='Delete the entries closed before this date: %s. It must '
                 'be at least one day before now.' % common.DATE_FORMS)
        parser.add_argument(
            '--state', default=','.join(purge.FINAL),
            metavar='STATE[,STATE...]',
            help='Which final states to purge (default: %(default)s).')
        parser.add_argument(
            '--dry-run', action='store_true',
            help='Count the entries that would be deleted; delete nothing.')
        parser.add_argument(
            '--batch-size', type=int, default=purge.DEFAULT_BATCH,
            metavar='N',
            help='Entries deleted per transaction (default: %(default)s).')
        return common.add_backend_arguments(parser, placement=False)

    def take_action(self, parsed_args):
        before = common.parse_date(parsed_args.before, '--before')
        states = parse_states(parsed_args.state)
        if parsed_args.batch_size < 1:
            main.fail('--batch-size must be at least 1 (got %s)'
                      % parsed_args.batch_size)
        ledger = ledger_cmd.open_ledger(main.config(self))
        try:
            latest = ledger.clock() - MIN_AGE
            if before > latest:
                main.fail('--before %s is too recent: give a date before %s '
                          '(one day ago), so that no entry Blazar may still '
                          'tell about is purged'
                          % (parsed_args.before,
                             latest.strftime('%Y-%m-%d %H:%M')))
            if parsed_args.dry_run:
                counts = purge.count(ledger, before, states)
                batches = None
            else:
                counts, batches = purge.purge(ledger, before, states,
                                              parsed_args.batch_size)
        finally:
            ledger.dispose()
        total = sum(counts.get(s, 0) for s in states)
        if parsed_args.dry_run:
            summary = ('Dry run: %d ledger entries closed before %s would '
                       'be deleted.' % (total, before.isoformat()))
        else:
            summary = ('Deleted %d ledger entries closed before %s in %d '
                       'transaction(s).' % (total, before.isoformat(),
                                            batches))
        self.app.stderr.write(summary + '\n')
        column = 'Would delete' if parsed_args.dry_run else 'Deleted'
        return ('State', column), [(s, counts.get(s, 0)) for s in states]
