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
"""The provider directory against this process's real Placement: host
names to provider UUIDs from one listing, a lookup for a name missing
from it, and the classes of the sharing providers, each as old as its
bound allows."""

import uuid

import hypothesis
from hypothesis import strategies as st
import testtools

from placement_quota.placement import usage_room
from placement_quota.placement import client as placement_client
from placement_quota.placement import directory
from placement_quota.placement import embedded
from placement_quota.placement import hosts
from tests.fixtures import placement as placement_fixtures
from tests import builders
from tests.functional import test_faults


class DirectoryTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        placement = self.useFixture(placement_fixtures.PlacementInProcess())
        self.client = placement_client.PlacementClient.from_endpoint(
            placement.endpoint, embedded.NOAUTH_HEADERS)
        self.clock = builders.Clock()
        self.directory = directory.ProviderDirectory(
            self.client, relist_after=60, sharing_max_age=60,
            clock=self.clock)

    def provider(self, name=None, inventories=None, traits=()):
        """A new provider; its ``(name, uuid)``."""
        name = name or 'dir-%s' % uuid.uuid4().hex
        rp = self.client.post('/resource_providers',
                              json={'name': name}).json()
        generation = rp['generation']
        if inventories:
            generation = self.client.put(
                '/resource_providers/%s/inventories' % rp['uuid'], json={
                    'resource_provider_generation': generation,
                    'inventories': inventories}).json()[
                'resource_provider_generation']
        if traits:
            self.client.put('/resource_providers/%s/traits' % rp['uuid'],
                            json={'resource_provider_generation': generation,
                                  'traits': sorted(traits)})
        return name, rp['uuid']

    def new_class(self):
        name = 'CUSTOM_DIR_%s' % uuid.uuid4().hex.upper()
        self.client.put('/resource_classes/%s' % name)
        return name


class TestNames(DirectoryTestCase):

    def test_names_first_asked_are_found_in_one_listing(self):
        hosts = dict(self.provider() for _ in range(3))
        self.assertEqual(hosts, self.directory.uuids(hosts))
        self.assertEqual({'listing': 1, 'name': 0, 'sharing': 0},
                         self.directory.calls)

    def test_a_listed_name_is_answered_without_a_call(self):
        name, rp = self.provider()
        self.directory.uuids([name])
        self.assertEqual(rp, self.directory.uuid(name))
        self.assertEqual({'listing': 1, 'name': 0, 'sharing': 0},
                         self.directory.calls)

    def test_a_host_added_after_the_listing_is_looked_up_by_name(self):
        self.directory.uuids([self.provider()[0]])
        name, rp = self.provider()
        self.clock.now += 59
        self.assertEqual(rp, self.directory.uuid(name))
        self.assertEqual({'listing': 1, 'name': 1, 'sharing': 0},
                         self.directory.calls)

    def test_a_name_looked_up_is_remembered(self):
        self.directory.uuids([self.provider()[0]])
        name, rp = self.provider()
        self.directory.uuid(name)
        self.assertEqual(rp, self.directory.uuid(name))
        self.assertEqual(1, self.directory.calls['name'])

    def test_an_unknown_name_is_left_out(self):
        self.assertEqual({}, self.directory.uuids(['no-such-host-dir']))

    def test_an_unknown_name_is_looked_up_each_time_it_is_asked(self):
        # Never remembered as missing: it may be created any time.
        self.directory.uuids(['no-such-host-dir'])
        self.directory.uuids(['no-such-host-dir'])
        self.directory.uuids(['no-such-host-dir'])
        self.assertEqual({'listing': 1, 'name': 2, 'sharing': 0},
                         self.directory.calls)

    def test_a_missing_name_lists_again_once_the_listing_is_old(self):
        # In the background: the name is looked up alone meanwhile.
        self.directory.uuids([self.provider()[0]])
        name, rp = self.provider()
        self.clock.now += 60
        self.assertEqual(rp, self.directory.uuid(name))
        self.directory.wait_listing()
        self.assertEqual({'listing': 2, 'name': 1, 'sharing': 0},
                         self.directory.calls)

    def test_a_forgotten_provider_is_looked_up_again_by_name(self):
        name, old = self.provider()
        self.directory.uuids([name])
        self.client.delete('/resource_providers/%s' % old)
        _, new = self.provider(name)
        self.directory.forget(old)
        self.assertEqual((new, 1), (self.directory.uuid(name),
                                    self.directory.calls['name']))

    def test_a_failed_listing_is_not_tried_again_within_the_minute(self):
        failing = self.useFixture(test_faults.ErrorServer(500, root_ok=True))
        broken = directory.ProviderDirectory(
            placement_client.PlacementClient.from_endpoint(
                failing.url, embedded.NOAUTH_HEADERS), clock=self.clock)
        for _ in range(2):
            self.assertRaises(placement_client.PlacementError,
                              broken.uuids, ['a'])
        self.assertEqual(['/resource_providers', '/resource_providers?name=a'],
                         [path for _, path in failing.requests if path != '/'])

    def test_a_host_created_again_under_its_name_is_seen_at_the_next_listing(
            self):
        name, old = self.provider()
        self.directory.uuids([name])
        self.client.delete('/resource_providers/%s' % old)
        _, new = self.provider(name)
        self.clock.now += 60
        self.directory.uuids(['no-such-host-dir'])  # a miss lists again
        self.directory.wait_listing()
        self.assertEqual(new, self.directory.uuid(name))


class TestTrees(DirectoryTestCase):

    def child(self, parent):
        self.client.post('/resource_providers', json={
            'name': 'dir-%s' % uuid.uuid4().hex,
            'parent_provider_uuid': parent})

    def test_a_provider_without_nested_providers_is_flat(self):
        _, rp = self.provider()
        self.assertTrue(self.directory.is_flat(rp))

    def test_a_provider_with_a_nested_provider_is_not_flat(self):
        _, rp = self.provider()
        self.child(rp)
        self.assertFalse(self.directory.is_flat(rp))

    def test_a_nested_provider_is_not_a_flat_tree(self):
        _, rp = self.provider()
        self.child(rp)
        nested = self.client.get('/resource_providers?in_tree=%s'
                                 % rp)['resource_providers']
        child, = [p['uuid'] for p in nested if p['uuid'] != rp]
        self.assertFalse(self.directory.is_flat(child))

    def test_a_nested_provider_added_is_seen_at_the_next_listing(self):
        _, rp = self.provider()
        self.directory.is_flat(rp)
        self.child(rp)
        self.clock.now += 59
        still = self.directory.is_flat(rp)
        self.clock.now += 1
        # The listing then due runs in the background; the last one
        # answers meanwhile.
        meanwhile = self.directory.is_flat(rp)
        self.directory.wait_listing()
        self.assertEqual((True, True, False, 2),
                         (still, meanwhile, self.directory.is_flat(rp),
                          self.directory.calls['listing']))


class TestSharingClasses(DirectoryTestCase):

    def sharing(self, *classes):
        return self.provider(
            inventories={rc: {'total': 100} for rc in classes},
            traits=[usage_room.SHARING_TRAIT])

    def test_the_classes_of_every_sharing_provider(self):
        a, b = self.new_class(), self.new_class()
        self.sharing(a)
        self.sharing(b)
        self.assertTrue({a, b} <= self.directory.sharing_classes())

    def test_a_provider_without_the_trait_does_not_share(self):
        own = self.new_class()
        self.provider(inventories={own: {'total': 100}})
        self.assertNotIn(own, self.directory.sharing_classes())

    def test_the_classes_are_read_once_within_their_bound(self):
        self.directory.sharing_classes()
        self.clock.now += 59
        self.directory.sharing_classes()
        self.assertEqual(1, self.directory.calls['sharing'])

    def test_a_sharing_provider_added_is_seen_once_the_bound_passed(self):
        self.directory.sharing_classes()
        late = self.new_class()
        self.sharing(late)
        self.clock.now += 59
        self.assertNotIn(late, self.directory.sharing_classes())
        self.clock.now += 1
        self.assertIn(late, self.directory.sharing_classes())


def _inventory(total, reserved=0):
    return {'total': total, 'reserved': reserved, 'min_unit': 1,
            'max_unit': total, 'step_size': 1, 'allocation_ratio': 1.0}


class TestInventoriesKept(DirectoryTestCase):
    """A host's live read takes the inventories kept at its current
    generation: one call (its usages) instead of two, the same answer."""

    def setUp(self):
        super().setUp()
        self.vcpu = self.new_class()
        _, self.rp = self.provider(inventories={self.vcpu: _inventory(8)})

    def read(self):
        """(answer, calls): a read of the host through the directory."""
        before = self.client.calls
        inventories, usages = usage_room.read_provider(
            self.client, self.rp, known=self.directory)
        found = usage_room.combine(inventories['inventories'],
                                   usages['usages'])
        return found, self.client.calls - before

    def uncached(self):
        inventories, usages = usage_room.read_provider(self.client, self.rp)
        return usage_room.combine(inventories['inventories'],
                                  usages['usages'])

    def allocate(self, amount):
        consumer = str(uuid.uuid4())
        self.client.put('/allocations/%s' % consumer, json={
            'allocations': {self.rp: {'resources': {self.vcpu: amount}}},
            'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'})
        return consumer

    def set_total(self, total):
        generation = self.client.get(
            '/resource_providers/%s' % self.rp)['generation']
        self.client.put('/resource_providers/%s/inventories' % self.rp,
                        json={'resource_provider_generation': generation,
                              'inventories': {self.vcpu: _inventory(total)}})

    def test_the_first_read_makes_two_calls(self):
        self.assertEqual(2, self.read()[1])

    def test_a_host_unchanged_since_is_read_in_one_call(self):
        first, _ = self.read()
        again, calls = self.read()
        self.assertEqual((first, 1), (again, calls))

    def test_new_inventories_are_read_at_their_generation(self):
        self.read()
        self.set_total(4)
        found, calls = self.read()
        self.assertEqual((4, 2), (found[self.vcpu].capacity, calls))

    def test_an_allocation_since_is_seen(self):
        self.read()
        self.allocate(3)
        found, _ = self.read()
        self.assertEqual((3, 5), (found[self.vcpu].used,
                                  found[self.vcpu].free))

    def test_a_free_that_keeps_the_generation_is_seen(self):
        consumer = self.allocate(3)
        self.read()
        # Placement frees without moving the provider's generation.
        self.client.delete('/allocations/%s' % consumer)
        found, calls = self.read()
        self.assertEqual(self.uncached(), found)
        self.assertEqual(0, found[self.vcpu].used)

    def test_kept_inventories_are_used_for_relist_after_at_most(self):
        self.read()
        self.clock.now += 59
        self.assertEqual(1, self.read()[1])
        self.clock.now += 1   # 60 s after the read that kept them
        self.assertEqual(2, self.read()[1])

    def test_a_forgotten_provider_is_read_whole(self):
        self.read()
        self.directory.forget(self.rp)
        self.assertEqual(2, self.read()[1])

    def test_the_inventories_a_host_lease_read_are_kept(self):
        name = self.client.get('/resource_providers/%s' % self.rp)['name']
        hosts.HostResources(self.client, directory=self.directory)(name)
        self.assertEqual(1, self.read()[1])

    def test_a_class_renamed_since_is_read_again(self):
        self.read()
        renamed = self.new_class()
        self.client.delete('/resource_classes/%s' % renamed)
        # Below microversion 1.7 PUT renames a custom class, inventories
        # and all, without moving the provider's generation.
        self.client.request('PUT', '/resource_classes/%s' % self.vcpu,
                            json={'name': renamed}, version=(1, 6))
        found, calls = self.read()
        self.assertEqual(([renamed], 2), (sorted(found), calls))

    def test_a_provider_created_again_under_its_uuid_is_dropped_at_a_listing(
            self):
        name = self.client.get('/resource_providers/%s' % self.rp)['name']
        consumers = [self.allocate(1), self.allocate(1)]
        self.read()   # kept at generation 3
        for consumer in consumers:
            self.client.delete('/allocations/%s' % consumer)
        self.client.delete('/resource_providers/%s' % self.rp)
        self.client.post('/resource_providers',
                         json={'name': name, 'uuid': self.rp})
        self.set_total(2)   # generation 1
        self.clock.now += 30
        self.directory.uuids(['dir-unknown-%s' % uuid.uuid4().hex])
        self.allocate(1)
        self.allocate(1)   # generation 3 again, other inventories
        found, _ = self.read()
        self.assertEqual((2, 2), (found[self.vcpu].capacity,
                                  found[self.vcpu].used))

    @hypothesis.settings(max_examples=15, deadline=None, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(st.lists(st.one_of(
        st.tuples(st.just('total'), st.integers(1, 16)),
        st.tuples(st.just('allocate'), st.integers(1, 4)),
        st.tuples(st.just('free'), st.integers(0, 5)),
        st.tuples(st.just('later'), st.integers(0, 90))), max_size=8))
    def test_every_read_equals_a_read_without_kept_inventories(self, steps):
        consumers = []
        for step, value in steps:
            if step == 'total':
                used = self.uncached()[self.vcpu].used
                self.set_total(max(value, used))
            elif step == 'allocate':
                if self.uncached()[self.vcpu].free >= value:
                    consumers.append(self.allocate(value))
            elif step == 'free' and consumers:
                self.client.delete('/allocations/%s' % consumers.pop(
                    value % len(consumers)))
            elif step == 'later':
                self.clock.now += value
            self.assertEqual(self.uncached(), self.read()[0])
