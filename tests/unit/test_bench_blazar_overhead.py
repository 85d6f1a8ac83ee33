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
"""tools/bench/blazar_overhead.py: its command line, the order of the
creates, the overhead and the goal (no service is started)."""

import contextlib
import io

import testtools

from tools.bench import blazar_overhead as bench

WITH, WITHOUT = bench.WITH, bench.WITHOUT


class TestCommandLine(testtools.TestCase):

    def parse(self, *argv):
        with contextlib.redirect_stderr(io.StringIO()):
            return bench.parse_args(list(argv))

    def test_the_default_is_thirty_creates_each(self):
        self.assertEqual(30, self.parse().creates)

    def test_zero_creates_is_refused(self):
        self.assertRaises(SystemExit, self.parse, '--creates', '0')

    def test_a_negative_warmup_is_refused(self):
        self.assertRaises(SystemExit, self.parse, '--warmup', '-1')

    def test_placement_is_read_live_by_default(self):
        self.assertEqual(0, self.parse().capacity_max_age)


class TestOrder(testtools.TestCase):

    def test_the_creates_go_turn_about_with_enforcement_first(self):
        self.assertEqual([WITH, WITHOUT, WITH, WITHOUT, WITH, WITHOUT],
                         bench.order(3))

    def test_each_blazar_gets_the_number_asked(self):
        sequence = bench.order(30)
        self.assertEqual((30, 30),
                         (sequence.count(WITH), sequence.count(WITHOUT)))


class TestOverhead(testtools.TestCase):

    def test_it_is_the_difference_in_percent_of_the_bare_median(self):
        self.assertAlmostEqual(5.0, bench.overhead_pct(1.05, 1.0))

    def test_faster_with_enforcement_is_a_negative_overhead(self):
        self.assertAlmostEqual(-10.0, bench.overhead_pct(0.9, 1.0))

    def test_the_medians_are_compared_not_the_means(self):
        times = {WITH: [1.02, 1.03, 9.0], WITHOUT: [1.0, 1.0, 1.0]}
        result = bench.judge(times)
        self.assertEqual((1.03, 1.0, 3.0),
                         (result['median_s_with'],
                          result['median_s_without'],
                          result['overhead_pct']))
        self.assertEqual(9.0, result['p90_s_with'])


class TestGoal(testtools.TestCase):

    def judge(self, with_s, without_s=1.0):
        return bench.judge({WITH: [with_s] * 3, WITHOUT: [without_s] * 3})

    def test_under_five_percent_meets_it(self):
        self.assertTrue(self.judge(1.049)['goal_met'])

    def test_five_percent_misses_it(self):
        self.assertFalse(self.judge(1.05)['goal_met'])

    def test_a_negative_overhead_meets_it(self):
        self.assertTrue(self.judge(0.97)['goal_met'])

    def test_the_count_is_of_each_blazar(self):
        self.assertEqual(3, self.judge(1.0)['creates'])


class TestPairedReading(testtools.TestCase):

    def test_it_is_the_median_of_each_pairs_difference(self):
        times = {WITH: [2.1, 1.1, 3.3], WITHOUT: [2.0, 1.0, 3.0]}
        result = bench.judge(times)
        self.assertEqual(0.1, result['paired_overhead_s'])
        self.assertEqual(5.0, result['paired_overhead_pct'])

    def test_a_drifting_load_moves_it_less_than_the_medians(self):
        # The machine slows down during the run, the with-creates a
        # little more often on the slow side.
        times = {WITH: [1.01, 1.01, 2.01, 2.01, 2.01],
                 WITHOUT: [1.0, 1.0, 1.0, 2.0, 2.0]}
        result = bench.judge(times)
        self.assertEqual(101.0, result['overhead_pct'])
        self.assertEqual(1.0, result['paired_overhead_pct'])


class TestServiceSplit(testtools.TestCase):

    def test_each_part_is_its_time_between_readings_a_check_create(self):
        before = {'check-create': (4, 1.0), 'placement': (8, 0.5),
                  'locks': (4, 0.01)}
        after = {'check-create': (14, 2.0), 'placement': (28, 1.3),
                 'locks': (14, 0.06)}
        self.assertEqual(
            (10, {'check-create': 100.0, 'placement': 80.0, 'locks': 5.0}),
            bench.split_ms(before, after))

    def test_no_check_create_between_readings_is_no_split(self):
        reading = {'check-create': (4, 1.0), 'placement': (8, 0.5),
                   'locks': (4, 0.01)}
        self.assertEqual((0, {}), bench.split_ms(reading, reading))
