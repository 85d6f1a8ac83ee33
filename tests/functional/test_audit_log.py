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
"""The audit log: one line on ``placement_quota.audit`` per change, who
made it, before and after. Through the real admin API (on a SQLite
ledger and the Placement subprocess of :mod:`tests.fixtures.placement`;
without Keystone, and behind keystonemiddleware with the real Keystone of
:mod:`tests.fixtures.keystone`) and through the real command line (its
audit lines read from its ``log_file``)."""

import getpass
import json
import logging
import os
import re
import uuid

import fixtures
import requests
import testtools
import webob

from placement_quota.accounts import service
from placement_quota.api.admin import app as admin
from placement_quota import conf as pq_conf
from placement_quota.ledger import store
from placement_quota.placement import client as placement_client
from placement_quota import services as services_mod
from tests.fixtures import command_server
from tests.fixtures import keystone
from tests.fixtures import placement as placement_fixtures
from tests.functional.keystone import test_admin_api_keystone as \
    admin_keystone
from tests.functional.api import test_admin_gabbi as seeds

#: Without Keystone the user and project are what the headers claim.
NOAUTH_HEADERS = {'X-User-Id': 'u-admin', 'X-Project-Id': 'p-admin',
                  'X-Roles': 'admin', 'Content-Type': 'application/json',
                  'Host': 'localhost'}
NOAUTH_BY = 'by noauth user=u-admin project=p-admin'
CLI_BY = 'by cli user=%s' % getpass.getuser()
TIMEOUT = 60


def audit_logger(test):
    """The lines logged on ``placement_quota.audit`` during ``test``."""
    return test.useFixture(fixtures.FakeLogger(
        name='placement_quota.audit', level=logging.INFO,
        format='%(message)s'))


class AuditTestCase(testtools.TestCase):
    """The admin API, without Keystone, on a ledger of its own."""

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.log = audit_logger(self)
        server = self.useFixture(placement_fixtures.PlacementServer())
        self.client = placement_client.PlacementClient.from_endpoint(
            server.endpoint, server.headers)
        self.conf = pq_conf.new_config([], config_files=[])
        self.conf.set_override('connection', 'sqlite:///%s/ledger.sqlite'
                               % self.dir, 'database')
        services = services_mod.Services(self.conf, placement=self.client)
        self.addCleanup(services.close)
        self.accounts = service.Accounts(services.ledger, self.client,
                                         services.limits_source)
        self.app = admin.make_admin_app(self.conf, accounts=self.accounts)
        self.run_id = uuid.uuid4().hex[:8]

    def call(self, method, path, body=None, headers=NOAUTH_HEADERS):
        request = webob.Request.blank(path, method=method,
                                      headers=headers)
        if body is not None:
            request.body = json.dumps(body).encode()
        response = request.get_response(self.app)
        self.assertLess(response.status_int, 400, response.text)
        return response

    def lines(self):
        return [line for line in self.log.output.splitlines() if line]

    def account(self, name):
        return '%s-%s' % (name, self.run_id)


class TestAdminAPIAudit(AuditTestCase):

    def test_creating_an_account_is_one_line_naming_who(self):
        name = self.account('physics')
        self.call('PUT', '/v1/' + name, {'limits': {'class:VCPU': 10}})
        self.assertEqual(
            ['account-create account=%s %s: None -> parent=None '
             "limits={'class:VCPU': 10} metadata={}" % (name, NOAUTH_BY)],
            self.lines())

    def test_changing_an_account_is_one_line_with_before_and_after(self):
        name = self.account('physics')
        self.call('PUT', '/v1/' + name, {'limits': {'class:VCPU': 10}})
        self.call('PUT', '/v1/' + name, {'limits': {'class:VCPU': 20}})
        self.assertEqual(
            ['account-set account=%s %s: '
             "parent=None limits={'class:VCPU': 10} metadata={} -> "
             "parent=None limits={'class:VCPU': 20} metadata={}"
             % (name, NOAUTH_BY)], self.lines()[1:])

    def test_a_put_that_changes_nothing_is_not_audited(self):
        name = self.account('physics')
        self.call('PUT', '/v1/' + name, {'limits': {'class:VCPU': 10}})
        self.call('PUT', '/v1/' + name, {'limits': {'class:VCPU': 10}})
        self.assertEqual(1, len(self.lines()))

    def test_deleting_an_account_is_one_line(self):
        name = self.account('physics')
        self.call('PUT', '/v1/' + name, {})
        self.call('DELETE', '/v1/' + name)
        self.assertEqual(['account-delete account=%s %s: live -> deleted'
                          % (name, NOAUTH_BY)], self.lines()[1:])

    def test_recovering_an_account_is_one_line(self):
        name = self.account('physics')
        self.call('PUT', '/v1/' + name, {})
        self.call('DELETE', '/v1/' + name)
        self.call('POST', '/v1/%s/action/recover' % name)
        self.assertEqual(['account-recover account=%s %s: deleted -> live'
                          % (name, NOAUTH_BY)], self.lines()[2:])

    def test_a_move_is_one_line_naming_both_accounts_and_what_moved(self):
        source, dest = self.account('src'), self.account('dst')
        node = seeds.seed_provider(self.client, 'cn-audit-%s' % self.run_id,
                                   {'VCPU': 8})
        consumer = seeds.seed_consumer(self.client, node, source,
                                       {'VCPU': 1})
        self.call('PUT', '/v1/' + source, {})
        self.call('PUT', '/v1/' + dest, {})
        self.call('POST', '/v1/%s/consumers/%s/action/move?dest=%s'
                  % (source, consumer, dest))
        self.assertEqual(
            ['account-move account=%s %s consumer=%s consumers=1 leases=0: '
             'account=%s -> account=%s'
             % (source, NOAUTH_BY, consumer, source, dest)],
            self.lines()[2:])

    def test_reading_is_not_audited(self):
        source, dest = self.account('src'), self.account('dst')
        self.call('PUT', '/v1/' + source, {})
        self.call('PUT', '/v1/' + dest, {})
        self.call('GET', '/v1/' + source)
        self.call('GET', '/v1/%s/action/move?dest=%s' % (source, dest))
        self.assertEqual(2, len(self.lines()))

    def test_a_refused_change_is_not_audited(self):
        request = webob.Request.blank(
            '/v1/%s' % self.account('bad'), method='PUT',
            headers=NOAUTH_HEADERS)
        request.body = b'{"limits": {"class:VCPU": -5}}'
        self.assertEqual(400, request.get_response(self.app).status_int)
        self.assertEqual([], self.lines())

    def test_a_request_naming_no_user_is_audited_as_noauth(self):
        name = self.account('physics')
        self.call('PUT', '/v1/' + name, {}, headers={
            'Host': 'localhost', 'Content-Type': 'application/json'})
        self.assertTrue(self.lines()[0].startswith(
            'account-create account=%s by noauth: ' % name), self.lines())


class TestKeystoneAudit(admin_keystone.KeystoneAdminAPI,
                        testtools.TestCase):
    """Behind keystonemiddleware, the user and project are the token's."""

    def setUp(self):
        super().setUp()
        self.log = audit_logger(self)

    def test_the_user_and_project_of_the_token_are_named_not_headers(self):
        user = self.keystone.create_user(self.project.id, roles=('admin',))
        token = self.keystone.issue_token(user.name, user.password,
                                          self.project.id)
        account = keystone.unique_name('acct')
        response = requests.put(
            '%s/v1/%s' % (self.url, account), json={}, timeout=30,
            headers={'X-Auth-Token': token, 'X-User-Id': 'forged',
                     'X-Project-Id': 'forged'})
        self.assertEqual(201, response.status_code, response.text)
        self.assertEqual(
            ['account-create account=%s by user=%s project=%s: None -> '
             'parent=None limits={} metadata={}'
             % (account, user.id, self.project.id)],
            [line for line in self.log.output.splitlines() if line])


class TestCommandLineAudit(testtools.TestCase):
    """``placement-quota`` run as an operator runs it, logging to a file;
    the state a test starts from is made in this process on the same
    SQLite ledger (quicker than more commands)."""

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.log_file = os.path.join(self.dir, 'placement-quota.log')
        self.ledger_url = 'sqlite:///%s/ledger.sqlite' % self.dir
        self.config = os.path.join(self.dir, 'placement-quota.conf')
        with open(self.config, 'w') as out:
            out.write('[DEFAULT]\nlog_file = %s\n[database]\nconnection = '
                      '%s\n[placement]\nembedded = true\n'
                      'embedded_state_dir = %s\n'
                      % (self.log_file, self.ledger_url,
                         os.path.join(self.dir, 'placement')))

    def accounts(self):
        """The accounts of the command's ledger, from this process."""
        conf = pq_conf.new_config([], config_files=[])
        conf.set_override('connection', self.ledger_url, 'database')
        ledger = store.Ledger.from_conf(conf)
        self.addCleanup(ledger.dispose)
        return service.Accounts(ledger)

    def run_cli(self, *args):
        result = command_server.run(['--config-file', self.config]
                                    + list(args), timeout=TIMEOUT)
        self.assertEqual(0, result.returncode, result.stderr)

    def audited(self):
        """The messages of the audit lines of the log file."""
        with open(self.log_file) as f:
            return [match.group(1) for match in (
                re.search(r' INFO placement_quota\.audit \[[^]]*\] (.*)$',
                          line) for line in f) if match]

    def test_account_set_creating_an_account_is_one_line_as_cli(self):
        self.run_cli('account', 'set', 'physics', '--limit', 'hosts=10')
        self.assertEqual(
            ["account-create account=physics %s: None -> parent=None "
             "limits={'hosts': 10} metadata={}" % CLI_BY], self.audited())

    def test_account_set_changing_an_account_gives_before_and_after(self):
        self.accounts().put('physics', {'limits': {'hosts': 10}})
        self.run_cli('account', 'set', 'physics', '--limit', 'hosts=20')
        self.assertEqual(
            ["account-set account=physics %s: parent=None "
             "limits={'hosts': 10} metadata={} -> parent=None "
             "limits={'hosts': 20} metadata={}" % CLI_BY], self.audited())

    def test_account_delete_is_one_line_as_cli(self):
        self.accounts().put('physics', {})
        self.run_cli('account', 'delete', 'physics')
        self.assertEqual(['account-delete account=physics %s: live -> '
                          'deleted' % CLI_BY], self.audited())

    def test_account_recover_is_one_line_as_cli(self):
        accounts = self.accounts()
        accounts.put('physics', {})
        accounts.delete('physics')
        self.run_cli('account', 'recover', 'physics')
        self.assertEqual(['account-recover account=physics %s: deleted -> '
                          'live' % CLI_BY], self.audited())

    def test_account_move_is_one_line_as_cli(self):
        accounts = self.accounts()
        accounts.put('physics', {})
        accounts.put('chemistry', {})
        self.run_cli('account', 'move', 'physics', '--dest', 'chemistry')
        self.assertEqual(['account-move account=physics %s consumers=0 '
                          'leases=0: account=physics -> account=chemistry'
                          % CLI_BY], self.audited())

    def test_credits_add_is_one_line_as_cli(self):
        self.run_cli('credits', 'add', 'p-cli', '--amount', '100')
        self.assertEqual(
            ['credits-add project=p-cli %s allocation=1 end=None '
             'start=None: None -> 100.0 credits' % CLI_BY], self.audited())
