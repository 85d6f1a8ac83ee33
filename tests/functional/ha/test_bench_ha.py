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
"""Smoke test of tools/bench/ha.py in a tiny run (a lease count of 5, one
round; the failover at a count of 6) on this test process's Galera
cluster; timings are not checked."""

import contextlib
import io
import json

import testtools

from tests.fixtures import galera
from tests.fixtures import haproxy
from tests.fixtures import mariadb
from tools.bench import ha


class TestHABench(testtools.TestCase):

    def setUp(self):
        super().setUp()
        for reason in (mariadb.unavailable_reason(),
                       galera.unavailable_reason(),
                       haproxy.unavailable_reason()):
            if reason:
                self.skipTest(reason)

    def test_prints_one_json_object_of_exact_runs(self):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            status = ha.main(['--limit', '5', '--requests', '8',
                              '--threads', '4', '--rounds', '1',
                              '--failover-limit', '6'])
        self.assertEqual(0, status, err.getvalue())
        lines = out.getvalue().splitlines()
        self.assertEqual(1, len(lines), lines)
        result = json.loads(lines[0])
        self.assertEqual(['failover', 'topologies'], sorted(result))
        self.assertEqual(
            ['mariadb', 'galera-single-writer', 'galera-multi-writer'],
            [t['name'] for t in result['topologies']])
        for topology in result['topologies']:
            self.assertEqual(
                ['admissions_per_s', 'admitted', 'exact', 'limit', 'name',
                 'p50_ms', 'p99_ms'], sorted(topology))
            self.assertEqual((5, 5, True), (topology['admitted'],
                                            topology['limit'],
                                            topology['exact']), topology)
        failover = result['failover']
        self.assertEqual(['answered_2xx', 'exact', 'gap_s', 'lost'],
                         sorted(failover))
        self.assertEqual((6, 0, True), (failover['answered_2xx'],
                                        failover['lost'],
                                        failover['exact']), failover)
        self.assertGreater(failover['gap_s'], 0)
