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
"""The provider directory lists again in the background, and takes the
capacity view's listings (a Placement in memory)."""

import time

import testtools

from placement_quota.placement import capacity_view
from placement_quota.placement import directory
from tests import builders
from tests.unit.placement import fakes


class DirectoryTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.placement = fakes.FakePlacement()
        self.clock = builders.Clock()
        self.directory = directory.ProviderDirectory(self.placement,
                                                     clock=self.clock)
        self.addCleanup(self.placement.release.set)


class TestListing(DirectoryTestCase):

    def test_the_first_listing_is_made_in_the_call(self):
        host = self.placement.add(name='cn-a')
        self.assertEqual({'cn-a': host}, self.directory.uuids(['cn-a']))
        self.assertEqual(1, self.directory.calls['listing'])

    def test_a_due_listing_does_not_make_the_caller_wait(self):
        root = self.placement.add(name='cn-a')
        self.assertTrue(self.directory.is_flat(root))
        self.placement.add(parent=root)
        self.clock.now += 60
        self.placement.hold = True
        began = time.monotonic()
        self.assertTrue(self.directory.is_flat(root))  # the last listing
        self.assertLess(time.monotonic() - began, 1)
        self.placement.release.set()
        self.directory.wait_listing(10)
        self.assertEqual((False, 2), (self.directory.is_flat(root),
                                      self.directory.calls['listing']))

    def test_one_background_listing_at_a_time(self):
        self.directory.uuids([])
        self.directory.is_flat('x')
        self.clock.now += 60
        self.placement.hold = True
        self.placement.listing_started.clear()
        self.directory.is_flat('x')
        self.assertTrue(self.placement.listing_started.wait(10))
        self.clock.now += 60
        self.directory.is_flat('x')
        self.placement.release.set()
        self.directory.wait_listing(10)
        self.assertEqual(2, self.placement.paths.count('/resource_providers'))

    def test_a_failed_background_listing_keeps_the_last_one(self):
        host = self.placement.add(name='cn-a')
        self.directory.uuids(['cn-a'])
        self.clock.now += 60

        def fail(*args):
            raise RuntimeError('Placement is down')
        self.placement.get_items = fail
        self.directory.is_flat(host)
        self.directory.wait_listing(10)
        self.assertEqual({'cn-a': host}, self.directory.uuids(['cn-a']))


class TestViewListings(DirectoryTestCase):

    def listing(self):
        return capacity_view.list_providers(self.placement)

    def test_a_listing_taken_answers_without_a_call(self):
        host = self.placement.add(name='cn-a')
        self.directory.take_listing(self.clock(), self.listing())
        self.placement.paths.clear()
        self.assertEqual(({'cn-a': host}, True),
                         (self.directory.uuids(['cn-a']),
                          self.directory.is_flat(host)))
        self.assertEqual([], self.placement.paths)

    def test_an_older_listing_does_not_replace_a_newer_one(self):
        old = self.listing()
        host = self.placement.add(name='cn-a')
        self.directory.take_listing(self.clock(), self.listing())
        self.directory.take_listing(self.clock() - 1, old)
        self.assertEqual(host, self.directory.uuid('cn-a'))
