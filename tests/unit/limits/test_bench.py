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
"""Smoke test of tools/bench/limits.py (timings are not checked)."""

import contextlib
import io
import json

import testtools

from tools.bench import limits as bench


class TestLimitsBench(testtools.TestCase):

    def run_bench(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = bench.main(list(argv))
        return status, out.getvalue().splitlines(), err.getvalue()

    def test_one_json_line_per_size_with_both_paths(self):
        status, lines, _ = self.run_bench('--children', '0', '7', '--rounds',
                                          '1', '--budget', '0.01')
        results = [json.loads(line) for line in lines]
        self.assertEqual((0, [0, 7]),
                         (status, [r['children'] for r in results]))
        for result in results:
            self.assertGreater(result['ours_us'], 0)
            self.assertGreater(result['naive_us'], 0)

    def test_an_out_of_range_size_is_refused(self):
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertRaises(SystemExit, bench.main,
                              ['--children', '-1'])
