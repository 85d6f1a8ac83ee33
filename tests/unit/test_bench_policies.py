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
"""How tools/bench/policies.py judges a phase against its p99 goal: under
15 ms with the caches, under 30 ms with Placement read live, on every
ledger; and how tools/bench/split.py tells where a request's time went."""

import threading

import testtools

from tools.bench import policies as bench
from tools.bench import split

# 100 requests: the p99 is the 99th slowest.
FAST = [10.0] * 98


class TestPhaseGoals(testtools.TestCase):

    def test_a_live_phase_meets_its_goal_under_30_ms(self):
        phase = bench.summary(0, FAST + [29.0, 29.0], {204: 100})
        self.assertEqual(30.0, phase['goal_p99_ms'])
        self.assertTrue(phase['goal_met'])

    def test_a_live_phase_misses_its_goal_at_30_ms(self):
        phase = bench.summary(0, FAST + [30.0, 30.0], {204: 100})
        self.assertFalse(phase['goal_met'])

    def test_a_cached_phase_misses_its_goal_at_15_ms(self):
        phase = bench.summary(5, FAST + [15.0, 15.0], {204: 100})
        self.assertEqual(15.0, phase['goal_p99_ms'])
        self.assertFalse(phase['goal_met'])

    def test_a_cached_phase_meets_its_goal_under_15_ms(self):
        phase = bench.summary(5, FAST + [14.0, 14.0], {204: 100})
        self.assertTrue(phase['goal_met'])


class TestLedgers(testtools.TestCase):

    def test_a_sqlite_ledger_needs_no_server(self):
        server, url = bench.start_ledger('sqlite', '/tmp/x')
        self.assertEqual((None, 'sqlite:////tmp/x/ledger.sqlite'),
                         (server, url))

    def test_the_ledgers_are_sqlite_postgresql_and_mariadb(self):
        self.assertEqual(('sqlite', 'postgresql', 'mariadb'), bench.LEDGERS)


class TestSplit(testtools.TestCase):

    def test_a_row_lock_is_a_lock(self):
        self.assertEqual('locks', split.classify(
            'SELECT projects.project_id FROM projects WHERE '
            'projects.project_id IN (%(p)s) ORDER BY x FOR UPDATE'))

    def test_a_shared_lock_is_a_lock(self):
        self.assertEqual('locks', split.classify(
            'SELECT projects.project_id FROM projects\nWHERE x FOR SHARE'))

    def test_mariadbs_lock_write_is_a_lock(self):
        self.assertEqual('locks', split.classify(
            'UPDATE projects SET lock_serial=(projects.lock_serial + 1) '
            'WHERE projects.project_id = %(p)s'))

    def test_a_missing_lock_row_inserted_is_a_lock(self):
        self.assertEqual('locks', split.classify(
            'INSERT INTO projects (project_id, created_at) VALUES (?, ?) '
            'ON CONFLICT DO NOTHING'))

    def test_a_select_is_a_read(self):
        self.assertEqual('ledger_reads', split.classify(
            'SELECT count(*) FROM leases WHERE leases.project_id = ?'))

    def test_an_insert_of_an_entry_is_a_write(self):
        self.assertEqual('writes', split.classify(
            'INSERT INTO leases (project_id) VALUES (?)'))

    def test_a_request_gets_the_mean_of_each_part(self):
        timer = split.TimeSplit()
        before = timer.snapshot()
        timer.add('locks', 0.002)
        timer.add('locks', 0.004)
        timer.add('commit', 0.001)
        found = split.TimeSplit.per_request(before, timer.snapshot(), 2)
        self.assertEqual(
            ({'ms': 3.0, 'statements': 1.0}, {'ms': 0.5, 'statements': 0.5},
             {'ms': 0.0, 'statements': 0.0}),
            (found['locks'], found['commit'], found['placement']))


class FloorPlacement:
    """A Placement client that answers at once, and a clock advanced by
    ``usage_ms`` for each usage read and ``listing_ms`` for each
    listing."""

    def __init__(self, usage_ms, listing_ms=100.0, usages_error=None):
        self.now = 0.0
        self.usage_ms = list(usage_ms)
        self.listing_ms = listing_ms
        self.usages_error = usages_error
        self.urls = []
        self.listed = threading.Event()

    def clock(self):
        return self.now

    def supports(self, version):
        return True

    def get(self, url):
        self.urls.append(url)
        if self.usages_error is not None:
            raise self.usages_error
        self.now += self.usage_ms.pop(0) / 1000
        return {'usages': {}}

    def request(self, method, url):
        self.urls.append(url)
        self.now += self.listing_ms / 1000
        self.listed.set()


class TestPlacementFloor(testtools.TestCase):

    def floor(self, client, requests=100, listings=3):
        return bench.placement_floor(client, ['p1', 'p2'], requests,
                                     listings, clock=client.clock,
                                     listing_every=None)

    def test_each_request_is_one_usage_read_of_a_listed_project(self):
        client = FloorPlacement([1.0] * 100)
        self.floor(client)
        usages = [u for u in client.urls if u.startswith('/usages')]
        self.assertEqual(100, len(usages))
        self.assertEqual({'/usages?project_id=p1', '/usages?project_id=p2'},
                         {u.split('&')[0] for u in usages})

    def test_the_usage_reads_give_their_p50_and_p99(self):
        # 100 reads: the p99 is the 99th slowest.
        client = FloorPlacement([5.0] * 97 + [40.0, 40.0, 90.0])
        floor = self.floor(client)
        self.assertEqual({'reads': 100, 'p50_ms': 5.0, 'p99_ms': 40.0},
                         floor['usages'])

    def test_the_listing_is_the_median_of_its_reads(self):
        client = FloorPlacement([1.0] * 100, listing_ms=420.0)
        floor = self.floor(client, listings=3)
        self.assertEqual(3, client.urls.count('/resource_providers'))
        self.assertEqual((420.0, 3), (floor['listing_ms'],
                                      floor['listings']))

    def test_a_placement_refusing_usages_gives_its_error_and_the_listing(
            self):
        refusal = bench.placement_client.PlacementError(
            500, None, 'GROUP BY refused', 'GET', '/usages')
        floor = self.floor(FloorPlacement([], usages_error=refusal))
        self.assertIn('GROUP BY refused', floor['error'])
        self.assertNotIn('usages', floor)
        self.assertEqual(100.0, floor['listing_ms'])

    def test_the_second_usage_reads_last_for_several_listings_beside(self):
        client = FloorPlacement([1.0] * 100000)
        floor = bench.placement_floor(client, ['p1'], 100, 1,
                                      clock=client.clock, listing_every=0.0)
        beside = floor['beside_listing']
        self.assertEqual(0.0, beside['every_s'])
        self.assertGreaterEqual(beside['listings'],
                                bench.FLOOR_LISTINGS_BESIDE)
        self.assertGreaterEqual(beside['reads'], 100)
        self.assertEqual(100 + beside['reads'], len(
            [u for u in client.urls if u.startswith('/usages')]))


class TestListingLoop(testtools.TestCase):

    def test_lists_every_provider_until_the_block_ends(self):
        client = FloorPlacement([])
        with bench.ListingLoop(client, 60.0) as loop:
            self.assertTrue(client.listed.wait(10))
        self.assertEqual((1, ['/resource_providers']),
                         (loop.count, client.urls))
