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
"""``placement-quota db sync``, ``credits add|list`` and ``usage show``,
run as the real command against a SQLite ledger."""

import datetime
import json
import os

import alembic.command
import alembic.script
import sqlalchemy as sa

from placement_quota.lease import amounts as accounting
from placement_quota.ledger import models
from placement_quota.ledger import store
from tests import builders
from tests.functional.cmd.test_cli import CLITestCase
from tests.functional.cmd.test_cli import command


class LedgerCLITestCase(CLITestCase):

    def setUp(self):
        super().setUp()
        self.url = 'sqlite:///%s' % os.path.join(self.dir, 'ledger.sqlite')
        self.conf = self.config('[ledger]\nconnection = %s\n' % self.url)

    def run_cli(self, *args):
        return command(*args, config=self.conf)

    def assertBadInput(self, result, *needles):
        self.assertEqual(2, result.returncode, result.stdout)
        for needle in needles:
            self.assertIn(needle, result.stderr)
        self.assertNotIn('Traceback', result.stderr)

    def record(self, project, start, end, amounts, state=models.PENDING):
        ledger = store.Ledger(self.url)
        self.addCleanup(ledger.dispose)
        with ledger.transaction([project]) as txn:
            txn.insert(project_id=project, provisional_key='k',
                       start_date=start, end_date=end, state=state,
                       amounts=amounts, lease={}, hourly_rate=0, charged=0)


class TestDbSync(LedgerCLITestCase):

    @staticmethod
    def head():
        return alembic.script.ScriptDirectory.from_config(
            store._alembic_config(None)).get_current_head()

    def test_sync_says_it_created_the_ledger_at_the_head_revision(self):
        result = self.run_cli('db', 'sync')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual('Created the ledger %s at schema revision %s.\n'
                         % (self.url, self.head()), result.stdout)

    def test_sync_twice_says_the_ledger_is_already_at_the_head(self):
        self.run_cli('db', 'sync')
        result = self.run_cli('db', 'sync')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual('The ledger %s is already at schema revision %s.\n'
                         % (self.url, self.head()), result.stdout)

    def test_sync_says_from_which_revision_it_upgraded(self):
        engine = sa.create_engine(self.url)
        self.addCleanup(engine.dispose)
        with engine.begin() as connection:
            alembic.command.upgrade(store._alembic_config(connection), '0002')
        result = self.run_cli('db', 'sync')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual('Upgraded the ledger %s from schema revision 0002 '
                         'to %s.\n' % (self.url, self.head()), result.stdout)

    def test_a_bad_connection_url_is_a_clear_error(self):
        conf = self.config('[ledger]\nconnection = nodb://x\n')
        result = command('db', 'sync', config=conf)
        self.assertBadInput(result, 'nodb://x')


class TestCredits(LedgerCLITestCase):

    def test_an_end_date_beyond_the_ledgers_range_is_bad_input(self):
        result = self.run_cli('credits', 'add', 'p1', '--amount', '250',
                              '--end', '9999-12-31 00:00')
        self.assertBadInput(result, '--end', '9999-12-31')

    def test_a_refused_su_factor_is_bad_input_for_check_create(self):
        body = {'context': builders.context('p1'),
                'lease': builders.lease(builders.day(2), builders.day(3),
                                        builders.hosts('h1',
                                                       su_factor=-1000))}
        conf = self.config(
            '[ledger]\nconnection = %s\ncount_host_resources = false\n'
            '[enforcement]\nenabled_filters = CreditFilter\n' % self.url)
        result = command('check', 'create',
                         self.write('lease.json', json.dumps(body)),
                         config=conf)
        self.assertBadInput(result, 'su_factor', '-1000')

    def test_add_then_list_shows_the_allocation(self):
        self.run_cli('credits', 'add', 'p1', '--amount', '250',
                     '--end', '2027-01-01 00:00')
        result = self.run_cli('credits', 'list', 'p1', '-f', 'json')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual([{'ID': 1, 'Amount': 250.0, 'Spent': 0.0,
                           'Remaining': 250.0, 'Start': None,
                           'End': '2027-01-01T00:00:00',
                           'Resource class': None}],
                         json.loads(result.stdout))

    def test_a_pool_is_listed_with_its_resource_class(self):
        self.run_cli('credits', 'add', 'p1', '--amount', '100',
                     '--resource-class', 'CUSTOM_GPU_A100')
        result = self.run_cli('credits', 'list', 'p1', '-f', 'json')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual([{'ID': 1, 'Amount': 100.0, 'Spent': 0.0,
                           'Remaining': 100.0, 'Start': None, 'End': None,
                           'Resource class': 'CUSTOM_GPU_A100'}],
                         json.loads(result.stdout))

    def test_a_bad_resource_class_is_refused_naming_the_option(self):
        self.assertBadInput(self.run_cli(
            'credits', 'add', 'p1', '--amount', '5', '--resource-class',
            'gpu'), '--resource-class', 'gpu')

    def test_negative_amount_is_refused_naming_the_option(self):
        self.assertBadInput(self.run_cli('credits', 'add', 'p1', '--amount',
                                         '-5'), '--amount', '-5')

    def test_bad_date_is_refused_naming_the_option(self):
        self.assertBadInput(self.run_cli('credits', 'add', 'p1', '--amount',
                                         '5', '--end', 'tomorrow'),
                            '--end', 'tomorrow')

    def test_end_before_start_is_refused(self):
        self.assertBadInput(self.run_cli(
            'credits', 'add', 'p1', '--amount', '5', '--start',
            '2027-01-02 00:00', '--end', '2027-01-01 00:00'),
            '--end', 'must be after --start')


class TestUsageShow(LedgerCLITestCase):

    def test_json_gives_the_peak_and_the_leases(self):
        self.run_cli('db', 'sync')
        self.record('p1', datetime.datetime(2030, 1, 1),
                    datetime.datetime(2030, 1, 3),
                    {accounting.HOSTS: 2})
        self.record('p1', datetime.datetime(2030, 1, 2),
                    datetime.datetime(2030, 1, 4),
                    {accounting.HOSTS: 3})
        result = self.run_cli('usage', 'show', 'p1', '-f', 'json')
        self.assertEqual(0, result.returncode, result.stderr)
        shown = json.loads(result.stdout)
        self.assertEqual({'resource': 'hosts', 'amount': 5,
                          'at': '2030-01-02T00:00:00',
                          'until': '2030-01-03T00:00:00'},
                         shown['peak_reserved']['hosts'])
        self.assertEqual(2, shown['leases_by_state']['pending'])
        self.assertEqual(2, len(shown['leases']))
        self.assertIsNone(shown['credits'])

    def test_without_dates_the_window_is_a_day_from_now_to_the_second(self):
        before = datetime.datetime.utcnow().replace(microsecond=0)
        result = self.run_cli('usage', 'show', 'p1', '-f', 'json')
        self.assertEqual(0, result.returncode, result.stderr)
        shown = json.loads(result.stdout)
        start = datetime.datetime.fromisoformat(shown['window_start'])
        end = datetime.datetime.fromisoformat(shown['window_end'])
        self.assertNotIn('.', shown['window_start'] + shown['window_end'])
        self.assertLessEqual(before, start)
        self.assertEqual(datetime.timedelta(days=1), end - start)

    def test_without_an_end_the_window_ends_with_the_last_lease(self):
        self.record('p1', datetime.datetime(2030, 1, 1),
                    datetime.datetime(2030, 1, 3), {accounting.HOSTS: 2})
        result = self.run_cli('usage', 'show', 'p1', '-f', 'json')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual('2030-01-03T00:00:00',
                         json.loads(result.stdout)['window_end'])

    def test_table_says_the_credit_balance(self):
        self.run_cli('credits', 'add', 'p1', '--amount', '10')
        result = self.run_cli('usage', 'show', 'p1')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertIn('10.00 left of 10.00', result.stdout)

    def test_window_end_before_start_is_refused(self):
        self.assertBadInput(self.run_cli(
            'usage', 'show', 'p1', '--start', '2030-01-02 00:00', '--end',
            '2030-01-01 00:00'), '--end must be after')
