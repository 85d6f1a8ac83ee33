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
"""Smoke test of tools/bench/reconcile.py on 60 hosts (it starts its own
Placement subprocess; timings are not checked)."""

import contextlib
import io
import json

import testtools

from tools.bench import reconcile


class TestReconcileBench(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            cls.status = reconcile.main(['--hosts', '60', '--rounds', '1',
                                         '--naive-sample', '0'])
        cls.lines = out.getvalue().splitlines()
        cls.err = err.getvalue()

    def result(self):
        self.assertEqual(0, self.status, self.err)
        return json.loads(self.lines[0])

    def test_finds_exactly_the_seeded_drift(self):
        self.assertEqual({'missing_provider': 5, 'inventory_mismatch': 5,
                          'orphan_provider': 5, 'ended_inventory': 1,
                          'orphan_class': 1}, self.result()['findings'])

    def test_ours_reads_one_call_per_provider_plus_listings(self):
        # The version document, 3 listings, the inventories of the
        # 60 - 5 + 5 reservation providers written to (ghosts never are:
        # 55), the allocations of
        # those with an inventory (12 hosts reserved minus 5 without a
        # provider, plus the ended one).
        self.assertEqual(1 + 3 + 55 + 8, self.result()['ours']['calls'])

    def test_naive_makes_six_calls_per_reserved_host(self):
        naive = self.result()['naive']
        # The version document, the class list, 6 per host with a
        # reservation provider, 3 per host without.
        self.assertEqual(2 + 6 * 55 + 3 * 5, naive['calls'])
        self.assertFalse(naive['extrapolated'])
