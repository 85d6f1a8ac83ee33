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
"""A fresh real Placement (a subprocess, one per test class) and a SQLite
ledger, seeded with reservations and with drift between them."""

import datetime
import os
import shutil
import tempfile
import uuid

from oslo_utils import timeutils
import testtools

from placement_quota.lease import model as lease_model
from placement_quota.ledger import keys
from placement_quota.ledger import models
from placement_quota.ledger import store
from placement_quota.placement import client as placement_client
from placement_quota.placement import embedded
from placement_quota.placement import reservations as rsv
from placement_quota.reconcile import runner

HOUR = datetime.timedelta(hours=1)
DAY = datetime.timedelta(days=1)


class Cloud:
    """Compute nodes, reservation providers, classes, inventories and
    allocations in one Placement; lease entries in one ledger."""

    def __init__(self, server=None, client=None):
        """A new noauth2 Placement subprocess, or ``server`` (stopped by
        :meth:`close`) reached with ``client``."""
        self.server = server or embedded.ServerProcess()
        self.dir = tempfile.mkdtemp(prefix='reconcile-test-')
        self.url = 'sqlite:///%s' % os.path.join(self.dir, 'ledger.sqlite')
        self.ledger = store.Ledger(self.url)
        self.client = client or placement_client.PlacementClient.from_endpoint(
            self.server.url, embedded.NOAUTH_HEADERS)
        self.now = timeutils.utcnow()

    def close(self):
        self.ledger.dispose()
        self.server.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- Placement ------------------------------------------------------

    def compute_node(self, host, child=True, disabled=False):
        rp = self.client.post('/resource_providers',
                              json={'name': host}).json()
        if disabled:
            self.client.put('/resource_providers/%s/traits' % rp['uuid'],
                            json={'resource_provider_generation':
                                  rp['generation'],
                                  'traits': ['COMPUTE_STATUS_DISABLED']})
        if child:
            self.reservation_provider(host, rp['uuid'])
        return rp['uuid']

    def reservation_provider(self, host, parent=None):
        body = {'name': rsv.provider_name(host)}
        if parent:
            body['parent_provider_uuid'] = parent
        return self.client.post('/resource_providers', json=body).json()[
            'uuid']

    def provider(self, name):
        found = self.client.get('/resource_providers?name=%s' % name)
        return (found['resource_providers'] or [None])[0]

    def resource_class(self, reservation_id):
        name = rsv.reservation_class(reservation_id)
        self.client.put('/resource_classes/%s' % name)
        return name

    def classes(self):
        return {rc['name'] for rc in self.client.get(
            '/resource_classes')['resource_classes']}

    def inventory(self, host, reservation_id, total):
        name = self.resource_class(reservation_id)
        rp = self.provider(rsv.provider_name(host))
        body = self.client.get('/resource_providers/%s/inventories'
                               % rp['uuid'])
        inventories = dict(body['inventories'])
        inventories[name] = rsv.reservation_inventory(total)
        self.client.put('/resource_providers/%s/inventories' % rp['uuid'],
                        json={'resource_provider_generation':
                              body['resource_provider_generation'],
                              'inventories': inventories})

    def inventories(self, host):
        rp = self.provider(rsv.provider_name(host))
        return self.client.get('/resource_providers/%s/inventories'
                               % rp['uuid'])['inventories']

    def allocate(self, host, reservation_id, amount=1):
        consumer = str(uuid.uuid4())
        rp = self.provider(rsv.provider_name(host))
        self.client.put('/allocations/%s' % consumer, json={
            'allocations': {rp['uuid']: {'resources': {
                rsv.reservation_class(reservation_id): amount}}},
            'project_id': str(uuid.uuid4()), 'user_id': str(uuid.uuid4()),
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
        return consumer

    # --- ledger -----------------------------------------------------------

    def lease(self, reservations, start, end, state=models.PENDING,
              lease_id=None, name=None, project='p1', charged=0,
              hourly_rate=0, user='u1', created_at=None):
        """Record a lease entry; ``reservations``: ``[(type, id,
        {host: count})]``. Its fingerprint and shape (ledger/keys.py) are
        those of the same lease in Blazar (made by ``user``)."""
        name = name or 'lease-%s' % uuid.uuid4().hex[:8]
        body = {'name': name, 'start_date': start.isoformat(),
                'end_date': end.isoformat(), 'reservations': [
                    {'resource_type': rtype, 'id': rid, 'allocations': [
                        {'id': str(i), 'hypervisor_hostname': host}
                        for host, count in sorted(hosts.items())
                        for i in range(count)]}
                    for rtype, rid, hosts in reservations]}
        parsed = lease_model.Lease.coerce(body)
        with self.ledger.transaction([project]) as txn:
            return txn.insert(
                project_id=project, lease_id=lease_id,
                provisional_key=keys.fingerprint(project, user, parsed),
                shape_key=keys.shape(project, parsed), name=name,
                user_id=user, start_date=start, end_date=end, state=state,
                amounts={}, lease=body, hourly_rate=hourly_rate,
                charged=charged, created_at=created_at or self.now)

    def entry(self, row_id):
        with self.ledger.transaction() as txn:
            for row in txn.connection.execute(
                    models.leases.select().where(
                        models.leases.c.id == row_id)):
                return row

    def reconcile(self, fix=False, **kwargs):
        return runner.reconcile(self.client, self.ledger, fix=fix,
                                show_progress=False, **kwargs)


def instance(rid, hosts):
    return ('virtual:instance', rid, hosts)


def host(rid, hosts):
    return ('physical:host', rid, dict.fromkeys(hosts, 1))


class DriftedCloud(Cloud):
    """Every kind of drift, each on hosts and reservations of its own.

    Safe to fix: a missing provider, class and inventory (cn-new), a
    total too high (R1 on cn-b), an inventory on a host the reservation
    does not hold (R1 on cn-c), the inventory and class of an ended
    reservation (R3), an orphan provider (blazar_ghost), an entry stuck
    past its end. Left to the operator: allocations of an ended
    reservation (R4, whose class must survive), a total below what is
    allocated (R5), a class nobody knows, two degraded reservations (a
    disabled and a gone compute node), an entry stuck inside its window.
    """

    def __init__(self):
        super().__init__()
        now = self.now
        self.r = {k: str(uuid.uuid4()) for k in
                  ('R1', 'R2', 'R3', 'R4', 'R5', 'R6', 'R7', 'unknown')}
        for name in ('cn-a', 'cn-b', 'cn-c'):
            self.compute_node(name)
        self.compute_node('cn-new', child=False)
        self.compute_node('cn-off', disabled=True)
        self.reservation_provider('ghost')
        r = self.r
        running = (now - HOUR, now + DAY)
        self.lease([instance(r['R1'], {'cn-a': 2, 'cn-b': 1})], *running,
                   lease_id='L1', name='running')
        self.inventory('cn-a', r['R1'], 2)
        self.inventory('cn-b', r['R1'], 3)
        self.inventory('cn-c', r['R1'], 1)
        self.lease([instance(r['R2'], {'cn-new': 1})], *running,
                   lease_id='L2')
        self.lease([instance(r['R3'], {'cn-a': 1})], now - 3 * DAY,
                   now - DAY, state=models.TERMINATED, lease_id='L3')
        self.inventory('cn-a', r['R3'], 1)
        self.lease([instance(r['R4'], {'cn-b': 1})], now - 3 * DAY,
                   now - DAY, state=models.TERMINATED, lease_id='L4')
        self.inventory('cn-b', r['R4'], 1)
        self.consumer_r4 = self.allocate('cn-b', r['R4'])
        self.lease([instance(r['R5'], {'cn-c': 1})], *running,
                   lease_id='L5')
        self.inventory('cn-c', r['R5'], 3)
        self.allocate('cn-c', r['R5'], 1)
        self.allocate('cn-c', r['R5'], 1)
        self.resource_class(r['unknown'])
        self.lease([host(r['R6'], ['cn-off'])], *running, lease_id='L6')
        self.lease([instance(r['R7'], {'cn-gone': 1})], now + DAY,
                   now + 2 * DAY, lease_id='L7')
        self.resource_class(r['R7'])
        self.stuck_ended = self.lease([], now - 3 * DAY, now - 2 * DAY,
                                      name='never-ended')
        self.stuck_open = self.lease([], now - 2 * DAY, now + 5 * DAY,
                                     name='never-confirmed')


class CloudTestCase(testtools.TestCase):
    """One :class:`DriftedCloud` per test class."""

    cloud_class = DriftedCloud

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.cloud = cls.cloud_class()

    @classmethod
    def tearDownClass(cls):
        cls.cloud.close()
        super().tearDownClass()

    def findings(self, report, kind):
        return {f.subject: f for f in report.findings if f.kind == kind}
