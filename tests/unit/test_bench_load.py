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
"""tools/bench/load.py: what counts as an error, its figures (latency,
RSS growth, lost leases), its goal and its service's configuration."""

import contextlib
import io
import os
import time

import fixtures
import testtools

from placement_quota import conf as pq_conf
from placement_quota import filters
from placement_quota.filters import chain as chain_mod
from tools.bench import load as bench
from tools.bench import policies


class TestCommandLine(testtools.TestCase):

    def parse(self, *argv):
        with contextlib.redirect_stderr(io.StringIO()):
            return bench.parse_args(list(argv))

    def test_the_defaults_are_the_issues_burst(self):
        args = self.parse()
        self.assertEqual((50, 60, 2, 10000, 100),
                         (args.clients, args.seconds, args.workers,
                          args.leases, args.hosts))

    def test_no_clients_is_refused(self):
        self.assertRaises(SystemExit, self.parse, '--clients', '0')


class TestErrors(testtools.TestCase):

    def test_a_2xx_is_no_error(self):
        self.assertFalse(bench.is_error(204, b''))
        self.assertFalse(bench.is_error(200, b'{}'))

    def test_a_denial_with_its_message_is_no_error(self):
        self.assertFalse(bench.is_error(403, b'{"message": "over quota"}'))

    def test_a_403_without_a_message_is_an_error(self):
        self.assertTrue(bench.is_error(403, b'{}'))
        self.assertTrue(bench.is_error(403, b'{"message": ""}'))
        self.assertTrue(bench.is_error(403, b'<html>forbidden</html>'))
        self.assertTrue(bench.is_error(403, b'[]'))

    def test_other_statuses_are_errors(self):
        for status in (400, 409, 500, 503):
            self.assertTrue(bench.is_error(status, b'{"message": "x"}'))

    def test_only_a_2xx_admits(self):
        self.assertEqual([True, True, False, False],
                         [bench.is_admitted(s)
                          for s in (200, 204, 403, 'timeout')])

    def test_no_answer_is_an_error(self):
        self.assertTrue(bench.is_error('timeout', b''))
        self.assertTrue(bench.is_error('RemoteDisconnected', b''))


class TestFigures(testtools.TestCase):

    def test_latency_percentiles(self):
        figures = bench.latency_figures([float(i) for i in range(1, 101)])
        self.assertEqual({'p50_ms': 50.5, 'p99_ms': 99.0, 'max_ms': 100.0},
                         figures)

    def test_no_answer_has_no_latency(self):
        self.assertIsNone(bench.latency_figures([])['p99_ms'])

    def test_vmrss_is_read_from_proc_status(self):
        text = 'Name:\tpython\nVmPeak:\t  9000 kB\nVmRSS:\t  102400 kB\n'
        self.assertEqual(100.0, bench.vmrss_mb(text))

    def test_the_growth_is_the_worst_workers_over_the_last_half(self):
        self.assertEqual(
            20.0, bench.rss_growth_pct({1: 100.0, 2: 50.0},
                                       {1: 105.0, 2: 60.0}))

    def test_a_shrinking_worker_grows_negatively(self):
        self.assertEqual(-10.0, bench.rss_growth_pct({1: 100.0}, {1: 90.0}))

    def test_a_worker_gone_at_the_end_is_unbounded_growth(self):
        self.assertEqual(float('inf'),
                         bench.rss_growth_pct({1: 100.0, 2: 100.0},
                                              {1: 100.0}))

    def test_no_worker_has_no_growth(self):
        self.assertIsNone(bench.rss_growth_pct({}, {}))


class TestLost(testtools.TestCase):

    def test_every_admitted_lease_once_loses_none(self):
        self.assertEqual(0, bench.count_lost(['a', 'b'], {'a': 1, 'b': 1}))

    def test_a_missing_and_a_duplicated_lease_are_lost(self):
        self.assertEqual(2, bench.count_lost(['a', 'b', 'c'],
                                             {'a': 1, 'b': 2}))

    def test_leases_not_admitted_do_not_count(self):
        self.assertEqual(0, bench.count_lost(['a'], {'a': 1, 'denied': 1}))


class TestGoal(testtools.TestCase):

    def test_a_clean_fast_flat_run_meets_it(self):
        self.assertTrue(bench.goal_met(0, 499.0, 9.9, 0))

    def test_each_goal_missed_misses_it(self):
        for figures in ((1, 100.0, 0.0, 0), (0, 500.0, 0.0, 0),
                        (0, 100.0, 10.0, 0), (0, 100.0, 0.0, 1),
                        (0, None, 0.0, 0), (0, 100.0, None, 0)):
            self.assertFalse(bench.goal_met(*figures), figures)


class TestBudget(testtools.TestCase):

    def test_it_stops_at_its_count(self):
        budget = bench.Budget(2, time.monotonic() + 60)
        self.assertEqual([True, True, False],
                         [budget.take() for _ in range(3)])

    def test_it_stops_at_its_deadline(self):
        self.assertFalse(bench.Budget(10, time.monotonic() - 1).take())


class TestConfiguration(testtools.TestCase):

    def test_the_service_reads_the_policies_options_from_its_file(self):
        directory = self.useFixture(fixtures.TempDir()).path
        settings = policies.options(policies.write_files(
            directory, {'root-0': None}))
        settings[('api', 'workers')] = 2
        path = os.path.join(directory, 'test.conf')
        with open(path, 'w') as f:
            f.write(bench.ini_text(settings))
        conf = pq_conf.new_config([], config_files=[path])
        chain_mod.register_filter_opts(conf, filters.all_filters)
        self.assertEqual(
            (policies.FILTERS, {'VCPU': '0.1'}, 604800, 2),
            (conf.enforcement.enabled_filters,
             conf.enforcement.credit_class_rates,
             conf.enforcement.reservation_max_length, conf.api.workers))
