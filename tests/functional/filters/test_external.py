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
"""ExternalServiceFilter against real HTTP peers on 127.0.0.1.

Every peer is a real TCP or HTTP server started by the test and stopped at
cleanup: well-behaved ones that record what they receive, and misbehaving
ones (a black hole, a server that resets connections, servers answering
500, 403 without a usable message, 404). The last tests run our own
enforcement service behind the filter, end to end.
"""

import http.server
import json
import logging
import os
import socket
import struct
import threading
import time

import fixtures
import testtools

from placement_quota.api.enforcement import app as api_app
from placement_quota.filters import base
from placement_quota.filters import chain as chain_mod
from placement_quota.filters import external
from placement_quota.httpserver import server as wsgi_server
from tests import builders
from tests.fixtures import enforcement as enforcement_fixture

READ_TIMEOUT = 0.5
RETRIES = 2

# The example of Blazar's "Flexible Reservation Usage Enforcement" spec: a
# lease as the spec shows it, with ``end_time`` and dates in the "YYYY-MM-DD
# HH:MM" form.
CONTEXT = {
    'user_id': 'c631173e-dec0-4bb7-a0c3-f7711153c06c',
    'project_id': 'a0b86a98-b0d3-43cb-948e-00689182efd4',
    'auth_url': 'https://api.example.com:5000/v3',
    'region_name': 'RegionOne',
}
HOST_RESERVATION = {
    'resource_type': 'physical:host',
    'min': 1,
    'max': 2,
    'hypervisor_properties': '[]',
    'resource_properties': '["==", "$availability_zone", "az1"]',
    'allocations': [{
        'id': '1',
        'hypervisor_hostname': '32af5a7a-e7a3-4883-a643-828e3f63bf54',
        'extra': {'availability_zone': 'az1'},
    }],
}
INSTANCE_RESERVATION = {
    'resource_type': 'virtual:instance',
    'amount': 3,
    'vcpus': 4,
    'memory_mb': 4096,
    'disk_gb': 30,
    'affinity': False,
    'resource_properties': '["==", "$availability_zone", "az1"]',
    'allocations': [{
        'id': '4d4f8b9e-0c1a-4e5b-8a57-62d0a2b2c4f1',
        'hypervisor_hostname': '32af5a7a-e7a3-4883-a643-828e3f63bf54',
        'extra': {'availability_zone': 'az1'},
    }],
}
SPEC_LEASE = {
    'start_date': '2020-05-13 00:00',
    'end_time': '2020-05-14 23:59',
    'reservations': [HOST_RESERVATION, INSTANCE_RESERVATION],
}
# What the service must receive for SPEC_LEASE: Blazar's field names and
# datetime.isoformat() dates.
SPEC_LEASE_SENT = {
    'start_date': '2020-05-13T00:00:00',
    'end_date': '2020-05-14T23:59:00',
    'reservations': [HOST_RESERVATION, INSTANCE_RESERVATION],
}


ONE_HOUR_LEASE = builders.lease('2030-01-01T00:00:00', '2030-01-01T01:00:00')
TWO_DAY_LEASE = builders.lease('2030-01-01T00:00:00', '2030-01-03T00:00:00')


# --- peers ----------------------------------------------------------------

class _TCPPeer:
    """A listening socket on 127.0.0.1 whose accept loop runs in a thread.

    Counts the connections it accepts; subclasses decide what to do with
    each one in :meth:`handle`.
    """

    def __init__(self):
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(('127.0.0.1', 0))
        self._sock.listen(16)
        self._sock.settimeout(0.05)
        self.port = self._sock.getsockname()[1]
        self.url = 'http://127.0.0.1:%d' % self.port
        self.connections = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._accept_loop,
                                        name='peer-%d' % self.port,
                                        daemon=True)

    def start(self):
        self._thread.start()
        return self

    def _accept_loop(self):
        while not self._stopping.is_set():
            try:
                conn, _addr = self._sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with self._lock:
                self.connections += 1
            self.handle(conn)

    def handle(self, conn):
        raise NotImplementedError

    def stop(self):
        self._stopping.set()
        self._thread.join(timeout=5)
        self._sock.close()


class BlackholeServer(_TCPPeer):
    """Accepts connections and never reads from them nor answers."""

    def __init__(self):
        super().__init__()
        self._held = []

    def handle(self, conn):
        self._held.append(conn)

    def stop(self):
        super().stop()
        for conn in self._held:
            conn.close()


class ResetServer(_TCPPeer):
    """Accepts each connection and resets it at once (SO_LINGER 0: RST)."""

    def handle(self, conn):
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                        struct.pack('ii', 1, 0))
        conn.close()


class _CannedHTTPServer:
    """An HTTP server on 127.0.0.1 giving one canned answer to every POST.

    Records each request it receives (path, headers, decoded JSON body) in
    :attr:`requests`.
    """

    status = 204
    content_type = 'application/json'
    body = b''

    def __init__(self):
        self.requests = []
        self.headers = {}
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get('Content-Length') or 0)
                raw = self.rfile.read(length)
                try:
                    payload = json.loads(raw)
                except ValueError:
                    payload = raw
                outer.requests.append({'path': self.path,
                                       'headers': dict(self.headers),
                                       'body': payload})
                self.send_response(outer.status)
                for name, value in outer.headers.items():
                    self.send_header(name, value)
                if outer.body:
                    self.send_header('Content-Type', outer.content_type)
                self.send_header('Content-Length', str(len(outer.body)))
                self.end_headers()
                if outer.body:
                    self.wfile.write(outer.body)

            do_GET = do_POST

            def log_message(self, format, *args):
                pass

        self._httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                      Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = 'http://127.0.0.1:%d' % self.port
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={'poll_interval': 0.05},
                                        name='http-%d' % self.port,
                                        daemon=True)

    @property
    def count(self):
        return len(self.requests)

    @property
    def paths(self):
        return [r['path'] for r in self.requests]

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


class AllowServer(_CannedHTTPServer):
    """Answers 204 (allow) to everything."""


class DenyServer(_CannedHTTPServer):
    """Answers 403 with ``{"message": MESSAGE}``."""

    MESSAGE = 'Project a0b86a98 has used all of its 100 SU this month.'
    status = 403
    body = json.dumps({'message': MESSAGE}).encode()


class HTMLDenyServer(_CannedHTTPServer):
    """Answers 403 with an HTML page, as a misconfigured proxy would."""

    status = 403
    content_type = 'text/html'
    body = b'<html><body><h1>403 Forbidden</h1>nginx internals</body></html>'


class MessagelessDenyServer(_CannedHTTPServer):
    """Answers 403 with a JSON object that has no ``message``."""

    status = 403
    body = json.dumps({'error': 'quota', 'detail': 'internal'}).encode()


class RedirectServer(_CannedHTTPServer):
    """Answers 302 to ``location`` (set by the test)."""

    status = 302


class ErrorServer(_CannedHTTPServer):
    """Answers 500 to everything."""

    status = 500
    body = json.dumps({'message': 'database is down'}).encode()


class NotFoundServer(_CannedHTTPServer):
    """Answers 404 to everything."""

    status = 404
    body = json.dumps({'message': 'no such resource'}).encode()


def _unused_port():
    """A port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


# --- tests ----------------------------------------------------------------

class ExternalFilterTestCase(testtools.TestCase):
    """A fresh configuration per test; peers stopped at cleanup."""

    def setUp(self):
        super().setUp()
        self.conf = enforcement_fixture.new_config(config_files=[])

    def serve(self, server_cls):
        server = server_cls().start()
        self.addCleanup(server.stop)
        return server

    def set_legacy(self, **options):
        """Upstream Blazar's options, in [enforcement]."""
        for name, value in options.items():
            self.conf.set_override(name, value, 'enforcement')

    def set_external(self, **options):
        """[enforcement_external] ``options``, with short timeouts."""
        options.setdefault('connect_timeout', 0.5)
        options.setdefault('read_timeout', READ_TIMEOUT)
        options.setdefault('retries', RETRIES)
        options.setdefault('retry_backoff', 0.01)
        for name, value in options.items():
            self.conf.set_override(name, value, 'enforcement_external')

    def make_filter(self, **options):
        """An ExternalServiceFilter with short timeouts and ``options``."""
        self.set_external(**options)
        return external.ExternalServiceFilter(self.conf)

    def assertDenied(self, message, func, *args):
        denial = self.assertRaises(base.EnforcementDenied, func, *args)
        self.assertEqual(message, str(denial))
        self.assertEqual('ExternalServiceFilter', denial.filter_name)
        return denial


class TestAnswers(ExternalFilterTestCase):
    """What each answer of the service means."""

    def test_204_allows(self):
        server = self.serve(AllowServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        self.assertIsNone(filter_.check_create(CONTEXT, SPEC_LEASE))
        self.assertEqual(1, server.count)

    def test_403_json_message_is_the_denial_message(self):
        server = self.serve(DenyServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        self.assertDenied(DenyServer.MESSAGE, filter_.check_create,
                          CONTEXT, SPEC_LEASE)

    def test_403_json_message_denies_check_update(self):
        server = self.serve(DenyServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        self.assertDenied(DenyServer.MESSAGE, filter_.check_update,
                          CONTEXT, ONE_HOUR_LEASE, SPEC_LEASE)

    def test_403_non_json_body_denies_with_the_generic_message(self):
        server = self.serve(HTMLDenyServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        self.assertDenied(external.GENERIC_DENY_MSG, filter_.check_create,
                          CONTEXT, SPEC_LEASE)

    def test_403_json_without_message_denies_with_the_generic_message(self):
        server = self.serve(MessagelessDenyServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        self.assertDenied(external.GENERIC_DENY_MSG, filter_.check_create,
                          CONTEXT, SPEC_LEASE)

    def test_403_denies_even_when_allow_on_error_is_true(self):
        server = self.serve(DenyServer)
        filter_ = self.make_filter(endpoint_url=server.url,
                                   allow_on_error=True)
        self.assertDenied(DenyServer.MESSAGE, filter_.check_create,
                          CONTEXT, SPEC_LEASE)

    def test_403_is_never_retried(self):
        server = self.serve(DenyServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        self.assertRaises(base.EnforcementDenied, filter_.check_create,
                          CONTEXT, SPEC_LEASE)
        self.assertEqual(1, server.count)

    def test_404_is_not_retried(self):
        server = self.serve(NotFoundServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        self.assertRaises(base.EnforcementDenied, filter_.check_create,
                          CONTEXT, SPEC_LEASE)
        self.assertEqual(1, server.count)

    def test_404_is_an_error_that_denies_as_unavailable(self):
        server = self.serve(NotFoundServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        self.assertDenied(external.UNAVAILABLE_DENY_MSG,
                          filter_.check_create, CONTEXT, SPEC_LEASE)

    def test_404_is_allowed_when_allow_on_error_is_true(self):
        server = self.serve(NotFoundServer)
        filter_ = self.make_filter(endpoint_url=server.url,
                                   allow_on_error=True)
        self.assertIsNone(filter_.check_create(CONTEXT, SPEC_LEASE))

    def test_500_is_retried_retries_times(self):
        server = self.serve(ErrorServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        self.assertRaises(base.EnforcementDenied, filter_.check_create,
                          CONTEXT, SPEC_LEASE)
        self.assertEqual(RETRIES + 1, server.count)

    def test_500_with_zero_retries_is_tried_once(self):
        server = self.serve(ErrorServer)
        filter_ = self.make_filter(endpoint_url=server.url, retries=0)
        self.assertRaises(base.EnforcementDenied, filter_.check_create,
                          CONTEXT, SPEC_LEASE)
        self.assertEqual(1, server.count)

    def test_500_denies_with_the_unavailable_message(self):
        server = self.serve(ErrorServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        self.assertDenied(external.UNAVAILABLE_DENY_MSG,
                          filter_.check_create, CONTEXT, SPEC_LEASE)

    def test_500_is_allowed_when_allow_on_error_is_true(self):
        server = self.serve(ErrorServer)
        filter_ = self.make_filter(endpoint_url=server.url,
                                   allow_on_error=True)
        self.assertIsNone(filter_.check_create(CONTEXT, SPEC_LEASE))
        self.assertEqual(RETRIES + 1, server.count)

    def test_unset_endpoint_allows_without_any_request(self):
        filter_ = self.make_filter()
        self.assertEqual(dict.fromkeys(external.KINDS), filter_.endpoints)
        self.assertIsNone(filter_.check_create(CONTEXT, SPEC_LEASE))


class TestUnreachableService(ExternalFilterTestCase):
    """Black holes, resets and closed ports."""

    def test_read_timeout_denies_when_allow_on_error_is_false(self):
        server = self.serve(BlackholeServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        self.assertDenied(external.UNAVAILABLE_DENY_MSG,
                          filter_.check_create, CONTEXT, SPEC_LEASE)

    def test_read_timeout_denies_after_about_read_timeout(self):
        server = self.serve(BlackholeServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        began = time.monotonic()
        self.assertRaises(base.EnforcementDenied, filter_.check_create,
                          CONTEXT, SPEC_LEASE)
        elapsed = time.monotonic() - began
        self.assertGreaterEqual(elapsed, READ_TIMEOUT)
        self.assertLess(elapsed, READ_TIMEOUT * 2)

    def test_redirect_is_not_followed_and_denies(self):
        target = self.serve(AllowServer)
        redirect = self.serve(RedirectServer)
        redirect.headers['Location'] = target.url + '/v1/check-create'
        filter_ = self.make_filter(endpoint_url=redirect.url,
                                   token='s3cr3t-token')
        self.assertDenied(external.UNAVAILABLE_DENY_MSG,
                          filter_.check_create, CONTEXT, SPEC_LEASE)
        self.assertEqual(0, target.count)

    def test_redirect_is_not_followed_with_allow_on_error_either(self):
        target = self.serve(AllowServer)
        redirect = self.serve(RedirectServer)
        redirect.headers['Location'] = target.url + '/v1/check-create'
        filter_ = self.make_filter(endpoint_url=redirect.url,
                                   allow_on_error=True)
        filter_.check_create(CONTEXT, SPEC_LEASE)
        self.assertEqual(0, target.count)

    def test_read_timeout_is_not_retried(self):
        server = self.serve(BlackholeServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        self.assertRaises(base.EnforcementDenied, filter_.check_create,
                          CONTEXT, SPEC_LEASE)
        self.assertEqual(1, server.connections)

    def test_read_timeout_allows_when_allow_on_error_is_true(self):
        server = self.serve(BlackholeServer)
        filter_ = self.make_filter(endpoint_url=server.url,
                                   allow_on_error=True)
        self.assertIsNone(filter_.check_create(CONTEXT, SPEC_LEASE))

    def test_connection_reset_is_retried_retries_times(self):
        server = self.serve(ResetServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        self.assertRaises(base.EnforcementDenied, filter_.check_create,
                          CONTEXT, SPEC_LEASE)
        self.assertEqual(RETRIES + 1, server.connections)

    def test_connection_reset_denies_when_allow_on_error_is_false(self):
        server = self.serve(ResetServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        self.assertDenied(external.UNAVAILABLE_DENY_MSG,
                          filter_.check_create, CONTEXT, SPEC_LEASE)

    def test_connection_reset_allows_when_allow_on_error_is_true(self):
        server = self.serve(ResetServer)
        filter_ = self.make_filter(endpoint_url=server.url,
                                   allow_on_error=True)
        self.assertIsNone(filter_.check_create(CONTEXT, SPEC_LEASE))
        self.assertEqual(RETRIES + 1, server.connections)

    def test_connection_refused_denies_with_the_unavailable_message(self):
        filter_ = self.make_filter(
            endpoint_url='http://127.0.0.1:%d' % _unused_port())
        self.assertDenied(external.UNAVAILABLE_DENY_MSG,
                          filter_.check_create, CONTEXT, SPEC_LEASE)


class TestOnEnd(ExternalFilterTestCase):
    """on-end is a notification: it never raises."""

    def test_on_end_does_not_raise_when_the_service_is_down(self):
        filter_ = self.make_filter(
            endpoint_url='http://127.0.0.1:%d' % _unused_port())
        self.assertIsNone(filter_.on_end(CONTEXT, SPEC_LEASE))

    def test_on_end_does_not_raise_when_the_service_answers_403(self):
        server = self.serve(DenyServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        self.assertIsNone(filter_.on_end(CONTEXT, SPEC_LEASE))
        self.assertEqual(['/on-end'], server.paths)

    def test_on_end_does_not_raise_when_the_service_answers_500(self):
        server = self.serve(ErrorServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        self.assertIsNone(filter_.on_end(CONTEXT, SPEC_LEASE))

    def test_on_end_does_not_raise_when_the_service_never_answers(self):
        server = self.serve(BlackholeServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        self.assertIsNone(filter_.on_end(CONTEXT, SPEC_LEASE))


class TestEndpoints(ExternalFilterTestCase):
    """Which URL each call reaches."""

    def test_endpoint_url_without_trailing_slash_gets_kind_appended(self):
        server = self.serve(AllowServer)
        filter_ = self.make_filter(endpoint_url=server.url + '/v1')
        filter_.check_create(CONTEXT, SPEC_LEASE)
        self.assertEqual(['/v1/check-create'], server.paths)

    def test_endpoint_url_with_trailing_slash_gets_kind_appended(self):
        server = self.serve(AllowServer)
        filter_ = self.make_filter(endpoint_url=server.url + '/v1/')
        filter_.check_create(CONTEXT, SPEC_LEASE)
        self.assertEqual(['/v1/check-create'], server.paths)

    def test_each_call_reaches_its_own_path(self):
        server = self.serve(AllowServer)
        filter_ = self.make_filter(endpoint_url=server.url + '/v1')
        filter_.check_create(CONTEXT, SPEC_LEASE)
        filter_.check_update(CONTEXT, ONE_HOUR_LEASE, SPEC_LEASE)
        filter_.on_end(CONTEXT, SPEC_LEASE)
        self.assertEqual(['/v1/check-create', '/v1/check-update',
                          '/v1/on-end'], server.paths)

    def test_legacy_base_endpoint_without_slash_replaces_last_segment(self):
        server = self.serve(AllowServer)
        self.set_legacy(external_service_base_endpoint=server.url + '/v1')
        filter_ = self.make_filter()
        filter_.check_create(CONTEXT, SPEC_LEASE)
        self.assertEqual(['/check-create'], server.paths)

    def test_legacy_base_endpoint_with_slash_keeps_last_segment(self):
        server = self.serve(AllowServer)
        self.set_legacy(external_service_base_endpoint=server.url + '/v1/')
        filter_ = self.make_filter()
        filter_.check_create(CONTEXT, SPEC_LEASE)
        self.assertEqual(['/v1/check-create'], server.paths)

    def test_endpoint_url_takes_precedence_over_legacy_base_endpoint(self):
        server = self.serve(AllowServer)
        self.set_legacy(
            external_service_base_endpoint=server.url + '/legacy/')
        filter_ = self.make_filter(endpoint_url=server.url + '/v1')
        filter_.check_create(CONTEXT, SPEC_LEASE)
        self.assertEqual(['/v1/check-create'], server.paths)

    def test_legacy_check_create_endpoint_overrides_only_check_create(self):
        server = self.serve(AllowServer)
        self.set_legacy(external_service_check_create_endpoint=(
            server.url + '/custom/may-i-create'))
        filter_ = self.make_filter(endpoint_url=server.url + '/v1')
        filter_.check_create(CONTEXT, SPEC_LEASE)
        filter_.check_update(CONTEXT, ONE_HOUR_LEASE, SPEC_LEASE)
        self.assertEqual(['/custom/may-i-create', '/v1/check-update'],
                         server.paths)

    def test_legacy_check_create_endpoint_works_without_a_base_url(self):
        server = self.serve(AllowServer)
        self.set_legacy(external_service_check_create_endpoint=(
            server.url + '/custom/may-i-create'))
        filter_ = self.make_filter()
        filter_.check_create(CONTEXT, SPEC_LEASE)
        filter_.on_end(CONTEXT, SPEC_LEASE)
        self.assertEqual(['/custom/may-i-create'], server.paths)

    def test_invalid_endpoint_url_makes_the_constructor_raise(self):
        workdir = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(workdir, 'placement-quota.conf')
        with open(path, 'w') as f:
            f.write('[enforcement_external]\nendpoint_url = ftp://x\n')
        conf = enforcement_fixture.new_config(config_files=[path])
        error = self.assertRaises(ValueError,
                                  external.ExternalServiceFilter, conf)
        self.assertIn('[enforcement_external] endpoint_url', str(error))

    def test_invalid_legacy_base_endpoint_makes_the_constructor_raise(self):
        self.set_legacy(external_service_base_endpoint='ftp://x/v1/')
        error = self.assertRaises(ValueError, self.make_filter)
        self.assertIn('[enforcement] external_service_base_endpoint',
                      str(error))


class TestRequests(ExternalFilterTestCase):
    """What the service receives."""

    def test_static_token_is_sent_as_x_auth_token(self):
        server = self.serve(AllowServer)
        filter_ = self.make_filter(endpoint_url=server.url,
                                   token='static-token-1')
        filter_.check_create(CONTEXT, SPEC_LEASE)
        self.assertEqual('static-token-1',
                         server.requests[0]['headers'].get('X-Auth-Token'))

    def test_legacy_static_token_is_sent_as_x_auth_token(self):
        server = self.serve(AllowServer)
        self.set_legacy(external_service_token='legacy-token-2')
        filter_ = self.make_filter(endpoint_url=server.url)
        filter_.check_create(CONTEXT, SPEC_LEASE)
        self.assertEqual('legacy-token-2',
                         server.requests[0]['headers'].get('X-Auth-Token'))

    def test_token_takes_precedence_over_the_legacy_token(self):
        server = self.serve(AllowServer)
        self.set_legacy(external_service_token='legacy-token-2')
        filter_ = self.make_filter(endpoint_url=server.url,
                                   token='static-token-1')
        filter_.check_create(CONTEXT, SPEC_LEASE)
        self.assertEqual('static-token-1',
                         server.requests[0]['headers'].get('X-Auth-Token'))

    def test_no_token_configured_sends_no_x_auth_token(self):
        server = self.serve(AllowServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        filter_.check_create(CONTEXT, SPEC_LEASE)
        self.assertNotIn('X-Auth-Token', server.requests[0]['headers'])

    def test_request_is_json(self):
        server = self.serve(AllowServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        filter_.check_create(CONTEXT, SPEC_LEASE)
        self.assertEqual('application/json',
                         server.requests[0]['headers'].get('Content-Type'))

    def test_check_create_body_is_the_spec_payload_with_isoformat_dates(self):
        server = self.serve(AllowServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        filter_.check_create(CONTEXT, SPEC_LEASE)
        self.assertEqual({'context': CONTEXT, 'lease': SPEC_LEASE_SENT},
                         server.requests[0]['body'])

    def test_end_time_arrives_as_end_date(self):
        server = self.serve(AllowServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        filter_.check_create(CONTEXT, SPEC_LEASE)
        lease = server.requests[0]['body']['lease']
        self.assertEqual('2020-05-14T23:59:00', lease['end_date'])
        self.assertNotIn('end_time', lease)

    def test_check_update_sends_context_current_lease_and_lease(self):
        server = self.serve(AllowServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        filter_.check_update(CONTEXT, ONE_HOUR_LEASE, SPEC_LEASE)
        self.assertEqual({'context': CONTEXT,
                          'current_lease': ONE_HOUR_LEASE,
                          'lease': SPEC_LEASE_SENT},
                         server.requests[0]['body'])

    def test_on_end_sends_context_and_lease(self):
        server = self.serve(AllowServer)
        filter_ = self.make_filter(endpoint_url=server.url)
        filter_.on_end(CONTEXT, SPEC_LEASE)
        self.assertEqual({'context': CONTEXT, 'lease': SPEC_LEASE_SENT},
                         server.requests[0]['body'])

    def test_static_token_never_reaches_the_logs(self):
        logs = self.useFixture(fixtures.FakeLogger(level=logging.DEBUG))
        server = self.serve(ErrorServer)
        filter_ = self.make_filter(endpoint_url=server.url,
                                   token='s3cr3t-token')
        self.assertRaises(base.EnforcementDenied, filter_.check_create,
                          CONTEXT, SPEC_LEASE)
        self.assertEqual('s3cr3t-token',
                         server.requests[0]['headers'].get('X-Auth-Token'))
        # The capture works: the failure itself was logged.
        self.assertIn('answered HTTP 500', logs.output)
        self.assertNotIn('s3cr3t-token', logs.output)

    def test_credentials_in_the_endpoint_url_never_reach_the_logs(self):
        logs = self.useFixture(fixtures.FakeLogger(level=logging.INFO))
        server = self.serve(ErrorServer)
        filter_ = self.make_filter(
            endpoint_url='http://user:hunter2@127.0.0.1:%d/v1' % server.port)
        self.assertRaises(base.EnforcementDenied, filter_.check_create,
                          CONTEXT, SPEC_LEASE)
        self.assertIn('127.0.0.1:%d/v1' % server.port, logs.output)
        self.assertNotIn('hunter2', logs.output)

    def test_ipv6_endpoint_url_keeps_its_brackets_in_the_logs(self):
        # Nothing listens there (or IPv6 is off): the failure is logged
        # with the URL, which must stay a valid URL once the credentials
        # are removed.
        logs = self.useFixture(fixtures.FakeLogger(level=logging.INFO))
        port = _unused_port()
        filter_ = self.make_filter(
            endpoint_url='http://user:hunter2@[::1]:%d/v1' % port,
            retries=0)
        self.assertRaises(base.EnforcementDenied, filter_.check_create,
                          CONTEXT, SPEC_LEASE)
        self.assertNotIn('hunter2', logs.output)
        self.assertIn('http://[::1]:%d/v1/check-create' % port, logs.output)


class TestAgainstOurEnforcementService(ExternalFilterTestCase):
    """Our filter chain asking our own service, served over HTTP."""

    def setUp(self):
        super().setUp()
        self.service_conf = enforcement_fixture.new_config(config_files=[])
        self.service_conf.set_override(
            'enabled_filters', ['MaximumReservationLengthFilter'],
            'enforcement')
        self.service_conf.set_override('reservation_max_length', 86400,
                                       'enforcement')
        self.service_chain = chain_mod.FilterChain(self.service_conf)
        service = wsgi_server.WSGIServer(
            api_app.make_app(self.service_conf, self.service_chain)).start()
        self.addCleanup(service.stop)
        self.conf.set_override('enabled_filters', ['ExternalServiceFilter'],
                               'enforcement')
        self.set_external(endpoint_url=service.url + '/v1')
        self.chain = chain_mod.FilterChain(self.conf)

    def test_short_lease_is_allowed(self):
        self.assertIsNone(self.chain.check_create(CONTEXT, ONE_HOUR_LEASE))

    def test_long_lease_is_denied_with_the_remote_message(self):
        local = self.assertRaises(base.EnforcementDenied,
                                  self.service_chain.check_create,
                                  CONTEXT, TWO_DAY_LEASE)
        self.assertIn('86400 seconds', str(local))
        self.assertDenied(str(local), self.chain.check_create,
                          CONTEXT, TWO_DAY_LEASE)

    def test_long_update_is_denied_with_the_remote_message(self):
        local = self.assertRaises(base.EnforcementDenied,
                                  self.service_chain.check_update,
                                  CONTEXT, ONE_HOUR_LEASE, TWO_DAY_LEASE)
        self.assertDenied(str(local), self.chain.check_update,
                          CONTEXT, ONE_HOUR_LEASE, TWO_DAY_LEASE)

    def test_on_end_of_a_long_lease_does_not_raise(self):
        self.assertIsNone(self.chain.on_end(CONTEXT, TWO_DAY_LEASE))
