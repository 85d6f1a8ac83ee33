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
"""tools/bench/warnings.py: its command line, its goals, and a tiny run
that prints every figure of its JSON object."""

import contextlib
import io
import json

import testtools

from tools.bench import warnings as bench

KEYS = ('leases', 'projects', 'scan_s', 'scan_queries', 'sent',
        'sent_per_s', 'duplicates')


class TestCommandLine(testtools.TestCase):

    def parse(self, *argv):
        with contextlib.redirect_stderr(io.StringIO()):
            return bench.parse_args(list(argv))

    def test_the_defaults_are_the_issues_ledger(self):
        args = self.parse()
        self.assertEqual((100000, 10000, 2000, 2, None),
                         (args.leases, args.projects, args.send,
                          args.workers, args.ledger_url))

    def test_send_zero_means_the_scan_alone(self):
        self.assertEqual(0, self.parse('--send', '0').send)

    def test_a_negative_send_is_refused(self):
        self.assertRaises(SystemExit, self.parse, '--send', '-1')

    def test_more_projects_than_leases_is_refused(self):
        self.assertRaises(SystemExit, self.parse, '--leases', '10',
                          '--projects', '20')


class TestGoals(testtools.TestCase):

    def test_a_fast_scan_of_a_fixed_number_of_statements_meets_them(self):
        self.assertTrue(bench.judge(1.9, 7, 7, 0)['goal_met'])

    def test_a_scan_of_two_seconds_misses_them(self):
        self.assertFalse(bench.judge(2.0, 7, 7, 0)['goal_met'])

    def test_statements_growing_with_the_projects_miss_them(self):
        self.assertFalse(bench.judge(0.1, 8, 7, 0)['goal_met'])

    def test_a_duplicate_misses_them(self):
        self.assertFalse(bench.judge(0.1, 7, 7, 1)['goal_met'])

    def test_a_duplicate_is_wrong_whatever_the_speed(self):
        self.assertEqual(['1 duplicate message(s)'], bench.wrong(
            {'duplicates': 1, 'sent': 2, 'warnings_received': 2,
             'rescan_found': 0}))

    def test_a_warning_sent_and_not_received_is_wrong(self):
        self.assertEqual(['2 warnings sent, 1 received'], bench.wrong(
            {'duplicates': 0, 'sent': 2, 'warnings_received': 1,
             'rescan_found': 0}))

    def test_duplicates_are_the_messages_of_a_warning_received_before(self):
        self.assertEqual((4, 2, 2),
                         bench.received(4, ['credits:1:90', 'credits:1:90',
                                            'lease_end:2', 'credits:1:90']))


class TestTinyRun(testtools.TestCase):

    def test_it_prints_the_figures_with_no_duplicate(self):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(
                err):
            status = bench.main(['--leases', '200', '--projects', '20',
                                 '--send', '10'])
        self.assertEqual(0, status, err.getvalue())
        result = json.loads(out.getvalue())
        self.assertEqual([], [k for k in KEYS if k not in result])
        self.assertEqual((200, 20, 0), (result['leases'], result['projects'],
                                        result['duplicates']))
        self.assertEqual(result['scan_queries'],
                         result['scan_queries_small'])
        self.assertGreater(result['found'], 0)
        self.assertEqual(min(10, result['found']), result['sent'])
        self.assertEqual(result['sent'], result['warnings_received'])
        self.assertEqual(0, result['rescan_found'])
        self.assertIn('duplicates (goal 0)', err.getvalue())
