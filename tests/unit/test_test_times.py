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
"""tools/test_times.py: the kept test times, and the stream that seeds a
fresh clone's stestr repository with them."""

import io
import json
import os

import fixtures
from subunit import v2
import testtools
from testtools import testresult

from tools import test_times

RUN = """\
{0} tests.unit.test_a.TestA.test_one [1.250000s] ... ok
{1} tests.unit.test_a.TestA.test_two [0.500000s] ... FAILED
{1} tests.functional.ha.test_b.TestB.test_three [12.000000s] ... ok
Totals
"""


class TestTestTimes(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.times = os.path.join(self.dir, 'times.json')

    def record(self, text):
        log = os.path.join(self.dir, 'run.log')
        with open(log, 'w') as f:
            f.write(text)
        return test_times.record(log, self.times)

    def test_record_keeps_the_seconds_of_each_passed_test(self):
        self.assertEqual(2, self.record(RUN))
        with open(self.times) as f:
            self.assertEqual(
                {'tests.unit.test_a.TestA.test_one': 1.25,
                 'tests.functional.ha.test_b.TestB.test_three': 12.0},
                json.load(f))

    def test_an_update_replaces_the_times_of_the_tests_it_ran_only(self):
        self.record(RUN)
        log = os.path.join(self.dir, 'some.log')
        with open(log, 'w') as f:
            f.write('{0} tests.unit.test_a.TestA.test_one [0.250000s] ... '
                    'ok\n')
        self.assertEqual(2, test_times.record(log, self.times, update=True))
        with open(self.times) as f:
            self.assertEqual(
                {'tests.unit.test_a.TestA.test_one': 0.25,
                 'tests.functional.ha.test_b.TestB.test_three': 12.0},
                json.load(f))

    def test_a_log_without_a_passed_test_is_refused(self):
        self.assertRaises(SystemExit, self.record, 'no tests here\n')

    def test_the_seed_is_a_passed_run_of_those_durations(self):
        self.record(RUN)
        out = io.BytesIO()
        test_times.seed(out, self.times)
        collected = {}

        class Times(testresult.StreamResult):
            def status(self, test_id=None, test_status=None,
                       timestamp=None, **kwargs):
                collected.setdefault(test_id, []).append(
                    (test_status, timestamp))
        stream = v2.ByteStreamToStreamResult(io.BytesIO(out.getvalue()))
        stream.run(Times())
        durations = {
            test_id: (events[-1][1] - events[0][1]).total_seconds()
            for test_id, events in collected.items()}
        self.assertEqual(
            ({'tests.unit.test_a.TestA.test_one': 1.25,
              'tests.functional.ha.test_b.TestB.test_three': 12.0},
             {'success'}),
            (durations, {events[-1][0] for events in collected.values()}))
