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
ledger and the Placement subprocess of :mod:`tests.fixtures.placement`)
and the real command line."""

import json
import logging
import os
import subprocess
import sys
import uuid

import fixtures
import testtools
import webob

from placement_quota.accounts import service
from placement_quota.api import admin
from placement_quota import conf as pq_conf
from placement_quota.placement import client as placement_client
from placement_quota import services as services_mod
from tests.fixtures import placement as placement_fixtures
from tests.functional import test_admin_api_gabbi as seeds

KEYSTONE_HEADERS = {'X-User-Id': 'u-admin', 'X-Project-Id': 'p-admin',
                    'X-Roles': 'admin', 'Content-Type': 'application/json',
                    'Host': 'localhost'}


class AuditTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.log = self.useFixture(fixtures.FakeLogger(
            name='placement_quota.audit', level=logging.INFO,
            format='%(message)s'))
        server = self.useFixture(placement_fixtures.PlacementServer())
        self.client = placement_client.PlacementClient.from_endpoint(
            server.endpoint, server.headers)
        self.conf = pq_conf.new_config([], config_files=[])
        self.conf.set_override('connection', 'sqlite:///%s/ledger.sqlite'
                               % self.dir, 'ledger')
        services = services_mod.Services(self.conf, placement=self.client)
        self.addCleanup(services.close)
        self.accounts = service.Accounts(services.ledger, self.client,
                                         services.limits_source)
        self.app = admin.make_admin_app(self.conf, accounts=self.accounts)
        self.run_id = uuid.uuid4().hex[:8]

    def call(self, method, path, body=None):
        request = webob.Request.blank(path, method=method,
                                      headers=KEYSTONE_HEADERS)
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
            ['account-create account=%s by=user u-admin project p-admin: '
             "None -> parent=None limits={'class:VCPU': 10} metadata={}"
             % name], self.lines())

    def test_changing_an_account_gives_before_and_after(self):
        name = self.account('physics')
        self.call('PUT', '/v1/' + name, {'limits': {'class:VCPU': 10}})
        self.call('PUT', '/v1/' + name, {'limits': {'class:VCPU': 20}})
        self.assertEqual(
            'account-set account=%s by=user u-admin project p-admin: '
            "parent=None limits={'class:VCPU': 10} metadata={} -> "
            "parent=None limits={'class:VCPU': 20} metadata={}" % name,
            self.lines()[-1])
        self.assertEqual(2, len(self.lines()))

    def test_a_put_that_changes_nothing_is_not_audited(self):
        name = self.account('physics')
        self.call('PUT', '/v1/' + name, {'limits': {'class:VCPU': 10}})
        self.call('PUT', '/v1/' + name, {'limits': {'class:VCPU': 10}})
        self.assertEqual(1, len(self.lines()))

    def test_delete_and_recover_are_audited(self):
        name = self.account('physics')
        self.call('PUT', '/v1/' + name, {})
        self.call('DELETE', '/v1/' + name)
        self.call('POST', '/v1/%s/action/recover' % name)
        self.assertEqual(
            ['account-delete account=%s by=user u-admin project p-admin: '
             'live -> deleted' % name,
             'account-recover account=%s by=user u-admin project p-admin: '
             'deleted -> live' % name], self.lines()[1:])

    def test_a_move_names_both_accounts_and_what_moved(self):
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
            'account-move account=%s by=user u-admin project p-admin '
            'consumer=%s consumers=1 leases=0: account=%s -> account=%s'
            % (source, consumer, source, dest), self.lines()[-1])

    def test_a_refused_change_is_not_audited(self):
        request = webob.Request.blank(
            '/v1/%s' % self.account('bad'), method='PUT',
            headers=KEYSTONE_HEADERS)
        request.body = b'{"limits": {"class:VCPU": -5}}'
        self.assertEqual(400, request.get_response(self.app).status_int)
        self.assertEqual([], self.lines())


class TestCommandLineAudit(testtools.TestCase):

    def test_credits_add_is_audited_in_the_log_file_as_cli(self):
        directory = self.useFixture(fixtures.TempDir()).path
        log_file = os.path.join(directory, 'placement-quota.log')
        config = os.path.join(directory, 'placement-quota.conf')
        with open(config, 'w') as out:
            out.write('[DEFAULT]\nlog_file = %s\n[database]\nconnection = '
                      'sqlite:///%s/ledger.sqlite\n' % (log_file, directory))
        result = subprocess.run(
            [sys.executable, '-m', 'placement_quota.cmd.main',
             '--config-file', config, 'credits', 'add', 'p-cli',
             '--amount', '100'], capture_output=True, text=True, timeout=60)
        self.assertEqual(0, result.returncode, result.stderr)
        with open(log_file) as f:
            audited = [line for line in f if 'placement_quota.audit' in line]
        self.assertEqual(1, len(audited), audited)
        self.assertRegex(audited[0], r'INFO placement_quota.audit .*'
                                     r'credits-add project=p-cli by=cli '
                                     r'user=\S+ allocation=1 .*'
                                     r': None -> 100.0 credits')
