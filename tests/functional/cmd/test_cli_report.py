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
"""``placement-quota report``: the command on a SQLite ledger holding
entries of two projects, one an account's child."""

import csv
import datetime
import io
import json
import os
import struct

from placement_quota.accounts import store as accounts_store
from placement_quota.cmd import report as report_cmd
from placement_quota.lease import amounts as accounting
from placement_quota.ledger import models
from placement_quota.ledger import report
from placement_quota.ledger import store
from tests.functional.cmd import test_cli


class ReportLedger(test_cli.CLITestCase):
    """physics (an account) and optics (its child) and biology hold one
    lease each, from 2026-06-02 12:00 for a day, of 1, 2 and 4 hosts."""

    def setUp(self):
        super().setUp()
        self.url = 'sqlite:///%s' % os.path.join(self.dir, 'ledger.sqlite')
        self.conf = self.config('[database]\nconnection = %s\n' % self.url)
        ledger = store.Ledger(self.url, migrate=True)
        self.addCleanup(ledger.dispose)
        with ledger.transaction() as txn:
            accounts_store.insert(txn.connection, 'physics', None, {}, {},
                                  txn.now)
            accounts_store.insert(txn.connection, 'optics', 'physics', {},
                                  {}, txn.now)
        for project, user, hosts in (('physics', 'alice', 1),
                                     ('optics', 'bob', 2),
                                     ('biology', 'carol', 4)):
            start = datetime.datetime(2026, 6, 2, 12)
            with ledger.transaction([project]) as txn:
                txn.insert(project_id=project, lease_id=None,
                           provisional_key='k', name='n', user_id=user,
                           start_date=start,
                           end_date=start + datetime.timedelta(days=1),
                           state=models.PENDING,
                           amounts={accounting.HOSTS: hosts},
                           lease={'reservations': []}, hourly_rate=0,
                           charged=0)

    def report(self, *args):
        return test_cli.command('report', '--start', '2026-06-01', '--end',
                                '2026-07-01', *args, config=self.conf)


class TestReport(ReportLedger):

    def hours(self, *args):
        result = self.report('-f', 'json', *args)
        self.assertEqual(0, result.returncode, result.stderr)
        return {row['group']: row['host_hours']
                for row in json.loads(result.stdout)}

    def test_every_project_by_default(self):
        self.assertEqual({'biology': 96.0, 'optics': 48.0, 'physics': 24.0},
                         self.hours())

    def test_an_account_counts_its_children(self):
        self.assertEqual({'optics': 48.0, 'physics': 24.0},
                         self.hours('--account', 'physics'))

    def test_one_user_by_day(self):
        self.assertEqual({'2026-06-02': 24.0, '2026-06-03': 24.0},
                         {k: v for k, v in self.hours(
                             '--user', 'bob', '--by', 'day').items() if v})

    def test_by_resource_type_a_lease_without_reservations_is_a_dash(self):
        self.assertEqual({'-': 168.0}, self.hours('--by', 'resource-type'))

    def test_csv_has_a_header_and_a_row_a_group(self):
        result = self.report('-f', 'csv', '--by', 'total')
        rows = list(csv.DictReader(io.StringIO(result.stdout)))
        self.assertEqual([('total', '168.0')],
                         [(r['group'], r['host_hours']) for r in rows])

    def table_header(self, *args):
        result = self.report(*args)
        self.assertEqual(0, result.returncode, result.stderr)
        header = result.stdout.splitlines()[1]
        return tuple(cell.strip() for cell in header.strip('|').split('|'))

    def test_the_table_has_the_essential_columns(self):
        self.assertEqual(report_cmd.TABLE_COLUMNS, self.table_header())

    def test_long_puts_every_column_in_the_table(self):
        self.assertEqual(report.COLUMNS, self.table_header('--long'))

    def test_an_unknown_account_is_a_clean_error(self):
        result = self.report('--account', 'nobody')
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertIn("no account 'nobody'", result.stderr)

    def test_an_end_before_the_start_is_a_clean_error(self):
        result = test_cli.command('report', '--start', '2026-07-01',
                                  '--end', '2026-06-01', config=self.conf)
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertIn('--end (2026-06-01) must be after --start',
                      result.stderr)
        self.assertNotIn('Traceback', result.stderr)

    def test_a_date_that_is_no_date_is_a_clean_error(self):
        result = test_cli.command('report', '--start', 'June', '--end',
                                  '2026-06-01', config=self.conf)
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertIn('--start', result.stderr)
        self.assertNotIn('Traceback', result.stderr)


def png_size(path):
    """``(width, height)`` from a PNG's IHDR chunk."""
    with open(path, 'rb') as f:
        head = f.read(24)
    assert head[:8] == b'\x89PNG\r\n\x1a\n', head[:8]
    return struct.unpack('>II', head[16:24])


class TestReportCharts(ReportLedger):

    def test_a_chart_is_a_png_of_the_figures_size(self):
        chart = os.path.join(self.dir, 'usage.png')
        result = self.report('--by', 'day', '--account', 'physics',
                             '--chart', chart)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual((1000, 700), png_size(chart))

    def test_the_charted_series_are_the_reports_numbers(self):
        data = os.path.join(self.dir, 'usage.csv')
        result = self.report('--by', 'day', '-f', 'json', '--chart-data',
                             data)
        rows = {r['group']: r for r in json.loads(result.stdout)}
        with open(data) as f:
            points = list(csv.DictReader(f))
        self.assertEqual(30, len(points))
        for point in points:
            # Whole days: the average is the day's hours over 24.
            self.assertEqual(rows[point['group']]['host_hours'] / 24,
                             float(point['average_hosts']))
        self.assertEqual({'2026-06-02': 3.5, '2026-06-03': 3.5},
                         {p['group']: float(p['average_hosts'])
                          for p in points if float(p['average_hosts'])})

    def test_an_svg_chart_is_svg(self):
        chart = os.path.join(self.dir, 'usage.svg')
        result = self.report('--by', 'week', '--chart', chart)
        self.assertEqual(0, result.returncode, result.stderr)
        with open(chart) as f:
            self.assertIn('<svg', f.read(2000))

    def test_a_chart_needs_a_report_over_time(self):
        result = self.report('--chart', os.path.join(self.dir, 'x.png'))
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertIn('need --by day, week or month', result.stderr)

    def test_a_chart_file_of_another_kind_is_a_clean_error(self):
        result = self.report('--by', 'day', '--chart',
                             os.path.join(self.dir, 'usage.gif'))
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertIn('.png or .svg', result.stderr)
        self.assertNotIn('Traceback', result.stderr)


class TestReportBounds(ReportLedger):

    def test_a_report_of_too_many_days_is_a_clean_error(self):
        result = test_cli.command('report', '--start', '1970-01-01',
                                  '--end', '3000-01-01', '--by', 'day',
                                  config=self.conf)
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertIn('at most 1000 rows', result.stderr)
        self.assertNotIn('Traceback', result.stderr)


class TestChartLimits(ReportLedger):

    def test_the_charted_limit_follows_the_accounts_history(self):
        ledger = store.Ledger(self.url)
        self.addCleanup(ledger.dispose)
        for day, hosts in ((10, 5), (20, 8)):
            with ledger.transaction() as txn:
                accounts_store.update(txn.connection, 'physics', None,
                                      {'hosts': hosts}, {},
                                      datetime.datetime(2026, 6, day))
        data = os.path.join(self.dir, 'limits.csv')
        result = self.report('--account', 'physics', '--by', 'day',
                             '--chart-data', data)
        self.assertEqual(0, result.returncode, result.stderr)
        with open(data) as f:
            limits = {row['group']: row['limit_hosts']
                      for row in csv.DictReader(f)}
        # Before the history starts: the limit now (8).
        self.assertEqual(('8', '5', '5', '8'),
                         (limits['2026-06-09'], limits['2026-06-10'],
                          limits['2026-06-19'], limits['2026-06-20']))


class TestLimitsFromTheLimitsSource(ReportLedger):
    """By project, a project that is no account of the admin API (and a
    resource its account does not limit) has the limit ``[limits]``
    holds now, labelled ``now``."""

    def limits_file(self, document):
        path = os.path.join(self.dir, 'limits.json')
        with open(path, 'w') as f:
            json.dump(document, f)
        self.conf = self.config('[database]\nconnection = %s\n[limits]\n'
                                'limits_file = %s\n' % (self.url, path))

    def rows(self, *args):
        result = self.report('-f', 'json', *args)
        self.assertEqual(0, result.returncode, result.stderr)
        return {row['group']: row for row in json.loads(result.stdout)}

    def test_a_project_that_is_no_account_has_its_limit_in_the_file(self):
        self.limits_file({'projects': {'biology': {'limits': {'hosts': 8}}}})
        biology = self.rows()['biology']
        self.assertEqual((8, 'now', 0.5),
                         (biology['limit_hosts'], biology['limit_hosts_as_of'],
                          biology['peak_hosts_share']))

    def test_a_project_the_file_does_not_name_has_the_registered_limit(self):
        self.limits_file({'registered_limits': {'instances': 20}})
        biology = self.rows()['biology']
        self.assertEqual((20, 'now'), (biology['limit_instances'],
                                       biology['limit_instances_as_of']))

    def test_a_childs_limit_is_capped_at_its_parents(self):
        self.limits_file({'projects': {
            'life': {'limits': {'hosts': 3}},
            'biology': {'parent': 'life', 'limits': {'hosts': 8}}}})
        self.assertEqual(3, self.rows()['biology']['limit_hosts'])

    def test_an_unlimited_resource_has_no_limit(self):
        self.limits_file({'registered_limits': {'hosts': -1}})
        biology = self.rows()['biology']
        self.assertEqual((None, None, None),
                         (biology['limit_hosts'], biology['limit_hosts_as_of'],
                          biology['peak_hosts_share']))

    def physics_limits_hosts_to_5(self):
        ledger = store.Ledger(self.url)
        self.addCleanup(ledger.dispose)
        with ledger.transaction() as txn:
            accounts_store.update(txn.connection, 'physics', None,
                                  {'hosts': 5}, {}, txn.now)

    def test_an_accounts_own_limit_wins_over_the_file(self):
        self.physics_limits_hosts_to_5()
        self.limits_file({'registered_limits': {'hosts': 10}})
        rows = self.rows()
        self.assertEqual((5, 10), (rows['physics']['limit_hosts'],
                                   rows['biology']['limit_hosts']))

    def test_a_child_account_without_a_limit_is_capped_at_its_parents(self):
        self.physics_limits_hosts_to_5()
        self.limits_file({'registered_limits': {'hosts': 10}})
        self.assertEqual(5, self.rows()['optics']['limit_hosts'])

    def test_the_chart_of_a_project_that_is_no_account_draws_its_limit(self):
        self.limits_file({'projects': {'biology': {'limits': {'hosts': 8}}}})
        data = os.path.join(self.dir, 'limits.csv')
        result = self.report('--project', 'biology', '--by', 'week',
                             '--chart-data', data)
        self.assertEqual(0, result.returncode, result.stderr)
        with open(data) as f:
            self.assertEqual({'8'}, {row['limit_hosts']
                                     for row in csv.DictReader(f)})

    def test_a_limits_file_that_cannot_be_read_is_a_clean_error(self):
        self.conf = self.config('[database]\nconnection = %s\n[limits]\n'
                                'limits_file = %s\n' % (
                                    self.url,
                                    os.path.join(self.dir, 'missing.yaml')))
        result = self.report()
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertIn('cannot read the limits', result.stderr)
        self.assertNotIn('Traceback', result.stderr)

    def test_a_report_not_by_project_reads_no_limits(self):
        self.conf = self.config('[database]\nconnection = %s\n[limits]\n'
                                'limits_file = %s\n' % (
                                    self.url,
                                    os.path.join(self.dir, 'missing.yaml')))
        self.assertEqual(0, self.report('--by', 'total').returncode)
