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
"""ReservationSizeFilter: how much one reservation, and one lease, holds."""

from placement_quota.filters import size
from tests.builders import day
from tests.builders import floatingips
from tests.builders import hosts
from tests.builders import instances
from tests.builders import lease
from tests.builders import network
from tests.unit.filters import base


class TestReservationSizeFilter(base.LedgerTestCase):

    filter_class = size.ReservationSizeFilter
    options = {('enforcement', 'max_hosts_per_reservation'): 2,
               ('enforcement', 'max_hosts_per_lease'): 3,
               ('enforcement', 'max_instances_per_reservation'): 5,
               ('enforcement', 'max_instances_per_lease'): 8,
               ('enforcement', 'max_floatingips_per_reservation'): 2,
               ('enforcement', 'max_floatingips_per_lease'): 3,
               ('enforcement', 'max_networks_per_lease'): 1}

    def test_reservation_at_the_host_limit_is_allowed(self):
        self.assertIsNone(self.create(lease(day(2), day(3),
                                            hosts('a', 'b'))))

    def test_reservation_over_the_host_limit_is_denied_with_numbers(self):
        message = self.assertDenied(self.create, lease(
            day(2), day(3), hosts('a', 'b', 'c')))
        self.assertEqual('Reservation 1 (physical:host) asks for 3 hosts; '
                         'at most 2 are allowed in one reservation.', message)

    def test_denied_reservation_is_named_by_its_position(self):
        message = self.assertDenied(self.create, lease(
            day(2), day(3), floatingips(1), instances(6)))
        self.assertEqual('Reservation 2 (virtual:instance) asks for 6 '
                         'instances; at most 5 are allowed in one '
                         'reservation.', message)

    def test_host_reservation_without_allocations_counts_its_max(self):
        message = self.assertDenied(self.create, lease(
            day(2), day(3), hosts(min=1, max=3)))
        self.assertIn('asks for 3 hosts', message)

    def test_lease_over_the_lease_host_limit_is_denied(self):
        message = self.assertDenied(self.create, lease(
            day(2), day(3), hosts('a', 'b'), hosts('c', 'd')))
        self.assertEqual('The lease asks for 4 hosts in all; at most 3 are '
                         'allowed in one lease.', message)

    def test_lease_at_the_lease_instance_limit_is_allowed(self):
        self.assertIsNone(self.create(lease(day(2), day(3), instances(5),
                                            instances(3))))

    def test_lease_over_the_lease_instance_limit_is_denied(self):
        message = self.assertDenied(self.create, lease(
            day(2), day(3), instances(5), instances(4)))
        self.assertIn('The lease asks for 9 instances in all; at most 8',
                      message)

    def test_instance_amount_sent_as_a_string_is_counted(self):
        message = self.assertDenied(self.create, lease(
            day(2), day(3), instances('6')))
        self.assertIn('asks for 6 instances', message)

    def test_floating_ips_over_the_reservation_limit_are_denied(self):
        message = self.assertDenied(self.create, lease(
            day(2), day(3), floatingips(3)))
        self.assertIn('Reservation 1 (virtual:floatingip) asks for 3 '
                      'floating IPs; at most 2', message)

    def test_floating_ips_over_the_lease_limit_are_denied(self):
        message = self.assertDenied(self.create, lease(
            day(2), day(3), floatingips(2), floatingips(2)))
        self.assertIn('4 floating IPs in all; at most 3', message)

    def test_second_network_is_denied(self):
        message = self.assertDenied(self.create, lease(
            day(2), day(3), network(), network()))
        self.assertIn('2 networks in all; at most 1', message)

    def test_no_option_set_means_no_limit(self):
        for group, name in self.options:
            self.conf.clear_override(name, group)
        self.assertIsNone(self.create(lease(
            day(2), day(3), hosts(*'abcdefgh'), instances(100),
            floatingips(50), network(), network())))

    def test_update_to_a_larger_size_is_denied(self):
        small = lease(day(2), day(3), instances(1))
        message = self.assertDenied(self.update, small, lease(
            day(2), day(3), instances(9)))
        self.assertIn('asks for 9 instances', message)

    def test_update_is_judged_on_the_new_lease_only(self):
        too_big = lease(day(2), day(3), hosts('a', 'b', 'c'))
        self.assertIsNone(self.update(too_big, lease(day(2), day(3),
                                                     hosts('a'))))

    def test_on_end_of_an_oversized_lease_is_never_denied(self):
        self.assertIsNone(self.end(lease(day(2), day(3),
                                         hosts('a', 'b', 'c'))))

    def test_size_records_nothing_in_the_ledger(self):
        self.create(lease(day(2), day(3), hosts('a')))
        self.assertEqual([], self.entries())

    def test_exempted_project_may_reserve_any_size(self):
        chain = self.chain(exempted=[self.project])
        self.assertIsNone(self.create(lease(day(2), day(3),
                                            hosts('a', 'b', 'c')),
                                      via=chain))

    def test_other_projects_are_still_limited_by_the_chain(self):
        chain = self.chain(exempted=['someone-else'])
        self.assertDenied(self.create, lease(day(2), day(3),
                                             hosts('a', 'b', 'c')),
                          via=chain)
