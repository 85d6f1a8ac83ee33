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
"""``/healthcheck`` checks the backends the service decides with.

The enforcement app and the admin API app as the services build them, on
a real SQLite ledger, a PostgreSQL database dropped under the service, and
the Placement subprocess of :mod:`tests.fixtures.placement`.
"""

import json
import os
import socket

import fixtures
import testtools
import webob

from placement_quota.api.admin import app as admin_api
from placement_quota.api.enforcement import app as api_app
from placement_quota import conf as pq_conf
from placement_quota import filters
from placement_quota.filters import chain as chain_mod
from placement_quota.ledger import store
from tests.fixtures import placement as placement_fixture
from tests.fixtures import postgresql


def closed_port():
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class HealthcheckTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.configure('')

    def configure(self, text):
        """A new configuration of the file ``text`` (and a SQLite ledger
        in the test's directory)."""
        path = os.path.join(self.dir, 'placement-quota.conf')
        with open(path, 'w') as out:
            out.write('[ledger]\nconnection = sqlite:///%s/ledger.sqlite\n'
                      '%s' % (self.dir, text))
        self.conf = pq_conf.new_config([], config_files=[path])
        chain_mod.register_filter_opts(self.conf, filters.all_filters)

    def enforcement_app(self, *enabled):
        self.conf.set_override('enabled_filters', list(enabled),
                               'enforcement')
        return api_app.make_app(self.conf, chain_mod.FilterChain(self.conf))

    def use_placement(self, endpoint):
        """Configure the Placement at ``endpoint`` (first: a new
        configuration; its noauth middleware takes any token)."""
        self.configure('[placement]\nauth_type = admin_token\n'
                       'endpoint = %s\ntoken = admin\n' % endpoint)

    def get(self, app, accept='application/json', method='GET'):
        request = webob.Request.blank('/healthcheck', method=method,
                                      headers={'Accept': accept})
        return request.get_response(app)

    def reasons(self, response):
        return json.loads(response.body)['reasons']


class TestEnforcementHealthcheck(HealthcheckTestCase):

    def test_without_backends_it_is_healthy_and_checks_nothing(self):
        response = self.get(self.enforcement_app(
            'MaximumReservationLengthFilter'))
        self.assertEqual(200, response.status_int)
        self.assertEqual([], self.reasons(response))

    def test_ledger_filter_makes_it_check_the_ledger(self):
        self.conf.set_override('count_host_resources', False, 'ledger')
        response = self.get(self.enforcement_app('LeaseCountFilter'))
        self.assertEqual(200, response.status_int)
        self.assertEqual(['ledger OK (sqlite)'], self.reasons(response))

    def test_ledger_gone_is_a_503_naming_it(self):
        database = self.useFixture(postgresql.PostgreSQLDatabase())
        url = database.url.replace('postgres@', 'postgres:secret@')
        store.Ledger(url, migrate=True).engine.dispose()
        self.conf.set_override('count_host_resources', False, 'ledger')
        self.conf.set_override('connection', url, 'ledger')
        self.conf.set_override('connect_timeout', 2, 'ledger')
        app = self.enforcement_app('LeaseCountFilter')
        self.assertEqual(200, self.get(app).status_int)

        database.server.drop_database(database.dbname)
        response = self.get(app)
        self.assertEqual(503, response.status_int)
        [reason] = self.reasons(response)
        self.assertTrue(reason.startswith('ledger unavailable: '), reason)
        self.assertNotIn('secret', response.text)

    def test_capacity_filter_makes_it_check_placement(self):
        server = self.useFixture(placement_fixture.PlacementServer())
        self.use_placement(server.endpoint)
        response = self.get(self.enforcement_app('PlacementCapacityFilter'))
        self.assertEqual(200, response.status_int)
        self.assertIn('placement OK', self.reasons(response))

    def test_unreachable_placement_is_a_503_naming_it(self):
        self.use_placement('http://127.0.0.1:%d' % closed_port())
        self.conf.set_override('timeout', 2, 'placement')
        response = self.get(self.enforcement_app('PlacementCapacityFilter'))
        self.assertEqual(503, response.status_int)
        self.assertTrue(any(r.startswith('placement unavailable: ')
                            for r in self.reasons(response)),
                        self.reasons(response))

    def test_detailed_mode_names_the_failing_check_class(self):
        self.use_placement('http://127.0.0.1:%d' % closed_port())
        self.conf.set_override('timeout', 2, 'placement')
        self.conf.set_override('detailed', True, 'healthcheck')
        response = self.get(self.enforcement_app('PlacementCapacityFilter'))
        self.assertEqual(503, response.status_int)
        body = json.loads(response.body)
        self.assertTrue(body['detailed'])
        failed = [r for r in body['reasons']
                  if r['class'] == 'PlacementResult']
        self.assertEqual(1, len(failed), body)
        self.assertTrue(failed[0]['reason'].startswith(
            'placement unavailable: '), failed[0])
        self.assertTrue(failed[0]['details'], failed[0])

    def test_disable_file_takes_the_node_out(self):
        path = os.path.join(self.dir, 'disable')
        self.conf.set_override('disable_by_file_path', path, 'healthcheck')
        app = self.enforcement_app('MaximumReservationLengthFilter')
        self.assertEqual(200, self.get(app).status_int)

        open(path, 'w').close()
        response = self.get(app, accept='text/plain')
        self.assertEqual(503, response.status_int)
        self.assertIn('DISABLED BY FILE', response.text)

    def test_operator_backends_replace_ours(self):
        self.conf.set_override('count_host_resources', False, 'ledger')
        self.conf.set_override('backends', [], 'healthcheck')
        response = self.get(self.enforcement_app('LeaseCountFilter'))
        self.assertEqual(200, response.status_int)
        self.assertEqual([], self.reasons(response))


class TestAdminHealthcheck(HealthcheckTestCase):

    def test_admin_api_checks_its_ledger(self):
        app = admin_api.make_admin_app(self.conf)
        response = self.get(app)
        self.assertEqual(200, response.status_int)
        self.assertEqual(['ledger OK (sqlite)'], self.reasons(response))
