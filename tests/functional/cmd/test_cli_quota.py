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
"""``placement-quota quota refresh``: the projects' generations move in
the ledger, so every service process reads their Nova quota again."""

import json
import os

from placement_quota.ledger import store
from tests.functional.cmd import test_cli


class TestQuotaRefresh(test_cli.CLITestCase):

    def setUp(self):
        super().setUp()
        self.url = 'sqlite:///%s' % os.path.join(self.dir, 'ledger.sqlite')
        self.conf = self.config('[database]\nconnection = %s\n' % self.url)

    def refresh(self, *projects):
        return test_cli.command('quota', 'refresh', *projects, '-f', 'json',
                                config=self.conf)

    def test_each_refresh_moves_each_named_projects_generation(self):
        self.refresh('p1')
        result = self.refresh('p1', 'p2')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual([{'project': 'p1', 'generation': 2},
                          {'project': 'p2', 'generation': 1}],
                         json.loads(result.stdout))

    def test_the_generation_is_the_ledgers(self):
        self.refresh('p1')
        ledger = store.Ledger(self.url)
        self.addCleanup(ledger.dispose)
        with ledger.reader() as txn:
            self.assertEqual(1, txn.generation('p1'))

    def test_an_empty_project_is_a_clean_error(self):
        result = self.refresh(' ')
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertIn('project must not be empty', result.stderr)
        self.assertNotIn('Traceback', result.stderr)


class TestCreditsShare(test_cli.CLITestCase):
    """``placement-quota credits share``: a user's cap inside a project's
    credits (the filter's side: tests/unit/filters/test_credit_share.py)."""

    def setUp(self):
        super().setUp()
        self.url = 'sqlite:///%s' % os.path.join(self.dir, 'ledger.sqlite')
        self.conf = self.config('[database]\nconnection = %s\n' % self.url)

    def test_the_share_is_set_and_shown_with_what_was_spent(self):
        result = test_cli.command('credits', 'share', 'p1', 'alice',
                                  '--amount', '30', '-f', 'json',
                                  config=self.conf)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual({'project': 'p1', 'user': 'alice', 'share': 30.0,
                          'spent': 0.0}, json.loads(result.stdout))

    def test_a_negative_share_is_a_clean_error(self):
        result = test_cli.command('credits', 'share', 'p1', 'alice',
                                  '--amount', '-1', config=self.conf)
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertIn('--amount must be between 0 and 1e12', result.stderr)
        self.assertNotIn('Traceback', result.stderr)
