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
"""The Placement client against a real Placement."""

import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import uuid

import fixtures
import testtools

from placement_quota.placement import client as placement_client
from placement_quota.placement import embedded
from placement_quota.httpserver import server as wsgi_server
from tests.fixtures import placement as placement_fixtures


class TestAgainstPlacement(testtools.TestCase):

    def setUp(self):
        super().setUp()
        fixture = self.useFixture(placement_fixtures.PlacementInProcess())
        self.client = placement_client.PlacementClient.from_endpoint(
            fixture.endpoint, embedded.NOAUTH_HEADERS)

    def test_negotiates_the_highest_common_microversion(self):
        self.assertEqual((1, 39), self.client.version)

    def test_negotiates_once(self):
        self.client.get('/resource_providers')
        before = self.client.calls
        self.client.get('/resource_providers')
        self.client.get('/resource_classes')
        self.assertEqual(2, self.client.calls - before)

    def test_missing_provider_is_not_found_with_placements_detail(self):
        missing = str(uuid.uuid4())
        error = self.assertRaises(placement_client.NotFound, self.client.get,
                                  '/resource_providers/' + missing)
        self.assertEqual(404, error.status)
        self.assertIn(missing, error.detail)

    def test_stale_generation_is_a_concurrent_update(self):
        rp = self.client.post('/resource_providers', json={
            'name': 'rp-' + uuid.uuid4().hex}).json()
        error = self.assertRaises(
            placement_client.ConcurrentUpdate, self.client.put,
            '/resource_providers/%s/inventories' % rp['uuid'],
            json={'resource_provider_generation': rp['generation'] + 5,
                  'inventories': {'VCPU': {'total': 1}}})
        self.assertEqual('placement.concurrent_update', error.code)

    def test_bad_request_carries_placements_message(self):
        error = self.assertRaises(
            placement_client.PlacementError, self.client.post,
            '/resource_providers', json={'name': ''})
        self.assertEqual(400, error.status)
        self.assertIn('name', error.detail)


class TestConnectionsKept(testtools.TestCase):
    """A burst of calls in flight together, more than requests' default
    pool of 10, keeps its connections to Placement for the next one."""

    BURST = 24

    def setUp(self):
        super().setUp()
        server = self.useFixture(placement_fixtures.PlacementServer())
        self.client = placement_client.PlacementClient.from_endpoint(
            server.endpoint, server.headers)
        self.client.get('/resource_providers')   # negotiated beforehand
        self.log = self.useFixture(fixtures.FakeLogger(
            name='urllib3.connectionpool', level=logging.WARNING))

    def _burst(self):
        """BURST real Placement calls, released together."""
        barrier = threading.Barrier(self.BURST)
        failures = []

        def call():
            try:
                barrier.wait(30)
                self.client.get('/resource_providers?name=%s'
                                % uuid.uuid4().hex)
            except Exception as exc:
                failures.append(exc)

        threads = [threading.Thread(target=call) for _ in range(self.BURST)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        self.assertEqual([], failures)

    def _connections(self):
        """(opened, kept): the connections the session has opened so far,
        and those its pools hold open for the next calls (urllib3's)."""
        manager = self.client._adapter.session.session.adapters[
            'http://'].poolmanager
        pools = [manager.pools[key] for key in manager.pools.keys()]
        return (sum(pool.num_connections for pool in pools),
                sum(1 for pool in pools for conn in list(pool.pool.queue)
                    if conn is not None))

    def test_every_connection_of_a_burst_is_kept_open(self):
        self._burst()
        opened, kept = self._connections()
        self.assertGreater(opened, 10)   # more in flight than the default
        self.assertEqual(opened, kept)

    def test_no_connection_is_discarded(self):
        self._burst()
        self._burst()
        self.assertNotIn('Connection pool is full', self.log.output)


class _HeaderEcho:
    """A probe server (not a Placement): records request headers and
    answers a version document so the client can negotiate."""

    def __init__(self):
        self.seen = []

    def __call__(self, environ, start_response):
        self.seen.append({k: v for k, v in environ.items()
                          if k.startswith('HTTP_')})
        body = json.dumps({'versions': [{
            'min_version': '1.0', 'max_version': '1.39'}]}).encode()
        start_response('200 OK', [('Content-Type', 'application/json')])
        return [body]


class TestGlobalRequestId(testtools.TestCase):

    def test_request_context_id_is_sent_to_placement(self):
        probe = _HeaderEcho()
        server = wsgi_server.WSGIServer(probe).start()
        self.addCleanup(server.stop)
        client = placement_client.PlacementClient.from_endpoint(server.url)
        request_id = 'req-%s' % uuid.uuid4()
        with placement_client.request_context(request_id):
            client.get('/')
        self.assertEqual(request_id,
                         probe.seen[-1].get('HTTP_X_OPENSTACK_REQUEST_ID'))


class TestEmbeddedDefault(testtools.TestCase):
    """With nothing configured, a fresh process gets the real Placement
    in-process (one per process, so it runs in its own)."""

    def test_unconfigured_client_uses_the_embedded_placement(self):
        state_dir = tempfile.mkdtemp()
        script = (
            'from placement_quota import conf\n'
            'from placement_quota.placement import client\n'
            'c = conf.new_config([], config_files=[])\n'
            'c.set_override("embedded_state_dir", %r, "placement")\n'
            'p = client.PlacementClient.from_conf(c)\n'
            'p.post("/resource_providers", json={"name": "cn1"})\n'
            'print(p.version, len(p.get("/resource_providers")'
            '["resource_providers"]))\n' % state_dir)
        result = subprocess.run([sys.executable, '-c', script],
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(0, result.returncode, result.stderr[-2000:])
        self.assertEqual('(1, 39) 1', result.stdout.strip())
        self.assertTrue(os.path.exists(os.path.join(
            state_dir, embedded.DB_FILENAME)))
