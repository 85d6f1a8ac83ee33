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
"""``placement-quota-status upgrade check`` against real backends: a
SQLite ledger at and behind the schema head, the Placement subprocess of
:mod:`tests.fixtures.placement`, and addresses where nothing listens."""

import io
import os
import subprocess
import sys

import alembic.command
import fixtures
import sqlalchemy as sa
import testtools

from placement_quota.cmd import status
from placement_quota import conf as pq_conf
from placement_quota.ledger import store
from tests.fixtures import placement as placement_fixture
from tests.fixtures import process


class UpgradeCheckTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.ledger_url = 'sqlite:///%s/ledger.sqlite' % self.dir
        self.sections = {'ledger': 'connection = %s\n' % self.ledger_url}

    def sync(self, revision=None):
        if revision is None:
            store.Ledger(self.ledger_url, migrate=True).engine.dispose()
            return
        engine = sa.create_engine(self.ledger_url)
        with engine.begin() as connection:
            alembic.command.upgrade(store._alembic_config(connection),
                                    revision)
        engine.dispose()

    def use_placement(self, endpoint):
        self.sections['placement'] = (
            'auth_type = admin_token\nendpoint = %s\ntoken = admin\n'
            % endpoint)

    def check(self):
        """Run the check; (exit code, its table)."""
        path = os.path.join(self.dir, 'placement-quota.conf')
        with open(path, 'w') as out:
            for section, body in self.sections.items():
                out.write('[%s]\n%s' % (section, body))
        stdout = self.useFixture(fixtures.MonkeyPatch('sys.stdout',
                                                      io.StringIO()))
        code = status.main(['--config-file', path, 'upgrade', 'check'])
        return code, stdout.new_value.getvalue()

    def assertResult(self, output, name, result, *fragments):
        """The table's row of check ``name`` says ``result``, followed by
        ``fragments`` in its details."""
        text = ' '.join(output.replace('|', ' ').split())
        self.assertIn('Check: %s Result: %s' % (name, result), text)
        for fragment in fragments:
            self.assertIn(fragment, text)


class TestUpgradeCheck(UpgradeCheckTestCase):

    def test_all_checks_pass_on_a_synced_ledger_and_a_real_placement(self):
        self.sync()
        self.use_placement(self.useFixture(
            placement_fixture.PlacementServer()).endpoint)
        code, output = self.check()
        self.assertEqual(0, code, output)
        self.assertResult(output, 'Ledger schema', 'Success',
                          'is at schema revision')
        self.assertResult(output, 'Placement API', 'Success',
                          'supports microversion 1.')
        self.assertResult(output, 'Keystone limits', 'Success',
                          'Not used: [limits] source = embedded.')
        self.assertResult(output, 'Blazar API', 'Success', 'Not configured')

    def test_a_ledger_behind_the_schema_head_fails_naming_db_sync(self):
        self.sync('0002')
        code, output = self.check()
        self.assertEqual(2, code, output)
        self.assertResult(output, 'Ledger schema', 'Failure',
                          'schema revision 0002',
                          'run "placement-quota db sync"')

    def test_a_missing_sqlite_ledger_fails_and_is_not_created(self):
        code, output = self.check()
        self.assertEqual(2, code, output)
        self.assertResult(output, 'Ledger schema', 'Failure',
                          'No ledger database at')
        self.assertFalse(os.path.exists(os.path.join(self.dir,
                                                     'ledger.sqlite')))

    def test_no_placement_configured_is_a_warning(self):
        self.sync()
        code, output = self.check()
        self.assertEqual(1, code, output)
        self.assertResult(output, 'Placement API', 'Warning',
                          'No Placement in [placement]')

    def test_unreachable_placement_fails(self):
        self.sync()
        port = process.free_port('127.0.0.1')
        self.use_placement('http://127.0.0.1:%d' % port)
        self.sections['placement'] += 'timeout = 2\n'
        code, output = self.check()
        self.assertEqual(2, code, output)
        self.assertResult(output, 'Placement API', 'Failure',
                          'Cannot read the versions of Placement')

    def test_unreachable_blazar_fails(self):
        self.sync()
        port = process.free_port('127.0.0.1')
        self.sections['blazar'] = (
            'auth_type = admin_token\nendpoint = http://127.0.0.1:%d\n'
            'token = admin\ntimeout = 2\n' % port)
        code, output = self.check()
        self.assertEqual(2, code, output)
        self.assertResult(output, 'Blazar API', 'Failure',
                          'Cannot reach Blazar')

    def test_email_warnings_without_an_smtp_host_fail(self):
        self.sync()
        self.sections['warnings'] = 'channels = email\nmail_from = a@b.c\n'
        code, output = self.check()
        self.assertEqual(2, code, output)
        self.assertResult(output, 'Warnings', 'Failure',
                          'channels has "email" but smtp_host is not set')

    def test_warnings_without_channels_are_recorded_only(self):
        self.sync()
        code, output = self.check()
        self.assertResult(output, 'Warnings', 'Success',
                          'warnings are recorded, not sent')

    def test_console_script_runs_the_checks(self):
        script = os.path.join(os.path.dirname(sys.executable),
                              'placement-quota-status')
        path = os.path.join(self.dir, 'placement-quota.conf')
        with open(path, 'w') as out:
            out.write('[ledger]\nconnection = %s\n' % self.ledger_url)
        result = subprocess.run(
            [script, '--config-file', path, 'upgrade', 'check'],
            capture_output=True, text=True, timeout=60)
        self.assertEqual(2, result.returncode, result.stderr)
        self.assertIn('No ledger database at', result.stdout)
        self.assertNotIn('Traceback', result.stdout + result.stderr)


class TestDefaultLedger(testtools.TestCase):
    """The default SQLite ledger (in the state directory), which serve and
    listen create when they first need it."""

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(self.dir, 'ledger.sqlite')

    def check_ledger(self, enabled_filters):
        conf = pq_conf.new_config([], [])
        conf.set_default('connection', 'sqlite:///%s' % self.path,
                         group='database')
        conf.set_override('enabled_filters', enabled_filters,
                          group='enforcement')
        return status.Checks(conf)._check_ledger()

    def test_missing_and_used_by_no_enabled_filter_passes(self):
        result = self.check_ledger(['MaximumReservationLengthFilter'])
        self.assertEqual(status.Code.SUCCESS, result.code, result.details)
        self.assertIn('no filter of [enforcement] enabled_filters keeps one',
                      result.details)
        self.assertFalse(os.path.exists(self.path))

    def test_missing_and_used_by_an_enabled_filter_is_a_warning(self):
        result = self.check_ledger(['LeaseCountFilter'])
        self.assertEqual(status.Code.WARNING, result.code, result.details)
        self.assertIn('No ledger database at %s' % self.path, result.details)
        self.assertFalse(os.path.exists(self.path))


class TestAfterServe(testtools.TestCase):
    """``placement-quota serve`` then ``placement-quota-status upgrade
    check``, as an operator runs them, on the default ledger of a HOME of
    their own."""

    def setUp(self):
        super().setUp()
        home = self.useFixture(fixtures.TempDir()).path
        self.env = dict(os.environ, HOME=home,
                        XDG_STATE_HOME=os.path.join(home, 'state'),
                        XDG_CONFIG_HOME=os.path.join(home, 'config'),
                        XDG_CACHE_HOME=os.path.join(home, 'cache'))
        self.config = os.path.join(home, 'placement-quota.conf')

    def serve_then_check(self, enforcement):
        """Serve (until its banner) with ``enforcement`` as its
        [enforcement] section, stop it; the table of the upgrade check."""
        with open(self.config, 'w') as f:
            f.write('[enforcement]\n%s\n' % enforcement)
        serve = subprocess.Popen(
            [sys.executable, '-m', 'placement_quota.cmd.main',
             '--config-file', self.config, 'serve', '--port', '0'],
            env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True)
        self.addCleanup(serve.stdout.close)
        self.addCleanup(process.stop, serve, 60)
        self.assertIn('listening on', serve.stdout.readline())
        process.stop(serve, 60)
        result = subprocess.run(
            [os.path.join(os.path.dirname(sys.executable),
                          'placement-quota-status'),
             '--config-file', self.config, 'upgrade', 'check'],
            env=self.env, capture_output=True, text=True, timeout=60)
        self.assertNotIn('Traceback', result.stdout + result.stderr)
        return ' '.join(result.stdout.replace('|', ' ').split())

    def test_the_ledger_serve_migrated_passes(self):
        output = self.serve_then_check('enabled_filters = LeaseCountFilter')
        self.assertIn('Check: Ledger schema Result: Success', output)
        self.assertIn('is at schema revision', output)

    def test_serve_on_its_default_filters_leaves_a_passing_ledger_check(self):
        output = self.serve_then_check('')
        self.assertIn('Check: Ledger schema Result: Success', output)
        self.assertIn('no filter of [enforcement] enabled_filters keeps one',
                      output)
