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
"""CreditFilter: charged up front, the difference on update, refunded on
end; host rates without Placement (no ``count_host_resources``)."""

import datetime

from placement_quota.filters import credit
from tests.builders import day
from tests.builders import floatingips
from tests.builders import hosts
from tests.builders import instances
from tests.builders import lease
from tests.builders import LEASE_ID
from tests.builders import network
from tests.unit.filters import base


class TestCreditFilter(base.LedgerTestCase):

    filter_class = credit.CreditFilter
    options = {('enforcement', 'credit_host_rate'): 1.0,
               ('enforcement', 'credit_class_rates'): {'VCPU': '0.5'}}

    # --- create ---------------------------------------------------------

    def test_lease_within_the_balance_is_allowed_and_charged(self):
        allocation = self.give_credits(100)
        self.create(lease(day(2), day(3), hosts('a')))
        self.assertEqual(24.0, self.spent(allocation))

    def test_lease_over_the_balance_is_denied_with_numbers(self):
        self.give_credits(30)
        message = self.assertDenied(self.create, lease(day(2), day(4),
                                                       hosts('a')))
        self.assertEqual('The lease costs 48.00 credits (48.00 hours at 1 '
                         'credit an hour); project project-a has 30.00 '
                         'credits left of its allocation of 30.00.',
                         message)

    def test_lease_costing_exactly_the_balance_is_allowed(self):
        allocation = self.give_credits(48)
        self.create(lease(day(2), day(4), hosts('a')))
        self.assertEqual(48.0, self.spent(allocation))

    def test_denied_lease_is_not_charged(self):
        allocation = self.give_credits(30)
        self.assertDenied(self.create, lease(day(2), day(4), hosts('a')))
        self.assertEqual(0.0, self.spent(allocation))

    def test_balance_is_shared_by_the_leases_of_a_project(self):
        self.give_credits(40)
        self.create(lease(day(2), day(3), hosts('a'), name='one'))
        message = self.assertDenied(self.create, lease(
            day(5), day(6), hosts('b'), name='two'))
        self.assertIn('has 16.00 credits left', message)

    def test_a_rate_of_two_is_said_in_credits_an_hour(self):
        self.set(credit_host_rate=2.0)
        message = self.assertDenied(self.create, lease(day(2), day(3),
                                                       hosts('a')))
        self.assertIn('(24.00 hours at 2 credits an hour)', message)

    def test_project_without_allocation_is_denied(self):
        message = self.assertDenied(self.create, lease(day(2), day(3),
                                                       hosts('a')))
        self.assertEqual('The lease costs 24.00 credits (24.00 hours at 1 '
                         'credit an hour), and project project-a has no '
                         'credit allocation in force on 2026-06-02 00:00.',
                         message)

    def test_another_projects_allocation_does_not_pay(self):
        self.give_credits(100, project='other')
        self.assertDenied(self.create, lease(day(2), day(3), hosts('a')))

    def test_free_lease_needs_no_allocation(self):
        self.create(lease(day(2), day(3), floatingips(1), network()))
        entry, = self.entries()
        self.assertEqual((0, None), (entry.charged, entry.allocation_id))

    def test_allocation_starting_after_the_lease_does_not_pay(self):
        self.give_credits(100, start=datetime.datetime(2026, 6, 5))
        self.assertDenied(self.create, lease(day(2), day(3), hosts('a')))

    def test_lease_ending_after_the_allocation_expires_is_denied(self):
        self.give_credits(1000, start=datetime.datetime(2026, 5, 1),
                          end=datetime.datetime(2026, 6, 10))
        message = self.assertDenied(self.create, lease(day(9), day(11),
                                                       hosts('a')))
        self.assertEqual('The lease ends on 2026-06-11 00:00, after the '
                         'credit allocation of project project-a expires '
                         'on 2026-06-10 00:00.', message)

    def test_host_factor_multiplies_the_rate(self):
        allocation = self.give_credits(100)
        self.create(lease(day(2), day(3), hosts('a', su_factor=2.5)))
        self.assertEqual(60.0, self.spent(allocation))

    def test_host_factor_key_is_configurable(self):
        self.set(credit_host_factor_key='weight')
        allocation = self.give_credits(100)
        self.create(lease(day(2), day(3), hosts('a', weight=2,
                                                su_factor=9)))
        self.assertEqual(48.0, self.spent(allocation))

    def test_host_reservation_without_allocations_pays_its_max(self):
        allocation = self.give_credits(100)
        self.create(lease(day(2), day(3), hosts(min=1, max=3)))
        self.assertEqual(72.0, self.spent(allocation))

    def test_instances_cost_their_resource_classes(self):
        allocation = self.give_credits(100)
        self.create(lease(day(2, 0), day(2, 10), instances(2, vcpus=4)))
        self.assertEqual(40.0, self.spent(allocation))

    def test_instance_rate_is_added_to_each_instance(self):
        self.set(credit_instance_rate=1.0)
        allocation = self.give_credits(100)
        self.create(lease(day(2, 0), day(2, 10), instances(2, vcpus=4)))
        self.assertEqual(60.0, self.spent(allocation))

    def test_floating_ips_and_networks_cost_their_rates(self):
        self.set(credit_floatingip_rate=0.5, credit_network_rate=2.0)
        allocation = self.give_credits(100)
        self.create(lease(day(2, 0), day(2, 10), floatingips(3), network()))
        self.assertEqual(35.0, self.spent(allocation))

    def test_negative_class_rate_is_refused_when_the_filter_is_made(self):
        self.set(credit_class_rates={'VCPU': '-1'})
        error = self.assertRaises(ValueError, credit.CreditFilter,
                                  self.conf, services=self.services)
        self.assertIn('the rate of VCPU must be a number >= 0', str(error))

    # --- update ---------------------------------------------------------

    def test_update_charges_only_the_difference(self):
        allocation = self.give_credits(100)
        first = lease(day(2), day(3), hosts('a'), name='l')
        self.create(first)
        self.update(first, lease(day(2), day(4), hosts('a'), name='l'))
        self.assertEqual(48.0, self.spent(allocation))

    def test_update_costing_more_than_is_left_is_denied_with_numbers(self):
        self.give_credits(50)
        first = lease(day(2), day(3), hosts('a'), name='l')
        self.create(first)
        message = self.assertDenied(self.update, first, lease(
            day(2), day(5), hosts('a'), name='l'))
        self.assertEqual('The update costs 48.00 more (the lease now costs '
                         '72.00 credits (72.00 hours at 1 credit an '
                         'hour)); project project-a has 26.00 credits left '
                         'of its allocation of 50.00.', message)

    def test_update_within_what_is_left_counts_the_old_charge(self):
        allocation = self.give_credits(50)
        first = lease(day(2), day(3), hosts('a'), name='l')
        self.create(first)
        self.update(first, lease(day(2), day(4), hosts('a'), name='l'))
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
        self.assertDenied(self.update, first, lease(day(2), day(5),
                                                    hosts('a'), name='l'))
        self.assertEqual(before, [tuple(row) for row in self.entries()])
        self.assertEqual(24.0, self.spent(allocation))

    def test_update_keeps_the_allocation_the_lease_was_charged_to(self):
        old = self.give_credits(100, end=datetime.datetime(2026, 6, 20))
        first = lease(day(2), day(3), hosts('a'), name='l')
        self.create(first)
        self.give_credits(100)  # newer, would be chosen for a new lease
        self.update(first, lease(day(2), day(4), hosts('a'), name='l'))
        self.assertEqual(48.0, self.spent(old))

    def test_renamed_lease_is_found_by_its_id_on_update(self):
        allocation = self.give_credits(100)
        self.create(lease(day(2), day(3), hosts('a'), name='old'))
        old, renamed, longer = [
            lease(day(2), day(end), hosts('a'), name=name, lease_id=LEASE_ID)
            for end, name in ((3, 'old'), (3, 'new'), (4, 'new'))]
        self.update(old, renamed)
        self.update(renamed, longer)
        self.assertEqual((48.0, 1), (self.spent(allocation),
                                     len(self.live_entries())))

    # --- end ------------------------------------------------------------

    def test_on_end_refunds_exactly_the_unused_part(self):
        allocation = self.give_credits(100)
        first = lease(day(2), day(4), hosts('a'), name='l')
        self.create(first)
        self.now = datetime.datetime(2026, 6, 2, 6)
        self.end(first)
        self.assertEqual(6.0, self.spent(allocation))

    def test_repeated_on_end_refunds_nothing_more(self):
        allocation = self.give_credits(100)
        first = lease(day(2), day(4), hosts('a'), name='l')
        self.create(first)
        self.now = datetime.datetime(2026, 6, 2, 6)
        self.end(first)
        self.now = datetime.datetime(2026, 6, 2, 7)
        self.end(first)
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
                       lease_id=LEASE_ID))
        entry, = self.entries()
        self.assertEqual((24.0, LEASE_ID), (self.spent(allocation),
                                            entry.lease_id))

    def test_refund_makes_room_for_another_lease(self):
        self.give_credits(48)
        first = lease(day(2), day(4), hosts('a'), name='one')
        self.create(first)
        self.now = datetime.datetime(2026, 6, 2, 12)
        self.end(first)
        self.create(lease(day(5), day(6), hosts('a'), name='two'))
        self.assertEqual(2, len(self.live_entries()))

    # --- exemption ------------------------------------------------------

    def test_exempted_project_needs_no_credits(self):
        chain = self.chain(exempted=[self.project])
        self.assertIsNone(self.create(lease(day(2), day(3), hosts('a')),
                                      via=chain))
