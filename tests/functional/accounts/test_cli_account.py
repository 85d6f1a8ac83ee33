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
"""``placement-quota account ...``, run as an operator runs it, on a
SQLite ledger and the embedded Placement (the real openstack-placement in
the command's process)."""

import json
import os

from tests.functional.cmd.test_cli import CLITestCase
from tests.functional.cmd.test_cli import command


class AccountCLITestCase(CLITestCase):

    def setUp(self):
        super().setUp()
        self.conf = self.config(
            '[ledger]\nconnection = sqlite:///%s\n'
            '[placement]\nembedded = true\nembedded_state_dir = %s\n'
            % (os.path.join(self.dir, 'ledger.sqlite'),
               os.path.join(self.dir, 'placement')))

    def run_cli(self, *args):
        return command(*args, config=self.conf)

    def assertBadInput(self, result, *needles):
        self.assertEqual(2, result.returncode, result.stdout)
        for needle in needles:
            self.assertIn(needle, result.stderr)
        self.assertNotIn('Traceback', result.stderr)


class TestAccountCommands(AccountCLITestCase):

    def test_set_creates_an_account_that_show_prints(self):
        created = self.run_cli('account', 'set', "Bob's Account", '--limit',
                               'class:VCPU=10', '--property', 'tier=gold')
        self.assertEqual(0, created.returncode, created.stderr)
        shown = self.run_cli('account', 'show', "Bob's Account", '-f',
                             'json')
        document = json.loads(shown.stdout)
        self.assertEqual(({'class:VCPU': 10}, {'tier': 'gold'}),
                         (document['limits'], document['metadata']))

    def test_set_changes_only_what_it_names(self):
        self.run_cli('account', 'set', 'a', '--limit', 'hosts=4',
                     '--property', 'tier=gold')
        self.run_cli('account', 'set', 'a', '--limit', 'instances=9')
        document = json.loads(self.run_cli('account', 'show', 'a', '-f',
                                           'json').stdout)
        self.assertEqual(({'hosts': 4, 'instances': 9}, {'tier': 'gold'}),
                         (document['limits'], document['metadata']))

    def test_a_child_limit_above_its_parent_is_refused(self):
        self.run_cli('account', 'set', 'parent', '--limit', 'hosts=4')
        result = self.run_cli('account', 'set', 'child', '--parent',
                              'parent', '--limit', 'hosts=5')
        self.assertBadInput(result, 'exceeds the limit of its parent')

    def test_a_limit_that_is_not_an_integer_is_refused(self):
        result = self.run_cli('account', 'set', 'a', '--limit', 'hosts=x')
        self.assertBadInput(result, '--limit hosts=x')

    def test_delete_then_recover_brings_the_account_back(self):
        self.run_cli('account', 'set', 'a')
        deleted = self.run_cli('account', 'delete', 'a')
        self.assertEqual(0, deleted.returncode, deleted.stderr)
        self.assertBadInput(self.run_cli('account', 'show', 'a'),
                            'can be recovered until')
        recovered = self.run_cli('account', 'recover', 'a', '-f', 'json')
        self.assertEqual('a', json.loads(recovered.stdout)['id'])

    def test_move_show_prints_the_etag_and_moves_nothing(self):
        self.run_cli('account', 'set', 'a')
        self.run_cli('account', 'set', 'b')
        result = self.run_cli('account', 'move', 'a', '--dest', 'b',
                              '--show', '-f', 'json')
        self.assertEqual(0, result.returncode, result.stderr)
        document = json.loads(result.stdout)
        self.assertRegex(document['etag'], r'^"[0-9a-f]{40}"$')
        self.assertEqual(0, document['resources']['size'])

    def test_move_with_a_stale_etag_is_refused(self):
        self.run_cli('account', 'set', 'a')
        self.run_cli('account', 'set', 'b')
        result = self.run_cli('account', 'move', 'a', '--dest', 'b',
                              '--if-match', '"stale"')
        self.assertBadInput(result, 'changed since its ETag')

    def test_list_prints_every_account(self):
        self.run_cli('account', 'set', 'a', '--limit', 'hosts=2')
        self.run_cli('account', 'set', 'b', '--parent', 'a')
        rows = json.loads(self.run_cli('account', 'list', '-f',
                                       'json').stdout)
        self.assertEqual([('a', None), ('b', 'a')],
                         [(r['ID'], r['Parent']) for r in rows])
