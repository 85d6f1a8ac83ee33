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
"""Smoke test of tools/bench/scheduler.py on 20 hosts (it starts its own
Placement subprocess and uses the Nova child process; timings are not
checked)."""

import contextlib
import io
import json
import threading

import testtools

from tools.bench import scheduler

_lock = threading.Lock()
_run = None


def bench_run():
    """``(exit status, stdout lines, stderr)`` of one ``--hosts 20`` run,
    shared by the tests of this process."""
    global _run
    with _lock:
        if _run is None:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), \
                    contextlib.redirect_stderr(err):
                status = scheduler.main(['--hosts', '20', '--rounds', '1'])
            _run = status, out.getvalue().splitlines(), err.getvalue()
        return _run


class TestSchedulerBench(testtools.TestCase):

    def result(self):
        status, lines, err = bench_run()
        self.assertEqual(0, status, err)
        self.assertEqual(1, len(lines), lines)
        return json.loads(lines[0])

    def test_request_filter_gets_only_the_unreserved_hosts(self):
        ours = self.result()['ours']
        self.assertEqual(2, ours['placement_candidates'])
        self.assertEqual(0, ours['host_filter_checks'])

    def test_blazar_filter_checks_every_host(self):
        blazar = self.result()['blazar_filter']
        self.assertEqual(20, blazar['placement_candidates'])
        self.assertEqual(20, blazar['host_filter_checks'])
        self.assertEqual(2, blazar['hosts_passing'])

    def test_reservation_host_filter_decides_once(self):
        fallback = self.result()['reservation_host_filter']
        self.assertEqual(1, fallback['decisions'])
        self.assertEqual(2, fallback['hosts_passing'])
