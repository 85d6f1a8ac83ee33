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
"""``placement-quota warn``, ``warnings list`` and ``warnings preview``,
run as the real commands against a SQLite ledger."""

import json

from placement_quota.ledger import models
from placement_quota.ledger import store
from tests.functional.cmd import test_cli_ledger


class WarningsCLITestCase(test_cli_ledger.LedgerCLITestCase):

    def setUp(self):
        super().setUp()
        ledger = store.Ledger(self.url)
        self.addCleanup(ledger.dispose)
        with ledger.transaction(['p1']) as txn:
            allocation = txn.add_allocation('p1', store.to_micro(100))
            txn.charge('p1', None, allocation, store.to_micro(95),
                       models.CHARGE_CREATE)

    def listed(self, *args):
        result = self.run_cli('warnings', 'list', '-f', 'json', *args)
        self.assertEqual(0, result.returncode, result.stderr)
        return json.loads(result.stdout)


class TestPreview(WarningsCLITestCase):

    def test_preview_shows_the_warning_due_with_its_subject(self):
        result = self.run_cli('warnings', 'preview', '-f', 'json')
        self.assertEqual(0, result.returncode, result.stderr)
        [found] = json.loads(result.stdout)
        self.assertEqual(('credits', 'p1', 'credits:1:90'),
                         (found['Kind'], found['Project'], found['Key']))
        self.assertIn('used 95% of its credits', found['Subject'])

    def test_preview_records_nothing(self):
        self.run_cli('warnings', 'preview')
        self.assertEqual([], self.listed())


class TestWarn(WarningsCLITestCase):

    def test_one_pass_without_channels_records_the_warning_pending(self):
        result = self.run_cli('warn', '--once')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertIn('Warnings: 1 recorded, 0 sent', result.stdout)
        [listed] = self.listed()
        self.assertEqual(('credits', 'p1', 'pending'),
                         (listed['Kind'], listed['Project'],
                          listed['State']))

    def test_email_without_an_smtp_host_exits_2_naming_the_option(self):
        self.conf = self.config('[ledger]\nconnection = %s\n[warnings]\n'
                                'channels = email\nmail_from = a@b.c\n'
                                % self.url)
        self.assertBadInput(self.run_cli('warn', '--once'),
                            'channels has "email" but smtp_host is not set')

    def test_an_unknown_channel_exits_2_naming_it(self):
        self.conf = self.config('[ledger]\nconnection = %s\n[warnings]\n'
                                'channels = pigeon\n' % self.url)
        self.assertBadInput(self.run_cli('warn', '--once'), 'pigeon')


class TestList(WarningsCLITestCase):

    def test_an_unknown_state_exits_2_naming_the_choices(self):
        self.assertBadInput(self.run_cli('warnings', 'list', '--state',
                                         'lost'), 'lost', 'pending')

    def test_a_limit_below_one_exits_2(self):
        self.assertBadInput(self.run_cli('warnings', 'list', '--limit', '0'),
                            '--limit')
