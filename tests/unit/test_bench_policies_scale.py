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
"""tools/bench/policies.py at 10,000 hosts: the parts of a decision it
times, and how it judges them against a 1,000-host run and the memory
goal."""

import contextlib
import io

import testtools

from tools.bench import policies as bench


def phase(max_age, p99, rss=100.0, **parts):
    return {'capacity_max_age': max_age, 'p99_ms': p99, 'rss_mb': rss,
            'components_ms': {name: {'p99': value}
                              for name, value in parts.items()}}


class TestScaleGoals(testtools.TestCase):

    reference = {'check_create': [phase(0, 40.0, directory=0.1),
                                  phase(5, 20.0, view_room=0.2)]}

    def test_parts_within_one_and_a_half_times_meet_them(self):
        result = {'check_create': [phase(0, 60.0, directory=0.15),
                                   phase(5, 29.0, view_room=0.3)]}
        goals = bench.scale_goals(result, self.reference)
        self.assertEqual(
            {'decision_live': True, 'directory_live': True,
             'decision_cached': True, 'view_room_cached': True,
             'rss_mb': True},
            {name: goal['goal_met'] for name, goal in goals.items()})

    def test_a_part_past_one_and_a_half_times_misses_them(self):
        result = {'check_create': [phase(0, 40.0),
                                   phase(5, 20.0, view_room=0.31)]}
        goals = bench.scale_goals(result, self.reference)
        self.assertEqual((False, 1.55), (goals['view_room_cached'][
            'goal_met'], goals['view_room_cached']['ratio']))

    def test_the_background_refresh_is_not_compared(self):
        result = {'check_create': [phase(5, 20.0, view_refresh=900.0)]}
        self.assertNotIn('view_refresh_cached',
                         bench.scale_goals(result, {'check_create': [
                             phase(5, 20.0, view_refresh=90.0)]}))

    def test_memory_of_300_mb_misses_its_goal(self):
        result = {'check_create': [phase(0, 1.0, rss=120.0),
                                   phase(5, 1.0, rss=300.0)]}
        self.assertEqual({'rss_mb': 300.0, 'goal_mb': 300.0,
                          'goal_met': False},
                         bench.scale_goals(result, None)['rss_mb'])


class TestParts(testtools.TestCase):

    def test_a_wrapped_method_is_timed_and_still_answers(self):
        class Reader:
            def read(self, name):
                return name.upper()
        reader = Reader()
        parts = bench.Parts()
        parts.wrap('reader', reader, 'read')
        before = parts.mark()
        self.assertEqual('A', reader.read('a'))
        reader.read('b')
        figures = parts.since(before)['reader']
        self.assertEqual(2, figures['count'])
        self.assertLessEqual(figures['p50'], figures['max'])
        self.assertEqual({}, parts.since(parts.mark()))

    def test_the_memory_of_this_process_is_read(self):
        now, peak = bench.rss_mb()
        self.assertTrue(0 < now <= peak)


class TestCommandLine(testtools.TestCase):

    def test_placement_is_embedded_or_postgresql(self):
        self.assertEqual(('embedded', 'postgresql'), bench.PLACEMENTS)
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertRaises(SystemExit, bench.main,
                              ['--placement', 'mysql'])

    def test_hosts_are_planned_with_their_uuids(self):
        hosts = bench.plan_hosts(3)
        self.assertEqual(3, len({uuid for _, uuid in hosts}))
        self.assertTrue(hosts[2][0].startswith('bench-cn-2-'))
