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
"""HTTP edge cases on a real socket: what gabbi's client cannot send."""

import json
import socket
import time

import requests
import testtools

from tests.fixtures import enforcement as service_fixture
from tests import spec_examples as spec

BODY = json.dumps({'context': {'project_id': 'p'},
                   'lease': spec.lease()}).encode()


class HTTPTestCase(testtools.TestCase):

    socket_timeout = 2

    def setUp(self):
        super().setUp()
        conf = service_fixture.config(
            client_socket_timeout=('api', self.socket_timeout),
            max_request_body_size=('api', 4096),
            available_filters=('enforcement',
                               ['tests.unit.filters.test_chain.all_filters']),
            enabled_filters=('enforcement', ['AlphaFilter']))
        self.service = self.useFixture(
            service_fixture.EnforcementService(conf))

    def raw(self, head, body=b'', wait=10):
        """Send raw bytes; return (status line, all bytes received)."""
        sock = socket.create_connection(('127.0.0.1',
                                         self.service.server.port))
        self.addCleanup(sock.close)
        sock.settimeout(wait)
        sock.sendall(head.replace(b'\n', b'\r\n') + b'\r\n' + body)
        received = b''
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
                if b'\r\n\r\n' in received and self._complete(received):
                    break
        except socket.timeout:
            pass
        return received.split(b'\r\n', 1)[0], received

    @staticmethod
    def _complete(received):
        head, _, body = received.partition(b'\r\n\r\n')
        for line in head.split(b'\r\n'):
            if line.lower().startswith(b'content-length:'):
                return len(body) >= int(line.split(b':')[1])
        return True


class TestBodies(HTTPTestCase):

    def test_chunked_body_is_accepted(self):
        chunked = b'%x\r\n%s\r\n0\r\n\r\n' % (len(BODY), BODY)
        status, _ = self.raw(b'POST /v1/check-create HTTP/1.1\nHost: x\n'
                             b'Content-Type: application/json\n'
                             b'Transfer-Encoding: chunked\n', chunked)
        self.assertEqual(b'HTTP/1.1 204 No Content', status)

    def test_oversize_chunked_body_is_refused_with_413(self):
        big = b'{"a": "%s"}' % (b'x' * 10000)
        chunked = b'%x\r\n%s\r\n0\r\n\r\n' % (len(big), big)
        status, received = self.raw(
            b'POST /v1/check-create HTTP/1.1\nHost: x\n'
            b'Content-Type: application/json\nTransfer-Encoding: chunked\n',
            chunked)
        self.assertEqual(b'HTTP/1.1 413 Request Entity Too Large', status)
        self.assertIn(b'max_request_body_size', received)

    def test_negative_content_length_is_a_400_naming_the_header(self):
        status, received = self.raw(
            b'POST /v1/check-create HTTP/1.1\nHost: x\n'
            b'Content-Type: application/json\nContent-Length: -5\n', BODY)
        self.assertEqual(b'HTTP/1.1 400 Bad Request', status)
        self.assertIn(b'"field": "Content-Length"', received)

    def test_body_shorter_than_announced_does_not_hang_the_server(self):
        started = time.monotonic()
        self.raw(b'POST /v1/check-create HTTP/1.1\nHost: x\n'
                 b'Content-Type: application/json\nContent-Length: 5000\n',
                 BODY, wait=self.socket_timeout * 5)
        self.assertLess(time.monotonic() - started, self.socket_timeout * 3)
        response = requests.post(self.service.url + '/v1/check-create',
                                 data=BODY, timeout=10,
                                 headers={'Content-Type': 'application/json'})
        self.assertEqual(204, response.status_code)


class TestFailures(HTTPTestCase):

    def test_failing_filter_is_a_json_500_with_the_request_id(self):
        conf = service_fixture.config(
            available_filters=('enforcement',
                               ['tests.unit.filters.test_chain.all_filters']),
            enabled_filters=('enforcement', ['FailingFilter']))
        service = self.useFixture(service_fixture.EnforcementService(conf))
        response = requests.post(service.url + '/v1/check-create',
                                 data=BODY, timeout=10,
                                 headers={'Content-Type': 'application/json'})
        self.assertEqual(500, response.status_code)
        request_id = response.headers['X-OpenStack-Request-Id']
        self.assertIn(request_id, response.json()['message'])
        self.assertIn('FailingFilter', response.json()['message'])
        self.assertNotIn('Traceback', response.text)

    def test_answer_carries_our_request_id_not_the_callers(self):
        global_id = 'req-12345678-1234-1234-1234-123456789012'
        response = requests.post(
            self.service.url + '/v1/check-create', data=BODY, timeout=10,
            headers={'Content-Type': 'application/json',
                     'X-OpenStack-Request-Id': global_id})
        self.assertEqual(204, response.status_code)
        self.assertNotEqual(global_id,
                            response.headers['X-OpenStack-Request-Id'])
