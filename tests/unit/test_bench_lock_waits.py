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
"""How tools/bench/admission_scale.py reads lock waits from PostgreSQL's
log (``log_lock_waits``) and takes their percentile."""

import os
import tempfile

import testtools

from tools.bench import admission_scale as bench

LOG = """\
2026-11-26 18:30:00.001 UTC [100] LOG:  checkpoint starting: time
2026-11-26 18:30:01.000 UTC [4242] LOG:  process 4242 still waiting for \
ShareLock on transaction 731 after 1.034 ms
2026-11-26 18:30:01.000 UTC [4242] DETAIL:  Process holding the lock: 4243.
2026-11-26 18:30:01.004 UTC [4242] LOG:  process 4242 acquired ShareLock \
on transaction 731 after 5.210 ms
2026-11-26 18:30:02.000 UTC [4244] LOG:  process 4244 still waiting for \
ExclusiveLock on tuple (0,3) of relation 16384 of database 5 after 1.001 ms
"""


class TestLoggedWaits(testtools.TestCase):

    def log(self, text, before=''):
        fd, path = tempfile.mkstemp()
        self.addCleanup(os.unlink, path)
        with os.fdopen(fd, 'w') as f:
            f.write(before + text)
        return path

    def test_an_acquired_wait_counts_its_whole_length(self):
        path = self.log(LOG)
        self.assertIn(5.21, bench.logged_waits(path, 0))

    def test_a_wait_still_on_counts_as_long_as_last_logged(self):
        path = self.log(LOG)
        self.assertEqual([1.001, 5.21], bench.logged_waits(path, 0))

    def test_waits_before_the_offset_are_not_read(self):
        before = ('2026-11-26 18:00:00.000 UTC [7] LOG:  process 7 acquired '
                  'ShareLock on transaction 9 after 80.000 ms\n')
        path = self.log(LOG, before)
        self.assertEqual([1.001, 5.21],
                         bench.logged_waits(path, len(before)))


class TestWaitQuantile(testtools.TestCase):

    def test_p99_under_one_ms_when_one_in_a_hundred_waited(self):
        self.assertEqual('<1', bench.wait_quantile([7.5], 100, 0.99))

    def test_p99_is_a_logged_wait_when_more_than_one_in_a_hundred_waited(
            self):
        self.assertEqual(2.0, bench.wait_quantile([2.0, 7.5], 100, 0.99))

    def test_p99_of_a_few_admissions_is_their_longest_wait(self):
        self.assertEqual(7.5, bench.wait_quantile([2.0, 7.5], 10, 0.99))

    def test_no_admissions_no_quantile(self):
        self.assertIsNone(bench.wait_quantile([], 0, 0.99))
