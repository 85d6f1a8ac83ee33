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
"""Each policy filter through the HTTP service, with a SQLite ledger and
(where the policy reads it) a real Placement in a subprocess: one allowed
lease (204) and one denied (403, the filter's message in the JSON body) a
filter, an update and an on-end reaching the ledger, and the current usage
read from Placement.

What each policy decides, case by case, is tested without HTTP by the
filters themselves: tests/unit/filters and tests/unit/ledger."""

import datetime

from tests.builders import day
from tests.builders import hosts
from tests.builders import instances
from tests.builders import lease
from tests.functional.ledger import base


class TestReservationSizeFilter(base.PolicyTestCase):

    placement = False
    filters = ['ReservationSizeFilter']
    options = {('enforcement', 'max_hosts_per_reservation'): 2}

    def test_reservation_at_the_limit_is_allowed(self):
        self.assertAllowed(self.create(lease(day(2), day(3),
                                             hosts('a', 'b'))))

    def test_reservation_over_the_limit_is_denied_with_numbers(self):
        self.assertDenied(self.create(lease(day(2), day(3),
                                            hosts('a', 'b', 'c'))),
                          'Reservation 1 (physical:host) asks for 3 hosts',
                          'at most 2')


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
            'The lease costs 48.00 credits (48.00 hours at 1 credit an '
            'hour)', 'has 30.00 credits left of its allocation of 30.00')

    def test_update_and_on_end_find_the_entry_of_the_create(self):
        """The lease of check-create, as check-update's ``current_lease``
        and as on-end's ``lease``: charged the difference, then refunded
        the unused part and closed."""
        allocation = self.give_credits(100)
        first, longer = [lease(day(2), day(end), hosts('a'), name='l')
                         for end in (3, 4)]
        self.assertAllowed(self.create(first))
        self.assertAllowed(self.update(first, longer))
        self.assertEqual(48.0, self.spent(allocation))
        self.now = datetime.datetime(2026, 6, 2, 6)
        self.assertAllowed(self.end(longer))
        entry, = self.entries()
        self.assertEqual((6.0, 'terminated', self.now),
                         (self.spent(allocation), entry.state,
                          entry.effective_end))


class TestProjectTreeLimitFilter(base.PolicyTestCase):

    placement = False
    filters = ['ProjectTreeLimitFilter']

    def setUp(self):
        self.child = 'child-x'
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

    def test_current_placement_usage_counts(self):
        name, uuid = self.compute_node(vcpus=64)
        self.allocate(uuid, self.project, VCPU=10)
        self.assertDenied(self.create(lease(day(2), day(3),
                                            instances(2, vcpus=4))),
                          '10 in use now', 'the quota is 16')


class TestPlacementCapacityFilter(base.PolicyTestCase):

    filters = ['PlacementCapacityFilter']

    def setUp(self):
        super().setUp()
        self.both = [self.compute_node(vcpus=8, memory_mb=8192)[0]
                     for _ in range(2)]

    def test_instances_that_fit_are_allowed(self):
        self.assertAllowed(self.create(lease(
            day(2), day(3), instances(4, vcpus=4, hosts=self.both))))

    def test_more_instances_than_fit_are_denied(self):
        self.assertDenied(self.create(lease(
            day(2), day(3), instances(5, vcpus=4, hosts=self.both))),
            'Only 4 instances of', 'fit on the 2 eligible hosts',
            'asks for 5')
