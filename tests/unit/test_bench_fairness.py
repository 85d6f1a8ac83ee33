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
"""How tools/bench/fairness.py judges the rules' cost: the p99 with them
within 1.2 x the p99 without."""

import os
import tempfile

import testtools

from tools.bench import fairness as bench

# 100 requests: the p99 is the 99th slowest.
FAST = [10.0] * 98


class TestRatioGoal(testtools.TestCase):

    def test_a_p99_within_one_point_two_times_meets_the_goal(self):
        found = bench.judge(FAST + [20.0, 20.0], FAST + [24.0, 24.0])
        self.assertEqual((20.0, 24.0, 1.2),
                         (found['p99_ms_without'], found['p99_ms_with'],
                          found['ratio']))
        self.assertTrue(found['goal_met'])

    def test_a_p99_past_one_point_two_times_misses_the_goal(self):
        found = bench.judge(FAST + [20.0, 20.0], FAST + [24.2, 24.2])
        self.assertFalse(found['goal_met'])


class TestRollingCapsInTheLimitsFile(testtools.TestCase):

    def test_the_caps_join_the_registered_limits(self):
        directory = tempfile.mkdtemp()
        self.addCleanup(lambda: [os.remove(os.path.join(directory, n))
                                 for n in os.listdir(directory)])
        paths = bench.policies.write_files(directory, {'root-0': None})
        bench.add_caps(paths)
        with open(paths['tree.yaml']) as f:
            first = f.readline().strip()
        self.assertEqual(
            'registered_limits: {hosts: 100000, instances: 100000, '
            'hours:class:VCPU: 100000000, hours:hosts: 10000000}', first)
