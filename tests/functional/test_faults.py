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
"""The fault suite: what the enforcement service answers, and how fast,
when a service it needs fails (doc/source/failures.rst lists them all).

Each test runs the real service over HTTP (tests/fixtures/enforcement.py)
against a real fault: Placement, Nova and Keystone are replaced by tiny
local servers on real sockets that refuse connections (a closed port),
hang (accept and never answer), or answer 500 or 503; the SQLite ledger
lives on a 1 MiB tmpfs that is filled up or remounted read-only (when the
test may mount one; skipped otherwise, with the reason), or in a
directory that is removed; the PostgreSQL ledger is a private server
(not the one other tests share) that is shut down or killed. Timeouts
are short (1 s for Placement, Nova and Keystone) so the suite stays
fast; the bounds with the default options are in the docs.
"""

import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest
import uuid

import fixtures
import requests
import testtools

from placement_quota.ledger import store
from placement_quota.placement import client as placement_client
from tests import builders
from tests.fixtures import enforcement as service_fixture
from tests.fixtures import postgresql
from tests.fixtures import process as processes

#: [placement], [nova] and [keystone] timeout of these tests (seconds).
TIMEOUT = 1
#: Room for a loaded 2-core machine on top of a bound.
SLACK = 1.5
#: A fault answered at once (no timeout involved) takes less than this.
AT_ONCE = 1.0
#: How long the test client waits for the service.
CLIENT_TIMEOUT = 60

PROJECT = 'proj-faults'


# --- fake services on real sockets --------------------------------------


def closed_port():
    """A loopback URL nobody listens on: connections are refused."""
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return 'http://127.0.0.1:%d' % port


#: Placement's version document (GET /).
VERSIONS = {'versions': [{'id': 'v1.0', 'min_version': '1.0',
                          'max_version': '1.39', 'status': 'CURRENT',
                          'links': []}]}


class ErrorServer(fixtures.Fixture):
    """Answers every request with ``status`` and an OpenStack error body;
    with ``root_ok``, ``GET /`` gets Placement's version document (a
    Placement whose database is down still answers its root)."""

    def __init__(self, status, root_ok=False):
        super().__init__()
        self.status = status
        self.root_ok = root_ok

    def _setUp(self):
        fixture = self
        self.requests = []

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def _answer(self):
                length = int(self.headers.get('Content-Length') or 0)
                self.rfile.read(length)
                fixture.requests.append((self.command, self.path))
                if fixture.root_ok and self.path == '/':
                    status, body = 200, VERSIONS
                else:
                    status, body = fixture.status, {'errors': [{
                        'status': fixture.status, 'title': 'Broken',
                        'detail': 'the fake service is broken'}]}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                      Handler)
        self.server.daemon_threads = True
        self.url = 'http://127.0.0.1:%d' % self.server.server_address[1]
        thread = threading.Thread(target=self.server.serve_forever,
                                  daemon=True)
        thread.start()
        self.addCleanup(thread.join, 5)
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)


# --- the service ----------------------------------------------------------


class FaultTestCase(testtools.TestCase):
    """The enforcement service on a SQLite ledger in a temp dir."""

    #: {option: (group, value)} of the service.
    options = {}

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.logger = self.useFixture(fixtures.FakeLogger())

    def ledger_url(self):
        return 'sqlite:///' + os.path.join(self.tmp, 'ledger.sqlite')

    def config(self, config_files=(), **overrides):
        conf = service_fixture.new_config([], config_files=list(
            config_files))
        options = dict({
            'connection': ('ledger', self.ledger_url()),
            'count_host_resources': ('ledger', False),
            'lock_timeout': ('ledger', 1),
            'max_leases_per_project': ('enforcement', 1000),
            'enabled_filters': ('enforcement', ['LeaseCountFilter']),
        }, **self.options)
        options.update(overrides)
        for name, (group, value) in options.items():
            conf.set_override(name, value, group)
        return conf

    def serve(self, **overrides):
        self.service = self.useFixture(service_fixture.EnforcementService(
            self.config(**overrides)))
        return self.service

    def post(self, kind, body):
        began = time.monotonic()
        response = requests.post(self.service.url + '/v1/' + kind,
                                 data=json.dumps(body),
                                 timeout=CLIENT_TIMEOUT)
        status = response.status_code
        took = time.monotonic() - began
        self.calls = getattr(self, 'calls', 0) + 1
        self.addDetail('seconds %d %s %d' % (self.calls, kind, status),
                       testtools.content.text_content('%.3f' % took))
        return (response.status_code,
                response.json() if response.content else None, took)

    def body(self, *reservations, name=None):
        return {'context': {'project_id': PROJECT, 'user_id': 'u'},
                'lease': builders.lease(builders.day(2), builders.day(3),
                                        *reservations,
                                        name=name or 'l-%s'
                                        % uuid.uuid4().hex[:8])}

    def create(self, *reservations, name=None):
        return self.post('check-create', self.body(*reservations,
                                                   name=name))

    def entries(self):
        with self.service.services.ledger.transaction() as txn:
            return txn.leases(PROJECT)

    def assertUnavailable(self, answer, *fragments, bound=AT_ONCE):
        status, body, took = answer
        self.assertEqual(503, status, body)
        self.assertEqual(['message'], sorted(body))
        for fragment in fragments:
            self.assertIn(fragment, body['message'])
        self.assertLess(took, bound)


# --- Placement ------------------------------------------------------------


class PlacementFaultTestCase(FaultTestCase):
    """PlacementCapacityFilter (and the reserved hosts' resources) read a
    Placement that fails."""

    options = {
        'enabled_filters': ('enforcement', ['PlacementCapacityFilter']),
        'timeout': ('placement', TIMEOUT),
    }

    def placement_at(self, url, **overrides):
        return self.serve(endpoint_override=('placement', url), **overrides)

    def create_instances(self):
        return self.create(builders.instances(2))

    def assertPlacementUnavailable(self, answer, *fragments, bound=AT_ONCE):
        self.assertUnavailable(answer, *fragments, bound=bound)
        self.assertEqual([], self.entries())
        self.assertIn('gave check-create of project %s up' % PROJECT,
                      self.logger.output.lower())
        self.assertNotIn('Traceback', self.logger.output)


class TestPlacementRefusing(PlacementFaultTestCase):

    def test_refused_connection_answers_503_at_once(self):
        url = closed_port()
        self.placement_at(url)
        self.assertPlacementUnavailable(
            self.create_instances(),
            'Cannot connect to Placement at %s for GET /' % url,
            'Connection refused', 'try again later')


class TestPlacementHanging(PlacementFaultTestCase):

    def setUp(self):
        super().setUp()
        self.hanging = self.useFixture(processes.HangingServer())

    def assertWaitedTheTimeout(self, answer):
        # One attempt, given up at [placement] timeout: not before, not
        # a multiple of it.
        self.assertGreater(answer[2], TIMEOUT * 0.9)

    def test_check_create_answers_503_after_the_timeout(self):
        self.placement_at(self.hanging.url)
        answer = self.create_instances()
        self.assertPlacementUnavailable(
            answer, 'Placement at %s did not answer GET / within %d s '
            '([placement] timeout)' % (self.hanging.url, TIMEOUT),
            bound=TIMEOUT + SLACK)
        self.assertWaitedTheTimeout(answer)

    def test_every_request_is_given_up_after_the_timeout(self):
        self.placement_at(self.hanging.url)
        for _ in range(2):
            answer = self.create_instances()
            self.assertUnavailable(answer, 'did not answer',
                                   bound=TIMEOUT + SLACK)
            self.assertWaitedTheTimeout(answer)

    def test_check_update_answers_503_after_the_timeout(self):
        self.placement_at(self.hanging.url)
        body = self.body(builders.instances(2))
        body['current_lease'] = builders.lease(
            builders.day(2), builders.day(3), builders.instances(1),
            name=body['lease']['name'])
        answer = self.post('check-update', body)
        self.assertUnavailable(answer, 'did not answer GET / within',
                               bound=TIMEOUT + SLACK)

    def test_host_resources_read_answers_503_after_the_timeout(self):
        self.placement_at(
            self.hanging.url,
            enabled_filters=('enforcement', ['LeaseCountFilter']),
            count_host_resources=('ledger', True))
        answer = self.create(builders.hosts('h1'))
        self.assertPlacementUnavailable(
            answer, 'did not answer GET / within %d s' % TIMEOUT,
            bound=TIMEOUT + SLACK)

    def test_lease_reading_nothing_from_placement_is_not_held(self):
        self.placement_at(self.hanging.url)
        status, _, took = self.create(builders.network())
        self.assertEqual((204, True), (status, took < AT_ONCE))

    def test_on_end_answers_204_without_placement(self):
        self.placement_at(self.hanging.url)
        status, _, took = self.post('on-end', self.body(
            builders.instances(2)))
        self.assertEqual((204, True), (status, took < AT_ONCE))


class TestPlacementErrors(PlacementFaultTestCase):

    def test_500_answers_503_at_once(self):
        placement = self.useFixture(ErrorServer(500, root_ok=True))
        self.placement_at(placement.url)
        self.assertPlacementUnavailable(
            self.create_instances(),
            'Placement GET /allocation_candidates',
            'answered 500: the fake service is broken')
        # Not retried: one failed call gives the request up.
        self.assertEqual(2, len(placement.requests))

    def test_503_on_every_path_answers_503_at_once(self):
        placement = self.useFixture(ErrorServer(503))
        self.placement_at(placement.url)
        self.assertPlacementUnavailable(
            self.create_instances(), 'Placement GET / answered 503')
        self.assertEqual(1, len(placement.requests))

    def test_host_resources_read_of_a_500_answers_503(self):
        placement = self.useFixture(ErrorServer(500, root_ok=True))
        self.placement_at(
            placement.url,
            enabled_filters=('enforcement', ['LeaseCountFilter']),
            count_host_resources=('ledger', True))
        self.assertPlacementUnavailable(
            self.create(builders.hosts('h1')),
            # The host's provider is first looked for in the listing of
            # every provider.
            'Placement GET /resource_providers answered 500')


class TestPlacementBound(testtools.TestCase):
    """The bound with the default options, and what sets it."""

    def client(self, **overrides):
        conf = service_fixture.config(**dict(
            {'endpoint_override': ('placement', 'http://127.0.0.1:9')},
            **overrides))
        return placement_client.PlacementClient.from_conf(conf)

    def test_default_bound_is_one_attempt_of_ten_seconds(self):
        client = self.client()
        self.assertEqual((10, 10), (client.timeout, client.wait_bound))

    def test_retries_set_by_the_operator_are_counted_and_warned_about(self):
        logger = self.useFixture(fixtures.FakeLogger())
        client = self.client(connect_retries=('placement', 3))
        # 4 attempts of 10 s, and keystoneauth's delays 0.5 + 1 + 2 s.
        self.assertEqual(43.5, client.wait_bound)
        self.assertIn('holds an enforcement request for up to 44 s',
                      logger.output)


# --- Nova (legacy quota sets) ---------------------------------------------


class TestNovaLegacyQuotas(FaultTestCase):
    """NovaQuotaFilter with ``nova_quota_source = legacy`` reads Nova's
    quota sets from a Nova that fails."""

    options = {
        'enabled_filters': ('enforcement', ['NovaQuotaFilter']),
        'nova_quota_source': ('enforcement', 'legacy'),
        'timeout': ('nova', TIMEOUT),
    }

    def nova_at(self, url):
        return self.serve(endpoint_override=('nova', url + '/v2.1'))

    def test_refused_connection_answers_503_at_once(self):
        self.nova_at(closed_port())
        self.assertUnavailable(self.create(builders.instances(1)),
                               'Cannot read the Nova quotas of project '
                               '%s' % PROJECT, 'Unable to establish')

    def test_hanging_nova_answers_503_after_the_timeout(self):
        nova = self.useFixture(processes.HangingServer())
        self.nova_at(nova.url)
        answer = self.create(builders.instances(1))
        self.assertUnavailable(
            answer, 'Nova did not answer GET %s/v2.1/os-quota-sets/%s/detail'
            ' within %d s ([nova] timeout)' % (nova.url, PROJECT, TIMEOUT),
            bound=TIMEOUT + SLACK)
        self.assertGreater(answer[2], TIMEOUT * 0.9)

    def test_500_answers_503_at_once(self):
        nova = self.useFixture(ErrorServer(500))
        self.nova_at(nova.url)
        self.assertUnavailable(self.create(builders.instances(1)),
                               'answered 500')


# --- Keystone (exempted name@domain) ----------------------------------------


class TestKeystoneForExemptions(FaultTestCase):
    """``exempted_projects = name@domain`` needs Keystone; a Keystone that
    does not answer exempts nobody by name (keeping the last good
    answer), and holds back one request per retry, not every request."""

    def keystone_at(self, url):
        path = os.path.join(self.tmp, 'placement-quota.conf')
        with open(path, 'w') as f:
            f.write('[keystone]\nauth_type = password\n'
                    'auth_url = %s/v3\nusername = u\npassword = p\n'
                    'project_name = p\nuser_domain_name = Default\n'
                    'project_domain_name = Default\ntimeout = %d\n'
                    % (url, TIMEOUT))
        self.service = self.useFixture(service_fixture.EnforcementService(
            self.config(config_files=[path], exempted_projects=(
                'enforcement', ['admin@Default']))))

    def test_hanging_keystone_holds_the_first_request_only(self):
        keystone = self.useFixture(processes.HangingServer())
        self.keystone_at(keystone.url)
        # Version discovery, then the token: each given up at the timeout.
        answers = [self.create() for _ in range(3)]
        self.assertEqual([204] * 3, [a[0] for a in answers])
        self.assertLess(answers[0][2], 2 * TIMEOUT + SLACK)
        self.assertLess(max(a[2] for a in answers[1:]), AT_ONCE)
        self.assertIn('Cannot resolve exempted projects admin@Default '
                      'through Keystone', self.logger.output)

    def test_refusing_keystone_exempts_nobody_and_answers_at_once(self):
        self.keystone_at(closed_port())
        answers = [self.create() for _ in range(2)]
        self.assertEqual([204] * 2, [a[0] for a in answers])
        self.assertLess(max(a[2] for a in answers), AT_ONCE)
        self.assertEqual(2, len(self.entries()))


# --- the SQLite ledger ------------------------------------------------


def _mount_tmpfs(path, size='1M'):
    """Mount a tmpfs of ``size`` on ``path``; None, or why it cannot."""
    if os.geteuid() != 0:
        return 'mounting a tmpfs needs root (running as uid %d)' % (
            os.geteuid())
    try:
        proc = subprocess.run(
            ['mount', '-t', 'tmpfs', '-o', 'size=%s' % size, 'tmpfs', path],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 'cannot run mount: %s' % exc
    if proc.returncode:
        return 'mount -t tmpfs failed: %s' % proc.stdout.strip()
    return None


def _umount(path):
    # Lazy: detached even if something still holds a file open on it.
    subprocess.run(['umount', '-l', path], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=30)


class SQLiteFaultTestCase(FaultTestCase):

    def serve(self, *args, **kwargs):
        # The ledger's directory, made as an operator makes it: a
        # configured SQLite path whose directory is missing is refused.
        os.makedirs(os.path.dirname(
            self.ledger_url()[len('sqlite:///'):]), exist_ok=True)
        return super().serve(*args, **kwargs)

    def lease_ends(self, body):
        status, _, took = self.post('on-end', body)
        self.assertEqual((204, True), (status, took < AT_ONCE))
        self.assertIn('The ledger could not close the lease of project %s'
                      % PROJECT, self.logger.output)


class TmpfsTestCase(SQLiteFaultTestCase):
    """The ledger on a 1 MiB tmpfs (needs root: skipped otherwise)."""

    def setUp(self):
        super().setUp()
        self.mount = tempfile.mkdtemp(dir=self.tmp)
        reason = _mount_tmpfs(self.mount)
        if reason is not None:
            self.skipTest('cannot mount a small tmpfs: %s' % reason)
        self.addCleanup(_umount, self.mount)

    def ledger_url(self):
        return 'sqlite:///' + os.path.join(self.mount, 'state',
                                           'ledger.sqlite')


class TestSQLiteFull(TmpfsTestCase):

    def fill(self):
        """Fill the tmpfs up; the filler's path."""
        path = os.path.join(self.mount, 'filler')
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while True:
                os.write(fd, b'\0' * 65536)
        except OSError:
            pass
        try:
            while True:
                os.write(fd, b'\0' * 512)
        except OSError:
            pass
        os.close(fd)
        return path

    def create_until_refused(self):
        """Check-creates until one is not allowed (a commit that fits in
        the write-ahead log's free space still succeeds)."""
        for _ in range(50):
            answer = self.create()
            if answer[0] != 204:
                return answer
        self.fail('the full ledger never refused a check-create')

    def test_check_create_answers_503_at_once(self):
        self.serve()
        self.assertEqual(204, self.create()[0])
        self.fill()
        self.assertUnavailable(
            self.create_until_refused(), 'The ledger database at sqlite:///',
            'database or disk is full (SQLITE_FULL)', 'try again later')
        self.assertNotIn('Traceback', self.logger.output)

    def test_on_end_answers_204_and_logs(self):
        self.serve()
        body = self.body()
        self.assertEqual(204, self.post('check-create', body)[0])
        self.fill()
        self.create_until_refused()
        self.lease_ends(body)

    def test_check_create_is_allowed_again_once_there_is_room(self):
        self.serve()
        self.assertEqual(204, self.create()[0])
        filler = self.fill()
        self.create_until_refused()
        os.remove(filler)
        self.assertEqual(204, self.create()[0])


class TestSQLiteReadOnly(SQLiteFaultTestCase):
    """The ledger's file system remounted read-only (root, on a tmpfs),
    or the file and its directory made read-only (any other user), seen
    by the connections opened afterwards: Linux refuses to remount a
    file system read-only while files on it are open for writing, and a
    file already open stays writable after chmod."""

    def setUp(self):
        super().setUp()
        self.directory = os.path.join(self.tmp, 'state')
        if os.geteuid() == 0:
            self.directory = os.path.join(tempfile.mkdtemp(dir=self.tmp),
                                          'state')
            mount = os.path.dirname(self.directory)
            reason = _mount_tmpfs(mount)
            if reason is not None:
                self.skipTest('root ignores file modes, and cannot mount a '
                              'tmpfs to remount read-only: %s' % reason)
            self.addCleanup(_umount, mount)
            self.mount = mount

    def ledger_url(self):
        return 'sqlite:///' + os.path.join(self.directory, 'ledger.sqlite')

    def make_read_only(self):
        # The pool's connections are closed (as after a restart), so
        # that the next request opens one.
        self.service.services.ledger.engine.dispose()
        if os.geteuid() == 0:
            subprocess.run(['mount', '-o', 'remount,ro', self.mount],
                           check=True, timeout=30)
            self.addCleanup(subprocess.run,
                            ['mount', '-o', 'remount,rw', self.mount],
                            timeout=30)
        else:
            for name in os.listdir(self.directory):
                os.chmod(os.path.join(self.directory, name), 0o444)
            os.chmod(self.directory, 0o555)
            self.addCleanup(os.chmod, self.directory, 0o755)

    def test_check_create_answers_503_at_once(self):
        self.serve()
        body = self.body()
        self.assertEqual(204, self.post('check-create', body)[0])
        self.make_read_only()
        self.assertUnavailable(self.create(),
                               'The ledger database at sqlite:///',
                               'cannot be used', 'try again later')
        self.lease_ends(body)


class TestSQLiteDirectoryRemoved(SQLiteFaultTestCase):

    def ledger_url(self):
        return 'sqlite:///' + os.path.join(self.tmp, 'state',
                                           'ledger.sqlite')

    def remove(self):
        shutil.rmtree(os.path.join(self.tmp, 'state'))

    def test_new_connection_answers_503_at_once(self):
        self.serve()
        body = self.body()
        self.assertEqual(204, self.post('check-create', body)[0])
        self.remove()
        self.service.services.ledger.engine.dispose()
        self.assertUnavailable(
            self.create(), 'unable to open database file (SQLITE_CANTOPEN)')
        self.lease_ends(body)

    @unittest.expectedFailure
    def test_pooled_connection_answers_503(self):
        """Known gap: a pooled SQLite connection keeps writing into the
        removed (unlinked) file, and the lease is admitted (204) into a
        ledger nobody will read again. Needs a check at checkout in
        ledger/db/engine.py (the file at the path is still the one the
        connection opened); remove expectedFailure then."""
        self.serve()
        self.assertEqual(204, self.create()[0])
        self.remove()
        self.assertEqual(503, self.create()[0])


# --- the PostgreSQL ledger --------------------------------------------


class TestPostgreSQLStopped(FaultTestCase):
    """A private PostgreSQL (other tests' server is not disturbed), shut
    down or killed while the service holds pooled connections to it."""

    def setUp(self):
        super().setUp()
        reason = postgresql.unavailable_reason()
        if reason is not None:
            self.skipTest('PostgreSQL is not installed: %s' % reason)
        self.server = postgresql.PostgreSQLServer().start()
        self.addCleanup(self.server.stop)
        self.server.create_database('faults')
        self.url = self.server.url('faults')
        store.Ledger(self.url, migrate=True).dispose()
        self.serve(connect_timeout=('ledger', 2),
                   statement_timeout=('ledger', 2),
                   lock_timeout=('ledger', 2))
        self.warm = self.body()
        # A pooled connection, as a running service has.
        self.assertEqual(204, self.post('check-create', self.warm)[0])

    def ledger_url(self):
        return self.url

    def entries(self):
        raise AssertionError('the database is down')

    def assertGivenUp(self):
        self.assertUnavailable(
            self.create(), 'Cannot connect to the ledger database at '
            'postgresql+psycopg2://', 'Connection refused')
        status, _, took = self.post('on-end', self.warm)
        self.assertEqual((204, True), (status, took < AT_ONCE))
        self.assertIn('The ledger could not close the lease of project %s'
                      % PROJECT, self.logger.output)

    def test_shut_down_server_answers_503_at_once(self):
        self.server.process.send_signal(signal.SIGINT)  # fast shutdown
        self.server.process.wait(30)
        self.assertGivenUp()

    def test_killed_server_answers_503_at_once(self):
        if not os.path.exists('/proc/self/stat'):
            self.skipTest('no /proc to find the PostgreSQL backends in')
        postmaster = self.server.process.pid
        # Every backend is a session of its own: found by parent, before
        # the postmaster dies and they are given to init.
        for pid in [postmaster] + processes.children(postmaster):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.server.process.wait(30)
        self.assertGivenUp()
