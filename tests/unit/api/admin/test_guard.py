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
"""The admin API's guard against what web pages send, on
WSGI environs: Host, Origin and Content-Type. The functional twins in
tests/functional/accounts/test_admin_hardening.py go over HTTP."""

import testtools
import webob

from placement_quota.api.admin import guard as admin_guard


def app(environ, start_response):
    start_response('200 OK', [('Content-Length', '0')])
    return []


def call(method='GET', headers=None, body=None, allowed_hosts=None,
         allowed_origins=(), path='/v1/acct'):
    guard = admin_guard.RequestGuard(
        app, allowed_hosts or admin_guard.default_allowed_hosts('127.0.0.1'),
        allowed_origins, unchecked=('/healthcheck',))
    request = webob.Request.blank(path, method=method,
                                  headers=headers or {})
    if body is not None:
        request.body = body
    return request.get_response(guard)


class TestHost(testtools.TestCase):

    def status(self, host, **kwargs):
        return call(headers={'Host': host}, **kwargs).status_int

    def test_loopback_names_are_accepted_on_any_port(self):
        self.assertEqual([200] * 4, [self.status(h) for h in (
            'localhost', 'localhost:8791', '127.0.0.1:1', '[::1]:8791')])

    def test_any_ip_address_is_accepted(self):
        self.assertEqual([200, 200], [self.status('203.0.113.9:8791'),
                                      self.status('[2001:db8::1]')])

    def test_another_name_is_refused_with_400_naming_the_header(self):
        response = call(headers={'Host': 'rebind.attacker.example:8791'})
        self.assertEqual((400, 'Host', 'rebind.attacker.example:8791'),
                         (response.status_int, response.json['field'],
                          response.json['value']))

    def test_a_host_that_is_no_host_is_refused_with_400(self):
        self.assertEqual([400, 400, 400], [self.status(h) for h in (
            'localhost:http', '[::1', 'user@localhost')])

    def test_the_bind_host_is_accepted_by_default(self):
        self.assertIn('quota.internal',
                      admin_guard.default_allowed_hosts('quota.internal'))

    def test_a_wildcard_bind_host_is_not_a_host_name(self):
        self.assertNotIn('0.0.0.0',
                         admin_guard.default_allowed_hosts('0.0.0.0'))

    def test_healthcheck_is_not_checked(self):
        response = call(headers={'Host': 'probe.example'},
                        path='/healthcheck')
        self.assertEqual(200, response.status_int)


class TestStateChangingCalls(testtools.TestCase):

    def test_a_form_content_type_is_refused_with_415(self):
        response = call('POST', {'Content-Type':
                                 'application/x-www-form-urlencoded'})
        self.assertEqual((415, 'Content-Type'),
                         (response.status_int, response.json['field']))

    def test_a_text_body_is_refused_with_415(self):
        response = call('PUT', {'Content-Type': 'text/plain'}, b'{}')
        self.assertEqual(415, response.status_int)

    def test_a_json_body_with_parameters_is_accepted(self):
        response = call('PUT', {'Content-Type':
                                'Application/JSON; charset=utf-8'}, b'{}')
        self.assertEqual(200, response.status_int)

    def test_no_body_and_no_content_type_is_accepted(self):
        self.assertEqual(200, call('DELETE').status_int)

    def test_a_reading_call_is_not_checked_for_content_type(self):
        self.assertEqual(200, call('GET', {'Content-Type': 'text/plain',
                                           'Origin': 'http://x'}).status_int)

    def test_an_origin_not_allowed_is_refused_with_403(self):
        response = call('DELETE', {'Origin': 'null'})
        self.assertEqual((403, 'Origin', 'null'),
                         (response.status_int, response.json['field'],
                          response.json['value']))

    def test_an_allowed_origin_is_compared_without_case_or_slash(self):
        response = call('DELETE', {'Origin': 'HTTPS://Console.Example.org'},
                        allowed_origins=['https://console.example.org/'])
        self.assertEqual(200, response.status_int)
