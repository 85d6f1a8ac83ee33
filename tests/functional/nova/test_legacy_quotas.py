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
"""Nova's legacy quota sets, read by :class:`LegacyQuotas` from the real
nova-api (``nova`` from PyPI, in a subprocess, ``noauth2``-style, no
Keystone: :class:`tests.fixtures.nova.NovaAPIServer`)."""

import socket
import uuid

import requests
import testtools

from placement_quota.nova import quotas
from tests.fixtures import nova


def _closed_port():
    """A loopback port nothing listens on (connection refused)."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class CountingSession(requests.Session):
    """A requests session that records every HTTP request it sends."""

    def __init__(self):
        super().__init__()
        self.sent = []
        self.hooks['response'].append(self._count)

    def _count(self, response, *args, **kwargs):
        self.sent.append((response.request.method, response.request.url,
                          response.status_code))


class TestParseQuotaSet(testtools.TestCase):
    """The parsing alone, on answers shaped like Nova's."""

    def test_limits_and_in_use_plus_reserved(self):
        self.assertEqual(
            {'cores': (8, 3), 'instances': (-1, 0), 'ram': (4096, 0)},
            quotas.parse_quota_set({'quota_set': {
                'id': 'p',
                'cores': {'limit': 8, 'in_use': 2, 'reserved': 1},
                'instances': {'limit': -1, 'in_use': 0, 'reserved': 0},
                'ram': {'limit': 4096}}}))

    def test_not_a_detailed_quota_set(self):
        for body in ({}, {'quota_set': None}, {'quota_set': {
                'cores': {'limit': 'many'}}}, []):
            self.assertRaises(ValueError, quotas.parse_quota_set, body)

    def test_plain_values_are_left_out(self):
        # GET /os-quota-sets/{id} without /detail: no usage, nothing read.
        self.assertEqual({}, quotas.parse_quota_set(
            {'quota_set': {'id': 'p', 'cores': 20}}))


class TestLegacyQuotas(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.nova = self.useFixture(nova.NovaAPIServer())
        self.project = uuid.uuid4().hex
        self.http = CountingSession()
        self.addCleanup(self.http.close)
        self.reader = quotas.LegacyQuotas.from_endpoint(
            self.nova.endpoint, self.nova.headers, session=self.http)

    def test_limits_put_are_read_back_with_usage(self):
        self.nova.set_quotas(self.project, instances=3, cores=8, ram=4096)
        found = self.reader.limits_and_usage(self.project)
        self.assertEqual({'instances': (3, 0), 'cores': (8, 0),
                          'ram': (4096, 0)},
                         {k: found[k] for k in ('instances', 'cores', 'ram')})
        # Every quota of the set, and not the set's id.
        self.assertIn('key_pairs', found)
        self.assertIn('server_groups', found)
        self.assertNotIn('id', found)

    def test_in_use_is_nova_s_count(self):
        # Nova counts server groups from its API database: two created by
        # a member of the project, through the API, are two in use.
        headers = nova.token_headers('member-user', self.project)
        for name in ('a', 'b'):
            response = self.nova.session.post(
                self.nova.endpoint + '/os-server-groups', headers=headers,
                json={'server_group': {'name': name,
                                       'policies': ['affinity']}},
                raise_exc=False)
            self.assertEqual(200, response.status_code, response.text)
        self.nova.set_quotas(self.project, server_groups=5)
        found = self.reader.limits_and_usage(self.project)
        self.assertEqual((5, 2), found['server_groups'])
        self.assertEqual((10, 0), found['instances'])

    def test_a_new_put_is_seen_by_the_next_read(self):
        self.nova.set_quotas(self.project, cores=8)
        self.assertEqual((8, 0),
                         self.reader.limits_and_usage(self.project)['cores'])
        self.nova.set_quotas(self.project, cores=2)
        self.assertEqual((2, 0),
                         self.reader.limits_and_usage(self.project)['cores'])

    def test_unlimited_is_minus_one(self):
        self.nova.set_quotas(self.project, cores=-1, instances=-1)
        found = self.reader.limits_and_usage(self.project)
        self.assertEqual((-1, 0), found['cores'])
        self.assertEqual((-1, 0), found['instances'])

    def test_a_project_without_quotas_has_nova_defaults(self):
        found = self.reader.limits_and_usage(self.project)
        # Nova's [quota] defaults.
        self.assertEqual((10, 0), found['instances'])
        self.assertEqual((20, 0), found['cores'])
        self.assertEqual((51200, 0), found['ram'])

    def test_one_http_request_per_read(self):
        self.nova.set_quotas(self.project, cores=4)
        for expected in (1, 2, 3):
            self.reader.limits_and_usage(self.project)
            self.assertEqual(expected, len(self.http.sent))
        url = '%s/os-quota-sets/%s/detail' % (
            self.nova.endpoint, self.project)
        self.assertEqual([('GET', url, 200)] * 3, self.http.sent)
        self.assertEqual(3, self.reader.calls)

    def test_unknown_path_is_an_error_naming_url_and_status(self):
        reader = quotas.LegacyQuotas.from_endpoint(
            self.nova.endpoint + '/no-such-api', self.nova.headers)
        error = self.assertRaises(quotas.QuotaSourceError,
                                  reader.limits_and_usage, self.project)
        url = '%s/no-such-api/os-quota-sets/%s/detail' % (
            self.nova.endpoint, self.project)
        self.assertEqual(404, error.status)
        self.assertEqual(url, error.url)
        self.assertEqual(self.project, error.project_id)
        self.assertIn(url, str(error))
        self.assertIn('answered 404', str(error))

    def test_without_a_token_nova_refuses_and_it_is_an_error(self):
        reader = quotas.LegacyQuotas.from_endpoint(self.nova.endpoint)
        error = self.assertRaises(quotas.QuotaSourceError,
                                  reader.limits_and_usage, self.project)
        self.assertEqual(401, error.status)
        self.assertIn(self.project, str(error))

    def test_another_projects_quotas_are_forbidden_to_a_member(self):
        reader = quotas.LegacyQuotas.from_endpoint(
            self.nova.endpoint, nova.token_headers('someone', 'elsewhere'))
        error = self.assertRaises(quotas.QuotaSourceError,
                                  reader.limits_and_usage, self.project)
        self.assertEqual(403, error.status)

    def test_connection_refused_is_an_error_naming_the_url(self):
        endpoint = 'http://127.0.0.1:%d/v2.1' % _closed_port()
        reader = quotas.LegacyQuotas.from_endpoint(endpoint,
                                                   self.nova.headers)
        error = self.assertRaises(quotas.QuotaSourceError,
                                  reader.limits_and_usage, self.project)
        url = '%s/os-quota-sets/%s/detail' % (endpoint, self.project)
        self.assertIsNone(error.status)
        self.assertEqual(url, error.url)
        self.assertIn(url, str(error))
        self.assertIn(self.project, str(error))
