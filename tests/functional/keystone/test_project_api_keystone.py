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
"""Who may call the self-service project API: the authorization matrix
with real Keystone tokens.

``placement-quota serve``'s app (``[api] auth_strategy = keystone``) on a
real port, its keystonemiddleware validating tokens with the worker's
real Keystone, the default policy rules, the real chain and self-service
core on a SQLite ledger. Keystone's default roles imply one another
(admin: member and reader; member: reader), as bootstrap makes them.

Projects A and B each hold a lease; the users of A are a reader, a
member and an admin. Every route is called by each, on A and on B, and
without a token or with a forged one.
"""

import datetime
import os
import shutil
import tempfile
import uuid

from keystonemiddleware import auth_token
import requests
import testtools

from placement_quota.api.enforcement import app as api_app
from placement_quota.filters import chain as chain_mod
from placement_quota.httpserver import server as wsgi_server
from placement_quota.placement import client as placement_client
from placement_quota import services as services_mod
from tests import builders
from tests.fixtures import enforcement
from tests.fixtures import keystone
from tests.fixtures import placement as placement_fixtures
from tests.functional.keystone import test_api_keystone_auth as auth_tests

AUTHTOKEN = 'keystone_authtoken'
ROUTES = ('limits', 'quote', 'extension', 'leases', 'usage')
FILTERS = ['LeaseCountFilter', 'UserLimitFilter',
           'MaximumReservationLengthFilter']


def lease_body(days_from_now, name='lease'):
    start = datetime.datetime.utcnow().replace(
        second=0, microsecond=0) + datetime.timedelta(days=days_from_now)
    return builders.lease(
        start.strftime('%Y-%m-%d %H:%M'),
        (start + datetime.timedelta(days=1)).strftime('%Y-%m-%d %H:%M'),
        builders.hosts('host-1'), name=name, lease_id=str(uuid.uuid4()))


class ProjectAPIWithKeystone:
    """Class fixture: the service, Keystone's projects A and B, users of
    A with each default role, their tokens, and a lease in each project
    (``lease_ids``)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.keystone = ks = keystone.KeystoneFixture()
        ks.setUp()
        cls.workdir = tempfile.mkdtemp(prefix='pq-project-keystone-')
        try:
            cls._start()
        except BaseException:
            cls._stop()
            raise

    @classmethod
    def _start(cls):
        ks = cls.keystone
        cls.project_a = ks.create_project().id
        cls.project_b = ks.create_project().id
        service_user = ks.create_user(cls.project_a, roles=('service',))
        cls.users = {role: ks.create_user(cls.project_a, roles=(role,))
                     for role in ('reader', 'member', 'admin')}
        cls.tokens = {role: ks.issue_token(user.name, user.password,
                                           cls.project_a)
                      for role, user in cls.users.items()}
        conf = enforcement.config(
            enabled_filters=('enforcement', FILTERS),
            max_leases_per_project=('enforcement', 5),
            max_leases_per_user=('enforcement', 3),
            reservation_max_length=('enforcement', 7 * 86400),
            auth_strategy=('api', 'keystone'),
            connection=('database', 'sqlite:///' + os.path.join(
                cls.workdir, 'ledger.sqlite')))
        for group, opts in auth_token.list_opts():
            conf.register_opts(opts, group=group)
        auth_tests._register_password_options(conf, AUTHTOKEN)
        conf.set_override('www_authenticate_uri', ks.auth_url, AUTHTOKEN)
        auth_tests._set_password_auth(conf, AUTHTOKEN, ks, service_user,
                                      cls.project_a)
        cls.placement = placement_fixtures.PlacementInProcess()
        cls.placement.setUp()
        cls.services = services_mod.Services(
            conf, placement=placement_client.PlacementClient.from_endpoint(
                cls.placement.endpoint, cls.placement.headers))
        chain = chain_mod.FilterChain(conf, services=cls.services)
        cls.lease_ids = {}
        for project, user, days in (
                (cls.project_a, cls.users['member'].id, 1),
                (cls.project_a, cls.users['reader'].id, 2),
                (cls.project_b, 'someone-of-b', 3)):
            body = lease_body(days)
            chain.check_create(builders.context(project, user), body)
            cls.lease_ids.setdefault(project, body['id'])
        cls.server = wsgi_server.WSGIServer(
            api_app.make_app(conf, chain), threads=4).start()
        cls.url = cls.server.url

    @classmethod
    def _stop(cls):
        for name in ('server',):
            if hasattr(cls, name):
                getattr(cls, name).stop()
        if hasattr(cls, 'services'):
            cls.services.close()
        if hasattr(cls, 'placement'):
            cls.placement.cleanUp()
        cls.keystone.cleanUp()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    @classmethod
    def tearDownClass(cls):
        cls._stop()
        super().tearDownClass()


class TestAuthorizationMatrix(ProjectAPIWithKeystone, testtools.TestCase):

    def call(self, route, project, token, query=''):
        base = '%s/v1/projects/%s' % (self.url, project)
        headers = {} if token is None else {'X-Auth-Token': token}
        if route == 'quote':
            return requests.post(base + '/quote', json=lease_body(10),
                                 headers=headers, timeout=30)
        path = {'extension': '/leases/%s/extension'
                % self.lease_ids.get(project)}.get(route, '/' + route)
        return requests.get(base + path + query, headers=headers,
                            timeout=30)

    def statuses(self, project, token):
        """Each route's status for ``token`` on ``project``."""
        return {route: self.call(route, project, token).status_code
                for route in ROUTES}

    def assertEveryRoute(self, status, project, token):
        self.assertEqual(dict.fromkeys(ROUTES, status),
                         self.statuses(project, token))

    def other_user(self, role, user_id):
        return self.call('limits', self.project_a, self.tokens[role],
                         '?user_id=%s' % user_id)

    def test_reader_of_a_reads_every_route_of_a(self):
        self.assertEveryRoute(200, self.project_a, self.tokens['reader'])

    def test_reader_of_a_is_refused_every_route_of_b(self):
        self.assertEveryRoute(403, self.project_b, self.tokens['reader'])

    def test_refusal_names_the_rule_of_the_route(self):
        response = self.call('extension', self.project_b,
                             self.tokens['reader'])
        self.assertEqual('placement_quota:project:lease:extension',
                         response.json()['rule'])

    def test_member_of_a_reads_every_route_of_a(self):
        self.assertEveryRoute(200, self.project_a, self.tokens['member'])

    def test_member_of_a_is_refused_every_route_of_b(self):
        self.assertEveryRoute(403, self.project_b, self.tokens['member'])

    def test_member_sees_their_own_per_user_usage(self):
        member = self.users['member'].id
        response = self.call('limits', self.project_a,
                             self.tokens['member'])
        self.assertEqual(
            (member, [(member, 1)]),
            (response.json()['user_id'],
             [(m['user_id'], m['in_use']) for m in response.json()['limits']
              if (m['filter'], m['resource'], m['scope']) ==
              ('UserLimitFilter', 'leases', 'user')]))

    def test_member_asking_for_another_users_limits_is_refused(self):
        response = self.other_user('member', self.users['reader'].id)
        self.assertEqual((403, 'placement_quota:project:other_user'),
                         (response.status_code, response.json()['rule']))

    def test_reader_asking_for_another_users_limits_is_refused(self):
        response = self.other_user('reader', self.users['member'].id)
        self.assertEqual(403, response.status_code)

    def test_member_naming_themselves_is_allowed(self):
        response = self.other_user('member', self.users['member'].id)
        self.assertEqual(200, response.status_code)

    def test_admin_reads_every_route_of_a(self):
        self.assertEveryRoute(200, self.project_a, self.tokens['admin'])

    def test_admin_reads_every_route_of_b(self):
        self.assertEveryRoute(200, self.project_b, self.tokens['admin'])

    def test_admin_asks_for_any_users_limits(self):
        reader = self.users['reader'].id
        response = self.other_user('admin', reader)
        self.assertEqual((200, reader), (response.status_code,
                                         response.json()['user_id']))

    def test_request_without_a_token_is_401_on_every_route(self):
        self.assertEveryRoute(401, self.project_a, None)

    def test_request_with_a_forged_token_is_401_on_every_route(self):
        self.assertEveryRoute(401, self.project_a, 'not-a-token')

    def test_roles_header_sent_with_a_token_is_not_trusted(self):
        response = requests.get(
            '%s/v1/projects/%s/leases' % (self.url, self.project_b),
            headers={'X-Auth-Token': self.tokens['member'],
                     'X-Roles': 'admin', 'X-Project-Id': self.project_b},
            timeout=30)
        self.assertEqual(403, response.status_code)

    def test_user_token_is_still_refused_by_the_enforcement_endpoints(self):
        response = requests.post(
            self.url + '/v1/check-create', headers={
                'X-Auth-Token': self.tokens['admin']},
            json={'context': builders.context(self.project_a),
                  'lease': lease_body(20)}, timeout=30)
        self.assertEqual(403, response.status_code)
