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
"""``placement-quota report``: usage over a period (ledger/report.py)."""

from cliff import lister

from placement_quota.accounts import store as accounts_store
from placement_quota.cmd import common
from placement_quota.cmd import ledger as ledger_cmd
from placement_quota.cmd import main
from placement_quota.ledger import report


class Report(common.Guarded, lister.Lister):
    """Reserved resource-hours, credits and lease counts over a period.

    For a project, an account with its children, a user or the whole
    cloud, grouped by project, user, day, week or month. A lease crossing
    the period's edges counts only its part inside; everything is summed
    by the ledger's database.
    """

    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--start', metavar='DATE', required=True,
                            help='First moment of the period: %s.'
                            % common.DATE_FORMS)
        parser.add_argument('--end', metavar='DATE', required=True,
                            help='End of the period, in the same forms (a '
                                 'bare date: as that day begins).')
        whose = parser.add_mutually_exclusive_group()
        whose.add_argument('--project', metavar='PROJECT',
                           help='One project (default: every project).')
        whose.add_argument('--account', metavar='ACCOUNT',
                           help='An account of the admin API and its '
                                'children.')
        parser.add_argument('--user', metavar='USER',
                            help='Only the leases of this user.')
        parser.add_argument('--by', choices=report.BY, default='project',
                            help='Group the rows by project (default), '
                                 'user, day, week or month (UTC), or one '
                                 'total.')
        return common.add_backend_arguments(parser, placement=False)

    def take_action(self, parsed_args):
        start = common.parse_date(parsed_args.start, '--start')
        end = common.parse_date(parsed_args.end, '--end')
        if not end > start:
            main.fail('--end (%s) must be after --start (%s)'
                      % (parsed_args.end, parsed_args.start))
        ledger = ledger_cmd.open_ledger(main.config(self))
        try:
            with ledger.reader() as txn:
                projects = self._projects(txn, parsed_args)
                rows = report.report(
                    txn.connection, ledger.dialect, start, end,
                    parsed_args.by, projects, parsed_args.user)
        finally:
            ledger.dispose()
        return report.COLUMNS, [row.as_tuple() for row in rows]

    @staticmethod
    def _projects(txn, parsed_args):
        if parsed_args.project is not None:
            if not parsed_args.project.strip():
                main.fail('--project must not be empty')
            return [parsed_args.project]
        if parsed_args.account is None:
            return None
        account = parsed_args.account
        if accounts_store.row(txn.connection, account) is None:
            main.fail('no account %r (--account)' % account)
        return [account] + sorted(
            accounts_store.children(txn.connection, account))
