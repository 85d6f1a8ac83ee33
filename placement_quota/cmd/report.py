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
"""``placement-quota report``: usage over a period (ledger/report.py);
``placement-quota report idle``: the reservations left idle
(warning/idle.py)."""

from cliff import lister

from placement_quota.accounts import store as accounts_store
from placement_quota.cmd import charts
from placement_quota.cmd import common
from placement_quota.cmd import ledger as ledger_cmd
from placement_quota.cmd import main
from placement_quota.cmd import tree as tree_cmd
from placement_quota.conf import warnings as warnings_conf
from placement_quota.ledger import report
from placement_quota.limits import sources
from placement_quota import services
from placement_quota.warning import idle
from placement_quota.warning import model


#: The columns of the table without --long (or -c): what fits a terminal.
TABLE_COLUMNS = ('group', 'host_hours', 'instance_hours', 'vcpu_hours',
                 'credits_net', 'leases_created', 'leases_denied',
                 'peak_hosts', 'peak_instances')


class Report(common.Guarded, lister.Lister):
    """Reserved resource-hours, credits and lease counts over a period.

    For a project, an account with its children, a user or the whole
    cloud, grouped by project, user, reservation type, day, week or month.
    A lease crossing the period's edges counts only its part inside;
    everything is summed by the ledger's database.
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
                                 'user, resource-type (the lease\'s '
                                 'reservation types, joined by "+" when it '
                                 'holds several), day, week or month '
                                 '(UTC), or one total.')
        parser.add_argument('--chart', metavar='FILE',
                            help='Also draw the report (--by day, week or '
                                 'month) into FILE.png or FILE.svg: average '
                                 'reserved hosts, instances and VCPU '
                                 'against the limits of --account or '
                                 '--project (its history, else its limit '
                                 'now), and the credits spent. Needs '
                                 'matplotlib ("placement-quota[charts]").')
        parser.add_argument('--chart-data', metavar='FILE',
                            help='Also write the charted series as CSV.')
        parser.add_argument('--long', action='store_true',
                            help='Every column in the table (%d): credits '
                                 'charged and refunded, the other '
                                 'resource-hours, the filters that denied, '
                                 'the peaks with their moments, the limits '
                                 'and the peak shares. Without it the table '
                                 'has %s; the other formats always have '
                                 'every column, and -c picks any.'
                            % (len(report.COLUMNS), ', '.join(TABLE_COLUMNS)))
        return common.add_backend_arguments(parser, placement=False)

    def take_action(self, parsed_args):
        start = common.parse_date(parsed_args.start, '--start')
        end = common.parse_date(parsed_args.end, '--end')
        if not end > start:
            main.fail('--end (%s) must be after --start (%s)'
                      % (parsed_args.end, parsed_args.start))
        charted = parsed_args.chart or parsed_args.chart_data
        if charted and parsed_args.by not in report.BY_TIME:
            main.fail('--chart and --chart-data need --by day, week or '
                      'month (got --by %s)' % parsed_args.by)
        conf = main.config(self)
        limits_now = _source_limits(conf)
        ledger = ledger_cmd.open_ledger(conf)
        try:
            with ledger.reader() as txn:
                projects = self._projects(txn, parsed_args)
                try:
                    rows = report.report(
                        txn.connection, ledger.dialect, start, end,
                        parsed_args.by, projects, parsed_args.user,
                        limits_now)
                except ValueError as exc:
                    main.fail('--by %s: %s' % (parsed_args.by, exc))
                if charted:
                    points = charts.series(
                        rows, start, end, parsed_args.by,
                        self._limit_of(txn.connection, parsed_args.account
                                       or parsed_args.project, limits_now))
        finally:
            ledger.dispose()
        if charted:
            self._chart(parsed_args, points, start, end)
        rows = [row.as_tuple() for row in rows]
        if parsed_args.formatter == 'table' and not (
                parsed_args.long or parsed_args.columns):
            keep = [report.COLUMNS.index(c) for c in TABLE_COLUMNS]
            return TABLE_COLUMNS, [tuple(r[i] for i in keep) for r in rows]
        return report.COLUMNS, rows

    @staticmethod
    def _limit_of(connection, project_id, limits_now):
        """``limit_of(resource, moment)`` of the project or account (its
        history, else its limit now, else the limits source's now), or
        None for the whole cloud."""
        if project_id is None:
            return None
        account_limits = report.limits_of_account(connection, project_id)
        source_limits = limits_now([project_id])[project_id]

        def limit_of(resource, moment):
            found = report.limit_in_force(connection, project_id, resource,
                                          moment, account_limits,
                                          source_limits)
            if found is None:
                return None
            value, from_history = found
            return value, 'history' if from_history else 'now'
        return limit_of

    @staticmethod
    def _chart(parsed_args, points, start, end):
        whose = (parsed_args.project or parsed_args.account and
                 'account %s' % parsed_args.account or 'the cloud')
        if parsed_args.user:
            whose += ', user %s' % parsed_args.user
        try:
            if parsed_args.chart_data:
                charts.write_data(parsed_args.chart_data, points)
            if parsed_args.chart:
                charts.write_chart(
                    parsed_args.chart, points, 'Reserved by %s, %s to %s'
                    % (whose, start.date(), end.date()))
        except charts.ChartError as exc:
            main.fail(str(exc))
        except OSError as exc:
            main.fail('cannot write the chart: %s' % exc)

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


def _source_limits(conf):
    """``limits_now`` of :func:`placement_quota.ledger.report.report`:
    the limits ``[limits]`` holds now (read when called; exit 2 with why
    when they cannot be read)."""
    def read(project_ids):
        with tree_cmd.reading_limits():
            return sources.limits_now(services.limits_source(conf),
                                      project_ids, report.LIMITS.values())
    return read


class ReportIdle(common.Guarded, lister.Lister):
    """Started leases whose reserved providers carry no allocation.

    Their instances were never launched, or were deleted: the ledger's
    started leases, checked against Placement (the providers with an
    inventory of an instance reservation's class, the compute nodes of a
    host reservation). Placement keeps no history, so idle since is the
    first time this command, placement-quota warn or listen saw the lease
    idle; each run records what it sees in the ledger.
    """

    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--idle-for', metavar='DURATION',
            help='Only the leases idle at least this long: seconds, or a '
                 'number followed by s, m, h, d or w (default: [warnings] '
                 'idle_after; 0 lists every lease idle now).')
        parser.add_argument('--project', metavar='PROJECT',
                            help='Only the leases of this project.')
        return common.add_backend_arguments(parser)

    def take_action(self, parsed_args):
        conf = main.config(self)
        idle_for = None
        if parsed_args.idle_for is not None:
            try:
                idle_for = warnings_conf.seconds(parsed_args.idle_for)
            except ValueError as exc:
                main.fail('--idle-for: %s' % exc)
        if parsed_args.project is not None and \
                not parsed_args.project.strip():
            main.fail('--project must not be empty')
        ledger = ledger_cmd.open_ledger(conf)
        try:
            finder = idle.IdleFinder(conf, ledger,
                                     common.services(self).placement)
            found = finder.find(ledger.clock(), idle_after=idle_for)
        finally:
            ledger.dispose()
        columns = ('Project', 'Lease', 'Name', 'Hosts', 'Idle since',
                   'Credits at stake')
        return columns, [
            (lease.project_id, lease.lease_id, lease.name,
             ', '.join(lease.hosts), model.iso(lease.idle_since),
             lease.credits_at_stake)
            for lease in found
            if parsed_args.project in (None, lease.project_id)]
