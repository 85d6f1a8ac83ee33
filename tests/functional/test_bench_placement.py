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
"""Smoke test of tools/bench/placement_roundtrips.py on 3 hosts (it starts
its own Placement subprocess; timings are not checked)."""

import contextlib
import io
import json
import threading

import testtools

from tools.bench import placement_roundtrips

PHASE_KEYS = ['add_calls', 'add_s', 'end_calls', 'end_s', 'start_calls',
              'start_s']

_lock = threading.Lock()
_run = None


def bench_run():
    """``(exit status, stdout lines, stderr)`` of one ``--hosts 3`` run,
    shared by the tests of this process."""
    global _run
    with _lock:
        if _run is None:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), \
                    contextlib.redirect_stderr(err):
                status = placement_roundtrips.main(['--hosts', '3'])
            _run = status, out.getvalue().splitlines(), err.getvalue()
        return _run


class TestPlacementRoundtripsBench(testtools.TestCase):

    def result(self):
        status, lines, err = bench_run()
        self.assertEqual(0, status, err)
        self.assertEqual(1, len(lines), lines)
        return json.loads(lines[0])

    def test_succeeds_and_prints_one_json_line(self):
        self.assertIsInstance(self.result(), dict)

    def test_json_has_the_documented_keys(self):
        result = self.result()
        self.assertEqual(['blazar', 'hosts', 'ours'], sorted(result))
        self.assertEqual(3, result['hosts'])
        self.assertEqual(PHASE_KEYS, sorted(result['ours']))
        self.assertEqual(PHASE_KEYS, sorted(result['blazar']))

    def test_our_start_costs_at_most_three_calls(self):
        self.assertLessEqual(self.result()['ours']['start_calls'], 3)

    def test_our_end_costs_at_most_three_calls(self):
        self.assertLessEqual(self.result()['ours']['end_calls'], 3)
