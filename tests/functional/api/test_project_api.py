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
"""The self-service project API of ``placement-quota serve`` under noauth.

The real enforcement app (:func:`placement_quota.api.enforcement.app.
make_app`) on a real FilterChain and the real self-service core, on a
SQLite ledger; the leases are recorded by the app's own
``POST /v1/check-create``. The caller is the ``X-Project-Id``,
``X-User-Id`` and ``X-Roles`` headers, roles capped by ``[api]
noauth_roles``. Built once for the class: no test changes the ledger
but those that say so, on a project of their own.
"""

import datetime
import json
import os
import shutil
import tempfile
import uuid

import fixtures
import testtools
import webob

from placement_quota.api.enforcement import app as api_app
from placement_quota.filters import chain as chain_mod
from placement_quota.placement import client as placement_client
from placement_quota import services as services_mod
from tests import builders
from tests.fixtures import enforcement
from tests.fixtures import placement as placement_fixtures
from tests.functional import test_faults

PROJECT_A = 'project-a'
PROJECT_B = 'project-b'
USER = 'user-1'
OTHER_USER = 'user-2'
FILTERS = ['LeaseCountFilter', 'UserLimitFilter',
           'MaximumReservationLengthFilter']
BODY_LIMIT = 4096


def _date(when):
    return when.strftime('%Y-%m-%d %H:%M')


def future_lease(days_from_now, hours=24, name='lease', lease_id=None):
    start = datetime.datetime.utcnow().replace(
        second=0, microsecond=0) + datetime.timedelta(days=days_from_now)
    return builders.lease(_date(start),
                          _date(start + datetime.timedelta(hours=hours)),
                          builders.hosts('host-1'), name=name,
                          lease_id=lease_id or str(uuid.uuid4()))


class ProjectAPITestCase(testtools.TestCase):
    """One app for the class; project A holds two leases of USER and one
    of OTHER_USER."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.workdir = tempfile.mkdtemp(prefix='pq-project-api-')
        cls.conf = enforcement.config(
            enabled_filters=('enforcement', FILTERS),
            max_leases_per_project=('enforcement', 5),
            max_leases_per_user=('enforcement', 3),
            reservation_max_length=('enforcement', 7 * 86400),
            max_request_body_size=('api', BODY_LIMIT),
            connection=('database', 'sqlite:///' + os.path.join(
                cls.workdir, 'ledger.sqlite')))
        # The embedded Placement of this process (one per process).
        cls.placement = placement_fixtures.PlacementInProcess()
        cls.placement.setUp()
        cls.services = services_mod.Services(
            cls.conf, placement=placement_client.PlacementClient.from_endpoint(
                cls.placement.endpoint, cls.placement.headers))
        cls.chain = chain_mod.FilterChain(cls.conf, services=cls.services)
        cls.app = api_app.make_app(cls.conf, cls.chain)
        cls.leases = [future_lease(1, name='first'),
                      future_lease(3, name='second'),
                      future_lease(5, name='theirs')]
        for body, user in zip(cls.leases, (USER, USER, OTHER_USER)):
            cls.check_create(PROJECT_A, user, body)

    @classmethod
    def tearDownClass(cls):
        cls.services.close()
        cls.placement.cleanUp()
        shutil.rmtree(cls.workdir, ignore_errors=True)
        super().tearDownClass()

    @classmethod
    def check_create(cls, project_id, user_id, body):
        response = webob.Request.blank(
            '/v1/check-create', method='POST',
            content_type='application/json', body=json.dumps({
                'context': builders.context(project_id, user_id),
                'lease': body}).encode()).get_response(cls.app)
        assert response.status_int == 204, response.text
        return response

    def call(self, path, method='GET', project=PROJECT_A, user=USER,
             roles='reader', body=None, raw_body=None, headers=None,
             request_uri=None):
        """``method path`` as a user of ``project`` with ``roles`` (None:
        no X-Roles header, the noauth_roles)."""
        all_headers = {'X-Project-Id': project, 'X-User-Id': user}
        if roles is not None:
            all_headers['X-Roles'] = roles
        all_headers.update(headers or {})
        if body is not None:
            raw_body = json.dumps(body).encode()
            all_headers.setdefault('Content-Type', 'application/json')
        req = webob.Request.blank(path, method=method, headers=all_headers)
        if raw_body is not None:
            req.body = raw_body
        if request_uri is not None:
            req.environ['REQUEST_URI'] = request_uri
        return req.get_response(self.app)

    def assertError(self, status, response, **fields):
        self.assertEqual(status, response.status_int, response.text)
        self.assertEqual('application/json', response.content_type)
        document = response.json
        self.assertIn('message', document)
        for name, value in fields.items():
            self.assertEqual(value, document.get(name), document)
        return document


class TestReads(ProjectAPITestCase):

    def test_limits_show_the_projects_open_leases_against_its_limit(self):
        response = self.call('/v1/projects/%s/limits' % PROJECT_A)
        self.assertEqual(200, response.status_int, response.text)
        counts = [(m['limit'], m['in_use']) for m in response.json['limits']
                  if (m['filter'], m['scope']) ==
                  ('LeaseCountFilter', 'project')]
        self.assertEqual([(5, 3)], counts)

    def test_limits_per_user_are_the_callers_own(self):
        response = self.call('/v1/projects/%s/limits' % PROJECT_A,
                             user=OTHER_USER)
        mine = [(m['user_id'], m['in_use']) for m in response.json['limits']
                if (m['filter'], m['resource'], m['scope']) ==
                ('UserLimitFilter', 'leases', 'user')]
        self.assertEqual([(OTHER_USER, 1)], mine)

    def test_admin_asks_for_another_users_limits(self):
        response = self.call('/v1/projects/%s/limits?user_id=%s'
                             % (PROJECT_A, USER), user='an-admin',
                             roles='admin')
        self.assertEqual((200, USER), (response.status_int,
                                       response.json['user_id']))

    def test_leases_list_the_projects_leases(self):
        response = self.call('/v1/projects/%s/leases' % PROJECT_A)
        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual(
            sorted((b['id'], u) for b, u in zip(
                self.leases, (USER, USER, OTHER_USER))),
            sorted((lease['lease_id'], lease['user_id'])
                   for lease in response.json['leases']))

    def test_usage_gives_step_points_of_reserved_hosts(self):
        response = self.call('/v1/projects/%s/usage?days=10' % PROJECT_A)
        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual({1}, {point['amount'] for point in
                               response.json['resources']['hosts']
                               if point['amount']})

    def test_quote_answers_without_recording_the_lease(self):
        body = future_lease(7, name='maybe')
        response = self.call('/v1/projects/%s/quote' % PROJECT_A,
                             method='POST', body=body)
        self.assertEqual((200, True), (response.status_int,
                                       response.json.get('allowed')),
                         response.text)
        leases = self.call('/v1/projects/%s/leases' % PROJECT_A).json
        self.assertNotIn(body['id'], [lease['lease_id']
                                      for lease in leases['leases']])

    def test_quote_names_the_filter_that_would_deny(self):
        body = future_lease(7, hours=8 * 24, name='too-long')
        response = self.call('/v1/projects/%s/quote' % PROJECT_A,
                             method='POST', body=body)
        self.assertEqual(
            (200, False, 'MaximumReservationLengthFilter'),
            (response.status_int, response.json['allowed'],
             response.json['denied_by']), response.text)

    def test_extension_is_bound_by_the_maximum_length(self):
        lease = self.leases[0]
        response = self.call('/v1/projects/%s/leases/%s/extension'
                             % (PROJECT_A, lease['id']))
        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual((lease['id'], 'MaximumReservationLengthFilter'),
                         (response.json['lease_id'],
                          response.json['bound_by']))


class TestErrors(ProjectAPITestCase):

    def test_unknown_resource_is_404(self):
        self.assertError(404, self.call('/v1/projects/%s/nothing'
                                        % PROJECT_A))

    def test_projects_without_a_project_is_404(self):
        self.assertError(404, self.call('/v1/projects/'))

    def test_wrong_method_is_405_with_allow(self):
        response = self.call('/v1/projects/%s/limits' % PROJECT_A,
                             method='POST', body={})
        self.assertError(405, response)
        self.assertEqual('GET', response.headers['Allow'])

    def test_get_of_quote_is_405_with_allow(self):
        response = self.call('/v1/projects/%s/quote' % PROJECT_A)
        self.assertError(405, response)
        self.assertEqual('POST', response.headers['Allow'])

    def test_project_id_with_a_control_character_is_400(self):
        self.assertError(400, self.call('/v1/projects/a%01b/limits'),
                         field='project_id', value='a\x01b')

    def test_encoded_slash_stays_inside_the_project_id(self):
        response = self.call('/v1/projects/a%2Fb/limits',
                             project='a/b',
                             request_uri='/v1/projects/a%2Fb/limits')
        self.assertEqual((200, 'a/b'), (response.status_int,
                                        response.json['project_id']))

    def test_lease_id_not_utf8_is_400(self):
        self.assertError(400, self.call(
            '/v1/projects/%s/leases/%%ff/extension' % PROJECT_A,
            request_uri='/v1/projects/%s/leases/%%ff/extension'
            % PROJECT_A), field='lease_id', value='%ff')

    def test_unknown_query_parameter_is_400_naming_it(self):
        self.assertError(400, self.call('/v1/projects/%s/usage?dayz=3'
                                        % PROJECT_A),
                         field='dayz', value='3')

    def test_days_not_a_number_is_400_naming_it(self):
        self.assertError(400, self.call('/v1/projects/%s/usage?days=many'
                                        % PROJECT_A),
                         field='days', value='many')

    def test_empty_days_is_400(self):
        self.assertError(400, self.call('/v1/projects/%s/limits?days='
                                        % PROJECT_A), field='days')

    def test_quote_without_a_body_is_400(self):
        self.assertError(400, self.call('/v1/projects/%s/quote' % PROJECT_A,
                                        method='POST'), field='body')

    def test_quote_body_not_json_is_400(self):
        self.assertError(400, self.call(
            '/v1/projects/%s/quote' % PROJECT_A, method='POST',
            raw_body=b'{"name": ', headers={
                'Content-Type': 'application/json'}), field='body')

    def test_quote_of_a_bad_lease_names_the_field(self):
        body = future_lease(7)
        body['end_date'] = 'tomorrow'
        self.assertError(400, self.call('/v1/projects/%s/quote' % PROJECT_A,
                                        method='POST', body=body),
                         field='lease.end_date', value='tomorrow')

    def test_quote_body_over_the_limit_is_413(self):
        body = future_lease(7, name='x' * (BODY_LIMIT + 1))
        self.assertError(413, self.call('/v1/projects/%s/quote' % PROJECT_A,
                                        method='POST', body=body),
                         field='body')

    def test_extension_of_an_unknown_lease_is_404_naming_it(self):
        self.assertError(404, self.call(
            '/v1/projects/%s/leases/nope/extension' % PROJECT_A),
            field='lease_id', value='nope')

    def test_extension_of_another_projects_lease_is_404(self):
        self.assertError(404, self.call(
            '/v1/projects/%s/leases/%s/extension'
            % (PROJECT_B, self.leases[0]['id']), project=PROJECT_B))

    def test_extension_of_an_ended_lease_is_409(self):
        project = 'project-ended'
        body = future_lease(1)
        self.check_create(project, USER, body)
        ended = webob.Request.blank(
            '/v1/on-end', method='POST', content_type='application/json',
            body=json.dumps({'context': builders.context(project, USER),
                             'lease': body}).encode()).get_response(self.app)
        self.assertEqual(204, ended.status_int, ended.text)
        self.assertError(409, self.call(
            '/v1/projects/%s/leases/%s/extension' % (project, body['id']),
            project=project))


class TestPolicy(ProjectAPITestCase):

    def test_reader_of_another_project_is_403_naming_the_rule(self):
        self.assertError(403, self.call('/v1/projects/%s/limits'
                                        % PROJECT_B),
                         rule='placement_quota:project:show')

    def test_member_asking_for_another_users_limits_is_403(self):
        self.assertError(403, self.call(
            '/v1/projects/%s/limits?user_id=%s' % (PROJECT_A, OTHER_USER),
            roles='member'), rule='placement_quota:project:other_user')

    def test_member_naming_themselves_needs_no_other_user_rule(self):
        response = self.call('/v1/projects/%s/limits?user_id=%s'
                             % (PROJECT_A, USER), roles='member')
        self.assertEqual(200, response.status_int, response.text)

    def test_caller_without_a_role_is_403(self):
        self.assertError(403, self.call('/v1/projects/%s/usage' % PROJECT_A,
                                        roles=''),
                         rule='placement_quota:project:usage')

    def test_no_roles_header_gives_the_noauth_roles(self):
        response = self.call('/v1/projects/%s/leases' % PROJECT_B,
                             roles=None)
        self.assertEqual(200, response.status_int, response.text)

    def test_roles_header_cannot_raise_above_the_noauth_roles(self):
        self.conf.set_override('noauth_roles', ['reader'], 'api')
        self.addCleanup(self.conf.clear_override, 'noauth_roles', 'api')
        app = api_app.make_app(self.conf, self.chain)
        response = webob.Request.blank(
            '/v1/projects/%s/leases' % PROJECT_B, headers={
                'X-Project-Id': PROJECT_A, 'X-Roles': 'admin'}
        ).get_response(app)
        self.assertError(403, response,
                         rule='placement_quota:project:lease:list')


class TestMetrics(ProjectAPITestCase):

    def test_requests_are_counted_by_route_template(self):
        self.call('/v1/projects/%s/leases/%s/extension'
                  % (PROJECT_A, self.leases[1]['id']))
        text = webob.Request.blank('/metrics').get_response(self.app).text
        self.assertIn('route="/v1/projects/{project_id}/leases/{lease_id}/'
                      'extension"', text)
        self.assertNotIn('route="/v1/projects/%s' % PROJECT_A, text)


class TestOutage(testtools.TestCase):

    def test_quote_needing_a_placement_that_refuses_is_503(self):
        workdir = self.useFixture(fixtures.TempDir()).path
        conf = enforcement.config(
            enabled_filters=('enforcement', ['LeaseCountFilter']),
            count_host_resources=('ledger', True),
            connection=('database', 'sqlite:///' + os.path.join(
                workdir, 'ledger.sqlite')))
        services = services_mod.Services(
            conf, placement=placement_client.PlacementClient.from_endpoint(
                test_faults.closed_port()))
        self.addCleanup(services.close)
        app = api_app.make_app(conf, chain_mod.FilterChain(
            conf, services=services))
        response = webob.Request.blank(
            '/v1/projects/%s/quote' % PROJECT_A, method='POST',
            content_type='application/json',
            body=json.dumps(future_lease(1)).encode()).get_response(app)
        self.assertEqual(503, response.status_int, response.text)
        self.assertIn('Placement', response.json['message'])
