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
"""What a new operator meets first: bare dates in ``--start``/``--end``, an
empty ``credits list`` said in words, a deleted account's error naming the
command that brings it back, and the progress bar of ``account move`` on a
terminal. The real command, on a SQLite ledger and (for the move) the
shared Placement server."""

import json
import os
import pty
import subprocess
import sys
import uuid

from placement_quota.accounts import service
from placement_quota.ledger import store
from placement_quota.placement import client as placement_client
from tests.fixtures import placement as placement_fixtures
from tests.functional.api import test_admin_gabbi as seeds
from tests.functional.cmd.test_cli import CLITestCase
from tests.functional.cmd.test_cli import command
from tests.functional.cmd.test_cli import TIMEOUT


class LedgerCLITestCase(CLITestCase):

    def setUp(self):
        super().setUp()
        self.ledger_url = 'sqlite:///%s' % os.path.join(self.dir,
                                                        'ledger.sqlite')
        self.conf = self.config('[ledger]\nconnection = %s\n'
                                % self.ledger_url)

    def run_cli(self, *args):
        return command(*args, config=self.conf)

    def assertBadInput(self, result, *needles):
        self.assertEqual(2, result.returncode, result.stdout)
        for needle in needles:
            self.assertIn(needle, result.stderr)
        self.assertNotIn('Traceback', result.stderr)
        lines = [line for line in result.stderr.splitlines()
                 if line.startswith('placement-quota: ')]
        self.assertEqual(1, len(lines), result.stderr)


class TestBareDates(LedgerCLITestCase):

    def test_a_bare_date_is_its_midnight_utc(self):
        result = self.run_cli('credits', 'add', 'p1', '--amount', '5',
                              '--start', '2027-01-01', '--end',
                              '2027-02-01', '-f', 'json')
        self.assertEqual(0, result.returncode, result.stderr)
        shown = json.loads(result.stdout)
        self.assertEqual(('2027-01-01T00:00:00', '2027-02-01T00:00:00'),
                         (shown['start'], shown['end']))

    def test_an_impossible_bare_date_names_the_option_and_value(self):
        self.assertBadInput(self.run_cli('usage', 'show', 'p1', '--end',
                                         '2027-02-30'),
                            '--end "2027-02-30"', 'not a valid date')


class TestCreditsList(LedgerCLITestCase):

    def test_a_project_without_allocation_is_said_on_stderr(self):
        result = self.run_cli('credits', 'list', 'p9', '-f', 'json')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual([], json.loads(result.stdout))
        self.assertIn('Project p9 has no credit allocation', result.stderr)


class TestDeletedAccount(LedgerCLITestCase):

    def test_the_error_names_the_command_that_restores_it(self):
        ledger = store.Ledger(self.ledger_url)
        self.addCleanup(ledger.dispose)
        accounts = service.Accounts(ledger)
        accounts.put("Bob's team", {})
        accounts.delete("Bob's team")
        result = self.run_cli('account', 'delete', "Bob's team")
        self.assertBadInput(
            result, 'was deleted at', 'restore it with: placement-quota '
            'account recover \'Bob\'"\'"\'s team\'')


def run_on_a_terminal(argv):
    """Run ``argv`` with its stderr on a pseudo-terminal; ``(exit status,
    stdout, what the terminal received)``."""
    master, slave = pty.openpty()
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    received = b''
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:     # EIO: the child closed the terminal
            break
        if not chunk:
            break
        received += chunk
    os.close(master)
    stdout = process.communicate(timeout=TIMEOUT)[0]
    return process.returncode, stdout.decode(), received.decode()


class TestMoveProgress(CLITestCase):

    def setUp(self):
        super().setUp()
        server = self.useFixture(placement_fixtures.PlacementServer())
        client = placement_client.PlacementClient.from_endpoint(
            server.endpoint, server.headers)
        run = uuid.uuid4().hex[:8]
        node = seeds.seed_provider(client, 'cn-progress-%s' % run,
                                   {'VCPU': 64})
        self.source, self.dest = 'src-%s' % run, 'dst-%s' % run
        for _ in range(3):
            seeds.seed_consumer(client, node, self.source, {'VCPU': 1})
        self.conf = self.config(
            '[ledger]\nconnection = sqlite:///%s\n'
            '[placement]\nauth_type = admin_token\nendpoint = %s\n'
            'token = admin\n'
            % (os.path.join(self.dir, 'ledger.sqlite'), server.endpoint))
        ledger = store.Ledger('sqlite:///%s' % os.path.join(
            self.dir, 'ledger.sqlite'))
        self.addCleanup(ledger.dispose)
        for account in (self.source, self.dest):
            service.Accounts(ledger).put(account, {})

    def argv(self, *extra):
        return [sys.executable, '-m', 'placement_quota.cmd.main',
                '--config-file', self.conf, 'account', 'move', self.source,
                '--dest', self.dest, '-f', 'json'] + list(extra)

    def test_a_terminal_shows_a_bar_over_the_consumers(self):
        status, stdout, terminal = run_on_a_terminal(self.argv())
        self.assertEqual(0, status, terminal)
        # The bar runs over every consumer Placement holds (the shared
        # Placement has other tests' too) and ends full.
        self.assertRegex(terminal, r'\rReading consumers \[#{30}\] '
                                   r'(\d+)/\1\r\n')
        self.assertEqual(3, json.loads(stdout)['resources']['consumers'])

    def test_quiet_on_a_terminal_shows_no_bar(self):
        status, _, terminal = run_on_a_terminal(self.argv('-q'))
        self.assertEqual(0, status, terminal)
        self.assertNotIn('Reading consumers', terminal)

    def test_without_a_terminal_there_is_no_bar(self):
        result = subprocess.run(self.argv(), capture_output=True, text=True,
                                timeout=TIMEOUT)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertNotIn('Reading consumers', result.stderr)
        self.assertIn('Moved 3 consumer(s) and 0 lease(s) from %s to %s\n'
                      % (self.source, self.dest), result.stderr)
