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
"""The WSGI server against slow and malformed clients (slow clients,
ambiguous framing, the accept queue, and ``serve``'s warning about noauth
beyond loopback), over real sockets.

The enforcement app is the real one (``api_app.make_app``); deadlines are
short so that each test takes seconds.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import requests
import testtools

from placement_quota.api.admin import app as admin
from placement_quota.api.enforcement import app as api_app
from placement_quota.filters import chain as chain_mod
from placement_quota.httpserver import server as wsgi_server
from tests.fixtures import enforcement as enforcement_fixture
from tests.fixtures import process as processes
from tests import spec_examples as spec

BODY = json.dumps({'context': {'project_id': 'p'},
                   'lease': spec.lease()}).encode()
HEADER_DRIP = b'GET /v1/ HTTP/1.1\r\nHost: x\r\nX-Slow: '
CHUNKED_DRIP = (b'POST /v1/check-create HTTP/1.1\r\nHost: x\r\n'
                b'Content-Type: application/json\r\n'
                b'Transfer-Encoding: chunked\r\n\r\n' + b'%x\r\n' % 50000)
TIMEOUT = 60


def enforcement_app():
    conf = enforcement_fixture.config(
        enabled_filters=('enforcement', ['MaximumReservationLengthFilter']))
    return api_app.make_app(conf, chain_mod.FilterChain(conf))


class Drippers:
    """``count`` connections, each sending ``head`` and then one byte
    every ``interval`` seconds until the server closes it (or
    :meth:`stop`). ``results``: (seconds it stayed open, bytes received)
    of each."""

    def __init__(self, port, count, head, interval=0.2):
        self.port = port
        self.head = head
        self.interval = interval
        self.stopped = threading.Event()
        self.results = [None] * count
        self.threads = [threading.Thread(target=self._run, args=(i,),
                                         daemon=True) for i in range(count)]
        self.connected = threading.Semaphore(0)

    def start(self):
        for thread in self.threads:
            thread.start()
        for _ in self.threads:
            self.connected.acquire(timeout=TIMEOUT)
        return self

    def stop(self):
        self.stopped.set()
        for thread in self.threads:
            thread.join(TIMEOUT)

    def _run(self, index):
        sock = socket.create_connection(('127.0.0.1', self.port))
        sock.settimeout(self.interval)
        started = time.monotonic()
        received = b''
        try:
            sock.sendall(self.head)
            self.connected.release()
            while not self.stopped.is_set():
                try:
                    data = sock.recv(65536)
                except socket.timeout:
                    sock.sendall(b'a')
                    continue
                if not data:
                    break
                received += data
        except OSError:
            pass
        finally:
            self.results[index] = (time.monotonic() - started, received)
            sock.close()


def status_line(received):
    return received.split(b'\r\n', 1)[0]


def read_response(sock):
    """One whole response (head and ``Content-Length`` body) from
    ``sock``: ``recv`` may return it in pieces."""
    received = b''
    while b'\r\n\r\n' not in received:
        chunk = sock.recv(65536)
        if not chunk:
            return received
        received += chunk
    head, _, body = received.partition(b'\r\n\r\n')
    length = 0
    for line in head.split(b'\r\n')[1:]:
        name, _, value = line.partition(b':')
        if name.strip().lower() == b'content-length':
            length = int(value.strip())
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b'\r\n\r\n' + body


def json_body(received):
    return json.loads(received.partition(b'\r\n\r\n')[2])


class ServerTestCase(testtools.TestCase):

    def serve(self, app=None, **kwargs):
        server = wsgi_server.WSGIServer(app or enforcement_app(),
                                        **kwargs).start()
        self.addCleanup(server.stop)
        return server

    def drip(self, server, count, head, interval=0.2):
        drippers = Drippers(server.port, count, head, interval).start()
        self.addCleanup(drippers.stop)
        return drippers

    def raw(self, server, data, wait=10):
        """Send ``data``; return every byte received until the server
        closes the connection (or ``wait`` seconds pass)."""
        sock = socket.create_connection(('127.0.0.1', server.port))
        self.addCleanup(sock.close)
        sock.settimeout(wait)
        sock.sendall(data)
        received = b''
        deadline = time.monotonic() + wait
        try:
            while time.monotonic() < deadline:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
        except (socket.timeout, ConnectionResetError):
            pass
        return received

    @staticmethod
    def timed_get(url):
        started = time.monotonic()
        response = requests.get(url, timeout=TIMEOUT)
        return response, time.monotonic() - started


class TestReadDeadline(ServerTestCase):
    """Slow clients: 20 connections dripping a byte every 2 s held all 16
    threads, and /healthcheck timed out."""

    def test_clients_dripping_headers_hold_no_thread(self):
        server = self.serve(threads=2, request_read_timeout=5)
        self.drip(server, 6, HEADER_DRIP)
        response, took = self.timed_get(server.url + '/healthcheck')
        self.assertEqual(200, response.status_code)
        self.assertLess(took, 2.0)

    def test_clients_dripping_bodies_free_their_threads_at_the_deadline(self):
        deadline = 1
        server = self.serve(threads=2, request_read_timeout=deadline)
        self.drip(server, 4, CHUNKED_DRIP)
        response, took = self.timed_get(server.url + '/healthcheck')
        self.assertEqual(200, response.status_code)
        self.assertLess(took, deadline + 2)

    def test_a_body_dripped_past_the_deadline_is_answered_408(self):
        server = self.serve(threads=2, request_read_timeout=1)
        drippers = self.drip(server, 1, CHUNKED_DRIP)
        drippers.threads[0].join(TIMEOUT)
        took, received = drippers.results[0]
        self.assertEqual(b'HTTP/1.1 408 Request Timeout',
                         status_line(received))
        self.assertEqual('body', json_body(received)['field'])
        self.assertLess(took, 3)

    def test_a_head_dripped_past_the_deadline_is_answered_408_in_json(self):
        server = self.serve(threads=2, request_read_timeout=1, timeout=30)
        drippers = self.drip(server, 1, HEADER_DRIP)
        drippers.threads[0].join(TIMEOUT)
        took, received = drippers.results[0]
        self.assertEqual(b'HTTP/1.1 408 Request Timeout',
                         status_line(received))
        self.assertIn('did not arrive within the 1 s',
                      json_body(received)['message'])
        self.assertLess(took, 3)

    def test_a_small_body_dripped_past_the_deadline_is_answered_408(self):
        server = self.serve(threads=2, request_read_timeout=1, timeout=30)
        drippers = self.drip(
            server, 1, b'POST /v1/check-create HTTP/1.1\r\nHost: x\r\n'
            b'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n')
        drippers.threads[0].join(TIMEOUT)
        took, received = drippers.results[0]
        self.assertEqual(b'HTTP/1.1 408 Request Timeout',
                         status_line(received))
        self.assertLess(took, 3)

    def test_a_silent_connection_is_closed_at_the_deadline(self):
        server = self.serve(threads=2, request_read_timeout=1, timeout=30)
        started = time.monotonic()
        received = self.raw(server, b'', wait=10)
        self.assertEqual(b'HTTP/1.1 408 Request Timeout',
                         status_line(received))
        self.assertLess(time.monotonic() - started, 3)

    def test_a_request_sent_in_pieces_within_the_deadline_is_served(self):
        server = self.serve(threads=2, request_read_timeout=3)
        sock = socket.create_connection(('127.0.0.1', server.port))
        self.addCleanup(sock.close)
        request = (b'POST /v1/check-create HTTP/1.1\r\nHost: x\r\n'
                   b'Content-Type: application/json\r\n'
                   b'Content-Length: %d\r\n\r\n%s' % (len(BODY), BODY))
        for start in range(0, len(request), len(request) // 4 + 1):
            sock.sendall(request[start:start + len(request) // 4 + 1])
            time.sleep(0.2)
        sock.settimeout(10)
        self.assertEqual(b'HTTP/1.1 204 No Content',
                         status_line(sock.recv(65536)))

    def test_a_keep_alive_wait_does_not_count_against_the_next_request(self):
        server = self.serve(threads=2, request_read_timeout=1, timeout=30)
        sock = socket.create_connection(('127.0.0.1', server.port))
        self.addCleanup(sock.close)
        sock.settimeout(10)
        request = b'GET /v1/ HTTP/1.1\r\nHost: x\r\n\r\n'
        sock.sendall(request)
        self.assertEqual(b'HTTP/1.1 200 OK', status_line(read_response(sock)))
        time.sleep(1.5)
        sock.sendall(request)
        self.assertEqual(b'HTTP/1.1 200 OK', status_line(read_response(sock)))

    def test_pipelined_requests_are_each_answered(self):
        server = self.serve(threads=2, request_read_timeout=2)
        request = b'GET /v1/ HTTP/1.1\r\nHost: x\r\n\r\n'
        received = self.raw(server, request * 2 + request.replace(
            b'\r\n\r\n', b'\r\nConnection: close\r\n\r\n'))
        self.assertEqual(3, received.count(b'HTTP/1.1 200 OK'))

    def test_a_request_head_beyond_64_kib_is_answered_431(self):
        server = self.serve(threads=2)
        received = self.raw(server, b'GET /v1/ HTTP/1.1\r\nHost: x\r\n' +
                            b'X-Big: %s\r\n' % (b'a' * 70000))
        self.assertEqual(b'HTTP/1.1 431 Request Header Fields Too Large',
                         status_line(received))


class TestAcceptQueue(ServerTestCase):

    def test_a_request_beyond_the_queue_is_answered_503_at_once(self):
        entered = threading.Event()
        gate = threading.Event()

        def app(environ, start_response):
            if environ['PATH_INFO'] == '/slow':
                entered.set()
                gate.wait(TIMEOUT)
            start_response('200 OK', [('Content-Length', '2')])
            return [b'ok']

        server = self.serve(app, threads=1, request_queue_size=1)
        self.addCleanup(gate.set)          # before the server stops
        slow = threading.Thread(target=requests.get, daemon=True,
                                args=(server.url + '/slow',),
                                kwargs={'timeout': TIMEOUT})
        slow.start()
        self.assertTrue(entered.wait(TIMEOUT))
        queued = socket.create_connection(('127.0.0.1', server.port))
        self.addCleanup(queued.close)
        queued.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
        time.sleep(0.5)
        started = time.monotonic()
        refused = socket.create_connection(('127.0.0.1', server.port))
        self.addCleanup(refused.close)
        refused.settimeout(10)
        refused.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
        self.assertEqual(b'HTTP/1.1 503 Service Unavailable',
                         status_line(refused.recv(4096)))
        self.assertLess(time.monotonic() - started, 2)
        gate.set()
        queued.settimeout(10)
        self.assertEqual(b'HTTP/1.1 200 OK', status_line(queued.recv(4096)))


class TestFraming(ServerTestCase):
    """Ambiguous framing: Transfer-Encoding and Content-Length together were
    accepted; what followed the Content-Length bytes became a second
    request."""

    SMUGGLED = b'GET /v1/ HTTP/1.1\r\nHost: x\r\n\r\n'

    def both_headers(self, target=b'/v1/check-create'):
        chunked = b'%x\r\n%s\r\n0\r\n\r\n' % (len(BODY), BODY)
        return (b'POST %s HTTP/1.1\r\nHost: localhost\r\n'
                b'Content-Type: application/json\r\n'
                b'Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n'
                % (target, len(chunked)) + chunked + self.SMUGGLED)

    def test_transfer_encoding_with_content_length_is_refused_400(self):
        server = self.serve()
        received = self.raw(server, self.both_headers())
        self.assertEqual(b'HTTP/1.1 400 Bad Request', status_line(received))
        self.assertIn('Transfer-Encoding and Content-Length',
                      json_body(received)['message'])

    def test_nothing_after_an_ambiguous_request_is_answered(self):
        server = self.serve()
        received = self.raw(server, self.both_headers())
        self.assertEqual(1, received.count(b'HTTP/1.1 '), received)

    def test_the_admin_api_refuses_both_headers_too(self):
        conf = enforcement_fixture.config()
        server = self.serve(admin.make_admin_app(conf, accounts=object()))
        received = self.raw(server, self.both_headers(b'/v1/acct'))
        self.assertEqual(b'HTTP/1.1 400 Bad Request', status_line(received))

    def test_content_length_given_twice_is_refused_400(self):
        server = self.serve()
        received = self.raw(
            server, b'POST /v1/check-create HTTP/1.1\r\nHost: x\r\n'
            b'Content-Type: application/json\r\nContent-Length: %d\r\n'
            b'Content-Length: 2\r\n\r\n%s' % (len(BODY), BODY))
        self.assertEqual((b'HTTP/1.1 400 Bad Request', 'Content-Length'),
                         (status_line(received),
                          json_body(received)['field']))

    def test_content_length_that_is_not_digits_is_refused_400(self):
        server = self.serve()
        received = self.raw(
            server, b'POST /v1/check-create HTTP/1.1\r\nHost: x\r\n'
            b'Content-Type: application/json\r\nContent-Length: +%d\r\n\r\n'
            b'%s' % (len(BODY), BODY))
        self.assertEqual((b'HTTP/1.1 400 Bad Request', '+%d' % len(BODY)),
                         (status_line(received),
                          json_body(received)['value']))

    def test_transfer_encoding_in_http_1_0_is_refused_400(self):
        server = self.serve()
        chunked = b'%x\r\n%s\r\n0\r\n\r\n' % (len(BODY), BODY)
        received = self.raw(
            server, b'POST /v1/check-create HTTP/1.0\r\nHost: x\r\n'
            b'Content-Type: application/json\r\n'
            b'Transfer-Encoding: chunked\r\n\r\n' + chunked)
        self.assertIn(b' 400 Bad Request', status_line(received))

    def test_a_chunked_body_alone_is_still_accepted(self):
        server = self.serve()
        chunked = b'%x\r\n%s\r\n0\r\n\r\n' % (len(BODY), BODY)
        received = self.raw(
            server, b'POST /v1/check-create HTTP/1.1\r\nHost: x\r\n'
            b'Content-Type: application/json\r\nConnection: close\r\n'
            b'Transfer-Encoding: chunked\r\n\r\n' + chunked)
        self.assertEqual(b'HTTP/1.1 204 No Content', status_line(received))


class TestServe(testtools.TestCase):
    """``placement-quota serve`` as an operator runs it (its ledger,
    embedded Placement and HOME in a temporary directory)."""

    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp(prefix='pq-serve-')
        self.addCleanup(shutil.rmtree, self.dir, True)

    def start(self, config, *args):
        path = os.path.join(self.dir, 'placement-quota.conf')
        with open(path, 'w') as f:
            f.write('[ledger]\nconnection = sqlite:///%s/ledger.sqlite\n'
                    % self.dir + config)
        errors = open(os.path.join(self.dir, 'stderr'), 'w+')
        self.addCleanup(errors.close)
        process = subprocess.Popen(
            [sys.executable, '-m', 'placement_quota.cmd.main',
             '--config-file', path, 'serve', '--port', '0'] + list(args),
            stdout=subprocess.PIPE, stderr=errors, text=True,
            env=dict(os.environ, HOME=self.dir))
        self.addCleanup(self._stop, process)
        lines = [process.stdout.readline()]
        if '--admin-port' in args:
            lines.append(process.stdout.readline())
        self.assertIn('listening on', lines[-1], open(errors.name).read())
        return lines, errors

    @staticmethod
    def _stop(process):
        processes.stop(process, TIMEOUT)
        process.stdout.close()

    @staticmethod
    def port(line):
        return int(line.split('listening on ')[1].split()[0].split(':')[2]
                   .split('/')[0])

    def test_serve_warns_when_noauth_listens_beyond_loopback(self):
        lines, errors = self.start('[admin_api]\nbind_host = 0.0.0.0\n',
                                   '--host', '0.0.0.0', '--admin-port', '0')
        errors.seek(0)
        stderr = errors.read()
        self.assertEqual(
            [True, True, True, True],
            ['no authentication beyond loopback' in lines[0],
             'no authentication beyond loopback' in lines[1],
             'The enforcement service listens on 0.0.0.0' in stderr,
             'The account admin API listens on 0.0.0.0' in stderr])

    def test_serve_on_loopback_does_not_warn(self):
        lines, errors = self.start('', '--admin-port', '0')
        errors.seek(0)
        self.assertEqual(
            [False, False, False],
            ['WARNING' in lines[0], 'WARNING' in lines[1],
             'beyond loopback' in errors.read()])

    def _partial_request_answer(self, port):
        sock = socket.create_connection(('127.0.0.1', port))
        self.addCleanup(sock.close)
        sock.settimeout(10)
        started = time.monotonic()
        sock.sendall(b'GET /v1/ HTTP/1.1\r\nHost: localhost\r\n')
        return status_line(sock.recv(65536)), time.monotonic() - started

    def test_serve_applies_its_request_read_timeout(self):
        lines, _ = self.start('[api]\nrequest_read_timeout = 1\n'
                              'client_socket_timeout = 30\n')
        status, took = self._partial_request_answer(self.port(lines[0]))
        self.assertEqual(b'HTTP/1.1 408 Request Timeout', status)
        self.assertLess(took, 3)

    def test_serve_applies_the_admin_request_read_timeout(self):
        lines, _ = self.start('[api]\nclient_socket_timeout = 30\n'
                              '[admin_api]\nrequest_read_timeout = 1\n',
                              '--admin-port', '0')
        status, took = self._partial_request_answer(self.port(lines[1]))
        self.assertEqual(b'HTTP/1.1 408 Request Timeout', status)
        self.assertLess(took, 3)
