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
20 ms with the caches, under 40 ms with Placement read live."""

import testtools

from tools.bench import policies as bench

# 100 requests: the p99 is the 99th slowest.
FAST = [10.0] * 98


class TestPhaseGoals(testtools.TestCase):

    def test_a_live_phase_meets_its_goal_under_40_ms(self):
        phase = bench.summary(0, FAST + [30.0, 30.0], {204: 100})
        self.assertEqual(40.0, phase['goal_p99_ms'])
        self.assertTrue(phase['goal_met'])

    def test_a_live_phase_misses_its_goal_at_40_ms(self):
        phase = bench.summary(0, FAST + [40.0, 40.0], {204: 100})
        self.assertFalse(phase['goal_met'])

    def test_a_cached_phase_misses_its_goal_at_30_ms(self):
        phase = bench.summary(5, FAST + [30.0, 30.0], {204: 100})
        self.assertEqual(20.0, phase['goal_p99_ms'])
        self.assertFalse(phase['goal_met'])

    def test_a_cached_phase_meets_its_goal_under_20_ms(self):
        phase = bench.summary(5, FAST + [19.0, 19.0], {204: 100})
        self.assertTrue(phase['goal_met'])
