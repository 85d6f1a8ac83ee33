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
"""The connections the sessions to Placement, Nova and Keystone keep
(no call is made: the pools are read)."""

import os

import fixtures
from keystoneauth1 import session as ks_session
import requests
import testtools

from placement_quota.nova import quotas
from placement_quota import conf as pq_conf
from placement_quota.identity import projects
from placement_quota.placement import client as placement_client
from placement_quota import sessions


def pool_size(session, scheme):
    """The pool size of ``session``'s connections for ``scheme``."""
    adapter = session.session.adapters[scheme]
    return adapter.poolmanager.connection_pool_kw.get('maxsize', 1)


class TestKeepConnections(testtools.TestCase):

    def test_keystoneauths_pool_is_widened(self):
        session = sessions.keep_connections(ks_session.Session())
        for scheme in ('http://', 'https://'):
            self.assertEqual(sessions.POOL_SIZE, pool_size(session, scheme))

    def test_keystoneauths_adapter_is_kept_for_both_schemes(self):
        session = sessions.keep_connections(ks_session.Session())
        adapters = session.session.adapters
        # TCP keep-alive on every connection, as keystoneauth sets it.
        self.assertIs(ks_session.TCPKeepAliveAdapter,
                      type(adapters['https://']))
        self.assertIs(adapters['http://'], adapters['https://'])

    def test_the_sessions_tls_settings_are_kept(self):
        session = sessions.keep_connections(
            ks_session.Session(tls_min_version='1.2'))
        self.assertEqual(
            '1.2', session.session.adapters['https://'].tls_min_version)

    def test_a_session_with_adapters_of_its_own_is_left_alone(self):
        own = requests.Session()
        adapter = own.adapters['https://']
        sessions.keep_connections(ks_session.Session(session=own))
        self.assertIs(adapter, own.adapters['https://'])


class TestConfiguredSessions(testtools.TestCase):
    """Every session built from the configuration keeps POOL_SIZE (the
    flavor reader's, which asks Nova for its versions when it is made:
    tests/functional/nova/test_flavors.py)."""

    def conf(self):
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, 'placement-quota.conf')
        with open(path, 'w') as f:
            f.write('[placement]\nendpoint_override = http://127.0.0.1:9\n'
                    '[nova]\nendpoint_override = http://127.0.0.1:9/v2.1\n'
                    '[keystone]\nauth_type = password\n'
                    'auth_url = http://127.0.0.1:9/identity/v3\n'
                    'username = placement-quota\npassword = secret\n'
                    'project_name = service\nuser_domain_id = default\n'
                    'project_domain_id = default\n')
        return pq_conf.new_config([], config_files=[path])

    def test_placement(self):
        client = placement_client.PlacementClient.from_conf(self.conf())
        self.assertEqual(sessions.POOL_SIZE,
                         pool_size(client._adapter.session, 'http://'))

    def test_nova_quota_sets(self):
        legacy = quotas.LegacyQuotas.from_conf(self.conf())
        self.assertEqual(sessions.POOL_SIZE,
                         pool_size(legacy.adapter.session, 'http://'))

    def test_keystone(self):
        connection = projects.connection(self.conf())
        self.assertEqual(sessions.POOL_SIZE,
                         pool_size(connection.session, 'https://'))


class TestEnvironment(testtools.TestCase):
    """requests reads proxies, CA bundles and .netrc at every call only
    when the environment holds some."""

    def setUp(self):
        super().setUp()
        self.home = self.useFixture(fixtures.TempDir()).path

    def test_an_empty_environment_uses_nothing(self):
        self.assertEqual([], sessions.environment_used({'HOME': self.home}))

    def test_a_proxy_is_used(self):
        self.assertEqual(['https_proxy'], sessions.environment_used(
            {'HOME': self.home, 'HTTPS_PROXY': 'http://proxy:3128'}))

    def test_no_proxy_alone_counts(self):
        self.assertEqual(['no_proxy'], sessions.environment_used(
            {'HOME': self.home, 'no_proxy': 'placement'}))

    def test_an_empty_proxy_variable_is_none(self):
        self.assertEqual([], sessions.environment_used(
            {'HOME': self.home, 'http_proxy': ''}))

    def test_a_ca_bundle_is_read_once_not_at_every_call(self):
        self.assertEqual([], sessions.environment_used(
            {'HOME': self.home, 'REQUESTS_CA_BUNDLE': '/etc/ca.pem'}))

    def test_requests_bundle_comes_before_curls(self):
        self.assertEqual('/etc/a.pem', sessions.ca_bundle(
            {'CURL_CA_BUNDLE': '/etc/b.pem',
             'REQUESTS_CA_BUNDLE': '/etc/a.pem'}))

    def test_the_bundle_becomes_the_sessions_verify(self):
        session = sessions.skip_environment(
            requests.Session(),
            {'HOME': self.home, 'CURL_CA_BUNDLE': '/etc/b.pem'})
        self.assertEqual((False, '/etc/b.pem'),
                         (session.trust_env, session.verify))

    def test_the_bundle_becomes_keystoneauths_verify(self):
        session = ks_session.Session()
        sessions.skip_environment(
            session.session,
            {'HOME': self.home, 'REQUESTS_CA_BUNDLE': '/etc/a.pem'},
            holder=session)
        self.assertEqual('/etc/a.pem', session.verify)

    def test_a_configured_ca_file_is_kept(self):
        session = ks_session.Session(verify='/etc/mine.pem')
        sessions.skip_environment(
            session.session,
            {'HOME': self.home, 'REQUESTS_CA_BUNDLE': '/etc/a.pem'},
            holder=session)
        self.assertEqual('/etc/mine.pem', session.verify)

    def test_verification_turned_off_stays_off(self):
        session = ks_session.Session(verify=False)
        sessions.skip_environment(
            session.session,
            {'HOME': self.home, 'REQUESTS_CA_BUNDLE': '/etc/a.pem'},
            holder=session)
        self.assertFalse(session.verify)

    def test_a_netrc_file_in_home_is_used(self):
        open(os.path.join(self.home, '.netrc'), 'w').close()
        self.assertEqual(['.netrc'],
                         sessions.environment_used({'HOME': self.home}))

    def test_the_netrc_variable_is_used(self):
        self.assertEqual(['NETRC'], sessions.environment_used(
            {'HOME': self.home, 'NETRC': '/etc/netrc'}))

    def test_a_session_stops_reading_an_empty_environment(self):
        session = sessions.skip_environment(requests.Session(),
                                            {'HOME': self.home})
        self.assertFalse(session.trust_env)

    def test_a_session_keeps_reading_an_environment_with_a_proxy(self):
        session = sessions.skip_environment(
            requests.Session(),
            {'HOME': self.home, 'http_proxy': 'http://proxy:3128'})
        self.assertTrue(session.trust_env)

    def test_keystoneauths_session_skips_an_empty_environment(self):
        self.useFixture(fixtures.EnvironmentVariable('HOME', self.home))
        for name in ('http_proxy', 'https_proxy', 'HTTP_PROXY',
                     'HTTPS_PROXY', 'no_proxy', 'NO_PROXY', 'all_proxy',
                     'ALL_PROXY', 'NETRC', 'REQUESTS_CA_BUNDLE',
                     'CURL_CA_BUNDLE'):
            self.useFixture(fixtures.EnvironmentVariable(name))
        session = sessions.keep_connections(ks_session.Session())
        self.assertFalse(session.session.trust_env)
