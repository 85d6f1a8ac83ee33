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
"""flavor:instance reservations in every policy, and unknown reservation
types, on a SQLite ledger, flavors from a static catalog (the real Nova
API is in tests/functional/nova/test_flavors.py)."""

import os

from placement_quota.filters import placement_capacity
from placement_quota.filters import chain as chain_mod
from placement_quota.filters import credit
from placement_quota.filters import nova_quota
from placement_quota.filters import size
from placement_quota.filters import tree_limit
from placement_quota.lease import model as lease_model
from tests.builders import day
from tests.builders import instances
from tests.builders import lease
from tests import flavor_helpers
from tests.flavor_helpers import flavor_instances
from tests import ledger_helpers
from tests.unit.filters import base

NOVA_LIMITS = """\
model: flat
registered_limits: {servers: 1000, class:VCPU: 16, class:PCPU: 4,
                    class:DISK_GB: 2000, class:CUSTOM_GPU: 3}
"""

TREE_LIMITS = """\
registered_limits: {instances: 100, class:VCPU: 12}
projects:
  project-a: {limits: {class:PCPU: 4}}
"""

UNKNOWN = {'resource_type': 'dummy:thing', 'amount': 3}


class FlavorTestCase(base.LedgerTestCase):

    def setUp(self):
        super().setUp()
        self.flavors = flavor_helpers.StaticFlavors()
        self.services._flavors = self.flavors

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            f.write(text)
        return path


class TestSize(FlavorTestCase):

    filter_class = size.ReservationSizeFilter
    options = {('enforcement', 'max_instances_per_lease'): 2}

    def test_flavor_instances_count_like_virtual_instances(self):
        # The measured hole: 500 flavor:instance instances were allowed
        # where the same lease as virtual:instance was denied.
        expected = ('The lease asks for 500 instances in all; at most 2 '
                    'are allowed in one lease.')
        self.assertEqual(expected, self.assertDenied(
            self.create, lease(day(2), day(3), flavor_instances(500))))
        self.assertEqual(expected, self.assertDenied(
            self.create, lease(day(2), day(3), instances(500))))
        self.assertEqual(0, self.flavors.reads)   # no flavor needed

    def test_per_reservation_limit_names_the_flavor_type(self):
        self.set(max_instances_per_reservation=3,
                 max_instances_per_lease=0)
        message = self.assertDenied(self.create, lease(
            day(2), day(3), flavor_instances(4)))
        self.assertEqual('Reservation 1 (flavor:instance) asks for 4 '
                         'instances; at most 3 are allowed in one '
                         'reservation.', message)

    def test_unknown_type_is_denied_naming_the_type_and_the_option(self):
        message = self.assertDenied(self.create, lease(day(2), day(3),
                                                       UNKNOWN))
        self.assertMentions(message, 'dummy:thing', 'ReservationSizeFilter',
                            'unknown_reservation_types = deny')

    def test_unknown_type_passes_when_allowed(self):
        self.set(unknown_reservation_types='allow')
        self.create(lease(day(2), day(3), UNKNOWN))


class TestNovaQuota(FlavorTestCase):

    filter_class = nova_quota.NovaQuotaFilter
    options = {('enforcement', 'nova_quota_source'): 'file',
               ('enforcement', 'nova_quota_include_usage'): False}

    def setUp(self):
        super().setUp()
        self.set(nova_quota_limits_file=self.write('nova.yaml', NOVA_LIMITS))

    def test_records_what_nova_counts(self):
        self.create(lease(day(2), day(3), flavor_instances(2)))
        entry, = self.entries()
        # Disk: 40 root + 10 ephemeral + 2 GiB swap, Nova's rule.
        self.assertEqual({'instances': 2, 'class:VCPU': 8,
                          'class:MEMORY_MB': 16384, 'class:DISK_GB': 104},
                         entry.amounts)

    def test_flavor_vcpus_count_against_class_vcpu(self):
        self.create(lease(day(2), day(4), flavor_instances(3), name='a'))
        message = self.assertDenied(self.create, lease(
            day(3), day(5), flavor_instances(2), name='b'))
        self.assertEqual(
            'Nova quota of project project-a for class:VCPU: the lease asks '
            'for 8 from 2026-06-03 00:00 to 2026-06-05 00:00, 12 already '
            'reserved at the peak, from 2026-06-03 00:00 to 2026-06-04 '
            '00:00, and 0 in use now; the quota is 16.', message)

    def test_dedicated_cpus_count_against_class_pcpu(self):
        self.create(lease(day(2), day(3), flavor_instances(2, 'pinned-gpu')))
        message = self.assertDenied(self.create, lease(
            day(2), day(3), flavor_instances(1, 'pinned-gpu'), name='b'))
        self.assertMentions(message, 'for class:PCPU: the lease asks for 2',
                            '4 already reserved', 'the quota is 4')
        entry = self.entries()[0]
        self.assertEqual(4, entry.amounts['class:PCPU'])
        self.assertNotIn('class:VCPU', entry.amounts)

    def test_legacy_cores_count_vcpu_and_pcpu(self):
        found = nova_quota.nova_amounts(
            {'instances': 2, 'class:PCPU': 4, 'class:MEMORY_MB': 8192},
            nova_quota.LEGACY_RESOURCES, True, False)
        self.assertEqual({'instances': 2, 'cores': 4, 'ram': 8192}, found)

    def test_unknown_flavor_is_denied_and_counts_nothing(self):
        message = self.assertDenied(self.create, lease(
            day(2), day(3), flavor_instances(1, 'gone')))
        self.assertEqual(
            'lease.reservations[0].flavor_id: Flavor gone does not exist in '
            'Nova (GET /flavors/gone answered 404); a flavor:instance '
            'reservation needs a flavor Nova knows.', message)
        self.assertEqual([], self.live_entries())

    def test_malformed_extra_spec_is_denied_naming_it(self):
        message = self.assertDenied(self.create, lease(
            day(2), day(3), flavor_instances(1, 'malformed')))
        self.assertMentions(message, 'lease.reservations[0].flavor_id',
                            'Flavor malformed: extra spec resources:VCPU is '
                            'not a whole number', 'NovaQuotaFilter cannot '
                            'count this flavor')

    def test_missing_flavor_id_is_a_payload_error(self):
        body = flavor_instances(1)
        del body['flavor_id']
        error = self.assertRaises(lease_model.PayloadError, self.create,
                                  lease(day(2), day(3), body))
        self.assertEqual('lease.reservations[0].flavor_id', error.field)

    def test_totals_past_the_ledger_bounds_are_a_payload_error(self):
        huge = flavor_helpers.flavor_rules.Flavor(
            id='huge', vcpus=1, ram=2 ** 31 - 1, disk=1)
        self.flavors.flavors['huge'] = huge
        error = self.assertRaises(
            lease_model.PayloadError, self.create, lease(
                day(2), day(3), flavor_instances(2 ** 31 - 1, 'huge')))
        self.assertEqual('lease.reservations[0].amount', error.field)
        self.assertIn('MEMORY_MB of flavor huge', str(error))

    def test_unknown_type_is_denied(self):
        message = self.assertDenied(self.create, lease(
            day(2), day(3), instances(1), UNKNOWN))
        self.assertMentions(message, 'dummy:thing', 'NovaQuotaFilter',
                            'unknown_reservation_types')


class TestCapacity(ledger_helpers.PlacementHelpers, FlavorTestCase):

    filter_class = placement_capacity.PlacementCapacityFilter

    def placement(self):
        return self.in_process_placement()

    def setUp(self):
        super().setUp()
        # Room for 2 medium instances each (Blazar's rule: 4 VCPU, 8 GiB,
        # 50 GiB disk, swap not counted).
        self.host1, _ = self.compute_node(vcpus=8, memory_mb=16384,
                                          disk_gb=100)
        self.host2, _ = self.compute_node(vcpus=8, memory_mb=16384,
                                          disk_gb=100)
        self.both = (self.host1, self.host2)

    def test_flavor_instances_that_fit_are_allowed(self):
        self.create(lease(day(2), day(3), flavor_instances(4,
                                                           hosts=self.both)))

    def test_more_flavor_instances_than_fit_are_denied(self):
        message = self.assertDenied(self.create, lease(
            day(2), day(3), flavor_instances(5, hosts=self.both)))
        self.assertEqual('Only 4 instances of DISK_GB=50, MEMORY_MB=8192, '
                         'VCPU=4 fit on the 2 eligible hosts now; the '
                         'reservation asks for 5.', message)

    def test_other_leases_in_the_window_hold_capacity(self):
        self.create(lease(day(2), day(4), flavor_instances(
            2, hosts=self.both), name='a'), project='other')
        message = self.assertDenied(self.create, lease(
            day(3), day(5), flavor_instances(3, hosts=self.both), name='b'))
        self.assertMentions(message, 'Not enough free')

    def test_dedicated_flavor_needs_pcpu_inventory(self):
        message = self.assertDenied(self.create, lease(
            day(2), day(3), flavor_instances(1, 'pinned-gpu')))
        self.assertMentions(message, 'Only 0 instances of CUSTOM_GPU=1, '
                            'DISK_GB=20, MEMORY_MB=4096, PCPU=2')

    def add_trait_flavors(self):
        for flavor in (flavor_helpers.NEEDS_AVX512, flavor_helpers.NO_SGX):
            self.flavors.flavors[flavor.id] = flavor

    def test_required_trait_no_host_has_is_denied(self):
        self.add_trait_flavors()
        message = self.assertDenied(self.create, lease(
            day(2), day(3), flavor_instances(1, 'needs-avx512',
                                             hosts=self.both)))
        self.assertEqual('Only 0 instances of DISK_GB=50, MEMORY_MB=8192, '
                         'VCPU=4 (traits: HW_CPU_X86_AVX512F required) fit '
                         'on the 2 eligible hosts now; the reservation asks '
                         'for 1.', message)

    def test_required_trait_fits_only_on_the_host_having_it(self):
        self.add_trait_flavors()
        name, uuid = self.compute_node(vcpus=8, memory_mb=16384,
                                       disk_gb=100)
        flavor_helpers.set_traits(self.placement_client, uuid,
                                  'HW_CPU_X86_AVX512F')
        hosts = self.both + (name,)
        # Room for 2 on the one host with the trait, not 6 on all three.
        self.create(lease(day(2), day(3), flavor_instances(
            2, 'needs-avx512', hosts=hosts), name='a'))
        message = self.assertDenied(self.create, lease(
            day(4), day(5), flavor_instances(3, 'needs-avx512', hosts=hosts),
            name='b'))
        self.assertMentions(message, 'Only 2 instances of', 'fit on the 3 '
                            'eligible hosts now')

    def test_forbidden_trait_excludes_the_only_host_having_it(self):
        self.add_trait_flavors()
        name, uuid = self.compute_node(vcpus=8, memory_mb=16384,
                                       disk_gb=100)
        flavor_helpers.set_traits(self.placement_client, uuid,
                                  'HW_CPU_X86_SGX')
        message = self.assertDenied(self.create, lease(
            day(2), day(3), flavor_instances(1, 'no-sgx', hosts=(name,))))
        self.assertMentions(message, 'Only 0 instances of',
                            'HW_CPU_X86_SGX forbidden', 'fit on the 1 '
                            'eligible hosts now')
        # The two hosts without it are still candidates.
        self.create(lease(day(2), day(3), flavor_instances(
            4, 'no-sgx', hosts=self.both)))

    def test_unknown_required_custom_trait_is_denied(self):
        self.flavors.flavors['custom'] = flavor_helpers.flavor_rules.Flavor(
            id='custom', vcpus=1, ram=512, disk=1,
            extra_specs={'trait:CUSTOM_NOWHERE': 'required'})
        message = self.assertDenied(self.create, lease(
            day(2), day(3), flavor_instances(1, 'custom', hosts=self.both)))
        self.assertMentions(message, 'Only 0 instances of')

    def test_unknown_forbidden_custom_trait_excludes_no_host(self):
        self.flavors.flavors['custom'] = flavor_helpers.flavor_rules.Flavor(
            id='custom', vcpus=1, ram=512, disk=1,
            extra_specs={'trait:CUSTOM_NOWHERE': 'forbidden'})
        self.create(lease(day(2), day(3), flavor_instances(
            1, 'custom', hosts=self.both)))


class TestCredit(FlavorTestCase):

    filter_class = credit.CreditFilter
    options = {('enforcement', 'credit_instance_rate'): 0.5,
               ('enforcement', 'credit_class_rates'): {
                   'VCPU': '1', 'PCPU': '2', 'CUSTOM_GPU': '10',
                   'DISK_GB': '0.1'}}

    def test_flavor_is_priced_on_what_blazar_reserves(self):
        allocation = self.give_credits(1000)
        # 2 x (0.5 + 2 PCPU x 2 + 1 GPU x 10 + 20 GiB x 0.1) for 10 hours
        self.create(lease(day(2), day(2, 10),
                          flavor_instances(2, 'pinned-gpu')))
        self.assertAlmostEqual(330.0, self.spent(allocation))

    def test_disk_is_root_plus_ephemeral_without_swap(self):
        allocation = self.give_credits(1000)
        # 0.5 + 4 VCPU + 50 GiB x 0.1 = 9.5 an hour
        self.create(lease(day(2), day(2, 10), flavor_instances(1)))
        self.assertAlmostEqual(95.0, self.spent(allocation))

    def test_unknown_type_is_denied(self):
        self.give_credits(1000)
        message = self.assertDenied(self.create, lease(day(2), day(3),
                                                       UNKNOWN))
        self.assertMentions(message, 'dummy:thing', 'CreditFilter')


class TestTreeLimit(FlavorTestCase):

    filter_class = tree_limit.ProjectTreeLimitFilter

    def setUp(self):
        super().setUp()
        self.set('limits', limits_file=self.write('limits.yaml',
                                                  TREE_LIMITS))

    def test_flavor_classes_count_against_tree_limits(self):
        self.create(lease(day(2), day(3), flavor_instances(2, 'pinned-gpu')))
        message = self.assertDenied(self.create, lease(
            day(2), day(3), flavor_instances(1, 'pinned-gpu'), name='b'))
        self.assertMentions(message, 'over a limit for class:PCPU',
                            'its limit is 4')

    def test_unknown_type_is_denied(self):
        message = self.assertDenied(self.create, lease(day(2), day(3),
                                                       UNKNOWN))
        self.assertMentions(message, 'dummy:thing', 'ProjectTreeLimitFilter')


class TestChain(FlavorTestCase):

    filter_class = nova_quota.NovaQuotaFilter
    options = {('enforcement', 'nova_quota_source'): 'file',
               ('enforcement', 'nova_quota_include_usage'): False}

    def test_one_read_of_the_flavor_for_the_whole_chain(self):
        self.set(nova_quota_limits_file=self.write('nova.yaml', NOVA_LIMITS))
        self.set('limits', limits_file=self.write('limits.yaml',
                                                  TREE_LIMITS))
        chain = self.chain('ReservationSizeFilter', 'LeaseCountFilter',
                           'NovaQuotaFilter', 'CreditFilter',
                           'ProjectTreeLimitFilter')
        self.create(lease(day(2), day(3), flavor_instances(1)), via=chain)
        self.assertEqual(1, self.flavors.reads)
        entry, = self.entries()
        self.assertEqual(4, entry.amounts['class:VCPU'])
        self.assertIsInstance(chain, chain_mod.FilterChain)
