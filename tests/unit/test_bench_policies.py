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
