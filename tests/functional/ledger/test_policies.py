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
"""Each policy filter's allow and deny cases, through the HTTP service,
with a SQLite ledger and (where the policy reads it) a real Placement."""

import datetime

from tests.functional.ledger import base
from tests.functional.ledger.base import day
from tests.functional.ledger.base import floatingips
from tests.functional.ledger.base import hosts
from tests.functional.ledger.base import instances
from tests.functional.ledger.base import lease
from tests.functional.ledger.base import network


class TestReservationSizeFilter(base.PolicyTestCase):

    placement = False
    filters = ['ReservationSizeFilter']
    options = {('enforcement', 'max_hosts_per_reservation'): 2,
               ('enforcement', 'max_hosts_per_lease'): 3,
               ('enforcement', 'max_instances_per_reservation'): 5,
               ('enforcement', 'max_floatingips_per_lease'): 1,
               ('enforcement', 'max_networks_per_lease'): 1}

    def test_reservation_at_the_limit_is_allowed(self):
        self.assertAllowed(self.create(lease(day(2), day(3),
                                             hosts('a', 'b'))))

    def test_reservation_over_the_limit_is_denied_with_numbers(self):
        self.assertDenied(self.create(lease(day(2), day(3),
                                            hosts('a', 'b', 'c'))),
                          'Reservation 1 (physical:host) asks for 3 hosts',
                          'at most 2')

    def test_lease_over_the_lease_limit_is_denied(self):
        self.assertDenied(
            self.create(lease(day(2), day(3), hosts('a', 'b'),
                              hosts('c', 'd'))),
            'The lease asks for 4 hosts in all; at most 3')

    def test_instance_amount_over_the_limit_is_denied(self):
        self.assertDenied(self.create(lease(day(2), day(3), instances(6))),
                          'asks for 6 instances', 'at most 5')

    def test_floating_ips_over_the_lease_limit_are_denied(self):
        self.assertDenied(self.create(lease(day(2), day(3), floatingips(1),
                                            floatingips(1))),
                          '2 floating IPs in all; at most 1')

    def test_second_network_is_denied(self):
        self.assertDenied(self.create(lease(day(2), day(3), network(),
                                            network())),
                          '2 networks in all; at most 1')

    def test_update_to_a_larger_size_is_denied(self):
        small = lease(day(2), day(3), instances(1))
        self.assertDenied(self.update(small, lease(day(2), day(3),
                                                   instances(9))),
                          'asks for 9 instances')


class TestLeaseCountFilter(base.PolicyTestCase):

    placement = False
    filters = ['LeaseCountFilter']
    options = {('enforcement', 'max_leases_per_project'): 2}

    def test_leases_up_to_the_limit_are_allowed(self):
        self.assertAllowed(self.create(lease(day(2), day(3), name='a')))
        self.assertAllowed(self.create(lease(day(4), day(5), name='b')))

    def test_one_lease_over_the_limit_is_denied(self):
        self.create(lease(day(2), day(3), name='a'))
        self.create(lease(day(4), day(5), name='b'))
        self.assertDenied(self.create(lease(day(6), day(7), name='c')),
                          'already holds 2 pending or active leases',
                          'at most 2')

    def test_ended_lease_frees_its_place(self):
        first = lease(day(2), day(3), name='a')
        self.create(first)
        self.create(lease(day(4), day(5), name='b'))
        self.assertAllowed(self.end(first))
        self.assertAllowed(self.create(lease(day(6), day(7), name='c')))

    def test_lease_past_its_end_date_no_longer_counts(self):
        self.create(lease(day(2), day(3), name='a'))
        self.create(lease(day(4), day(5), name='b'))
        self.now = datetime.datetime(2026, 6, 3, 12)
        self.assertAllowed(self.create(lease(day(6), day(7), name='c')))

    def test_update_of_a_counted_lease_is_allowed_at_the_limit(self):
        first = lease(day(2), day(3), name='a')
        self.create(first)
        self.create(lease(day(4), day(5), name='b'))
        self.assertAllowed(self.update(first, lease(day(2), day(4),
                                                    name='a')))

    def test_other_projects_do_not_count(self):
        self.create(lease(day(2), day(3), name='a'), project='other')
        self.create(lease(day(2), day(3), name='b'), project='other')
        self.assertAllowed(self.create(lease(day(2), day(3), name='a')))

    def test_denied_lease_is_recorded_as_denied_and_not_counted(self):
        self.create(lease(day(2), day(3), name='a'))
        self.create(lease(day(4), day(5), name='b'))
        self.create(lease(day(6), day(7), name='c'))
        self.assertEqual(['pending', 'pending', 'denied'],
                         [row.state for row in self.entries()])


class TestCreditFilter(base.PolicyTestCase):

    placement = False
    filters = ['CreditFilter']
    options = {('enforcement', 'credit_host_rate'): 1.0,
               ('enforcement', 'credit_class_rates'): {'VCPU': '0.5'}}

    def test_lease_within_the_balance_is_allowed_and_charged(self):
        allocation = self.give_credits(100)
        self.assertAllowed(self.create(lease(day(2), day(3), hosts('a'))))
        self.assertEqual(24.0, self.spent(allocation))

    def test_lease_over_the_balance_is_denied_with_numbers(self):
        self.give_credits(30)
        self.assertDenied(
            self.create(lease(day(2), day(4), hosts('a'))),
            'The lease costs 48.00 credits (48.00 hours at 1 credits an '
            'hour)', 'has 30.00 credits left of its allocation of 30.00')

    def test_balance_is_shared_by_the_leases_of_a_project(self):
        self.give_credits(40)
        self.assertAllowed(self.create(lease(day(2), day(3), hosts('a'),
                                             name='one')))
        self.assertDenied(self.create(lease(day(5), day(6), hosts('b'),
                                            name='two')),
                          'has 16.00 credits left')

    def test_project_without_allocation_is_denied(self):
        self.assertDenied(self.create(lease(day(2), day(3), hosts('a'))),
                          'has no credit allocation in force')

    def test_free_lease_needs_no_allocation(self):
        self.assertAllowed(self.create(lease(day(2), day(3),
                                             floatingips(1))))

    def test_lease_ending_after_the_allocation_expires_is_denied(self):
        self.give_credits(1000, start=datetime.datetime(2026, 5, 1),
                          end=datetime.datetime(2026, 6, 10))
        self.assertDenied(self.create(lease(day(9), day(11), hosts('a'))),
                          'ends on 2026-06-11 00:00, after the credit '
                          'allocation', 'expires on 2026-06-10 00:00')

    def test_host_factor_multiplies_the_rate(self):
        allocation = self.give_credits(100)
        self.create(lease(day(2), day(3), hosts('a', su_factor=2.5)))
        self.assertEqual(60.0, self.spent(allocation))

    def test_instances_cost_their_resource_classes(self):
        allocation = self.give_credits(100)
        self.create(lease(day(2, 0), day(2, 10), instances(2, vcpus=4)))
        self.assertEqual(40.0, self.spent(allocation))

    def test_update_charges_only_the_difference(self):
        allocation = self.give_credits(100)
        first = lease(day(2), day(3), hosts('a'), name='l')
        self.create(first)
        self.assertAllowed(self.update(first, lease(day(2), day(4),
                                                    hosts('a'), name='l')))
        self.assertEqual(48.0, self.spent(allocation))

    def test_shorter_update_refunds_the_difference(self):
        allocation = self.give_credits(100)
        first = lease(day(2), day(4), hosts('a'), name='l')
        self.create(first)
        self.update(first, lease(day(2), day(3), hosts('a'), name='l'))
        self.assertEqual(24.0, self.spent(allocation))

    def test_denied_update_leaves_the_ledger_unchanged(self):
        allocation = self.give_credits(50)
        first = lease(day(2), day(3), hosts('a'), name='l')
        self.create(first)
        before = [tuple(row) for row in self.entries()]
        self.assertDenied(self.update(first, lease(day(2), day(5),
                                                   hosts('a'), name='l')),
                          'The update costs 48.00 more')
        self.assertEqual(before, [tuple(row) for row in self.entries()])
        self.assertEqual(24.0, self.spent(allocation))

    def test_on_end_refunds_exactly_the_unused_part(self):
        allocation = self.give_credits(100)
        first = lease(day(2), day(4), hosts('a'), name='l')
        self.create(first)
        self.now = datetime.datetime(2026, 6, 2, 6)
        self.assertAllowed(self.end(first))
        self.assertEqual(6.0, self.spent(allocation))
        entry, = self.entries()
        self.assertEqual(('terminated', self.now),
                         (entry.state, entry.effective_end))

    def test_repeated_on_end_refunds_nothing_more(self):
        allocation = self.give_credits(100)
        first = lease(day(2), day(4), hosts('a'), name='l')
        self.create(first)
        self.now = datetime.datetime(2026, 6, 2, 6)
        self.end(first)
        self.now = datetime.datetime(2026, 6, 2, 7)
        self.assertAllowed(self.end(first))
        self.assertEqual(6.0, self.spent(allocation))

    def test_lease_ended_before_it_started_is_refunded_in_full(self):
        allocation = self.give_credits(100)
        first = lease(day(2), day(4), hosts('a'), name='l')
        self.create(first)
        self.end(first)
        self.assertEqual(0.0, self.spent(allocation))

    def test_on_end_at_the_end_date_refunds_nothing(self):
        allocation = self.give_credits(100)
        first = lease(day(2), day(3), hosts('a'), name='l')
        self.create(first)
        self.now = datetime.datetime(2026, 6, 3, 0)
        self.end(first)
        self.assertEqual(24.0, self.spent(allocation))

    def test_on_end_finds_a_lease_created_without_id_by_its_id_later(self):
        allocation = self.give_credits(100)
        self.create(lease(day(2), day(4), hosts('a'), name='l'))
        # Blazar's on-end reads the lease from its database: with its ID.
        self.now = datetime.datetime(2026, 6, 3, 0)
        self.end(lease(day(2), day(4), hosts('a'), name='l',
                       lease_id='8a5a9d5e-0000-4000-8000-000000000001'))
        self.assertEqual(24.0, self.spent(allocation))
        entry, = self.entries()
        self.assertEqual('8a5a9d5e-0000-4000-8000-000000000001',
                         entry.lease_id)

    def test_renamed_lease_is_found_by_its_id_on_update(self):
        allocation = self.give_credits(100)
        lease_id = '8a5a9d5e-0000-4000-8000-000000000002'
        first = lease(day(2), day(3), hosts('a'), name='old')
        self.create(first)
        with_id = lease(day(2), day(3), hosts('a'), name='old',
                        lease_id=lease_id)
        self.update(with_id, lease(day(2), day(3), hosts('a'), name='new',
                                   lease_id=lease_id))
        self.update(lease(day(2), day(3), hosts('a'), name='new',
                          lease_id=lease_id),
                    lease(day(2), day(4), hosts('a'), name='new',
                          lease_id=lease_id))
        self.assertEqual(48.0, self.spent(allocation))
        self.assertEqual(1, len(self.live_entries()))


class TestProjectTreeLimitFilter(base.PolicyTestCase):

    placement = False
    filters = ['ProjectTreeLimitFilter']

    def setUp(self):
        self.root = 'root-x'
        self.child = 'child-x'
        self.sibling = 'sibling-x'
        super().setUp()
        path = self.tmp + '/limits.yaml'
        with open(path, 'w') as f:
            f.write('registered_limits: {hosts: 3}\n'
                    'projects:\n'
                    '  root-x: {limits: {hosts: 5}}\n'
                    '  child-x: {parent: root-x, limits: {hosts: 4}}\n'
                    '  sibling-x: {parent: root-x}\n')
        self.conf.set_override('limits_file', path, 'limits')

    def test_child_within_its_limit_is_allowed(self):
        self.assertAllowed(self.create(lease(day(2), day(3),
                                             hosts('a', 'b', 'c', 'd')),
                                       project=self.child))

    def test_child_over_its_own_limit_is_denied(self):
        self.create(lease(day(2), day(4), hosts('a', 'b', 'c')),
                    project=self.child)
        self.assertDenied(
            self.create(lease(day(3), day(5), hosts('d', 'e')),
                        project=self.child),
            'Project child-x (parent root-x) is over a limit for hosts',
            'project child-x has 3 already reserved at the peak, from '
            '2026-06-03 00:00 to 2026-06-04 00:00', 'its limit is 4')

    def test_tree_over_the_root_limit_is_denied(self):
        self.create(lease(day(2), day(4), hosts('a', 'b', 'c')),
                    project=self.child)
        self.assertDenied(
            self.create(lease(day(3), day(5), hosts('d', 'e', 'f')),
                        project=self.sibling),
            'the tree of root-x has 3 already reserved', 'its limit is 5')

    def test_sibling_in_a_later_window_is_allowed(self):
        self.create(lease(day(2), day(4), hosts('a', 'b', 'c')),
                    project=self.child)
        self.assertAllowed(self.create(lease(day(4), day(5),
                                             hosts('d', 'e', 'f')),
                                       project=self.sibling))

    def test_root_limit_counts_its_children(self):
        self.create(lease(day(2), day(4), hosts('a', 'b', 'c', 'd')),
                    project=self.child)
        self.assertDenied(self.create(lease(day(2), day(3), hosts('e', 'f')),
                                      project=self.root),
                          'the tree of root-x has 4 already reserved')

    def test_unknown_project_gets_the_registered_limit(self):
        self.assertDenied(self.create(lease(day(2), day(3),
                                            hosts('a', 'b', 'c', 'd'))),
                          'its limit is 3')

    def test_resource_without_any_limit_is_not_checked(self):
        self.assertAllowed(self.create(lease(day(2), day(3),
                                             floatingips(50)),
                                       project=self.child))


class TestNovaQuotaFilterTimeWindows(base.PolicyTestCase):
    """Unified limits from a limits file, usage from the real Placement."""

    filters = ['NovaQuotaFilter']

    def setUp(self):
        super().setUp()
        path = self.tmp + '/nova-limits.yaml'
        with open(path, 'w') as f:
            f.write('model: flat\n'
                    'registered_limits: {servers: 10, class:VCPU: 20}\n'
                    'projects:\n  %s: {limits: {class:VCPU: 16}}\n'
                    % self.project)
        self.conf.set_override('nova_quota_source', 'file', 'enforcement')
        self.conf.set_override('nova_quota_limits_file', path,
                               'enforcement')

    def test_lease_within_the_quota_is_allowed(self):
        self.assertAllowed(self.create(lease(day(2), day(3),
                                             instances(4, vcpus=4))))

    def test_overlapping_leases_add_up_against_the_quota(self):
        self.create(lease(day(2), day(4), instances(3, vcpus=4), name='a'))
        self.assertDenied(
            self.create(lease(day(3), day(5), instances(2, vcpus=4),
                              name='b')),
            'Nova quota of project %s for class:VCPU' % self.project,
            'asks for 8', '12 already reserved at the peak, from '
            '2026-06-03 00:00 to 2026-06-04 00:00', '0 in use now',
            'the quota is 16')

    def test_adjacent_leases_do_not_add_up(self):
        self.create(lease(day(2), day(4), instances(3, vcpus=4), name='a'))
        self.assertAllowed(self.create(lease(day(4), day(5),
                                             instances(4, vcpus=4),
                                             name='b')))

    def test_nested_lease_counts_against_its_container(self):
        self.create(lease(day(2), day(9), instances(2, vcpus=4), name='a'))
        self.create(lease(day(4), day(5), instances(1, vcpus=4), name='b'))
        self.assertDenied(self.create(lease(day(3), day(6),
                                            instances(2, vcpus=4),
                                            name='c')),
                          '12 already reserved at the peak, from '
                          '2026-06-04 00:00 to 2026-06-05 00:00')

    def test_current_placement_usage_counts(self):
        name, uuid = self.compute_node(vcpus=64)
        self.allocate(uuid, self.project, VCPU=10)
        self.assertDenied(self.create(lease(day(2), day(3),
                                            instances(2, vcpus=4))),
                          '10 in use now', 'the quota is 16')

    def test_hosts_count_as_instances(self):
        self.create(lease(day(2), day(3), hosts(*'abcdefgh'), name='a'))
        self.assertDenied(self.create(lease(day(2), day(3),
                                            instances(3, vcpus=1),
                                            name='b')),
                          'for servers', '8 already reserved')

    def test_updated_lease_is_not_counted_twice(self):
        first = lease(day(2), day(3), instances(3, vcpus=4), name='a')
        self.create(first)
        self.assertAllowed(self.update(first, lease(
            day(2), day(4), instances(4, vcpus=4), name='a')))

    def test_ended_lease_frees_the_rest_of_its_window(self):
        first = lease(day(2), day(9), instances(4, vcpus=4), name='a')
        self.create(first)
        self.now = datetime.datetime(2026, 6, 3, 0)
        self.end(first)
        self.assertAllowed(self.create(lease(day(4), day(5),
                                             instances(4, vcpus=4),
                                             name='b')))


class TestPlacementCapacityFilter(base.PolicyTestCase):

    filters = ['PlacementCapacityFilter']

    def setUp(self):
        super().setUp()
        self.host1, self.uuid1 = self.compute_node(vcpus=8, memory_mb=8192)
        self.host2, self.uuid2 = self.compute_node(vcpus=8, memory_mb=8192)
        self.both = (self.host1, self.host2)

    def test_instances_that_fit_are_allowed(self):
        self.assertAllowed(self.create(lease(
            day(2), day(3), instances(4, vcpus=4, hosts=self.both))))

    def test_more_instances_than_fit_are_denied(self):
        self.assertDenied(self.create(lease(
            day(2), day(3), instances(5, vcpus=4, hosts=self.both))),
            'Only 4 instances of', 'fit on the 2 eligible hosts',
            'asks for 5')

    def test_other_reservations_in_the_window_hold_capacity(self):
        self.create(lease(day(2), day(4), instances(2, vcpus=4,
                                                    hosts=self.both),
                          name='a'), project='other')
        self.assertDenied(self.create(lease(
            day(3), day(5), instances(3, vcpus=4, hosts=self.both),
            name='b')),
            'Not enough free VCPU on the 2 eligible hosts',
            'asks for 12', 'other leases hold 8 already reserved',
            '16 is free in Placement now')

    def test_reservations_outside_the_window_do_not_hold_capacity(self):
        self.create(lease(day(2), day(4), instances(2, vcpus=4,
                                                    hosts=self.both),
                          name='a'), project='other')
        self.assertAllowed(self.create(lease(
            day(4), day(5), instances(4, vcpus=4, hosts=self.both),
            name='b')))

    def test_current_allocations_reduce_the_free_capacity(self):
        self.allocate(self.uuid1, 'someone', VCPU=6)
        self.assertDenied(self.create(lease(
            day(2), day(3), instances(3, vcpus=4, hosts=self.both))),
            'Only 2 instances')

    def test_reservations_on_other_hosts_do_not_count(self):
        other, _ = self.compute_node(vcpus=8)
        self.create(lease(day(2), day(4), instances(2, vcpus=4,
                                                    hosts=[other]),
                          name='a'), project='other')
        self.assertAllowed(self.create(lease(
            day(2), day(4), instances(4, vcpus=4, hosts=self.both),
            name='b')))

    def test_leases_without_instances_are_not_checked(self):
        self.assertAllowed(self.create(lease(day(2), day(3),
                                             hosts('x'))))


class TestChainRecordsOnce(base.PolicyTestCase):
    """Every ledger filter in one chain: one entry per allowed lease."""

    placement = False
    filters = ['LeaseCountFilter', 'CreditFilter']
    options = {('enforcement', 'max_leases_per_project'): 5}

    def test_allowed_lease_is_recorded_once(self):
        self.give_credits(100)
        self.create(lease(day(2), day(3), hosts('a'), name='l'))
        self.assertEqual(1, len(self.entries()))

    def test_denial_by_a_later_filter_records_nothing_live(self):
        self.give_credits(1)
        self.assertDenied(self.create(lease(day(2), day(3), hosts('a'))),
                          'credits')
        self.assertEqual([], self.live_entries())
