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
"""Behind a TLS proxy: ``[oslo_middleware] enable_proxy_headers_parsing``
makes the links both APIs write the proxy's."""

import fixtures
import testtools
import webob

from placement_quota.api.admin import app as admin_api
from placement_quota.api.enforcement import app as api_app
from placement_quota import conf as pq_conf
from placement_quota import filters
from placement_quota.filters import chain as chain_mod

FORWARDED = {'X-Forwarded-Proto': 'https',
             'X-Forwarded-Host': 'quota.example.org'}


class ProxyTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        directory = self.useFixture(fixtures.TempDir()).path
        self.conf = pq_conf.new_config([], config_files=[])
        chain_mod.register_filter_opts(self.conf, filters.all_filters)
        self.conf.set_override('enabled_filters',
                               ['MaximumReservationLengthFilter'],
                               'enforcement')
        self.conf.set_override(
            'connection', 'sqlite:///%s/ledger.sqlite' % directory,
            'ledger')

    def self_link(self, app, path):
        response = webob.Request.blank(path, headers=FORWARDED).get_response(
            app)
        self.assertEqual(200, response.status_int, response.text)
        body = response.json
        document = body.get('version') or body['versions'][0]
        return document['links'][0]['href']

    def enforcement(self):
        return api_app.make_app(self.conf, chain_mod.FilterChain(self.conf))


class TestProxyHeaders(ProxyTestCase):

    def test_enforcement_links_are_the_proxys_when_parsing_is_on(self):
        self.conf.set_override('enable_proxy_headers_parsing', True,
                               'oslo_middleware')
        self.assertEqual('https://quota.example.org/v1/',
                         self.self_link(self.enforcement(), '/v1'))

    def test_forwarded_headers_are_ignored_when_parsing_is_off(self):
        self.assertEqual('http://localhost/v1/',
                         self.self_link(self.enforcement(), '/v1'))

    def test_admin_links_are_the_proxys_when_parsing_is_on(self):
        self.conf.set_override('enable_proxy_headers_parsing', True,
                               'oslo_middleware')
        self.conf.set_override('allowed_hosts', ['quota.example.org',
                                                 'localhost'], 'admin_api')
        app = admin_api.make_admin_app(self.conf)
        self.assertEqual('https://quota.example.org/v1/',
                         self.self_link(app, '/v1'))
