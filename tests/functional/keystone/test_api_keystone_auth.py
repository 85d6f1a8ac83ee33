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
"""The enforcement service with ``[api] auth_strategy = keystone``.

A real Keystone (the worker's shared fixture) issues and validates the
tokens; our service runs keystonemiddleware's auth_token and the service
role check, served over HTTP by WSGIServer. The last tests put our
ExternalServiceFilter in front of it, authenticating with keystoneauth.
"""

import logging

import fixtures
from keystoneauth1 import loading as ks_loading
from keystonemiddleware import auth_token
import requests
import testtools

from placement_quota.api.enforcement import app as api_app
from placement_quota.filters import base
from placement_quota.filters import chain as chain_mod
from placement_quota.filters import external
from placement_quota.httpserver import server as wsgi_server
from tests import builders
from tests.fixtures import enforcement as enforcement_fixture
from tests.fixtures import keystone

AUTHTOKEN = 'keystone_authtoken'
EXTERNAL = 'enforcement_external'
MAX_LENGTH = 86400

CONTEXT = {'project_id': 'a0b86a98-b0d3-43cb-948e-00689182efd4',
           'user_id': 'c631173e-dec0-4bb7-a0c3-f7711153c06c'}


ONE_HOUR_LEASE = builders.lease('2030-01-01T00:00:00', '2030-01-01T01:00:00')
TWO_DAY_LEASE = builders.lease('2030-01-01T00:00:00', '2030-01-03T00:00:00')
CHECK_CREATE_BODY = {'context': CONTEXT, 'lease': ONE_HOUR_LEASE}


def _register_password_options(conf, group):
    """The password plugin's options, so that set_override can set them."""
    ks_loading.register_auth_conf_options(conf, group)
    conf.register_opts(ks_loading.get_auth_plugin_conf_options('password'),
                       group=group)


def _set_password_auth(conf, group, keystone_fixture, user, project_id):
    for name, value in (
            ('auth_type', 'password'),
            ('auth_url', keystone_fixture.auth_url),
            ('username', user.name),
            ('password', user.password),
            ('project_id', project_id),
            ('user_domain_name', keystone_fixture.user_domain_name),
            ('project_domain_name', keystone_fixture.project_domain_name)):
        conf.set_override(name, value, group)


class KeystoneProtectedServiceTestCase(testtools.TestCase):
    """Starts our service behind keystonemiddleware, on demand."""

    def setUp(self):
        super().setUp()
        self.keystone = self.useFixture(keystone.KeystoneFixture())
        self.project = self.keystone.create_project()
        # The user keystonemiddleware validates tokens with, and the one
        # blazar-manager would call us as.
        self.service_user = self.keystone.create_user(
            self.project.id, roles=('service',))

    def start_service(self, service_roles=None):
        conf = enforcement_fixture.new_config(config_files=[])
        conf.set_override('enabled_filters',
                          ['MaximumReservationLengthFilter'], 'enforcement')
        conf.set_override('reservation_max_length', MAX_LENGTH,
                          'enforcement')
        conf.set_override('auth_strategy', 'keystone', 'api')
        if service_roles is not None:
            conf.set_override('service_roles', service_roles, 'api')
        for group, opts in auth_token.list_opts():
            conf.register_opts(opts, group=group)
        _register_password_options(conf, AUTHTOKEN)
        conf.set_override('www_authenticate_uri', self.keystone.auth_url,
                          AUTHTOKEN)
        _set_password_auth(conf, AUTHTOKEN, self.keystone,
                           self.service_user, self.project.id)
        chain = chain_mod.FilterChain(conf)
        server = wsgi_server.WSGIServer(api_app.make_app(conf, chain))
        server.start()
        self.addCleanup(server.stop)
        return server

    def token_with_roles(self, *roles):
        user = self.keystone.create_user(self.project.id, roles=roles)
        return self.keystone.issue_token(user.name, user.password,
                                         self.project.id)

    @staticmethod
    def check_create(server, token=None, body=CHECK_CREATE_BODY):
        headers = {} if token is None else {'X-Auth-Token': token}
        return requests.post(server.url + '/v1/check-create', json=body,
                             headers=headers, timeout=30)


class TestKeystoneAuthStrategy(KeystoneProtectedServiceTestCase):

    def setUp(self):
        super().setUp()
        self.server = self.start_service()

    def test_token_with_the_service_role_is_accepted(self):
        token = self.token_with_roles('service')
        response = self.check_create(self.server, token)
        self.assertEqual(204, response.status_code, response.text)

    def test_token_with_the_service_role_still_gets_the_filters_answer(self):
        token = self.token_with_roles('service')
        response = self.check_create(
            self.server, token, {'context': CONTEXT, 'lease': TWO_DAY_LEASE})
        self.assertEqual(403, response.status_code, response.text)
        self.assertIn('%d seconds' % MAX_LENGTH, response.json()['message'])

    def test_request_without_a_token_is_refused_with_401(self):
        response = self.check_create(self.server)
        self.assertEqual(401, response.status_code, response.text)

    def test_401_tells_the_client_where_to_authenticate(self):
        response = self.check_create(self.server)
        self.assertIn(self.keystone.auth_url,
                      response.headers.get('WWW-Authenticate', ''))

    def test_garbage_token_is_refused_with_401(self):
        response = self.check_create(self.server, 'not-a-real-token-at-all')
        self.assertEqual(401, response.status_code, response.text)

    def test_token_without_a_service_role_is_refused_with_403(self):
        token = self.token_with_roles('member')
        response = self.check_create(self.server, token)
        self.assertEqual(403, response.status_code, response.text)

    def test_403_for_a_missing_role_names_the_role_needed(self):
        token = self.token_with_roles('member')
        response = self.check_create(self.server, token)
        self.assertEqual('application/json',
                         response.headers['Content-Type'].split(';')[0])
        self.assertIn('needs one of: service', response.json()['message'])

    def test_version_document_needs_no_token(self):
        response = requests.get(self.server.url + '/', timeout=30)
        self.assertEqual(200, response.status_code, response.text)
        self.assertEqual('v1.0', response.json()['versions'][0]['id'])

    def test_healthcheck_needs_no_token(self):
        response = requests.get(self.server.url + '/healthcheck', timeout=30)
        self.assertEqual(200, response.status_code, response.text)


class TestCustomServiceRoles(KeystoneProtectedServiceTestCase):

    def setUp(self):
        super().setUp()
        self.server = self.start_service(service_roles=['blazar'])

    def test_token_with_a_custom_service_role_is_accepted(self):
        token = self.token_with_roles('blazar')
        response = self.check_create(self.server, token)
        self.assertEqual(204, response.status_code, response.text)

    def test_default_service_role_no_longer_suffices(self):
        token = self.token_with_roles('service')
        response = self.check_create(self.server, token)
        self.assertEqual(403, response.status_code, response.text)
        self.assertIn('needs one of: blazar', response.json()['message'])


class TestExternalFilterWithKeystoneAuth(KeystoneProtectedServiceTestCase):
    """Our filter fetches the service user's token with keystoneauth."""

    def setUp(self):
        super().setUp()
        self.server = self.start_service()
        self.chain = self.client_chain()

    def client_chain(self, **overrides):
        """A chain of ExternalServiceFilter, authenticating as the service
        user; ``overrides`` are [enforcement_external] options."""
        conf = enforcement_fixture.new_config(config_files=[])
        conf.set_override('enabled_filters', ['ExternalServiceFilter'],
                          'enforcement')
        conf.set_override('endpoint_url', self.server.url + '/v1', EXTERNAL)
        conf.set_override('retries', 0, EXTERNAL)
        conf.set_override('read_timeout', 10.0, EXTERNAL)
        _register_password_options(conf, EXTERNAL)
        _set_password_auth(conf, EXTERNAL, self.keystone, self.service_user,
                           self.project.id)
        for name, value in overrides.items():
            conf.set_override(name, value, EXTERNAL)
        return chain_mod.FilterChain(conf)

    def test_short_lease_is_allowed(self):
        self.assertIsNone(self.chain.check_create(CONTEXT, ONE_HOUR_LEASE))

    def test_long_lease_is_denied_with_the_services_message(self):
        denial = self.assertRaises(base.EnforcementDenied,
                                   self.chain.check_create,
                                   CONTEXT, TWO_DAY_LEASE)
        self.assertIn('exceeds the maximum of', str(denial))
        self.assertIn('%d seconds' % MAX_LENGTH, str(denial))
        self.assertEqual('ExternalServiceFilter', denial.filter_name)

    def test_service_users_password_and_token_never_reach_the_logs(self):
        logs = self.useFixture(fixtures.FakeLogger(level=logging.DEBUG))
        self.chain.check_create(CONTEXT, ONE_HOUR_LEASE)
        token = self.chain.filters[0]._keystone.get_token()
        self.assertIn('POST', logs.output)
        self.assertNotIn(self.service_user.password, logs.output)
        self.assertNotIn(token, logs.output)

    def test_wrong_service_password_denies_as_unavailable(self):
        chain = self.client_chain(password='wrong-password')
        denial = self.assertRaises(base.EnforcementDenied,
                                   chain.check_create, CONTEXT,
                                   ONE_HOUR_LEASE)
        self.assertEqual(external.UNAVAILABLE_DENY_MSG, str(denial))

    def test_wrong_service_password_allows_when_allow_on_error_is_true(self):
        chain = self.client_chain(password='wrong-password',
                                  allow_on_error=True)
        self.assertIsNone(chain.check_create(CONTEXT, ONE_HOUR_LEASE))

    def test_revoked_token_is_replaced_after_a_401(self):
        session = self.chain.filters[0]._keystone
        revoked = session.get_token()
        response = self.keystone.admin_conn.session.delete(
            self.keystone.auth_url + '/auth/tokens',
            headers={'X-Subject-Token': revoked}, raise_exc=False)
        self.assertEqual(204, response.status_code, response.text)
        self.assertIsNone(self.chain.check_create(CONTEXT, ONE_HOUR_LEASE))
        self.assertNotEqual(revoked, session.get_token())
