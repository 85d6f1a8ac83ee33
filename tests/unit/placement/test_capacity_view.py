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
"""The capacity view's refresh by generation, its answers from one
snapshot, and decisions that never wait for a refresh (a Placement in
memory; the functional tests hold the view against the real one)."""

import itertools
import threading
import time

import fixtures
import testtools

from placement_quota.placement import capacity_view
from placement_quota.placement import directory
from placement_quota.placement import usage_room
from tests import builders
from tests.unit.placement import fakes

SIZE = {'VCPU': 2}


class ViewTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.placement = fakes.FakePlacement()
        self.clock = builders.Clock()
        self.view = capacity_view.CapacityView(
            self.placement, clock=self.clock, resync_batch=0)
        self.addCleanup(self.view.stop)

    def host(self, vcpu=16, used=0, **kwargs):
        return self.placement.add(inventories={'VCPU': vcpu},
                                  used={'VCPU': used}, **kwargs)


class TestRefreshByGeneration(ViewTestCase):

    def test_the_first_refresh_reads_every_provider_that_ever_changed(self):
        hosts = [self.host() for _ in range(3)]
        self.placement.add(generation=0)
        self.view.refresh()
        self.assertEqual([3] * 3,
                         [self.placement.reads_of(h) for h in hosts])
        self.assertEqual(3, self.view.reads)

    def test_a_refresh_reads_only_the_providers_whose_generation_moved(self):
        moved, still = self.host(), self.host()
        self.view.refresh()
        self.placement.change(moved, VCPU=10)
        self.placement.paths.clear()
        self.view.refresh()
        self.assertEqual(['/resource_providers'] + [
            '/resource_providers/%s/%s' % (moved, what)
            for what in ('inventories', 'usages', 'traits')],
            self.placement.paths)
        self.assertEqual({moved: {'VCPU': 6}, still: {'VCPU': 16}},
                         self.view.room(SIZE))

    def test_a_refresh_reads_its_providers_side_by_side(self):
        # One after the other, each read would wait for Placement's answer
        # to the last: under load the view would grow older than allowed.
        moved = [self.host(), self.host()]
        self.view.refresh()
        for host in moved:
            self.placement.change(host, VCPU=10)
        meet = threading.Barrier(len(moved), timeout=10)
        self.placement.on_read = lambda uuid, what: (
            meet.wait() if what == 'usages' else None)
        self.view.refresh()
        self.assertEqual({h: {'VCPU': 6} for h in moved},
                         self.view.room(SIZE))


class TestResync(ViewTestCase):
    """Frees move no generation: each refresh reads a few unchanged
    providers' usages again, after the refresh is in the view."""

    def setUp(self):
        super().setUp()
        self.view.resync_batch = 8

    def free(self, uuid, **used):
        # As Placement frees a consumer's allocations: no generation move.
        self.placement.providers[uuid]['usages'].update(used)

    def test_a_free_without_a_generation_move_is_found(self):
        host = self.host(used=10)
        self.view.refresh()
        self.free(host, VCPU=0)
        self.view.refresh()
        self.assertEqual({host: {'VCPU': 16}}, self.view.room(SIZE))

    def test_the_view_is_refreshed_before_the_resync_reads(self):
        self.host(used=10)
        self.view.refresh()
        self.clock.now += 3
        ages = []
        self.placement.on_read = lambda uuid, what: ages.append(
            self.view.age())
        self.view.refresh()
        self.assertEqual([0.0], ages)

    def test_the_resync_reads_one_provider_at_a_time(self):
        for _ in range(4):
            self.host(used=1)
        self.view.refresh()
        reading, most = [], []

        def on_read(uuid, what):
            reading.append(uuid)
            most.append(len(reading))
            time.sleep(0.01)
            reading.remove(uuid)
        self.placement.on_read = on_read
        self.view.refresh()
        self.assertEqual([1] * 4, most)

    def test_a_provider_deleted_before_its_resync_leaves_at_next_listing(
            self):
        gone = self.host(used=1)
        self.view.refresh()
        self.placement.on_read = lambda uuid, what: (
            self.placement.providers.pop(gone, None))
        self.view.refresh()
        in_view = self.view.provider(gone)
        self.view.refresh()
        self.assertEqual((gone, None), (in_view.uuid,
                                        self.view.provider(gone)))

    def test_a_provider_gone_from_the_listing_leaves_the_view(self):
        gone = self.host()
        self.view.refresh()
        del self.placement.providers[gone]
        self.view.refresh()
        self.assertEqual((None, {}), (self.view.provider(gone),
                                      self.view.room(SIZE)))

    def test_the_names_are_those_of_the_last_listing(self):
        host = self.host(name='cn-a')
        self.view.refresh()
        self.assertEqual((host, None), (self.view.uuid_of('cn-a'),
                                        self.view.uuid_of('cn-b')))

    def test_the_listing_is_given_to_the_directory(self):
        names = directory.ProviderDirectory(self.placement,
                                            clock=self.clock)
        self.view.directory = names
        host = self.host(name='cn-a')
        self.view.refresh()
        self.placement.paths.clear()
        self.assertEqual(({'cn-a': host}, True),
                         (names.uuids(['cn-a']), names.is_flat(host)))
        self.assertEqual(([], 0), (self.placement.paths,
                                   names.calls['listing']))


class TestAnswers(ViewTestCase):

    def cloud(self):
        """Flat hosts, one with a nested provider of another class, one
        with a nested provider of VCPU, full ones, one with a trait."""
        hosts = [self.host(used=used) for used in (0, 4, 15, 16)]
        hosts.append(self.host(traits=['CUSTOM_A']))
        nested = self.host()
        self.placement.add(parent=nested, inventories={'DISK_GB': 5})
        vcpu_below = self.host()
        self.placement.add(parent=vcpu_below, inventories={'VCPU': 8})
        self.view.refresh()
        return hosts + [nested], vcpu_below

    def test_the_room_of_named_hosts_is_that_of_the_whole_view(self):
        hosts, _ = self.cloud()
        providers = self.view._snapshot.providers
        for count in (0, 1, 2, 3):
            for among in itertools.combinations(hosts, count):
                for traits in (None, {'CUSTOM_A': 'required'},
                               {'CUSTOM_A': 'forbidden'}):
                    self.assertEqual(
                        capacity_view.room_of(providers, SIZE, traits,
                                              set(among)),
                        self.view.room(SIZE, traits, set(among)))

    def test_a_named_tree_with_the_class_below_its_root_is_read_live(self):
        _, vcpu_below = self.cloud()
        self.assertIsNone(self.view.room(SIZE, None, {vcpu_below}))

    def test_a_sharing_provider_of_the_class_anywhere_means_read_live(self):
        hosts, _ = self.cloud()
        self.host(traits=[usage_room.SHARING_TRAIT])
        self.view.refresh()
        self.assertIsNone(self.view.room(SIZE, None, {hosts[0]}))
        self.assertIsNone(self.view.room(SIZE))

    def test_the_whole_cloud_answer_is_made_once_a_refresh(self):
        self.host()
        self.view.refresh()
        made = self.useFixture(fixtures.MockPatch(
            'placement_quota.placement.capacity_view.room_of',
            side_effect=capacity_view.room_of)).mock
        first = self.view.room(SIZE)
        first.clear()  # a caller's copy
        self.assertEqual(1, len(self.view.room(SIZE)))
        self.view.refresh()
        self.view.room(SIZE)
        self.assertEqual(2, made.call_count)

    def test_a_bad_request_is_refused_with_hosts_named_too(self):
        host = self.host()
        self.view.refresh()
        self.assertRaises(ValueError, self.view.room, {'VCPU': -1}, None,
                          {host})


class TestDecisionsDoNotWait(ViewTestCase):

    def test_a_young_view_is_used(self):
        self.host()
        self.view.refresh()
        self.clock.now += 4.9
        self.assertAlmostEqual(4.9, self.view.fresh(5))

    def test_without_a_background_refresh_an_old_view_is_refreshed(self):
        self.host()
        self.view.refresh()
        self.clock.now += 5
        self.assertEqual(0.0, self.view.fresh(5))
        self.assertEqual(2, self.view.refreshes)

    def test_an_old_view_being_refreshed_means_a_live_read_at_once(self):
        host = self.host(name='cn-a')
        self.view.refresh()
        self.placement.change(host, VCPU=10)
        self.clock.now += 5
        self.placement.hold = True
        self.placement.listing_started.clear()
        self.view.start(2.5)
        self.assertTrue(self.placement.listing_started.wait(10))
        began = time.monotonic()
        self.assertIsNone(self.view.fresh(5))
        # The last refresh answers meanwhile, whole.
        self.assertEqual(({host: {'VCPU': 16}}, host),
                         (self.view.room(SIZE), self.view.uuid_of('cn-a')))
        self.assertLess(time.monotonic() - began, 1)
        self.placement.release.set()
        deadline = time.monotonic() + 10
        while self.view.refreshes < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual({host: {'VCPU': 6}}, self.view.room(SIZE))

    def test_an_old_view_wakes_the_background_refresh(self):
        self.host()
        self.view.refresh()
        self.view.start(3600)
        deadline = time.monotonic() + 10
        while self.view.refreshes < 2 and time.monotonic() < deadline:
            time.sleep(0.01)  # its first turn refreshes at once
        self.clock.now += 5
        self.assertIsNone(self.view.fresh(5))
        while self.view.refreshes < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual(3, self.view.refreshes)
