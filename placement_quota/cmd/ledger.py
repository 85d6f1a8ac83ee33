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
"""Ledger commands: ``db sync``, ``credits add|list`` and ``usage show``.

All of them use the database of ``[database] connection``.
"""

import datetime

from cliff import command
from cliff import lister
from cliff import show
from oslo_log import log as logging

from placement_quota.cmd import common
from placement_quota.cmd import main
from placement_quota.filters import credit
from placement_quota.ledger import errors as ledger_errors
from placement_quota.ledger import models
from placement_quota.ledger import shares
from placement_quota.ledger import store
from placement_quota.ledger import window

LOG = logging.getLogger(__name__)


def open_ledger(conf, migrate=None):
    """The ledger of ``conf`` (``[database] connection``, see
    :meth:`~placement_quota.ledger.store.Ledger.from_conf`); exit status 2
    with the reason when it cannot be opened."""
    try:
        return store.Ledger.from_conf(conf, migrate=migrate)
    except ledger_errors.LedgerError as exc:
        main.fail(str(exc))


class DbSync(common.Guarded, command.Command):
    """Create or upgrade the ledger's tables (alembic) to this version.

    It says what it did: created the ledger at the schema revision of
    this version, upgraded it from one revision to another, or found it
    already there.
    """

    def get_parser(self, prog_name):
        return common.add_backend_arguments(
            super().get_parser(prog_name), placement=False)

    def take_action(self, parsed_args):
        ledger = open_ledger(main.config(self), migrate=True)
        before, now = ledger.upgraded_from, ledger.current_revision()
        if before is None:
            said = 'Created the ledger %s at schema revision %s.'
        elif before == now:
            said = 'The ledger %s is already at schema revision %s.'
        else:
            said = ('Upgraded the ledger %%s from schema revision %s to %%s.'
                    % before)
        self.app.stdout.write(said % (ledger.describe(), now) + '\n')
        ledger.dispose()


class QuotaRefresh(common.Guarded, lister.Lister):
    """Drop the cached Nova quota of projects in every service process.

    Their NovaQuotaFilter (with nova_quota_max_age) reads the projects'
    quota and usage again before its next decision: run it after changing
    a quota in Nova.
    """

    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('projects', nargs='+', metavar='project',
                            help='Project ID.')
        return common.add_backend_arguments(parser, placement=False)

    def take_action(self, parsed_args):
        projects = sorted(set(parsed_args.projects))
        for project in projects:
            if not project.strip():
                main.fail('project must not be empty')
        ledger = open_ledger(main.config(self))
        rows = []
        with ledger.transaction(projects) as txn:
            for project in projects:
                txn.bump_generation(project)
                rows.append((project, txn.generation(project)))
        ledger.dispose()
        return ('project', 'generation'), rows


class CreditsShare(common.Guarded, show.ShowOne):
    """Cap what one user may spend of a project's credits.

    The user's leases may not be charged more than AMOUNT credits, net of
    refunds, in the project (CreditFilter); the project's allocations
    still pay and still bound the whole project. The latest share set is
    the one in force.
    """

    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('project', help='Project ID.')
        parser.add_argument('user', help='User ID (the user_id of the '
                                         'requests Blazar sends).')
        parser.add_argument('--amount', required=True, type=float,
                            help='Credits the user may spend (>= 0).')
        return common.add_backend_arguments(parser, placement=False)

    def take_action(self, parsed_args):
        amount = parsed_args.amount
        if not (amount >= 0 and amount < 1e12):
            main.fail('--amount must be between 0 and 1e12 (got %s)'
                      % parsed_args.amount)
        for name in ('project', 'user'):
            if not getattr(parsed_args, name).strip():
                main.fail('%s must not be empty' % name)
        ledger = open_ledger(main.config(self))
        with ledger.transaction([parsed_args.project]) as txn:
            shares.set_share(txn.connection, parsed_args.project,
                             parsed_args.user, store.to_micro(amount),
                             txn.now)
            spent = shares.spent(txn.connection, parsed_args.project,
                                 parsed_args.user)
        ledger.dispose()
        return (('project', 'user', 'share', 'spent'),
                (parsed_args.project, parsed_args.user, round(amount, 6),
                 store.from_micro(spent)))


class CreditsAdd(common.Guarded, show.ShowOne):
    """Give a project an allocation of credits, or a pool of one class.

    The credits pay for leases under CreditFilter; with --resource-class,
    the allocation is a pool of that resource class's hours instead.
    """

    #: The openstack shell needs no Keystone for it (see
    #: placement_quota.osc.plugin: Placement uses its session on demand).
    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('project', help='Project ID.')
        parser.add_argument('--amount', required=True, type=float,
                            help='Credits of the allocation (> 0); with '
                                 '--resource-class, hours of that class.')
        parser.add_argument(
            '--resource-class', metavar='CLASS',
            help='Make the allocation a credit pool of this Placement '
                 'resource class (VCPU, CUSTOM_GPU_A100...): it pays, in '
                 'hours of one unit, for the class when [enforcement] '
                 'credit_pool_classes lists it. Default: the general '
                 'allocation of credits.')
        parser.add_argument(
            '--start', metavar='DATE',
            help='First moment of the allocation: %s. Default: open.'
            % common.DATE_FORMS)
        parser.add_argument(
            '--end', metavar='DATE',
            help='End of the allocation, in the same forms (a bare date '
                 'means its 00:00 UTC, so the allocation ends as that day '
                 'begins); no lease may end after it. Default: open.')
        return common.add_backend_arguments(parser, placement=False)

    def take_action(self, parsed_args):
        if not parsed_args.amount > 0:
            main.fail('--amount must be greater than 0 (got %s)'
                      % parsed_args.amount)
        if not parsed_args.project.strip():
            main.fail('project must not be empty')
        resource_class = parsed_args.resource_class
        if resource_class is not None and not credit.is_resource_class(
                resource_class):
            main.fail('--resource-class %r is not a resource class name: a '
                      'standard class such as VCPU, or CUSTOM_ followed by '
                      'A-Z, 0-9 and _' % resource_class)
        start = common.parse_date(parsed_args.start, '--start')
        end = common.parse_date(parsed_args.end, '--end')
        if start and end and end <= start:
            main.fail('--end (%s) must be after --start (%s)'
                      % (parsed_args.end, parsed_args.start))
        ledger = open_ledger(main.config(self))
        with ledger.transaction([parsed_args.project]) as txn:
            allocation_id = txn.add_allocation(
                parsed_args.project, store.to_micro(parsed_args.amount),
                start, end, resource_class=resource_class)
        ledger.dispose()
        return (('id', 'project', 'amount', 'start', 'end',
                 'resource_class'),
                (allocation_id, parsed_args.project,
                 round(parsed_args.amount, 6), _iso(start), _iso(end),
                 resource_class))


def _iso(value):
    return value.isoformat() if value else None


class CreditsList(common.Guarded, lister.Lister):
    """List a project's credit allocations and pools, and what is left.

    What is left of a pool is in hours of its resource class.
    """

    #: The openstack shell needs no Keystone for it (see
    #: placement_quota.osc.plugin: Placement uses its session on demand).
    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('project', help='Project ID.')
        return common.add_backend_arguments(parser, placement=False)

    def take_action(self, parsed_args):
        ledger = open_ledger(main.config(self))
        rows = []
        with ledger.transaction() as txn:
            for allocation in txn.allocations(parsed_args.project):
                spent = txn.spent(allocation.id)
                rows.append((allocation.id, store.from_micro(
                    allocation.amount), store.from_micro(spent),
                    store.from_micro(allocation.amount - spent),
                    _iso(allocation.start_date), _iso(allocation.end_date),
                    allocation.resource_class))
        ledger.dispose()
        if not rows:
            # As reconcile says "No drift": an empty answer said in words,
            # on stderr (stdout keeps the formatter's empty list).
            self.app.stderr.write(
                'Project %s has no credit allocation; "placement-quota '
                'credits add %s --amount N" gives it one.\n'
                % (parsed_args.project, parsed_args.project))
        return (('ID', 'Amount', 'Spent', 'Remaining', 'Start', 'End',
                 'Resource class'), rows)


#: The shortest window ``usage show`` looks at by default, from now.
DEFAULT_WINDOW = datetime.timedelta(days=1)


def usage_summary(txn, project_id, start, end):
    """The dict ``usage show`` prints: leases by state, the peak reserved
    amounts in ``[start, end)`` and the credit balance now."""
    now = txn.now
    leases = txn.leases(project_id)
    states = {state: 0 for state in models.STATES}
    listed = []
    for row in leases:
        state = store.state_at(row, now)
        states[state] += 1
        listed.append({'id': row.lease_id, 'name': row.name,
                       'state': state, 'start': row.start_date.isoformat(),
                       'end': row.effective_end.isoformat(),
                       'amounts': row.amounts,
                       'charged': store.from_micro(row.charged)})
    intervals = [window.Interval(row.start_date, row.effective_end,
                                 row.amounts or {})
                 for row in leases if row.state not in models.NOT_COUNTED]
    if end is None:
        end = max([i.end for i in intervals] + [start + DEFAULT_WINDOW])
    peaks = window.peaks(intervals, start, end)
    allocation = txn.allocation(project_id, now)
    credits = None
    if allocation is not None:
        spent = txn.spent(allocation.id)
        credits = {'allocation': store.from_micro(allocation.amount),
                   'spent': store.from_micro(spent),
                   'balance': store.from_micro(allocation.amount - spent),
                   'start': _iso(allocation.start_date),
                   'end': _iso(allocation.end_date)}
    return {'project': project_id,
            'window_start': start.isoformat(timespec='seconds'),
            'window_end': end.isoformat(timespec='seconds'),
            'leases_by_state': states,
            'peak_reserved': {r: p.as_dict() for r, p in
                              sorted(peaks.items())},
            'credits': credits, 'leases': listed}


class UsageShow(common.Guarded, show.ShowOne):
    """What a project holds: leases, peak reserved amounts, credits."""

    #: The openstack shell needs no Keystone for it (see
    #: placement_quota.osc.plugin: Placement uses its session on demand).
    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('project', help='Project ID.')
        parser.add_argument(
            '--start', metavar='DATE',
            help='Window start for the peak: %s. Default: now (to the '
                 'second).' % common.DATE_FORMS)
        parser.add_argument(
            '--end', metavar='DATE',
            help='Window end, in the same forms (a bare date means its '
                 '00:00 UTC: the window stops as that day begins). '
                 'Default: the end of the project\'s last lease, and at '
                 'least a day after the start: the peak of what the '
                 'project holds from now on.')
        return common.add_backend_arguments(parser, placement=False)

    def take_action(self, parsed_args):
        ledger = open_ledger(main.config(self))
        start = common.parse_date(parsed_args.start, '--start')
        end = common.parse_date(parsed_args.end, '--end')
        with ledger.transaction() as txn:
            start = start or txn.now.replace(microsecond=0)
            if end is not None and end <= start:
                main.fail('--end must be after the window start (%s)'
                          % start.isoformat())
            summary = usage_summary(txn, parsed_args.project, start, end)
        ledger.dispose()
        if parsed_args.formatter in ('table', 'value', 'shell'):
            summary = self._flat(summary)
        return tuple(zip(*sorted(summary.items()))) or ((), ())

    @staticmethod
    def _flat(summary):
        flat = {'project': summary['project'],
                'window': '%s to %s' % (summary['window_start'],
                                        summary['window_end'])}
        flat['leases'] = ', '.join('%s %d' % item for item in
                                   summary['leases_by_state'].items())
        flat['peak reserved'] = '\n'.join(
            '%s: %d%s' % (r, p['amount'], ' at %s' % p['at']
                          if p['at'] else '')
            for r, p in summary['peak_reserved'].items()) or 'nothing'
        credits = summary['credits']
        flat['credits'] = 'no allocation'
        if credits:
            flat['credits'] = '%.2f left of %.2f' % (credits['balance'],
                                                     credits['allocation'])
        return flat
