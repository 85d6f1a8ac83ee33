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
"""Usages and capacity against a real Placement, and Placement itself as
the judge of the capacity arithmetic: it accepts exactly the number of
instances computed, and refuses one more."""

import uuid

import testtools

from placement_quota.placement import usage_room
from placement_quota.placement import client as placement_client
from placement_quota.placement import embedded
from tests.fixtures import placement as placement_fixtures

FLAVOR = {'VCPU': 2, 'MEMORY_MB': 4096, 'DISK_GB': 20}


class _ClientAt137(placement_client.PlacementClient):
    """A client that speaks microversion 1.37, before consumer types."""

    @property
    def version(self):
        return (1, 37)


class _ClientWithInterruption(placement_client.PlacementClient):
    """A client that runs ``between()`` once, right after its first
    ``GET .../inventories``: another writer changing the provider between
    our two reads."""

    between = None

    def get(self, url, **kwargs):
        body = super().get(url, **kwargs)
        if url.endswith('/inventories') and self.between:
            between, self.between = self.between, None
            between()
        return body


class PlacementTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.placement = self.useFixture(
            placement_fixtures.PlacementInProcess())
        self.client = placement_client.PlacementClient.from_endpoint(
            self.placement.endpoint, embedded.NOAUTH_HEADERS)
        # Another writer (nova-compute, the scheduler).
        self.other = placement_client.PlacementClient.from_endpoint(
            self.placement.endpoint, embedded.NOAUTH_HEADERS)
        self.project = 'project-%s' % uuid.uuid4().hex
        self.user = 'user-%s' % uuid.uuid4().hex

    def host(self, **inventories):
        """A compute node provider with these inventories; its UUID."""
        rp = self.other.post('/resource_providers', json={
            'name': 'cn-%s' % uuid.uuid4().hex[:12]}).json()
        if inventories:
            self.other.put('/resource_providers/%s/inventories' % rp['uuid'],
                           json={'resource_provider_generation':
                                 rp['generation'],
                                 'inventories': inventories})
        return rp['uuid']

    def allocate(self, resources_by_provider, project=None, user=None,
                 consumer_type='INSTANCE', version=None):
        """A new consumer's allocations; its UUID. ``consumer_type`` None
        makes a consumer without a type (sent at microversion 1.37)."""
        consumer = str(uuid.uuid4())
        body = {'allocations': {rp: {'resources': resources}
                                for rp, resources in
                                resources_by_provider.items()},
                'project_id': project or self.project,
                'user_id': user or self.user,
                'consumer_generation': None}
        if consumer_type is None:
            version = (1, 37)
        else:
            body['consumer_type'] = consumer_type
        self.other.put('/allocations/%s' % consumer, json=body,
                       version=version)
        return consumer

    def calls(self, function, *args):
        self.client.version  # negotiated before counting
        before = self.client.calls
        result = function(*args)
        return result, self.client.calls - before


class TestProjectUsages(PlacementTestCase):

    def setUp(self):
        super().setUp()
        self.assertTrue(self.client.supports(placement_client.CONSUMER_TYPES))
        self.rp = self.host(VCPU={'total': 32},
                            MEMORY_MB={'total': 65536},
                            DISK_GB={'total': 1000})

    def test_usages_equal_what_was_allocated(self):
        self.allocate({self.rp: FLAVOR})
        self.allocate({self.rp: FLAVOR})
        self.allocate({self.rp: {'VCPU': 1, 'MEMORY_MB': 512}},
                      consumer_type='MIGRATION')
        usages = usage_room.project_usages(self.client, self.project)
        self.assertEqual({'VCPU': 5, 'MEMORY_MB': 8704, 'DISK_GB': 40},
                         usages.resources)

    def test_usages_per_consumer_type_with_consumer_counts(self):
        self.allocate({self.rp: FLAVOR})
        self.allocate({self.rp: FLAVOR})
        self.allocate({self.rp: {'VCPU': 1, 'MEMORY_MB': 512}},
                      consumer_type='MIGRATION')
        usages = usage_room.project_usages(self.client, self.project)
        self.assertEqual({
            'INSTANCE': usage_room.ConsumerTypeUsage(
                2, {'VCPU': 4, 'MEMORY_MB': 8192, 'DISK_GB': 40}),
            'MIGRATION': usage_room.ConsumerTypeUsage(
                1, {'VCPU': 1, 'MEMORY_MB': 512})}, usages.consumer_types)

    def test_consumer_on_two_providers_is_counted_once(self):
        other = self.host(DISK_GB={'total': 100})
        self.allocate({self.rp: {'VCPU': 2}, other: {'DISK_GB': 10}})
        usages = usage_room.project_usages(self.client, self.project)
        self.assertEqual({'INSTANCE': 1}, usages.consumer_counts)
        self.assertEqual({'VCPU': 2, 'DISK_GB': 10}, usages.resources)

    def test_user_filter_keeps_that_users_consumers(self):
        someone_else = 'user-%s' % uuid.uuid4().hex
        self.allocate({self.rp: {'VCPU': 2}})
        self.allocate({self.rp: {'VCPU': 3}}, user=someone_else)
        usages = usage_room.project_usages(self.client, self.project,
                                           user_id=someone_else)
        self.assertEqual({'VCPU': 3}, usages.resources)
        self.assertEqual({'INSTANCE': 1}, usages.consumer_counts)

    def test_consumer_type_filter_keeps_that_type(self):
        self.allocate({self.rp: {'VCPU': 2}})
        self.allocate({self.rp: {'VCPU': 1}}, consumer_type='MIGRATION')
        usages = usage_room.project_usages(self.client, self.project,
                                           consumer_type='MIGRATION')
        self.assertEqual({'VCPU': 1}, usages.resources)
        self.assertEqual({'MIGRATION': 1}, usages.consumer_counts)

    def test_consumer_type_all_groups_everything_under_all(self):
        self.allocate({self.rp: {'VCPU': 2, 'MEMORY_MB': 1024}})
        self.allocate({self.rp: {'VCPU': 1}}, consumer_type='MIGRATION')
        usages = usage_room.project_usages(self.client, self.project,
                                           consumer_type='all')
        self.assertEqual({'all': usage_room.ConsumerTypeUsage(
            2, {'VCPU': 3, 'MEMORY_MB': 1024})}, usages.consumer_types)

    def test_consumer_without_a_type_is_unknown(self):
        self.allocate({self.rp: {'VCPU': 2}}, consumer_type=None)
        self.allocate({self.rp: {'VCPU': 4}})
        usages = usage_room.project_usages(self.client, self.project)
        self.assertEqual({'unknown': 1, 'INSTANCE': 1},
                         usages.consumer_counts)
        self.assertEqual({'VCPU': 2},
                         usages.consumer_types['unknown'].resources)

    def test_project_without_allocations_uses_nothing(self):
        usages = usage_room.project_usages(self.client, self.project)
        self.assertEqual(usage_room.ProjectUsages({}, {}), usages)

    def test_below_1_38_the_answer_is_flat(self):
        self.allocate({self.rp: FLAVOR})
        self.allocate({self.rp: {'VCPU': 1}}, consumer_type='MIGRATION')
        old = _ClientAt137.from_endpoint(self.placement.endpoint,
                                         embedded.NOAUTH_HEADERS)
        usages = usage_room.project_usages(old, self.project)
        self.assertEqual(usage_room.ProjectUsages(
            {'VCPU': 3, 'MEMORY_MB': 4096, 'DISK_GB': 20}), usages)

    def test_consumer_type_filter_below_1_38_is_refused(self):
        old = _ClientAt137.from_endpoint(self.placement.endpoint,
                                         embedded.NOAUTH_HEADERS)
        error = self.assertRaises(placement_client.VersionTooOld,
                                  usage_room.project_usages, old,
                                  self.project, consumer_type='INSTANCE')
        self.assertIn('1.38', str(error))

    def test_bad_consumer_type_carries_placements_message(self):
        error = self.assertRaises(placement_client.PlacementError,
                                  usage_room.project_usages, self.client,
                                  self.project, consumer_type='lower-case')
        self.assertEqual(400, error.status)
        self.assertIn('consumer_type', error.detail)

    def test_costs_one_call(self):
        _, calls = self.calls(usage_room.project_usages, self.client,
                              self.project)
        self.assertEqual(1, calls)


class TestProviderCapacity(PlacementTestCase):

    def test_values_follow_inventory_and_allocations(self):
        rp = self.host(
            VCPU={'total': 16, 'reserved': 2, 'allocation_ratio': 1.5,
                  'max_unit': 8},
            MEMORY_MB={'total': 32768, 'reserved': 512, 'step_size': 256},
            DISK_GB={'total': 200, 'allocation_ratio': 0.9, 'min_unit': 5})
        self.allocate({rp: FLAVOR})
        self.allocate({rp: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 5}})
        found = usage_room.provider_capacity(self.client, rp)
        self.assertEqual({
            'VCPU': {'total': 16, 'reserved': 2, 'allocation_ratio': 1.5,
                     'min_unit': 1, 'max_unit': 8, 'step_size': 1,
                     'used': 3, 'capacity': 21, 'free': 18},
            'MEMORY_MB': {'total': 32768, 'reserved': 512,
                          'allocation_ratio': 1.0, 'min_unit': 1,
                          'max_unit': 2147483647, 'step_size': 256,
                          'used': 4608, 'capacity': 32256, 'free': 27648},
            'DISK_GB': {'total': 200, 'reserved': 0,
                        'allocation_ratio': 0.9, 'min_unit': 5,
                        'max_unit': 2147483647, 'step_size': 1,
                        'used': 25, 'capacity': 180, 'free': 155}},
            {rc: c.as_dict() for rc, c in found.items()})

    def test_free_goes_negative_when_inventory_shrinks_below_usage(self):
        rp = self.host(VCPU={'total': 8})
        self.allocate({rp: {'VCPU': 6}})
        generation = self.other.get(
            '/resource_providers/%s' % rp)['generation']
        self.other.put('/resource_providers/%s/inventories' % rp, json={
            'resource_provider_generation': generation,
            'inventories': {'VCPU': {'total': 4}}})
        self.assertEqual(-2,
                         usage_room.provider_capacity(self.client, rp)[
                             'VCPU'].free)

    def test_provider_without_inventory_has_no_classes(self):
        self.assertEqual({}, usage_room.provider_capacity(self.client,
                                                          self.host()))

    def test_unknown_provider_is_not_found_with_placements_message(self):
        missing = str(uuid.uuid4())
        error = self.assertRaises(placement_client.NotFound,
                                  usage_room.provider_capacity, self.client,
                                  missing)
        self.assertIn('No resource provider with uuid %s found' % missing,
                      error.detail)

    def test_costs_two_calls(self):
        rp = self.host(VCPU={'total': 8})
        _, calls = self.calls(usage_room.provider_capacity, self.client, rp)
        self.assertEqual(2, calls)

    def test_change_between_the_two_reads_is_read_again(self):
        rp = self.host(VCPU={'total': 8})
        client = _ClientWithInterruption.from_endpoint(
            self.placement.endpoint, embedded.NOAUTH_HEADERS)
        generation = self.other.get('/resource_providers/%s' % rp)[
            'generation']

        def grow_and_allocate():
            self.other.put('/resource_providers/%s/inventories' % rp, json={
                'resource_provider_generation': generation,
                'inventories': {'VCPU': {'total': 16}}})
            self.allocate({rp: {'VCPU': 10}})

        client.between = grow_and_allocate
        client.version
        before = client.calls
        found = usage_room.provider_capacity(client, rp)['VCPU']
        self.assertEqual((16, 10, 6), (found.total, found.used, found.free))
        self.assertEqual(4, client.calls - before)


class TestInstancesThatFitOnHosts(PlacementTestCase):

    def three_hosts(self):
        """Three hosts whose fits for FLAVOR are computed by hand."""
        # VCPU (24-0)*1.0-4=20 -> 10; MEMORY (65536-1024)-8192=56320 -> 13;
        # DISK 400-40=360 -> 18. Fits 10 (VCPU).
        a = self.host(VCPU={'total': 24},
                      MEMORY_MB={'total': 65536, 'reserved': 1024},
                      DISK_GB={'total': 400})
        self.allocate({a: {'VCPU': 4, 'MEMORY_MB': 8192, 'DISK_GB': 40}})
        # VCPU 16*4.0=64 -> 32; MEMORY 32768*1.5=49152-4096=45056 -> 11;
        # DISK int(500*0.2)=100-20=80 -> 4. Fits 4 (DISK_GB).
        b = self.host(VCPU={'total': 16, 'allocation_ratio': 4.0},
                      MEMORY_MB={'total': 32768, 'allocation_ratio': 1.5},
                      DISK_GB={'total': 500, 'allocation_ratio': 0.2})
        self.allocate({b: FLAVOR})
        # VCPU max_unit 1 < 2: fits 0 whatever the free capacity.
        c = self.host(VCPU={'total': 64, 'max_unit': 1},
                      MEMORY_MB={'total': 131072},
                      DISK_GB={'total': 1000})
        return a, b, c

    def test_three_hosts_match_the_hand_computation(self):
        a, b, c = self.three_hosts()
        fit = usage_room.instances_that_fit_on_hosts(self.client, [a, b, c],
                                                     FLAVOR)
        self.assertEqual({a: 10, b: 4, c: 0}, fit.per_host)
        self.assertEqual(14, fit.total)

    def test_two_calls_per_host(self):
        hosts = self.three_hosts()
        _, calls = self.calls(usage_room.instances_that_fit_on_hosts,
                              self.client, hosts, FLAVOR)
        self.assertEqual(6, calls)

    def test_repeated_host_is_read_and_counted_once(self):
        a, b, c = self.three_hosts()
        fit, calls = self.calls(usage_room.instances_that_fit_on_hosts,
                                self.client, [a, a, b], FLAVOR)
        self.assertEqual((14, 4), (fit.total, calls))

    def test_host_lacking_a_class_fits_zero(self):
        rp = self.host(VCPU={'total': 64}, MEMORY_MB={'total': 131072},
                       DISK_GB={'total': 1000})
        fit = usage_room.instances_that_fit_on_hosts(
            self.client, [rp], dict(FLAVOR, VGPU=1))
        self.assertEqual({rp: 0}, fit.per_host)

    def test_unknown_host_is_not_found_with_placements_message(self):
        a, b, c = self.three_hosts()
        missing = str(uuid.uuid4())
        error = self.assertRaises(placement_client.NotFound,
                                  usage_room.instances_that_fit_on_hosts,
                                  self.client, [a, missing, b], FLAVOR)
        self.assertIn(missing, error.detail)

    def test_bad_amount_is_refused_before_any_call(self):
        rp = self.host(VCPU={'total': 8})
        error = self.assertRaises(ValueError,
                                  usage_room.instances_that_fit_on_hosts,
                                  self.client, [rp], {'VCPU': -1})
        self.assertIn('VCPU', str(error))
        self.assertEqual(0, self.client.calls)  # not even negotiation


class TestPlacementAgrees(PlacementTestCase):
    """Allocate exactly the number computed, then one more: Placement
    accepts the first ones and refuses the last with 409."""

    def assertPlacementAgrees(self, rp, request, expected):
        fits = usage_room.instances_that_fit(
            usage_room.provider_capacity(self.client, rp), request)
        self.assertEqual(expected, fits)
        for _ in range(fits):
            self.allocate({rp: request})
        error = self.assertRaises(placement_client.Conflict, self.allocate,
                                  {rp: request})
        self.assertIn('Unable to allocate inventory', error.detail)
        self.assertEqual(0, usage_room.instances_that_fit(
            usage_room.provider_capacity(self.client, rp), request))
        return error

    def test_memory_bound_host(self):
        # VCPU int(14*1.5)=21-3=18 -> 9; MEMORY 32256-4608=27648 -> 6;
        # DISK 180-25=155 -> 7.
        rp = self.host(
            VCPU={'total': 16, 'reserved': 2, 'allocation_ratio': 1.5},
            MEMORY_MB={'total': 32768, 'reserved': 512, 'step_size': 256},
            DISK_GB={'total': 200, 'allocation_ratio': 0.9})
        self.allocate({rp: FLAVOR})
        self.allocate({rp: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 5}})
        error = self.assertPlacementAgrees(rp, FLAVOR, 6)
        self.assertIn("'MEMORY_MB'", error.detail)
        self.assertIn('exceed the capacity', error.detail)

    def test_fractional_capacity_rounds_down_as_placement_does(self):
        # VCPU (9*1.5)=13.5 -> 13, used 3: 10 more of 1; 11 would be 14.
        rp = self.host(VCPU={'total': 9, 'allocation_ratio': 1.5},
                       MEMORY_MB={'total': 65536})
        self.allocate({rp: {'VCPU': 3, 'MEMORY_MB': 1024}})
        self.assertPlacementAgrees(rp, {'VCPU': 1, 'MEMORY_MB': 1024}, 10)

    def test_instance_above_max_unit_is_refused_by_placement_too(self):
        rp = self.host(VCPU={'total': 64, 'max_unit': 4})
        error = self.assertPlacementAgrees(rp, {'VCPU': 8}, 0)
        self.assertIn('inventory constraints', error.detail)

    def test_amount_off_step_size_is_refused_by_placement_too(self):
        rp = self.host(MEMORY_MB={'total': 65536, 'step_size': 1024})
        error = self.assertPlacementAgrees(rp, {'MEMORY_MB': 1536}, 0)
        self.assertIn('inventory constraints', error.detail)
