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
"""What a lease reserves, per reservation type."""

import testtools

from placement_quota.lease import amounts as accounting
from placement_quota.lease import model as lease_model
from tests import flavor_helpers
from tests import spec_examples as spec


def reservation(**values):
    return lease_model.Reservation.coerce(values, 'r')


class TestReservationAmounts(testtools.TestCase):

    def test_host_reservation_counts_its_allocations(self):
        r = reservation(resource_type='physical:host', min=1, max=5,
                        allocations=[{'hypervisor_hostname': 'a'},
                                     {'hypervisor_hostname': 'b'}])
        self.assertEqual({'hosts': 2}, accounting.reservation_amounts(r))

    def test_host_reservation_without_allocations_counts_max(self):
        r = reservation(resource_type='physical:host', min=1, max=3)
        self.assertEqual({'hosts': 3}, accounting.reservation_amounts(r))

    def test_host_resources_come_from_the_reader(self):
        r = reservation(resource_type='physical:host', min=1, max=2,
                        allocations=[{'hypervisor_hostname': 'a'},
                                     {'hypervisor_hostname': 'b'}])
        sizes = {'a': {'VCPU': 32, 'MEMORY_MB': 1000}, 'b': {'VCPU': 16}}
        self.assertEqual({'hosts': 2, 'host:VCPU': 48,
                          'host:MEMORY_MB': 1000},
                         accounting.reservation_amounts(r, sizes.get))

    def test_unknown_host_counts_only_as_a_host(self):
        r = reservation(resource_type='physical:host', min=1, max=1,
                        allocations=[{'hypervisor_hostname': 'gone'}])
        self.assertEqual({'hosts': 1},
                         accounting.reservation_amounts(r, {}.get))

    def test_instance_reservation_multiplies_its_flavor(self):
        r = reservation(resource_type='virtual:instance', amount='3',
                        vcpus=2, memory_mb=4096, disk_gb=0)
        self.assertEqual({'instances': 3, 'class:VCPU': 6,
                          'class:MEMORY_MB': 12288},
                         accounting.reservation_amounts(r))

    def test_floating_ip_reservation_counts_its_amount(self):
        r = reservation(resource_type='virtual:floatingip', network_id='n',
                        amount=2)
        self.assertEqual({'floatingips': 2},
                         accounting.reservation_amounts(r))

    def test_network_reservation_is_one_segment(self):
        r = reservation(resource_type='network', network_name='x')
        self.assertEqual({'networks': 1}, accounting.reservation_amounts(r))

    def test_unknown_reservation_type_reserves_nothing_and_is_reported(self):
        # Accounting counts nothing for it; the counting filters deny such
        # a lease ([enforcement] unknown_reservation_types, default deny:
        # tests/unit/filters/test_flavor_instance.py), using this report.
        r = reservation(resource_type='custom:thing', amount=4)
        self.assertEqual({}, accounting.reservation_amounts(r))
        lease = lease_model.Lease.coerce({
            'start_date': '2026-06-02 00:00', 'end_date': '2026-06-03 00:00',
            'reservations': [{'resource_type': 'custom:thing'},
                             {'resource_type': 'network'}]})
        self.assertEqual(['custom:thing'],
                         accounting.unaccounted_types(lease))

    def test_flavor_reservation_counts_what_nova_counts(self):
        r = reservation(resource_type='flavor:instance', amount=3,
                        flavor_id='medium')
        catalog = flavor_helpers.StaticFlavors()
        flavors = catalog.prefetch(['medium'])
        self.assertEqual({'instances': 3, 'class:VCPU': 12,
                          'class:MEMORY_MB': 24576, 'class:DISK_GB': 156},
                         accounting.reservation_amounts(r, flavors=flavors))
        # Blazar's Placement size has no swap: 40 + 10 GiB.
        self.assertEqual({'VCPU': 4, 'MEMORY_MB': 8192, 'DISK_GB': 50},
                         accounting.flavor_size(r, flavors))
        # Without flavors (a denied entry's record): instances only.
        self.assertEqual({'instances': 3}, accounting.reservation_amounts(r))

    def test_flavor_id_of_a_stored_reservation(self):
        r = reservation(resource_type='flavor:instance', amount=1,
                        resource_properties='{"id": "f9", "vcpus": 1}')
        self.assertEqual('f9', accounting.flavor_id(r))

    def test_spec_example_lease_amounts(self):
        lease = lease_model.Lease.coerce(spec.check_create()['lease'])
        self.assertEqual({'floatingips': 1, 'hosts': 1},
                         accounting.lease_amounts(lease))

    def test_instance_size_leaves_out_zero_classes(self):
        r = reservation(resource_type='virtual:instance', amount=1, vcpus=4,
                        memory_mb=0, disk_gb=20)
        self.assertEqual({'VCPU': 4, 'DISK_GB': 20},
                         accounting.instance_size(r))
