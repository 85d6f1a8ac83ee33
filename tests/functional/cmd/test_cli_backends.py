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
"""No silent backend: which Placement and which ledger a command uses, and
what the configuration files hold that nothing reads."""

import os
import subprocess
import sys

import tests
from tests.fixtures import command_server
from tests.functional.cmd import test_cli

TIMEOUT = test_cli.TIMEOUT
NOT_CONFIGURED = 'placement-quota: no Placement is configured: set ' \
    '[placement] auth_type'


def run(*args, env=None):
    """``placement-quota ARGS`` (global options first), in a process of
    its own (:func:`tests.fixtures.command_server.run`)."""
    return command_server.run(list(args), timeout=TIMEOUT,
                              env=dict(os.environ, **(env or {})))


class BackendTestCase(test_cli.CLITestCase):

    def setUp(self):
        super().setUp()
        self.ledger = 'sqlite:///%s' % os.path.join(self.dir, 'ledger.sqlite')

    def conf(self, text, ledger=True):
        if ledger:
            text += '[database]\nconnection = %s\n' % self.ledger
        return self.config(text)

    def assertOneLineFailure(self, result, needle):
        self.assertEqual(2, result.returncode, result.stderr)
        self.assertNotIn('Traceback', result.stderr)
        lines = [line for line in result.stderr.splitlines()
                 if line.startswith('placement-quota: ')]
        self.assertEqual(1, len(lines), result.stderr)
        self.assertIn(needle, lines[0])


class TestNoSilentPlacement(BackendTestCase):

    def test_reconcile_without_placement_refuses_saying_what_to_set(self):
        result = run('--config-file', self.conf(''), 'reconcile')
        self.assertOneLineFailure(result, NOT_CONFIGURED)
        self.assertIn('[placement] embedded = true (or --embedded)',
                      result.stderr)
        self.assertNotIn('No drift', result.stderr)

    def test_a_misspelled_section_is_named_and_placement_still_refused(self):
        config = self.conf('[placment]\nauth_type = password\n')
        result = run('--config-file', config, 'reconcile')
        self.assertIn('%s: [placment] is not a known section' % config,
                      result.stderr)
        self.assertOneLineFailure(result, NOT_CONFIGURED)

    def test_tree_usage_from_placement_refuses_too(self):
        limits = self.write('limits.yaml', 'projects:\n  A: {}\n')
        result = run('--config-file', self.conf(''), 'tree', 'check',
                     '--limits-file', limits, '--usage-from', 'placement')
        self.assertOneLineFailure(result, 'no Placement is configured')

    def test_embedded_flag_chooses_it_and_verbose_names_both(self):
        result = run('--config-file', self.conf(
            '[placement]\nembedded_state_dir = %s\n'
            % os.path.join(self.dir, 'placement')), '-v', 'reconcile',
            '--embedded', '--no-progress')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertIn('Placement: the embedded Placement at http://127.0.0.1:',
                      result.stderr)
        self.assertIn('Ledger: %s ([database] connection)' % self.ledger,
                      result.stderr)

    def test_embedded_together_with_a_cloud_placement_is_an_error(self):
        result = run('--config-file', self.conf(
            '[placement]\nembedded = true\n'
            'endpoint_override = http://127.0.0.1:9\n'), 'reconcile')
        self.assertOneLineFailure(
            result, '[placement] embedded = true and endpoint_override')

    def test_a_command_that_reads_no_placement_needs_none(self):
        result = run('--config-file', self.conf(''), 'account', 'list')
        self.assertEqual(0, result.returncode, result.stderr)

    def test_help_says_where_placement_and_the_ledger_come_from(self):
        result = run('reconcile', '--help')
        self.assertEqual(0, result.returncode, result.stderr)
        text = ' '.join(result.stdout.split())
        self.assertIn('--embedded', text)
        self.assertIn('Placement: [placement] of the configuration', text)
        self.assertIn('Ledger: [database] connection', text)
        self.assertIn('-v logs which were used', text)


class TestLedgerPath(BackendTestCase):

    def test_an_explicit_ledger_in_a_missing_directory_is_an_error(self):
        missing = os.path.join(self.dir, 'nonexistent', 'dir')
        self.ledger = 'sqlite:///%s/ledger.sqlite' % missing
        result = run('--config-file', self.conf(''), 'credits', 'list', 'p')
        self.assertOneLineFailure(result, '[database] connection %s'
                                  % self.ledger)
        self.assertIn('the directory %s does not exist' % missing,
                      result.stderr)
        self.assertFalse(os.path.exists(missing))

    def test_the_default_state_directory_is_still_created(self):
        state = os.path.join(self.dir, 'state')
        result = run('-v', 'credits', 'list', 'p',
                     env={'XDG_STATE_HOME': state})
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertTrue(os.path.exists(os.path.join(
            state, 'placement-quota', 'ledger.sqlite')))
        self.assertIn('(the default)', result.stderr)


class TestUnknownOptions(BackendTestCase):

    def test_an_unknown_option_is_warned_with_file_section_and_option(self):
        config = self.conf('[placement]\nauth_typ = password\n')
        result = run('--config-file', config, 'filter', 'list')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertIn('%s: [placement] auth_typ is not a known option'
                      % config, result.stderr)

    def test_strict_config_makes_it_an_error(self):
        config = self.conf('[placment]\nauth_type = password\n')
        result = run('--strict-config', '--config-file', config, 'filter',
                     'list')
        self.assertOneLineFailure(
            result, 'unknown configuration (--strict-config): %s: '
            '[placment] is not a known section' % config)

    def test_options_of_libraries_filters_and_auth_plugins_are_known(self):
        config = self.conf(
            '[DEFAULT]\ndebug = false\ntransport_url = rabbit://h\n'
            '[placement]\nauth_type = password\nusername = u\n'
            'auth_url = http://127.0.0.1:9/v3\nregion_name = R\n'
            '[enforcement]\nmax_hosts_per_reservation = 3\n'
            '[keystone_authtoken]\nwww_authenticate_uri = http://k\n'
            '[nova]\nauth_type = v3applicationcredential\n'
            'application_credential_id = x\n'
            '[oslo_policy]\npolicy_file = p.yaml\n')
        result = run('--strict-config', '--config-file', config, 'filter',
                     'list')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertNotIn('not a known', result.stderr)


class TestServeNamesItsBackends(BackendTestCase):

    def test_serve_runs_on_the_embedded_placement_and_says_so(self):
        process = subprocess.Popen(
            [sys.executable, '-m', 'placement_quota.cmd.main',
             '--config-file', self.conf(''), 'serve', '--port', '0'],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = process.stdout.readline()
        finally:
            process.kill()
            _, errors = process.communicate(timeout=TIMEOUT)
        self.assertIn('listening on http://127.0.0.1:', line, errors)
        self.assertIn('Placement: embedded)', line)
        self.assertIn('Placement: the embedded Placement (SQLite in %s'
                      % os.path.join(tests.HOME, 'state', 'placement-quota'),
                      errors)
        self.assertIn('Ledger: %s ([database] connection)' % self.ledger,
                      errors)
