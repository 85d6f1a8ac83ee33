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
"""No test reads the user's state, and ``--limits-file`` is the only
limits source when given.

A decoy user's home holds a ledger with accounts (as a normal local run
of ``placement-quota account set`` leaves it); the commands the tests run
never see them."""

import os
import subprocess
import sys

import tests
from tests.functional.cmd import test_cli
from tests.functional.cmd import test_cli_tree

TIMEOUT = test_cli.TIMEOUT

LIMITS = test_cli_tree.SPEC


def run(*args, env=None):
    return subprocess.run(
        [sys.executable, '-m', 'placement_quota.cmd.main'] + list(args),
        capture_output=True, text=True, timeout=TIMEOUT,
        env=dict(os.environ, **(env or {})))


class TestHermetic(test_cli.CLITestCase):

    def setUp(self):
        super().setUp()
        # The user's home as a local run leaves it: accounts in the
        # default ledger (~/.local/state/placement-quota/ledger.sqlite).
        self.decoy = os.path.join(self.dir, 'decoy-home')
        os.makedirs(self.decoy)
        user = {'HOME': self.decoy, 'XDG_STATE_HOME': ''}
        for account in ('A', 'B'):
            result = run('account', 'set', account, '--embedded',
                         '--limit', 'hosts=1',
                         *(['--parent', 'A'] if account == 'B' else []),
                         env=user)
            self.assertEqual(0, result.returncode, result.stderr)
        self.assertTrue(os.path.exists(os.path.join(
            self.decoy, '.local', 'state', 'placement-quota',
            'ledger.sqlite')))

    def test_the_test_process_has_a_private_home(self):
        self.assertEqual((tests.HOME, os.path.join(tests.HOME, 'state')),
                         (os.environ['HOME'], os.environ['XDG_STATE_HOME']))

    def test_a_command_run_by_the_tests_never_sees_the_users_accounts(self):
        result = run('account', 'list', '-f', 'value',
                     env={'HOME': self.decoy})
        self.assertEqual((0, ''), (result.returncode, result.stdout),
                         result.stderr)

    def test_the_users_accounts_are_there_for_the_user(self):
        result = run('account', 'list', '-f', 'value', '-c', 'ID',
                     env={'HOME': self.decoy, 'XDG_STATE_HOME': ''})
        self.assertEqual(['A', 'B'], sorted(result.stdout.split()),
                         result.stderr)


class TestLimitsFileAlone(test_cli.CLITestCase):
    """Accounts in the configured ledger (limit hosts=1 on A) and a limits
    file (cores only): ``--limits-file`` shows the file's tree alone."""

    def setUp(self):
        super().setUp()
        result = run('account', 'set', 'A', '--embedded', '--limit',
                     'hosts=1')
        self.assertEqual(0, result.returncode, result.stderr)
        self.limits = self.write('limits.yaml', LIMITS)

    def test_limits_file_is_the_only_source(self):
        result = run('tree', 'show', 'A', '--limits-file', self.limits)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertNotIn('hosts', result.stdout)

    def test_with_accounts_lays_the_accounts_over_the_file(self):
        result = run('tree', 'show', 'A', '--limits-file', self.limits,
                     '--with-accounts')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertIn('hosts', result.stdout)
