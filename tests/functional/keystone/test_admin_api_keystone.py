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
"""The account admin API with ``[admin_api] auth_strategy = keystone``.

The worker's real Keystone issues the tokens and keystonemiddleware
validates them; the roles the policy rules see are the token's, never a
header the client sent. A real Placement holds the accounts' consumers.
"""

import os
import shutil
import tempfile
from urllib import parse

from keystonemiddleware import auth_token
import requests
import testtools

from placement_quota.accounts import service
from placement_quota.api.admin import app as admin
from placement_quota import conf as pq_conf
from placement_quota.placement import client as placement_client
from placement_quota import services as services_mod
from placement_quota.httpserver import server as wsgi_server
from tests.fixtures import keystone
from tests.fixtures import placement as placement_fixtures
from tests.functional.keystone import test_api_keystone_auth as auth_tests

AUTHTOKEN = 'keystone_authtoken'


class KeystoneAdminAPI:
    """The account admin API behind keystonemiddleware and the real
    Keystone, on a SQLite ledger and the Placement server: ``url``,
    ``keystone``, ``project`` (whose ``service`` user validates
    tokens)."""

    def setUp(self):
        super().setUp()
        self.keystone = self.useFixture(keystone.KeystoneFixture())
        self.project = self.keystone.create_project()
        service_user = self.keystone.create_user(self.project.id,
                                                 roles=('service',))
        placement = self.useFixture(placement_fixtures.PlacementServer())
        workdir = tempfile.mkdtemp(prefix='pq-admin-keystone-')
        self.addCleanup(shutil.rmtree, workdir, True)
        conf = pq_conf.new_config([], config_files=[])
        conf.set_override('connection', 'sqlite:///%s' % os.path.join(
            workdir, 'ledger.sqlite'), 'ledger')
        conf.set_override('auth_strategy', 'keystone', 'admin_api')
        for group, opts in auth_token.list_opts():
            conf.register_opts(opts, group=group)
        auth_tests._register_password_options(conf, AUTHTOKEN)
        conf.set_override('www_authenticate_uri', self.keystone.auth_url,
                          AUTHTOKEN)
        auth_tests._set_password_auth(conf, AUTHTOKEN, self.keystone,
                                      service_user, self.project.id)
        client = placement_client.PlacementClient.from_endpoint(
            placement.endpoint, placement.headers)
        services = services_mod.Services(conf, placement=client)
        self.addCleanup(services.close)
        accounts = service.Accounts(services.ledger, client,
                                    services.limits_source)
        server = wsgi_server.WSGIServer(admin.make_admin_app(
            conf, accounts=accounts), threads=4).start()
        self.addCleanup(server.stop)
        self.url = server.url
        self.account = keystone.unique_name('acct')


class TestAdminAPIWithKeystone(KeystoneAdminAPI, testtools.TestCase):

    def token_with_roles(self, *roles):
        user = self.keystone.create_user(self.project.id, roles=roles)
        return self.keystone.issue_token(user.name, user.password,
                                         self.project.id)

    def request(self, method, token=None, headers=None, **kwargs):
        headers = dict(headers or {})
        if token is not None:
            headers['X-Auth-Token'] = token
        return requests.request(
            method, '%s/v1/%s' % (self.url, parse.quote(self.account,
                                                        safe='')),
            headers=headers, timeout=30, **kwargs)

    def test_request_without_a_token_is_401(self):
        self.assertEqual(401, self.request('GET').status_code)

    def test_request_with_a_forged_token_is_401(self):
        self.assertEqual(401, self.request('GET', 'not-a-token').status_code)

    def test_admin_token_creates_then_reads_an_account(self):
        token = self.token_with_roles('admin')
        created = self.request('PUT', token, json={'limits': {'hosts': 3}})
        self.assertEqual(201, created.status_code, created.text)
        got = self.request('GET', token)
        self.assertEqual((200, {'hosts': 3}),
                         (got.status_code, got.json()['limits']))

    def test_member_token_is_refused_by_the_policy_rule(self):
        response = self.request('GET', self.token_with_roles('member'))
        self.assertEqual(403, response.status_code)
        self.assertIn('placement_quota:account:show', response.text)

    def test_roles_header_sent_by_the_client_is_not_trusted(self):
        response = self.request('PUT', self.token_with_roles('member'),
                                headers={'X-Roles': 'admin'}, json={})
        self.assertEqual(403, response.status_code)
        self.assertIn('placement_quota:account:set', response.text)

    def test_version_document_and_healthcheck_need_no_token(self):
        self.assertEqual(
            (200, 200),
            (requests.get(self.url + '/', timeout=30).status_code,
             requests.get(self.url + '/healthcheck', timeout=30).status_code))
