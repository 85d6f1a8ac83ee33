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
"""Usage reports over a period, computed by the database, on leases
admitted (and charged) by CreditFilter on a SQLite-file ledger."""

import datetime

from placement_quota.accounts import store as accounts_store
from placement_quota.filters import credit
from placement_quota.ledger import limit_history
from placement_quota.ledger import models
from placement_quota.ledger import report
from tests import builders
from tests.builders import day
from tests.builders import floatingips
from tests.builders import hosts
from tests.builders import instances
from tests.builders import lease
from tests.unit.filters import base


def at(d, hour=0):
    return datetime.datetime(2026, 6, d, hour)


class ReportTestCase(base.LedgerTestCase):

    filter_class = credit.CreditFilter
    options = {('enforcement', 'credit_host_rate'): 1.0}

    def setUp(self):
        super().setUp()
        self.give_credits(10000)

    def by(self, user, body, project=None):
        return self.filter.check_create(
            builders.context(project or self.project, user_id=user), body)

    def report(self, start, end, by='project', **kwargs):
        with self.ledger.reader() as txn:
            return {row.group: row.values for row in report.report(
                txn.connection, self.ledger.dialect, start, end, by,
                **kwargs)}


class TestHours(ReportTestCase):

    def test_a_lease_inside_the_period_counts_whole(self):
        self.by('u', lease(day(2), day(3), hosts('a', 'b')))
        found = self.report(at(1), at(10))
        self.assertEqual(48.0, found[self.project]['host_hours'])

    def test_a_lease_crossing_the_edges_counts_its_part_inside(self):
        self.by('u', lease(day(2, 12), day(5), hosts('a', 'b')))
        found = self.report(at(3), at(4))
        self.assertEqual(48.0, found[self.project]['host_hours'])

    def test_instance_hours_and_their_classes(self):
        self.by('u', lease(day(2), day(3), instances(2, vcpus=4,
                                                     memory_mb=1024)))
        found = self.report(at(1), at(10))[self.project]
        self.assertEqual((48.0, 192.0, 49152.0),
                         (found['instance_hours'], found['vcpu_hours'],
                          found['memory_mb_hours']))

    def test_a_lease_outside_the_period_counts_nothing(self):
        self.by('u', lease(day(2), day(3), hosts('a')))
        self.assertEqual({}, self.report(at(5), at(6)))

    def test_an_early_end_counts_until_the_actual_end(self):
        body = lease(day(2), day(4), hosts('a'))
        self.by('u', body)
        self.now = at(3)
        self.end(body)
        found = self.report(at(1), at(10))[self.project]
        self.assertEqual((24.0, 1), (found['host_hours'],
                                     found['leases_ended_early']))


class TestGroups(ReportTestCase):

    def test_by_user_splits_a_projects_hours(self):
        self.by('alice', lease(day(2), day(3), hosts('a'), name='a'))
        self.by('bob', lease(day(2), day(3), hosts('b', 'c'), name='b'))
        found = self.report(at(1), at(10), by='user')
        self.assertEqual({'alice': 24.0, 'bob': 48.0},
                         {k: v['host_hours'] for k, v in found.items()})

    def test_by_day_cuts_a_lease_at_midnight(self):
        self.by('u', lease(day(2, 12), day(3, 12), hosts('a')))
        found = self.report(at(2), at(4), by='day')
        self.assertEqual({'2026-06-02': 12.0, '2026-06-03': 12.0},
                         {k: v['host_hours'] for k, v in found.items()})

    def test_by_month_labels_calendar_months(self):
        self.assertEqual(
            ['2026-05', '2026-06'],
            [label for label, _, _ in report.periods(
                at(1) - datetime.timedelta(days=3), at(20), 'month')])

    def test_by_week_starts_on_monday(self):
        found = report.periods(at(1), at(15), 'week')
        self.assertEqual([('2026-W23', at(1), at(8)),
                          ('2026-W24', at(8), at(15))], found)

    def test_one_project_only(self):
        self.by('u', lease(day(2), day(3), hosts('a'), name='a'))
        self.give_credits(100, project='other')
        self.by('u', lease(day(2), day(3), hosts('b'), name='b'),
                project='other')
        self.assertEqual(['other'], list(self.report(
            at(1), at(10), projects=['other'])))

    def test_by_resource_type_groups_by_the_reservation_type(self):
        self.by('u', lease(day(2), day(3), hosts('a'), name='a'))
        self.by('u', lease(day(2), day(3), instances(3), name='b'))
        found = self.report(at(1), at(10), by='resource-type')
        self.assertEqual({'physical:host': (24.0, 0.0),
                          'virtual:instance': (0.0, 72.0)},
                         {k: (v['host_hours'], v['instance_hours'])
                          for k, v in found.items()})

    def test_by_resource_type_a_lease_of_two_types_is_a_group_of_both(self):
        self.by('u', lease(day(2), day(3), hosts('a'), floatingips(2)))
        found = self.report(at(1), at(10), by='resource-type')
        self.assertEqual(['physical:host+virtual:floatingip'], list(found))
        self.assertEqual((24.0, 48.0), (
            found['physical:host+virtual:floatingip']['host_hours'],
            found['physical:host+virtual:floatingip']['floatingip_hours']))

    def test_by_resource_type_the_credits_follow_the_lease(self):
        self.by('u', lease(day(2), day(3), hosts('a', 'b'), name='a'))
        self.by('u', lease(day(2), day(3), instances(1), name='b'))
        found = self.report(at(1), at(10), by='resource-type')
        self.assertEqual((48.0, 0.0), (
            found['physical:host']['credits_charged'],
            found['virtual:instance']['credits_charged']))

    def test_a_project_asked_for_without_leases_has_a_row_of_zeros(self):
        found = self.report(at(1), at(10), projects=['idle'])
        self.assertEqual((0, None), (found['idle']['host_hours'],
                                     found['idle']['peak_hosts_at']))

    def test_one_user_only(self):
        self.by('alice', lease(day(2), day(3), hosts('a'), name='a'))
        self.by('bob', lease(day(2), day(3), hosts('b'), name='b'))
        found = self.report(at(1), at(10), by='total', user_id='bob')
        self.assertEqual(24.0, found['total']['host_hours'])


class TestCreditsAndCounts(ReportTestCase):

    def test_credits_charged_refunded_and_net(self):
        body = lease(day(2), day(4), hosts('a'))
        self.by('u', body)
        self.now = at(3)
        self.end(body)
        found = self.report(at(1), at(10))[self.project]
        self.assertEqual((48.0, 24.0, 24.0),
                         (found['credits_charged'],
                          found['credits_refunded'], found['credits_net']))

    def test_pool_charges_are_net_hours_apart_from_the_credits(self):
        self.set(credit_pool_classes=['VCPU'], credit_instance_rate=1.0,
                 credit_class_rates={'VCPU': '1'})
        self.give_credits(100, resource_class='VCPU')
        # 2 instances of 2 VCPUs for 10 hours: 40 VCPU-hours, 20 credits;
        # ended after 5 hours: half of each refunded.
        body = lease(day(2), day(2, 10), instances(2, vcpus=2))
        self.by('u', body)
        self.now = at(2, 5)
        self.end(body)
        found = self.report(at(1), at(10), by='user')['u']
        self.assertEqual((20.0, 10.0, 10.0, 'VCPU: 20.0'),
                         (found['credits_charged'],
                          found['credits_refunded'], found['credits_net'],
                          found['pools_net']))

    def test_denied_leases_are_counted_apart(self):
        self.set(credit_host_rate=1000.0)
        # Through the chain, which keeps denied requests for the record.
        self.assertDenied(self.chain().check_create,
                          builders.context(self.project, user_id='u'),
                          lease(day(2), day(4), hosts('a')))
        found = self.report(builders.NOW, at(10))[self.project]
        self.assertEqual((0, 1, 0.0), (found['leases_created'],
                                       found['leases_denied'],
                                       found['host_hours']))

    def test_denials_are_counted_by_the_filter_that_denied(self):
        self.set(credit_host_rate=1000.0)
        for name in 'ab':
            self.assertDenied(self.chain().check_create,
                              builders.context(self.project, user_id='u'),
                              lease(day(2), day(4), hosts('a'), name=name))
        found = self.report(builders.NOW, at(10), by='total')['total']
        self.assertEqual('CreditFilter: 2', found['denied_by'])

    def test_an_empty_period_is_refused(self):
        self.assertRaises(ValueError, self.report, at(3), at(3))

    def test_a_period_of_too_many_pieces_is_refused(self):
        error = self.assertRaises(
            ValueError, self.report, datetime.datetime(1970, 1, 1),
            datetime.datetime(3000, 1, 1), by='day')
        self.assertIn('at most 1000 rows', str(error))

    def test_an_unknown_group_is_refused(self):
        self.assertRaises(ValueError, self.report, at(1), at(3), by='year')


class TestPeaks(ReportTestCase):

    def test_the_peak_is_the_most_reserved_at_one_moment_and_when(self):
        self.by('u', lease(day(2), day(5), hosts('a'), name='a'))
        self.by('u', lease(day(3), day(4), hosts('b', 'c'), name='b'))
        found = self.report(at(1), at(10))[self.project]
        self.assertEqual((3.0, '2026-06-03T00:00:00'),
                         (found['peak_hosts'], found['peak_hosts_at']))

    def test_touching_leases_do_not_overlap(self):
        self.by('u', lease(day(2), day(3), hosts('a', 'b'), name='a'))
        self.by('u', lease(day(3), day(4), hosts('c', 'd'), name='b'))
        found = self.report(at(1), at(10))[self.project]
        self.assertEqual((2.0, '2026-06-02T00:00:00'),
                         (found['peak_hosts'], found['peak_hosts_at']))

    def test_a_lease_before_the_period_counts_from_its_start(self):
        self.by('u', lease(day(2), day(6), hosts('a'), name='a'))
        found = self.report(at(4), at(10))[self.project]
        self.assertEqual((1.0, '2026-06-04T00:00:00'),
                         (found['peak_hosts'], found['peak_hosts_at']))

    def test_each_day_has_its_own_peak(self):
        self.by('u', lease(day(2, 12), day(3, 12), hosts('a'), name='a'))
        self.by('u', lease(day(3), day(3, 6), hosts('b', 'c'), name='b'))
        found = self.report(at(2), at(4), by='day')
        self.assertEqual({'2026-06-02': 1.0, '2026-06-03': 3.0},
                         {k: v['peak_hosts'] for k, v in found.items()})

    def test_instances_and_vcpus_peak_apart_from_hosts(self):
        self.by('u', lease(day(2), day(3), instances(3, vcpus=2), name='a'))
        found = self.report(at(1), at(10), by='total')['total']
        self.assertEqual((0, 3.0, 6.0), (found['peak_hosts'],
                                         found['peak_instances'],
                                         found['peak_vcpus']))


class TestLimitsAtThePeak(ReportTestCase):
    """A project that is an account: its limit when the peak happened
    (the limits' history), else its limit now, said so."""

    def account(self, limits, when):
        with self.ledger.transaction() as txn:
            if accounts_store.row(txn.connection, self.project) is None:
                accounts_store.insert(txn.connection, self.project, None,
                                      limits, {}, when)
            else:
                accounts_store.update(txn.connection, self.project, None,
                                      limits, {}, when)

    def test_the_limit_in_force_at_the_peak_and_the_share(self):
        self.account({'hosts': 4}, at(1))
        self.account({'hosts': 8}, at(5))
        self.by('u', lease(day(2), day(3), hosts('a', 'b', 'c')))
        found = self.report(at(1), at(10))[self.project]
        self.assertEqual((4, 'peak', 0.75),
                         (found['limit_hosts'], found['limit_hosts_as_of'],
                          found['peak_hosts_share']))

    def test_a_peak_before_the_history_gets_the_limit_of_now(self):
        self.by('u', lease(day(2), day(3), hosts('a', 'b')))
        self.account({'hosts': 8}, at(5))
        found = self.report(at(1), at(10))[self.project]
        self.assertEqual((8, 'now', 0.25),
                         (found['limit_hosts'], found['limit_hosts_as_of'],
                          found['peak_hosts_share']))

    def test_a_project_that_is_no_account_takes_the_sources_limit_of_now(
            self):
        self.by('u', lease(day(2), day(3), hosts('a')))
        found = self.report(at(1), at(10), limits_now=lambda ids: {
            p: {'hosts': 4} for p in ids})[self.project]
        self.assertEqual((4, 'now', 0.25),
                         (found['limit_hosts'], found['limit_hosts_as_of'],
                          found['peak_hosts_share']))

    def test_the_limits_source_is_read_once_for_the_reports_projects(self):
        self.by('u', lease(day(2), day(3), hosts('a')))
        calls = []
        self.give_credits(100, project='other')
        self.by('u', lease(day(2), day(3), hosts('b')), project='other')
        self.report(at(1), at(10),
                    limits_now=lambda ids: calls.append(ids) or {})
        self.assertEqual([sorted([self.project, 'other'])], calls)

    def test_the_accounts_history_wins_over_the_limits_source(self):
        self.account({'hosts': 4}, at(1))
        self.by('u', lease(day(2), day(3), hosts('a', 'b')))
        found = self.report(at(1), at(10), limits_now=lambda ids: {
            p: {'hosts': 100} for p in ids})[self.project]
        self.assertEqual((4, 'peak'), (found['limit_hosts'],
                                       found['limit_hosts_as_of']))

    def test_a_project_that_is_no_account_without_a_source_has_no_limit(
            self):
        self.by('u', lease(day(2), day(3), hosts('a')))
        found = self.report(at(1), at(10))[self.project]
        self.assertEqual((None, None), (found['limit_hosts'],
                                        found['peak_hosts_share']))

    def test_only_changed_limits_enter_the_history(self):
        self.account({'hosts': 4, 'instances': 10}, at(1))
        self.account({'hosts': 4, 'instances': 20}, at(5))
        with self.ledger.reader() as txn:
            self.assertEqual(
                [(True, 4), (True, 20)],
                [limit_history.at(txn.connection, self.project, 'hosts',
                                  at(6)),
                 limit_history.at(txn.connection, self.project,
                                  'instances', at(6))])
            rows = txn.connection.execute(
                models.limit_history.select()).fetchall()
        self.assertEqual(3, len(rows))
