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
"""Smoke test of tools/bench/self_service.py on 4 hosts and 300 leases
(it starts its own Placement subprocess and our service in-process);
timings are not checked, what it counts is."""

import json
import os
import subprocess
import sys
import threading

import testtools

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, 'tools', 'bench', 'self_service.py')
REQUESTS = 20

_lock = threading.Lock()
_run = None


def bench_run():
    """The finished process of one small run, shared by the tests of
    this process."""
    global _run
    with _lock:
        if _run is None:
            _run = subprocess.run(
                [sys.executable, BENCH, '--hosts', '4', '--leases', '300',
                 '--projects', '20', '--requests', str(REQUESTS)],
                capture_output=True, text=True, timeout=600, cwd=ROOT)
        return _run


class TestSelfServiceBench(testtools.TestCase):

    def result(self):
        run = bench_run()
        self.assertEqual(0, run.returncode, run.stderr[-3000:])
        lines = run.stdout.splitlines()
        self.assertEqual(1, len(lines), lines)
        return json.loads(lines[0])

    def test_prints_the_figures_the_benchmark_promises(self):
        found = self.result()
        for key in ('hosts', 'leases', 'view_p50_ms', 'view_p99_ms',
                    'quote_p99_ms', 'check_create_p99_ms', 'side_effects'):
            self.assertIn(key, found)
        self.assertEqual((4, 300), (found['hosts'], found['leases']))

    def test_quotes_change_nothing(self):
        self.assertEqual(0, self.result()['side_effects'])

    def test_every_quote_agreed_with_the_create_that_followed(self):
        self.assertEqual('%d/%d' % (REQUESTS, REQUESTS),
                         self.result()['quotes_agreeing_with_the_create'])
