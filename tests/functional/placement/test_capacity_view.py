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
"""The local capacity view against the real Placement of this test process:
its answer is Placement's own ``GET /allocation_candidates`` answer, on
randomized clouds, and changes made behind its back are seen in time.

Each test (and each generated cloud) uses resource classes of its own, so
providers other tests made never take part. A test class shares one view
(:class:`SharedView`): its first read is of every provider of this
process's Placement, later ones only of what changed."""

import os
import time
import uuid

import fixtures
import hypothesis
from hypothesis import strategies as st
import testtools

from placement_quota import conf as pq_conf
from placement_quota import filters as filters_mod
from placement_quota.filters import placement_capacity as capacity_filter
from placement_quota.filters import chain as chain_mod
from placement_quota.placement import usage_room
from placement_quota.placement import capacity_view
from placement_quota.placement import client as placement_client
from placement_quota.placement import embedded
from placement_quota.placement import hosts
from tests.builders import day
from tests.builders import instances
from tests.builders import lease
from tests.fixtures import placement as placement_fixtures
from tests import ledger_helpers
from tests.unit.filters import base

TRAITS = ('CUSTOM_CAPVIEW_GOLD', 'CUSTOM_CAPVIEW_FAST')
RATIOS = (0.5, 1.0, 1.5, 3.0, 16.0)


def inventories():
    """One class's inventory, as Placement takes it."""
    return st.integers(1, 40).flatmap(lambda total: st.fixed_dictionaries({
        'total': st.just(total),
        'reserved': st.integers(0, total // 2),
        'allocation_ratio': st.sampled_from(RATIOS),
        'min_unit': st.integers(1, 2),
        'max_unit': st.integers(2, 12),
        'step_size': st.integers(1, 2)}))


def providers():
    """A root provider: inventories of classes 0 and 1, traits, amounts
    allocated (those Placement refuses are skipped), and maybe a nested
    provider holding another class only."""
    return st.fixed_dictionaries({
        'inventories': st.dictionaries(st.sampled_from([0, 1]),
                                       inventories(), max_size=2),
        'traits': st.sets(st.sampled_from(TRAITS)),
        'allocations': st.lists(st.tuples(st.sampled_from([0, 1]),
                                          st.integers(1, 12)), max_size=3),
        'child': st.booleans(),
        'child_traits': st.sets(st.sampled_from(TRAITS))})


def requests():
    """An instance size over classes 0 and 1, and its traits."""
    return st.tuples(
        st.integers(1, 6), st.integers(0, 6),
        st.dictionaries(st.sampled_from(TRAITS),
                        st.sampled_from(['required', 'forbidden'])))


class SharedView:
    """Per test class: this process's Placement behind an intercept,
    :attr:`client` and :attr:`view` on it, and :attr:`other`, another
    writer (nova-compute, the scheduler) behind the view's back."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.shared_placement = placement_fixtures.PlacementInProcess()
        cls.shared_placement.setUp()
        cls.client = placement_client.PlacementClient.from_endpoint(
            cls.shared_placement.endpoint, embedded.NOAUTH_HEADERS)
        cls.other = placement_client.PlacementClient.from_endpoint(
            cls.shared_placement.endpoint, embedded.NOAUTH_HEADERS)
        for trait in TRAITS:
            cls.other.put('/traits/%s' % trait)
        cls.view = capacity_view.CapacityView(cls.client)

    @classmethod
    def tearDownClass(cls):
        cls.view.stop()
        cls.shared_placement.cleanUp()
        super().tearDownClass()


class ViewTestCase(SharedView, testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.addCleanup(self.view.stop)
        self.addCleanup(setattr, self.view, 'resync_batch',
                        self.view.resync_batch)
        self.addCleanup(setattr, self.view, 'clock', self.view.clock)

    def classes(self, count=2):
        """``count`` new resource classes."""
        names = ['CUSTOM_CAPVIEW_%s' % uuid.uuid4().hex.upper()
                 for _ in range(count)]
        for name in names:
            self.other.put('/resource_classes/%s' % name)
        return names

    def provider(self, inventories=None, traits=(), parent=None):
        body = {'name': 'capview-%s' % uuid.uuid4().hex}
        if parent:
            body['parent_provider_uuid'] = parent
        rp = self.other.post('/resource_providers', json=body).json()
        generation = rp['generation']
        if inventories:
            generation = self.other.put(
                '/resource_providers/%s/inventories' % rp['uuid'], json={
                    'resource_provider_generation': generation,
                    'inventories': inventories}).json()[
                'resource_provider_generation']
        if traits:
            self.other.put('/resource_providers/%s/traits' % rp['uuid'],
                           json={'resource_provider_generation': generation,
                                 'traits': sorted(traits)})
        return rp['uuid']

    def allocate(self, provider_uuid, **resources):
        """A new consumer's allocation, written behind the view; its UUID
        (None when Placement refuses it)."""
        consumer = str(uuid.uuid4())
        try:
            self.other.put('/allocations/%s' % consumer, json={
                'allocations': {provider_uuid: {'resources': resources}},
                'project_id': 'p', 'user_id': 'u',
                'consumer_generation': None, 'consumer_type': 'INSTANCE'})
        except placement_client.PlacementError:
            return None
        return consumer

    def build(self, cloud, request):
        """The providers of ``cloud`` (of :func:`providers`) on classes of
        their own; ``(size, traits, {root: its tree's UUIDs})`` of
        ``request`` (of :func:`requests`)."""
        names = self.classes(3)
        trees = {}
        for spec in cloud:
            rp = self.provider({names[i]: inv for i, inv in
                                spec['inventories'].items()}, spec['traits'])
            trees[rp] = {rp}
            if spec['child']:
                trees[rp].add(self.provider(
                    {names[2]: {'total': 4}}, spec['child_traits'],
                    parent=rp))
            for i, amount in spec['allocations']:
                inventory = spec['inventories'].get(i)
                if inventory and inventory['min_unit'] <= amount <= \
                        inventory['max_unit'] and \
                        not amount % inventory['step_size']:
                    # (Others Placement refuses: no call for them.)
                    self.allocate(rp, **{names[i]: amount})
        first, second, traits = request
        size = {names[0]: first}
        if second:
            size[names[1]] = second
        return size, traits, trees

    def assertAgrees(self, request, traits=None):
        live = usage_room.candidate_room(self.client, request, traits)
        self.assertEqual(live, self.view.room(request, traits))
        return live


class TestCapacityView(ViewTestCase):

    @hypothesis.settings(max_examples=20, deadline=None, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(st.lists(providers(), min_size=1, max_size=3),
                      requests())
    def test_room_equals_allocation_candidates_on_random_clouds(
            self, cloud, request):
        size, traits, _ = self.build(cloud, request)
        self.view.refresh()
        self.assertAgrees(size, traits)

    def test_incremental_refresh_reads_only_changed_providers(self):
        rc, = self.classes(1)
        a = self.provider({rc: {'total': 10}})
        self.provider({rc: {'total': 10}})
        self.view.resync_batch = 0
        self.view.refresh()
        reads = self.view.reads
        self.allocate(a, **{rc: 3})
        self.view.refresh()
        self.assertEqual(1, self.view.reads - reads)
        self.assertEqual(7, self.assertAgrees({rc: 1})[a][rc])

    def host(self):
        """A new class and a provider with 10 of it."""
        self.rc, = self.classes(1)
        self.rp = self.provider({self.rc: {'total': 10}})

    def test_allocation_is_seen_once_the_view_is_older_than_max_age(self):
        self.host()
        now = [1000.0]
        view = self.view
        view.clock = lambda: now[0]
        view.refresh()
        self.allocate(self.rp, **{self.rc: 4})
        now[0] += 4.9
        view.ensure_fresh(5)
        self.assertEqual(10, view.room({self.rc: 1})[self.rp][self.rc])
        now[0] += 0.1
        self.assertEqual(0.0, view.ensure_fresh(5))
        self.assertEqual(6, view.room({self.rc: 1})[self.rp][self.rc])

    def test_background_refresh_sees_allocation_within_max_age(self):
        self.host()
        max_age = 2.0
        self.view.refresh()
        self.view.start(max_age / 2)
        self.allocate(self.rp, **{self.rc: 4})
        made = time.monotonic()
        while self.view.room({self.rc: 1})[self.rp][self.rc] != 6:
            self.assertLess(time.monotonic() - made, max_age)
            time.sleep(0.05)

    def test_stop_ends_the_background_thread(self):
        self.view.start(0.05)
        thread = self.view._thread
        self.view.stop()
        self.assertFalse(thread.is_alive())

    def test_freed_allocation_is_seen_by_the_resync(self):
        self.host()
        # Placement does not bump a generation when it deletes allocations.
        consumer = self.allocate(self.rp, **{self.rc: 4})
        self.view.refresh()
        self.other.delete('/allocations/%s' % consumer)
        self.view.resync_batch = 0
        self.view.refresh()
        self.assertEqual(6, self.view.room({self.rc: 1})[self.rp][self.rc])
        self.view.resync_batch = 10 ** 6
        self.view.refresh()
        self.assertAgrees({self.rc: 1})

    def test_deleted_provider_leaves_the_view(self):
        self.host()
        self.view.refresh()
        self.other.delete('/resource_providers/%s' % self.rp)
        self.view.refresh()
        self.assertEqual({}, self.view.room({self.rc: 1}))

    def test_class_on_a_nested_provider_needs_a_live_read(self):
        rc, = self.classes(1)
        root = self.provider({rc: {'total': 4}})
        self.provider({rc: {'total': 4}}, parent=root)
        self.view.refresh()
        self.assertIsNone(self.view.room({rc: 1}))

    def test_class_on_a_sharing_provider_needs_a_live_read(self):
        rc, = self.classes(1)
        self.provider({rc: {'total': 4}}, traits=[
            capacity_view.SHARING_TRAIT])
        self.view.refresh()
        self.assertIsNone(self.view.room({rc: 1}))

    def test_nested_provider_of_another_class_keeps_the_view_exact(self):
        rc, other = self.classes(2)
        root = self.provider({rc: {'total': 4}})
        self.provider({other: {'total': 4}}, parent=root)
        self.view.refresh()
        self.assertEqual(2, len(self.assertAgrees({rc: 1})))


class TestFilterWithMaxAge(SharedView, ledger_helpers.PlacementHelpers,
                           base.LedgerTestCase):
    """PlacementCapacityFilter with ``capacity_max_age``: its decisions
    come from the view, say how old it was, and go live near the limit."""

    filter_class = capacity_filter.PlacementCapacityFilter
    options = {('enforcement', 'capacity_max_age'): 60}

    def placement(self):
        return self.in_process_placement()

    def setUp(self):
        super().setUp()
        self.host1, self.uuid1 = self.compute_node(vcpus=64)
        self.host2, self.uuid2 = self.compute_node(vcpus=64)
        self.both = (self.host1, self.host2)
        # The class's view, already read once (the filter would make its
        # own at its first decision, and read live meanwhile).
        self.filter._view = self.view
        self.view.refresh()
        self.addCleanup(self.filter.close)

    def prepared(self, amount):
        return self.filter.prepare(self.context(), self.lease(amount))

    def lease(self, amount):
        return self.filter.lease(lease(day(2), day(3), instances(
            amount, vcpus=4, hosts=self.both)))

    def test_far_from_the_limit_the_view_decides(self):
        time.sleep(0.05)
        read = self.prepared(1)
        self.assertGreater(list(read.ages.values())[0], 0.0)

    def test_near_the_limit_placement_is_read_live(self):
        # Behind the view's back: 120 of the 128 VCPU are taken.
        self.allocate(self.uuid1, 'someone', VCPU=60)
        self.allocate(self.uuid2, 'someone', VCPU=60)
        # 20 asked, 32 fit in the view: near its limit, so read live.
        message = self.assertDenied(self.create, lease(
            day(2), day(3), instances(20, vcpus=4, hosts=self.both)))
        self.assertEqual('Only 2 instances of DISK_GB=1, MEMORY_MB=512, '
                         'VCPU=4 fit on the 2 eligible hosts now; the '
                         'reservation asks for 20.', message)

    def test_deprecated_capacity_cache_ttl_sets_max_age(self):
        path = os.path.join(self.tmp, 'old.conf')
        with open(path, 'w') as f:
            f.write('[enforcement]\ncapacity_cache_ttl = 7\n')
        conf = pq_conf.new_config([], config_files=[path])
        chain_mod.register_filter_opts(conf, filters_mod.all_filters)
        self.assertEqual(7, conf.enforcement.capacity_max_age)


class TestHostResourcesFromTheView(ViewTestCase):
    """A physical:host reservation's host inventories come from the view
    when it knows the host and is younger than the reader's cache time."""

    def host(self):
        uuid_ = self.provider({'VCPU': {'total': 16, 'reserved': 2},
                               'MEMORY_MB': {'total': 4096},
                               'DISK_GB': {'total': 100, 'reserved': 10}})
        return self.client.get('/resource_providers/%s' % uuid_)['name']

    def reader(self, ttl=300):
        reader = hosts.HostResources(self.client, ttl=ttl)
        reader.use_view(self.view)
        return reader

    def test_a_host_the_view_knows_is_answered_without_a_call(self):
        name = self.host()
        self.view.refresh()
        reader = self.reader()
        self.assertEqual(hosts.HostResources(self.client)(name),
                         reader(name))
        self.assertEqual(0, reader.reads)

    def test_a_host_the_view_does_not_know_is_read_from_placement(self):
        self.view.refresh()
        name = self.host()
        reader = self.reader()
        self.assertEqual({'VCPU': 14, 'MEMORY_MB': 4096, 'DISK_GB': 90},
                         reader(name))
        self.assertEqual(1, reader.reads)

    def test_a_host_created_again_is_read_at_its_new_provider(self):
        name = self.host()
        reader = hosts.HostResources(self.client, ttl=0)
        reader(name)
        self.other.delete('/resource_providers/%s'
                          % reader.directory.uuid(name))
        again = self.other.post('/resource_providers',
                                json={'name': name}).json()
        self.other.put('/resource_providers/%s/inventories' % again['uuid'],
                       json={'resource_provider_generation':
                             again['generation'],
                             'inventories': {'VCPU': {'total': 4}}})
        self.assertEqual({'VCPU': 4}, reader(name))

    def test_a_view_older_than_the_cache_time_is_not_used(self):
        name = self.host()
        self.view.refresh()
        clock = self.view.clock
        self.view.clock = lambda: clock() + 60
        reader = self.reader(ttl=30)
        reader(name)
        self.assertEqual(1, reader.reads)


class TestFilterLendsItsView(ledger_helpers.PlacementHelpers,
                             base.LedgerTestCase):

    filter_class = capacity_filter.PlacementCapacityFilter
    options = {('enforcement', 'capacity_max_age'): 60,
               ('ledger', 'count_host_resources'): True}

    def placement(self):
        return self.in_process_placement()

    def test_the_host_reader_uses_the_capacity_filters_view(self):
        self.addCleanup(self.filter.close)
        view = self.filter.capacity_view(self.placement_client)
        self.assertIs(view, self.filter.host_resources.view)


class TestTreeRoom(ViewTestCase):
    """The live capacity of a few named hosts, read tree by tree
    (``in_tree``), is what one read across the cloud says of those
    trees."""

    def assertTreesAgree(self, cloud, request, data, flat_read=False):
        """Build ``cloud``, draw some of its trees: their rooms read tree
        by tree (the flat ones without the candidates call when
        ``flat_read``) are those of one read across the cloud."""
        size, traits, trees = self.build(cloud, request)
        chosen = data.draw(st.sets(st.sampled_from(sorted(trees)),
                                   min_size=1))
        members = set().union(*(trees[root] for root in chosen))
        whole = usage_room.candidate_room(self.client, size, traits)

        def read_flat(root):
            if trees[root] != {root}:
                return None
            return capacity_view.flat_room(self.client, size, traits, root)
        by_tree = usage_room.tree_room(
            self.client, size, traits, chosen,
            read_flat=read_flat if flat_read else None)
        self.assertEqual(
            {u: room for u, room in whole.items() if u in members},
            by_tree)

    @hypothesis.settings(max_examples=20, deadline=None, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(st.lists(providers(), min_size=1, max_size=4),
                      requests(), st.data())
    def test_tree_by_tree_equals_the_whole_cloud_on_random_clouds(
            self, cloud, request, data):
        self.assertTreesAgree(cloud, request, data)

    @hypothesis.settings(max_examples=20, deadline=None, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(st.lists(providers(), min_size=1, max_size=4),
                      requests(), st.data())
    def test_flat_trees_read_without_candidates_equal_the_whole_cloud(
            self, cloud, request, data):
        self.assertTreesAgree(cloud, request, data, flat_read=True)

    def spy_urls(self):
        """The URLs the client gets from now on."""
        urls = []
        get = self.client.get

        def spy(url, *args, **kwargs):
            urls.append(url)
            return get(url, *args, **kwargs)
        self.useFixture(fixtures.MockPatchObject(self.client, 'get', spy))
        return urls

    def test_a_flat_tree_is_read_in_two_calls_without_candidates(self):
        rc, = self.classes(1)
        host = self.provider({rc: {'total': 10}})
        urls = self.spy_urls()
        self.assertEqual(
            ({host: {rc: 10}}, ['/resource_providers/%s/inventories' % host,
                                '/resource_providers/%s/usages' % host]),
            (capacity_view.flat_room(self.client, {rc: 1}, None, host),
             urls))

    def test_a_flat_tree_asked_for_traits_reads_them_too(self):
        rc, = self.classes(1)
        host = self.provider({rc: {'total': 10}}, [TRAITS[0]])
        urls = self.spy_urls()
        self.assertEqual(
            ({host: {rc: 10}}, {}, 3),
            (capacity_view.flat_room(self.client, {rc: 1},
                                     {TRAITS[0]: 'required'}, host),
             capacity_view.flat_room(self.client, {rc: 1},
                                     {TRAITS[0]: 'forbidden'}, host),
             len(urls) // 2))

    def test_a_flat_tree_gone_is_not_found(self):
        self.assertRaises(placement_client.NotFound, capacity_view.flat_room,
                          self.client, {'VCPU': 1}, None, str(uuid.uuid4()))

    def test_a_sharing_provider_means_the_whole_cloud_is_read(self):
        rc, = self.classes(1)
        host = self.provider({rc: {'total': 10}})
        shared = self.provider({rc: {'total': 100}},
                               [capacity_view.SHARING_TRAIT])
        self.addCleanup(self.other.delete,
                        '/resource_providers/%s' % shared)
        self.assertIsNone(usage_room.tree_room(self.client, {rc: 1}, None,
                                               [host]))

    def test_a_sharing_provider_of_other_classes_changes_nothing(self):
        rc, other = self.classes(2)
        host = self.provider({rc: {'total': 10}})
        shared = self.provider({other: {'total': 100}},
                               [capacity_view.SHARING_TRAIT])
        self.addCleanup(self.other.delete,
                        '/resource_providers/%s' % shared)
        self.assertEqual({host: {rc: 10}}, usage_room.tree_room(
            self.client, {rc: 1}, None, [host]))

    def test_one_candidates_call_a_tree(self):
        rc, = self.classes(1)
        hosts_ = [self.provider({rc: {'total': 10}}) for _ in range(3)]
        urls = self.spy_urls()
        room = usage_room.tree_room(self.client, {rc: 1}, None, hosts_[:2])
        self.assertEqual(
            ({h: {rc: 10} for h in hosts_[:2]},
             sorted('in_tree=%s' % h for h in hosts_[:2])),
            (room, sorted(u.rsplit('&', 1)[1] for u in urls
                          if u.startswith('/allocation_candidates'))))

    def test_a_placement_without_in_tree_is_read_across_the_cloud(self):
        rc, = self.classes(1)
        host = self.provider({rc: {'total': 10}})
        client = placement_client.PlacementClient.from_endpoint(
            self.shared_placement.endpoint, embedded.NOAUTH_HEADERS)
        client._version = (1, 30)  # as a Placement offering no more
        self.assertIsNone(usage_room.tree_room(client, {rc: 1}, None, [host]))
