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
"""``placement-quota reconcile`` and ``placement-quota allocations``.

``reconcile`` compares what the ledger (and Blazar, when ``[blazar]`` is
configured) reserved with what Placement holds, and, with ``[blazar]``,
the ledger's entries with Blazar's leases; it prints every drift with its
reason and its fix; ``--fix`` applies the safe fixes. Exit
status: 0 when nothing is left to report, 1 when drift is (still) there,
2 on bad input or configuration.

``allocations`` shows which reservations use which hosts (Blazar's
"Resource Allocation API" spec), from the ledger.
"""

from cliff import lister

from placement_quota.cmd import common
from placement_quota.cmd import ledger as cmd_ledger
from placement_quota.cmd import main
from placement_quota.placement import client as placement_client
from placement_quota.reconcile import model
from placement_quota.reconcile import readers
from placement_quota.reconcile import runner

CLEAN = 0
DRIFT = 1


class Reconcile(common.Guarded, lister.Lister):
    """Find drift between reservations and Placement.

    With --fix, the safe part of it is repaired.
    """

    #: The openstack shell needs no Keystone for it (see
    #: placement_quota.osc.plugin: Placement uses its session on demand).
    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--fix', action='store_true',
            help='Apply the fixes marked safe (never removes a class, an '
                 'inventory or a provider that holds allocations) and say '
                 'what was done. Default: a dry run.')
        parser.add_argument(
            '--grace', type=int, metavar='SECONDS',
            help='Override [reconcile] grace_period.')
        parser.add_argument(
            '--pending-timeout', type=int, metavar='SECONDS',
            help='Override [reconcile] pending_timeout.')
        parser.add_argument(
            '--no-progress', action='store_true',
            help='No progress bar, even on a terminal.')
        return common.add_backend_arguments(parser)

    def take_action(self, parsed_args):
        conf = main.config(self)
        options = conf.reconcile
        grace = (options.grace_period if parsed_args.grace is None
                 else parsed_args.grace)
        timeout = (options.pending_timeout
                   if parsed_args.pending_timeout is None
                   else parsed_args.pending_timeout)
        if grace < 0 or timeout < 0:
            main.fail('--grace and --pending-timeout must be 0 or more')
        ledger = cmd_ledger.open_ledger(conf)
        try:
            client = common.services(self).placement
            blazar = readers.BlazarReader.from_conf(conf)
            report = runner.reconcile(
                client, ledger, blazar=blazar, fix=parsed_args.fix,
                grace=grace, pending_timeout=timeout,
                max_concurrency=options.max_concurrency,
                show_progress=not parsed_args.no_progress)
        except (placement_client.PlacementError,
                readers.BlazarError) as exc:
            main.fail(str(exc))
        finally:
            ledger.dispose()
        self.exit_status = DRIFT if report.left else CLEAN
        fixed = len(report.outcomes) - len(report.left)
        self.log.info('%d finding(s), %d fixed; %d Placement calls to read, '
                      '%d to fix; %.2f s', len(report.outcomes), fixed,
                      report.read_calls, report.fix_calls, report.seconds)
        if report.blazar:
            self.log.info('Blazar listed %d leases in %.2f s.',
                          report.blazar_leases, report.blazar_seconds)
        if not report.outcomes and parsed_args.formatter == 'table':
            self.app.stderr.write('No drift: the ledger and Placement '
                                  'agree.\n')
        columns = ('Kind', 'Subject', 'Safe', 'Reason', 'Fix', 'Result')
        rows = [(o.finding.kind, o.finding.subject, o.finding.safe,
                 o.finding.reason, o.finding.fix, o.result)
                for o in report.outcomes]
        return columns, rows

    def run(self, parsed_args):
        self.exit_status = CLEAN
        super().run(parsed_args)
        return self.exit_status


class Allocations(common.Guarded, lister.Lister):
    """Which reservations use which hosts (from the ledger)."""

    #: The openstack shell needs no Keystone for it (see
    #: placement_quota.osc.plugin: Placement uses its session on demand).
    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--host', metavar='HOST',
                            help='Only this hypervisor host.')
        parser.add_argument('--lease', metavar='LEASE',
                            help='Only this lease (ID or name).')
        parser.add_argument('--all', action='store_true',
                            help='Include ended reservations.')
        return common.add_backend_arguments(parser, placement=False)

    def take_action(self, parsed_args):
        for option in ('host', 'lease'):
            value = getattr(parsed_args, option)
            if value is not None and not value.strip():
                main.fail('--%s must not be empty' % option)
        conf = main.config(self)
        ledger = cmd_ledger.open_ledger(conf)
        try:
            reservations, _ = readers.read_ledger(ledger)
            now = ledger.clock()
        finally:
            ledger.dispose()
        rows = model.allocations(reservations, now, host=parsed_args.host,
                                 lease=parsed_args.lease,
                                 include_ended=parsed_args.all)
        columns = ('Host', 'Reservation', 'Type', 'Lease', 'Lease name',
                   'Project', 'Allocations', 'Start', 'End', 'State')
        return columns, [
            (r['host'], r['reservation'], r['type'], r['lease'],
             r['lease_name'], r['project'], r['allocations'],
             r['start'].isoformat(), r['end'].isoformat(), r['state'])
            for r in rows]
