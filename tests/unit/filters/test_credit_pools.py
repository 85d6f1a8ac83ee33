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
"""CreditFilter's credit pools per resource class: the pooled classes'
hours charged to the project's pool of each, the rest in credits; the
difference on update and the refund on end to the right pool, once."""

import datetime

from placement_quota.filters import credit
from placement_quota.ledger import entry_states
from placement_quota.ledger import models
from placement_quota.ledger import shares
from placement_quota.selfservice import service
from tests.builders import day
from tests.builders import hosts
from tests.builders import instances
from tests.builders import lease
from tests import flavor_helpers
from tests.flavor_helpers import flavor_instances
from tests.unit.filters import base

#: 2 instances of 4 VCPUs and 1000 MiB for 10 hours: 80 VCPU-hours, and
#: 2 x (1 + 1000 x 0.001) x 10 = 40 credits.
TEN_HOURS = (day(2, 0), day(2, 10))


def eight_vcpus(start=TEN_HOURS[0], end=TEN_HOURS[1], name='l', **extra):
    return lease(start, end, instances(2, vcpus=4, memory_mb=1000),
                 name=name, **extra)


class PoolTestCase(base.LedgerTestCase):

    filter_class = credit.CreditFilter
    options = {('enforcement', 'credit_instance_rate'): 1.0,
               ('enforcement', 'credit_class_rates'): {
                   'VCPU': '0.5', 'MEMORY_MB': '0.001',
                   'CUSTOM_GPU': '10'},
               ('enforcement', 'credit_pool_classes'): ['VCPU']}

    def pool(self, hours, resource_class='VCPU', **kwargs):
        return self.give_credits(hours, resource_class=resource_class,
                                 **kwargs)


class TestCharges(PoolTestCase):

    def test_pooled_class_is_charged_to_its_pool_in_hours(self):
        self.give_credits(100)
        pool = self.pool(100)
        self.create(eight_vcpus())
        self.assertEqual(80.0, self.spent(pool))

    def test_the_rest_of_the_cost_is_charged_in_credits(self):
        # The VCPU rate (0.5) is not charged in credits: its pool pays.
        general = self.give_credits(100)
        self.pool(100)
        self.create(eight_vcpus())
        self.assertEqual(40.0, self.spent(general))

    def test_the_entry_keeps_its_general_and_pool_charges_apart(self):
        general = self.give_credits(100)
        pool = self.pool(100)
        self.create(eight_vcpus())
        entry, = self.entries()
        self.assertEqual(
            (40000000, general,
             {'VCPU': {'allocation_id': pool, 'hourly': 8000000,
                       'charged': 80000000}}),
            (entry.charged, entry.allocation_id, entry.pool_charges))

    def test_a_lease_with_only_pooled_costs_needs_no_general_allocation(
            self):
        self.set(credit_instance_rate=0.0,
                 credit_class_rates={'VCPU': '0.5'})
        pool = self.pool(100)
        self.create(eight_vcpus())
        self.assertEqual(80.0, self.spent(pool))

    def test_a_general_allocation_does_not_pay_for_a_pooled_class(self):
        self.give_credits(1000)
        message = self.assertDenied(self.create, eight_vcpus())
        self.assertEqual(
            'The lease uses 80.00 VCPU-hours (8 for 10.00 hours), and '
            'project project-a has no VCPU pool in force on 2026-06-02 '
            '00:00.', message)

    def test_a_pool_is_not_taken_for_the_general_allocation(self):
        self.pool(1000)
        message = self.assertDenied(self.create, eight_vcpus())
        self.assertIn('has no credit allocation in force', message)

    def test_another_classes_pool_does_not_pay(self):
        self.give_credits(100)
        self.pool(1000, 'MEMORY_MB')
        message = self.assertDenied(self.create, eight_vcpus())
        self.assertIn('has no VCPU pool in force', message)

    def test_lease_using_exactly_the_pool_balance_is_allowed(self):
        self.give_credits(100)
        pool = self.pool(80)
        self.create(eight_vcpus())
        self.assertEqual(80.0, self.spent(pool))

    def test_one_minute_past_the_pool_balance_is_denied_with_numbers(self):
        self.give_credits(100)
        self.pool(80)
        message = self.assertDenied(self.create, eight_vcpus(
            end=datetime.datetime(2026, 6, 2, 10, 1)))
        self.assertEqual(
            'The lease uses 80.13 VCPU-hours (8 for 10.02 hours); project '
            'project-a has 80.00 left of its VCPU pool of 80.00.', message)

    def test_one_micro_unit_past_the_pool_balance_is_denied(self):
        self.give_credits(100)
        self.pool(80 - 1e-6)
        self.assertDenied(self.create, eight_vcpus())

    def test_denied_lease_charges_neither_pool_nor_credits(self):
        general = self.give_credits(100)
        pool = self.pool(79)
        self.assertDenied(self.create, eight_vcpus())
        self.assertEqual((0.0, 0.0), (self.spent(general), self.spent(pool)))

    def test_pool_ending_before_the_lease_is_denied(self):
        self.give_credits(100)
        self.pool(1000, end=datetime.datetime(2026, 6, 2, 5))
        message = self.assertDenied(self.create, eight_vcpus())
        self.assertEqual(
            'The lease ends on 2026-06-02 10:00, after the VCPU pool of '
            'project project-a expires on 2026-06-02 05:00.', message)

    def test_leases_share_the_pool(self):
        self.give_credits(100)
        self.pool(100)
        self.create(eight_vcpus(name='one'))
        message = self.assertDenied(self.create, eight_vcpus(
            day(3, 0), day(3, 10), name='two'))
        self.assertIn('project project-a has 20.00 left of its VCPU pool '
                      'of 100.00', message)

    def test_user_share_bounds_only_the_general_credits(self):
        self.give_credits(100)
        pool = self.pool(100)
        with self.ledger.transaction() as txn:
            shares.set_share(txn.connection, self.project, 'user-a',
                             40000000, txn.now)
        self.create(eight_vcpus())
        self.assertEqual(80.0, self.spent(pool))


class TestGpuPool(PoolTestCase):

    options = {**PoolTestCase.options,
               ('enforcement', 'credit_pool_classes'): ['CUSTOM_GPU']}

    def setUp(self):
        super().setUp()
        self.services._flavors = flavor_helpers.StaticFlavors()

    def test_denial_names_the_gpu_pool_and_its_numbers(self):
        self.give_credits(1000)
        pool = self.pool(100, 'CUSTOM_GPU')
        self.create(lease(day(1), day(1, 18),
                          flavor_instances(5, 'pinned-gpu'), name='a'))
        message = self.assertDenied(self.create, lease(
            day(2), day(3), flavor_instances(2, 'pinned-gpu'), name='b'))
        self.assertEqual(
            (90.0, 'The lease uses 48.00 CUSTOM_GPU-hours (2 for 24.00 '
                   'hours); project project-a has 10.00 left of its '
                   'CUSTOM_GPU pool of 100.00.'),
            (self.spent(pool), message))


class OneLeaseCharged(PoolTestCase):
    """1000 credits, a VCPU pool of 100 hours, and one lease of 8 VCPUs
    (:attr:`first`) charged to both."""

    def setUp(self):
        super().setUp()
        self.general = self.give_credits(1000)
        self.vcpu = self.pool(100)
        self.first = eight_vcpus()
        self.create(self.first)


class TestUpdates(OneLeaseCharged):

    def test_longer_update_charges_the_difference_to_the_pool(self):
        self.update(self.first, eight_vcpus(end=day(2, 12)))
        self.assertEqual((96.0, 48.0), (self.spent(self.vcpu),
                                        self.spent(self.general)))

    def test_shorter_update_refunds_the_difference_to_the_pool(self):
        self.update(self.first, eight_vcpus(end=day(2, 5)))
        self.assertEqual((40.0, 20.0), (self.spent(self.vcpu),
                                        self.spent(self.general)))

    def test_update_past_the_pool_is_denied_with_the_difference(self):
        message = self.assertDenied(self.update, self.first,
                                    eight_vcpus(end=day(2, 13)))
        self.assertEqual(
            'The update uses 24.00 VCPU-hours more (the lease now uses '
            '104.00 VCPU-hours (8 for 13.00 hours)); project project-a has '
            '20.00 left of its VCPU pool of 100.00.', message)
        self.assertEqual(80.0, self.spent(self.vcpu))

    def test_update_to_exactly_the_pool_is_allowed(self):
        self.update(self.first, eight_vcpus(end='2026-06-02 12:30'))
        self.assertEqual(100.0, self.spent(self.vcpu))

    def test_update_keeps_the_pool_the_lease_was_charged_to(self):
        self.pool(1000)   # newer: a new lease would be charged to it
        self.update(self.first, eight_vcpus(end=day(2, 12)))
        self.assertEqual(96.0, self.spent(self.vcpu))

    def test_update_without_the_pooled_class_refunds_its_pool(self):
        self.update(self.first, lease(day(2, 0), day(2, 10), hosts('a'),
                                      name='l'))
        self.assertEqual(0.0, self.spent(self.vcpu))


class TestEnd(OneLeaseCharged):

    def test_on_end_refunds_the_unused_part_to_the_pool(self):
        self.now = datetime.datetime(2026, 6, 2, 4)
        self.end(self.first)
        self.assertEqual((32.0, 16.0), (self.spent(self.vcpu),
                                        self.spent(self.general)))

    def test_second_on_end_refunds_nothing_more(self):
        self.now = datetime.datetime(2026, 6, 2, 4)
        self.end(self.first)
        self.now = datetime.datetime(2026, 6, 2, 6)
        self.end(self.first)
        self.assertEqual((32.0, 16.0), (self.spent(self.vcpu),
                                        self.spent(self.general)))

    def test_a_refund_makes_room_in_the_pool(self):
        self.now = datetime.datetime(2026, 6, 2, 4)
        self.end(self.first)
        self.create(eight_vcpus(day(3, 0), '2026-06-03 08:30', name='two'))
        self.assertEqual(100.0, self.spent(self.vcpu))

    def entry(self):
        entry, = self.entries()
        return entry

    def move(self, transition, *args):
        """Apply ``entry_states.transition`` to the lease's entry."""
        row = self.entry().id
        with self.ledger.transaction([self.project]) as txn:
            transition(txn, txn.entry(row), *args)

    def test_abandon_releases_the_pool_and_reopen_charges_it_again(self):
        self.move(entry_states.abandon)
        abandoned = self.spent(self.vcpu)
        self.move(entry_states.reopen)
        self.assertEqual((0.0, 80.0), (abandoned, self.spent(self.vcpu)))

    def test_abandoned_entry_closed_is_charged_what_it_used(self):
        self.move(entry_states.abandon)
        self.move(entry_states.close, datetime.datetime(2026, 6, 2, 2))
        self.assertEqual((16.0, models.TERMINATED),
                         (self.spent(self.vcpu), self.entry().state))

    def test_a_new_window_is_charged_to_the_pool(self):
        self.move(entry_states.set_window, datetime.datetime(2026, 6, 2),
                  datetime.datetime(2026, 6, 2, 11))
        self.assertEqual(88.0, self.spent(self.vcpu))


class TestNoPools(PoolTestCase):

    options = {**PoolTestCase.options,
               ('enforcement', 'credit_pool_classes'): []}

    def test_without_pool_classes_every_class_is_paid_in_credits(self):
        general = self.give_credits(100)
        pool = self.pool(100)
        self.create(eight_vcpus())
        entry, = self.entries()
        # 2 x (1 + 4 x 0.5 + 1000 x 0.001) x 10
        self.assertEqual((80.0, 0.0, None), (
            self.spent(general), self.spent(pool), entry.pool_charges))

    def test_a_bad_pool_class_is_refused_when_the_filter_is_made(self):
        self.set(credit_pool_classes=['gpu'])
        error = self.assertRaises(ValueError, credit.CreditFilter,
                                  self.conf, services=self.services)
        self.assertIn("credit_pool_classes: 'gpu' is not a resource class",
                      str(error))


class TestSelfService(PoolTestCase):

    def setUp(self):
        super().setUp()
        self.set(credit_host_rate=1.0, reservation_max_length=30 * 86400)
        self.chain_ = self.chain('MaximumReservationLengthFilter',
                                 'CreditFilter')
        self.selfservice = service.SelfService(self.chain_)

    def context(self, project=None):
        return {'project_id': project or self.project, 'user_id': 'u'}

    def test_extension_is_bound_by_the_pool_to_the_minute(self):
        # 100 VCPU-hours at 8 an hour: 12.5 hours, so day 2 12:30.
        self.give_credits(1000)
        self.pool(100)
        body = eight_vcpus(lease_id='lease-1')
        self.chain_.check_create(self.context(), body)
        found = self.selfservice.extension(self.context(), 'lease-1')
        self.assertEqual(('2026-06-02T12:30:00Z', 'CreditFilter'),
                         (found['latest_end_date'], found['bound_by']))

    def test_quote_shows_the_pool_charge_and_balance_after(self):
        self.give_credits(1000)
        pool = self.pool(100)
        found = self.selfservice.quote(self.context(), eight_vcpus(
            name='q'))
        self.assertEqual(
            [{'resource_class': 'VCPU', 'units': 8.0, 'hours': 10.0,
              'cost': 80.0, 'charge': 80.0, 'balance': 100.0,
              'balance_after': 20.0, 'allocation_id': pool}],
            found['credits']['pools'])

    def test_project_view_shows_each_pool(self):
        self.give_credits(1000)
        pool = self.pool(100)
        self.chain_.check_create(self.context(), eight_vcpus())
        found = self.selfservice.view(self.project, 'u', 30)
        self.assertEqual(
            [{'resource_class': 'VCPU',
              'allocation': {'id': pool, 'amount': 100.0,
                             'start_date': None, 'end_date': None},
              'spent': 80.0, 'balance': 20.0}],
            found['credits']['pools'])


class TestTheProjectsLeasesInCredits(PoolTestCase):

    def test_a_leases_charge_counts_its_credits_not_its_pool_hours(self):
        # 40 credits to the general allocation, 80 VCPU-hours to the pool.
        self.give_credits(100)
        self.pool(100)
        chain = self.chain('CreditFilter')
        chain.check_create({'project_id': self.project, 'user_id': 'u'},
                           eight_vcpus(lease_id='lease-1'))

        found = service.SelfService(chain).leases(self.project)

        self.assertEqual(40.0, found['leases'][0]['charged'])


class TestAnUpdateKeepsTheLeasesOwner(PoolTestCase):

    def test_an_update_by_another_user_leaves_the_lease_its_creators(self):
        self.give_credits(1000)
        self.pool(1000)
        chain = self.chain('CreditFilter')
        body = eight_vcpus(lease_id='lease-1')
        chain.check_create({'project_id': self.project, 'user_id': 'alice'},
                           body)
        longer = eight_vcpus(lease_id='lease-1',
                             end=datetime.datetime(2026, 6, 2, 11))

        chain.check_update({'project_id': self.project, 'user_id': 'admin'},
                           body, longer)

        entry, = self.entries()
        self.assertEqual('alice', entry.user_id)
