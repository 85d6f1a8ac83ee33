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
"""The account admin API against what an attacker sends: a consumer ID that
walks out of Placement's ``/allocations``, what a web page can send under
noauth (Host, Origin, form and text bodies), the roles noauth grants, and
number literals that are not JSON.

The admin app is served over HTTP by our WSGI server; the real Placement
(a subprocess) sits behind a recording proxy, so that a test sees every
request that leaves for Placement, as Placement receives it.
"""

import json
import os
import shutil
import tempfile
from urllib import parse
import uuid

import requests
import testtools

from placement_quota.accounts import service
from placement_quota.api.admin import app as admin
from placement_quota import conf as pq_conf
from placement_quota.placement import client as placement_client
from placement_quota import services as services_mod
from placement_quota.httpserver import server as wsgi_server
from tests.fixtures import placement as placement_fixtures
from tests.functional.api import test_admin_gabbi as seeds

TIMEOUT = 30
HOP_BY_HOP = {'connection', 'keep-alive', 'transfer-encoding',
              'content-length', 'content-encoding'}


class RecordingProxy:
    """A WSGI app forwarding every request to ``target`` unchanged (the
    path as the client encoded it), keeping ``(method, path)`` of each."""

    def __init__(self, target):
        self.target = target.rstrip('/')
        self.requests = []

    def __call__(self, environ, start_response):
        path = environ.get('REQUEST_URI') or environ['PATH_INFO']
        self.requests.append((environ['REQUEST_METHOD'], path))
        length = int(environ.get('CONTENT_LENGTH') or 0)
        body = environ['wsgi.input'].read(length) if length else None
        headers = {key[5:].replace('_', '-'): value
                   for key, value in environ.items()
                   if key.startswith('HTTP_') and key != 'HTTP_HOST'}
        if environ.get('CONTENT_TYPE'):
            headers['Content-Type'] = environ['CONTENT_TYPE']
        answer = requests.request(environ['REQUEST_METHOD'],
                                  self.target + path, data=body,
                                  headers=headers, timeout=TIMEOUT)
        start_response('%d %s' % (answer.status_code, answer.reason), [
            (k, v) for k, v in answer.headers.items()
            if k.lower() not in HOP_BY_HOP])
        return [answer.content]


class AdminHardeningTestCase(testtools.TestCase):
    """The admin API on a real port, its Placement behind a proxy."""

    #: ``[admin_api]`` options of the test
    admin_options = {}

    def setUp(self):
        super().setUp()
        placement = self.useFixture(placement_fixtures.PlacementServer())
        self.proxy = RecordingProxy(placement.endpoint)
        proxy_server = wsgi_server.WSGIServer(self.proxy, threads=4).start()
        self.addCleanup(proxy_server.stop)
        self.dir = tempfile.mkdtemp(prefix='pq-admin-hardening-')
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.conf = pq_conf.new_config([], config_files=[])
        self.conf.set_override('connection', 'sqlite:///%s' % os.path.join(
            self.dir, 'ledger.sqlite'), 'ledger')
        for name, value in self.admin_options.items():
            self.conf.set_override(name, value, 'admin_api')
        self.client = placement_client.PlacementClient.from_endpoint(
            proxy_server.url, placement.headers)
        services = services_mod.Services(self.conf, placement=self.client)
        self.addCleanup(services.close)
        accounts = service.Accounts(services.ledger, self.client,
                                    services.limits_source)
        server = wsgi_server.WSGIServer(admin.make_admin_app(
            self.conf, accounts=accounts), threads=4).start()
        self.addCleanup(server.stop)
        self.root = server.url
        self.port = server.port
        run = uuid.uuid4().hex[:8]
        self.account = 'acct-%s' % run
        self.dest = 'dest-%s' % run
        self.node = seeds.seed_provider(self.client, 'cn-hard-%s' % run,
                                        {'VCPU': 16})

    def url(self, account_id, *rest):
        return '/'.join([self.root, 'v1', parse.quote(account_id, safe='')] +
                        list(rest))

    def put(self, account_id, body=None):
        response = requests.put(self.url(account_id), json=body or {},
                                timeout=TIMEOUT)
        self.assertIn(response.status_code, (201, 202), response.text)
        return response

    def consumer(self):
        return seeds.seed_consumer(self.client, self.node, self.account,
                                   {'VCPU': 1})

    def project_of(self, consumer):
        return self.client.get('/allocations/%s' % consumer)['project_id']

    def move_url(self, consumer=None):
        rest = (['consumers', consumer] if consumer else []) + [
            'action', 'move']
        return '%s?dest=%s' % (self.url(self.account, *rest), self.dest)


class TestConsumerPaths(AdminHardeningTestCase):
    """Path traversal:
    ``GET /v1/acct/consumers/..%2F..%2F..%2Fidentity%2Fv3%2Fusers`` sent
    ``GET /identity/v3/users`` to the Placement host with the service's own
    token."""

    TRAVERSAL = '..%2F..%2F..%2Fidentity%2Fv3%2Fusers'

    def setUp(self):
        super().setUp()
        self.put(self.account)
        self.put(self.dest)
        del self.proxy.requests[:]

    def test_a_consumer_path_traversal_answers_400_naming_the_field(self):
        response = requests.get(self.url(self.account, 'consumers',
                                         self.TRAVERSAL), timeout=TIMEOUT)
        self.assertEqual((400, 'consumer_uuid', '../../../identity/v3/users'),
                         (response.status_code, response.json()['field'],
                          response.json()['value']))

    def test_a_consumer_path_traversal_sends_nothing_to_placement(self):
        requests.get(self.url(self.account, 'consumers', self.TRAVERSAL),
                     timeout=TIMEOUT)
        self.assertEqual([], self.proxy.requests)

    def test_a_query_in_a_consumer_answers_400_and_sends_nothing(self):
        consumer = '%s%%3Fproject_id%%3Dother' % uuid.uuid4()
        response = requests.get(self.url(self.account, 'consumers',
                                         consumer), timeout=TIMEOUT)
        self.assertEqual((400, []), (response.status_code,
                                     self.proxy.requests))

    def test_a_move_of_a_traversal_answers_400_and_sends_nothing(self):
        response = requests.post(self.move_url(self.TRAVERSAL),
                                 allow_redirects=False, timeout=TIMEOUT)
        self.assertEqual((400, 'consumer_uuid', []),
                         (response.status_code, response.json()['field'],
                          self.proxy.requests))

    def test_a_consumer_is_read_at_its_own_allocations_path(self):
        consumer = self.consumer()
        del self.proxy.requests[:]
        response = requests.get(self.url(self.account, 'consumers',
                                         consumer), timeout=TIMEOUT)
        self.assertEqual(200, response.status_code, response.text)
        self.assertEqual([('GET', '/allocations/%s' % consumer)],
                         self.proxy.requests)


class TestBrowserRequests(AdminHardeningTestCase):
    """Cross-site requests: under noauth a web page could move an account's
    resources with a form or a text/plain body, and reach the API through a
    name of its own (DNS rebinding)."""

    admin_options = {'allowed_origins': ['https://console.example.org']}

    def setUp(self):
        super().setUp()
        self.put(self.account)
        self.put(self.dest)
        self.moved = self.consumer()

    def assertNotMoved(self):
        self.assertEqual(self.account, self.project_of(self.moved))

    def test_a_form_post_cannot_move_an_account(self):
        response = requests.post(self.move_url(), data={'x': '1'},
                                 allow_redirects=False, timeout=TIMEOUT)
        self.assertEqual((415, 'Content-Type'),
                         (response.status_code, response.json()['field']))
        self.assertNotMoved()

    def test_an_empty_form_post_cannot_move_an_account(self):
        response = requests.post(
            self.move_url(), allow_redirects=False, timeout=TIMEOUT,
            headers={'Content-Type': 'application/x-www-form-urlencoded'})
        self.assertEqual(415, response.status_code, response.text)
        self.assertNotMoved()

    def test_a_text_plain_move_is_refused_with_415(self):
        response = requests.post(
            self.move_url(self.moved), data='{}', allow_redirects=False,
            headers={'Content-Type': 'text/plain'}, timeout=TIMEOUT)
        self.assertEqual(415, response.status_code, response.text)
        self.assertNotMoved()

    def test_a_text_plain_recover_is_refused_with_415(self):
        response = requests.post(
            self.url(self.account, 'action', 'recover'), data='{}',
            headers={'Content-Type': 'text/plain'}, timeout=TIMEOUT)
        self.assertEqual(415, response.status_code, response.text)

    def test_a_body_without_content_type_is_refused_with_415(self):
        response = requests.put(self.url(self.account),
                                data=b'{"metadata": {"a": "b"}}',
                                timeout=TIMEOUT)
        self.assertEqual(415, response.status_code, response.text)

    def test_a_json_action_body_that_is_not_json_is_refused_with_400(self):
        response = requests.post(
            self.move_url(), data='x=1', allow_redirects=False,
            headers={'Content-Type': 'application/json'}, timeout=TIMEOUT)
        self.assertEqual((400, 'body'),
                         (response.status_code, response.json()['field']))
        self.assertNotMoved()

    def test_a_move_without_a_body_still_moves(self):
        response = requests.post(self.move_url(), allow_redirects=False,
                                 timeout=TIMEOUT)
        self.assertEqual(303, response.status_code, response.text)
        self.assertEqual(self.dest, self.project_of(self.moved))

    def test_a_move_from_another_origin_is_refused_with_403(self):
        response = requests.post(
            self.move_url(), allow_redirects=False, timeout=TIMEOUT,
            headers={'Origin': 'http://attacker.example'})
        self.assertEqual((403, 'Origin'),
                         (response.status_code, response.json()['field']))
        self.assertNotMoved()

    def test_a_move_from_an_allowed_origin_is_accepted(self):
        response = requests.post(
            self.move_url(), allow_redirects=False, timeout=TIMEOUT,
            headers={'Origin': 'https://console.example.org'})
        self.assertEqual(303, response.status_code, response.text)

    def test_a_rebound_host_name_is_refused_with_400(self):
        response = requests.get(
            self.url(self.account), timeout=TIMEOUT,
            headers={'Host': 'attacker.example:%d' % self.port})
        self.assertEqual((400, 'Host'),
                         (response.status_code, response.json()['field']))

    def test_a_rebound_host_name_cannot_move_an_account(self):
        response = requests.post(
            self.move_url(), allow_redirects=False, timeout=TIMEOUT,
            headers={'Host': 'attacker.example:%d' % self.port})
        self.assertEqual(400, response.status_code, response.text)
        self.assertNotMoved()

    def test_localhost_names_and_ip_addresses_are_accepted(self):
        hosts = ['localhost', 'localhost:%d' % self.port, 'LOCALHOST.',
                 '127.0.0.1:%d' % self.port, '[::1]:%d' % self.port,
                 '192.0.2.7']
        self.assertEqual([200] * len(hosts), [
            requests.get(self.url(self.account), timeout=TIMEOUT,
                         headers={'Host': host}).status_code
            for host in hosts])

    def test_healthcheck_answers_any_host(self):
        response = requests.get(self.root + '/healthcheck', timeout=TIMEOUT,
                                headers={'Host': 'lb-probe.example'})
        self.assertEqual(200, response.status_code)


class TestAllowedHosts(AdminHardeningTestCase):

    admin_options = {'allowed_hosts': ['admin.example.org:8791',
                                       'quota.example.org']}

    def setUp(self):
        super().setUp()
        self.put(self.account)

    def status(self, host):
        return requests.get(self.url(self.account), timeout=TIMEOUT,
                            headers={'Host': host}).status_code

    def test_a_configured_name_is_accepted_on_any_port(self):
        self.assertEqual([200, 200], [self.status('quota.example.org'),
                                      self.status('quota.example.org:1')])

    def test_a_configured_name_and_port_is_accepted_on_that_port_only(self):
        self.assertEqual([200, 400],
                         [self.status('admin.example.org:8791'),
                          self.status('admin.example.org:8792')])

    def test_configured_names_replace_localhost(self):
        self.assertEqual(400, self.status('localhost'))


class TestAnyHost(AdminHardeningTestCase):

    admin_options = {'allowed_hosts': ['*']}

    def test_a_star_accepts_any_host(self):
        response = requests.get(self.url(self.account), timeout=TIMEOUT,
                                headers={'Host': 'anything.example'})
        self.assertEqual(404, response.status_code, response.text)


class TestNoauthRoles(AdminHardeningTestCase):
    """Under noauth a request without ``X-Roles`` was an admin whatever
    the configuration said."""

    admin_options = {'noauth_roles': ['reader']}

    def test_a_request_without_roles_has_only_the_noauth_roles(self):
        response = requests.get(self.url(self.account), timeout=TIMEOUT)
        self.assertEqual((403, 'placement_quota:account:show'),
                         (response.status_code, response.json()['rule']))

    def test_a_roles_header_cannot_raise_the_noauth_roles(self):
        response = requests.put(self.url(self.account), json={},
                                headers={'X-Roles': 'admin'},
                                timeout=TIMEOUT)
        self.assertEqual((403, 'placement_quota:account:set'),
                         (response.status_code, response.json()['rule']))


class TestStrictJSON(AdminHardeningTestCase):
    """Non-JSON numbers: ``1e400`` in a body came back as ``"value": Infinity``
    (not JSON), and ``NaN`` was accepted."""

    def put_raw(self, text):
        return requests.put(self.url(self.account), data=text,
                            headers={'Content-Type': 'application/json'},
                            timeout=TIMEOUT)

    def test_a_number_beyond_a_double_is_refused_with_400(self):
        response = self.put_raw('{"limits": {"hosts": 1e400}}')
        self.assertEqual((400, 'body'),
                         (response.status_code, response.json()['field']))
        self.assertIn('1e400', response.json()['message'])

    def test_the_error_body_of_an_overflowing_number_is_strict_json(self):
        response = self.put_raw('{"limits": {"hosts": 1e400}}')
        json.loads(response.text, parse_constant=self.fail)

    def test_non_finite_literals_are_refused_with_400(self):
        answers = [self.put_raw('{"limits": {"hosts": %s}}' % literal)
                   for literal in ('NaN', 'Infinity', '-Infinity')]
        self.assertEqual([(400, 'body')] * 3,
                         [(a.status_code, a.json()['field'])
                          for a in answers])

    def test_a_large_finite_number_still_reaches_the_schema(self):
        response = self.put_raw('{"limits": {"hosts": 1e300}}')
        self.assertEqual(400, response.status_code, response.text)
        self.assertEqual('limits/hosts', response.json()['field'])
        json.loads(response.text, parse_constant=self.fail)
