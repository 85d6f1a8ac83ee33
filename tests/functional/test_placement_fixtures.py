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
"""The real Placement behind our fixtures, in-process and as a server."""

from concurrent import futures
import os
import sqlite3
import uuid

import fixtures
from keystoneauth1 import adapter
from keystoneauth1 import session
import requests
import sqlalchemy.engine
import testtools

from placement_quota.placement import embedded
from tests.fixtures import placement as placement_fixtures
from tests.fixtures import process


def _client(fixture, microversion='1.39', headers=None):
    """A keystoneauth adapter on ``fixture``, as our own code would use."""
    return adapter.Adapter(
        session.Session(), service_type='placement',
        endpoint_override=fixture.endpoint,
        default_microversion=microversion, raise_exc=False,
        additional_headers=fixture.headers if headers is None else headers)


def _max_version(endpoint):
    root = requests.get(endpoint + '/', timeout=30)
    root.raise_for_status()
    return tuple(int(p) for p in
                 root.json()['versions'][0]['max_version'].split('.'))


def _create_provider(client):
    rp_uuid = str(uuid.uuid4())
    resp = client.post('/resource_providers',
                       json={'name': 'rp-' + rp_uuid, 'uuid': rp_uuid})
    assert resp.status_code == 200, resp.text
    return resp.json()


class _BothFixtures:
    """What holds for the in-process and the subprocess Placement alike."""

    fixture = None

    def setUp(self):
        super().setUp()
        self.placement = self.useFixture(self.fixture())
        self.client = _client(self.placement)

    def test_root_advertises_max_microversion_at_least_1_39(self):
        self.assertGreaterEqual(_max_version(self.placement.endpoint),
                                (1, 39))

    def test_created_resource_provider_can_be_read_back(self):
        rp = _create_provider(self.client)
        resp = self.client.get('/resource_providers/%s' % rp['uuid'])
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual(rp['name'], resp.json()['name'])


class TestPlacementInProcess(_BothFixtures, testtools.TestCase):

    fixture = placement_fixtures.PlacementInProcess

    def test_custom_resource_class_can_be_created(self):
        name = 'CUSTOM_RESERVATION_%s' % uuid.uuid4().hex.upper()
        client = _client(self.placement, microversion='1.7')
        self.assertEqual(201, client.put('/resource_classes/' + name)
                         .status_code)
        self.assertEqual(200, client.get('/resource_classes/' + name)
                         .status_code)

    def test_reshaper_accepted_with_noauth_headers(self):
        rp = _create_provider(self.client)
        body = {'inventories': {rp['uuid']: {
            'resource_provider_generation': rp['generation'],
            'inventories': {'VCPU': {'total': 4}}}},
            'allocations': {}}
        resp = _client(self.placement, microversion='1.30').post(
            '/reshaper', json=body)
        self.assertEqual(204, resp.status_code, resp.text)
        inv = self.client.get(
            '/resource_providers/%s/inventories' % rp['uuid']).json()
        self.assertEqual(4, inv['inventories']['VCPU']['total'])
        self.assertGreater(inv['resource_provider_generation'],
                           rp['generation'])

    def test_reshaper_refused_without_service_role(self):
        rp = _create_provider(self.client)
        body = {'inventories': {rp['uuid']: {
            'resource_provider_generation': rp['generation'],
            'inventories': {'VCPU': {'total': 4}}}},
            'allocations': {}}
        admin_only = {'X-Auth-Token': embedded.NOAUTH_TOKEN}
        resp = _client(self.placement, microversion='1.30',
                       headers=admin_only).post('/reshaper', json=body)
        self.assertEqual(403, resp.status_code, resp.text)

    def test_app_is_shared_by_fixture_instances(self):
        other = self.useFixture(placement_fixtures.PlacementInProcess())
        self.assertIs(self.placement.app, other.app)
        self.assertNotEqual(self.placement.endpoint, other.endpoint)


class TestPlacementServer(_BothFixtures, testtools.TestCase):

    fixture = placement_fixtures.PlacementServer

    def test_listens_on_loopback(self):
        self.assertTrue(self.placement.endpoint.startswith(
            'http://127.0.0.1:'), self.placement.endpoint)

    def test_concurrent_inventory_writes_all_succeed(self):
        # SQLite: needs the embedded Placement's BEGIN IMMEDIATE.
        def create_with_inventory(_):
            rp = _create_provider(self.client)
            return self.client.put(
                '/resource_providers/%s/inventories' % rp['uuid'],
                json={'resource_provider_generation': rp['generation'],
                      'inventories': {'VCPU': {'total': 8}}}).status_code

        with futures.ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(create_with_inventory, range(40)))
        self.assertEqual([200] * 40, codes)

    def test_server_is_shared_by_fixture_instances(self):
        other = self.useFixture(placement_fixtures.PlacementServer())
        self.assertEqual(self.placement.endpoint, other.endpoint)


class TestServerWorkers(testtools.TestCase):
    """The embedded Placement served by several processes on one port,
    as a deployment runs Placement."""

    def setUp(self):
        super().setUp()
        self.server = embedded.ServerProcess(workers=2)
        self.addCleanup(self.server.stop)

    def get(self, path):
        # A connection of its own each time: the kernel spreads them.
        return requests.get(self.server.url + path, timeout=30,
                            headers=dict(embedded.NOAUTH_HEADERS, **{
                                'OpenStack-API-Version': 'placement 1.39'}))

    def test_a_provider_written_through_one_is_read_through_every_one(self):
        rp_uuid = str(uuid.uuid4())
        created = requests.post(
            self.server.url + '/resource_providers', timeout=30,
            json={'name': 'rp-' + rp_uuid, 'uuid': rp_uuid},
            headers=dict(embedded.NOAUTH_HEADERS, **{
                'OpenStack-API-Version': 'placement 1.39'}))
        self.assertEqual(200, created.status_code, created.text)
        self.assertEqual([200] * 20, [
            self.get('/resource_providers/%s' % rp_uuid).status_code
            for _ in range(20)])

    def test_the_workers_end_with_the_server(self):
        workers = process.children(self.server.process.pid)
        self.server.stop()
        self.assertEqual((2, []), (len(workers), [
            pid for pid in workers if os.path.exists('/proc/%d' % pid)]))


class TestEmbeddedGetApp(testtools.TestCase):

    def test_refuses_a_second_different_connection(self):
        # The fixture makes sure this process has its embedded Placement.
        self.useFixture(placement_fixtures.PlacementInProcess())
        other = embedded.sqlite_connection(
            self.useFixture(fixtures.TempDir()).path)
        error = self.assertRaises(RuntimeError, embedded.get_app, other)
        self.assertIn(other, str(error))
        self.assertIn(embedded.loaded_connection(), str(error))

    def test_a_read_is_answered_while_another_writer_holds_the_database(
            self):
        # A read takes no write lock: it does not wait for the writer
        # (with it, it would wait for the busy timeout and answer 500).
        placement = self.useFixture(placement_fixtures.PlacementInProcess())
        path = sqlalchemy.engine.make_url(
            embedded.loaded_connection()).database
        holder = sqlite3.connect(path, isolation_level=None)
        self.addCleanup(holder.close)
        holder.execute('BEGIN IMMEDIATE')
        self.addCleanup(holder.execute, 'ROLLBACK')
        response = _client(placement).get('/resource_providers')
        self.assertEqual(200, response.status_code, response.text)

    def test_returns_the_same_app_for_the_same_connection(self):
        app = self.useFixture(placement_fixtures.PlacementInProcess()).app
        self.assertIs(app, embedded.get_app(embedded.loaded_connection()))
