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
"""Our enforcement service over HTTP with a SQLite ledger and a real
Placement: the base of the policy tests."""

import datetime
import json
import os
import uuid

import fixtures
import requests
import testtools

from placement_quota import conf as pq_conf
from placement_quota import ledger
from placement_quota.ledger import store
from placement_quota.placement import client as placement_client
from placement_quota.placement import embedded
from tests.fixtures import enforcement as service_fixture
from tests.fixtures import placement as placement_fixtures

NOW = datetime.datetime(2026, 6, 1, 0, 0)


def day(d, hour=0):
    """A date string of June 2026."""
    return '2026-06-%02d %02d:00' % (d, hour)


def instances(amount, vcpus=1, memory_mb=512, disk_gb=1, hosts=()):
    return {'resource_type': 'virtual:instance', 'amount': amount,
            'vcpus': vcpus, 'memory_mb': memory_mb, 'disk_gb': disk_gb,
            'affinity': None, 'resource_properties': '',
            'allocations': [{'id': h, 'hypervisor_hostname': h}
                            for h in hosts]}


def hosts(*names, **extra):
    return {'resource_type': 'physical:host', 'min': len(names),
            'max': len(names), 'hypervisor_properties': '[]',
            'resource_properties': '',
            'allocations': [{'id': str(i), 'hypervisor_hostname': n,
                             'extra': dict(extra)}
                            for i, n in enumerate(names)]}


def floatingips(amount):
    return {'resource_type': 'virtual:floatingip', 'network_id': 'ext',
            'amount': amount, 'allocations': []}


def network():
    return {'resource_type': 'network', 'network_name': 'n',
            'allocations': []}


def lease(start, end, *reservations, name=None, lease_id=None):
    body = {'start_date': start, 'end_date': end,
            'reservations': list(reservations)}
    if name is not None:
        body['name'] = name
    if lease_id is not None:
        body['id'] = lease_id
    return body


class PolicyTestCase(testtools.TestCase):
    """Subclasses set ``filters`` and ``options`` ({(group, name): value})
    and call the service through :meth:`create`, :meth:`update` and
    :meth:`end`."""

    filters = []
    options = {}
    placement = True

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.project = 'project-%s' % uuid.uuid4().hex[:8]
        lines = ['[ledger]', 'connection = sqlite:///%s' % os.path.join(
            self.tmp, 'ledger.sqlite')]
        if self.placement:
            server = self.useFixture(placement_fixtures.PlacementServer())
            self.placement_client = \
                placement_client.PlacementClient.from_endpoint(
                    server.endpoint, embedded.NOAUTH_HEADERS)
            lines += ['[placement]', 'auth_type = admin_token',
                      'endpoint = %s' % server.endpoint, 'token = admin']
        else:
            lines += ['count_host_resources = false']
        path = os.path.join(self.tmp, 'placement-quota.conf')
        with open(path, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        self.conf = pq_conf.new_config([], config_files=[path])
        self.conf.set_override('enabled_filters', self.filters,
                               'enforcement')
        for (group, name), value in self.options.items():
            self.conf.set_override(name, value, group)
        self.addCleanup(ledger.forget, self.conf)
        self.now = NOW
        self.ledger = ledger.shared(self.conf)
        self.ledger.clock = lambda: self.now
        self.service = self.useFixture(
            service_fixture.EnforcementService(self.conf))

    # --- calls ----------------------------------------------------------

    def call(self, kind, body, project=None):
        body = dict(body, context={'project_id': project or self.project,
                                   'user_id': 'u'})
        response = requests.post(self.service.url + '/v1/' + kind,
                                 data=json.dumps(body), timeout=30)
        if response.status_code == 204:
            return 204, None
        return response.status_code, response.json()

    def create(self, lease_body, project=None):
        return self.call('check-create', {'lease': lease_body}, project)

    def update(self, current, new, project=None):
        return self.call('check-update', {'current_lease': current,
                                          'lease': new}, project)

    def end(self, lease_body, project=None):
        return self.call('on-end', {'lease': lease_body}, project)

    # --- assertions -----------------------------------------------------

    def assertAllowed(self, answer):
        self.assertEqual((204, None), answer)

    def assertDenied(self, answer, *fragments):
        status, body = answer
        self.assertEqual(403, status, body)
        for fragment in fragments:
            self.assertIn(fragment, body['message'])
        return body['message']

    # --- ledger ---------------------------------------------------------

    def entries(self, project=None):
        with self.ledger.transaction() as txn:
            return [row for row in txn.leases(project or self.project)]

    def live_entries(self, project=None):
        return [row for row in self.entries(project)
                if row.state != 'denied']

    def give_credits(self, amount, project=None, start=None, end=None):
        with self.ledger.transaction() as txn:
            return txn.add_allocation(project or self.project,
                                      store.to_micro(amount), start, end)

    def spent(self, allocation_id):
        with self.ledger.transaction() as txn:
            return store.from_micro(txn.spent(allocation_id))

    # --- Placement ------------------------------------------------------

    def compute_node(self, vcpus=8, memory_mb=16384, disk_gb=100,
                     prefix='cn'):
        name = '%s-%s' % (prefix, uuid.uuid4().hex[:10])
        provider = self.placement_client.post(
            '/resource_providers', json={'name': name}).json()
        self.placement_client.put(
            '/resource_providers/%s/inventories' % provider['uuid'], json={
                'resource_provider_generation': provider['generation'],
                'inventories': {'VCPU': {'total': vcpus},
                                'MEMORY_MB': {'total': memory_mb},
                                'DISK_GB': {'total': disk_gb}}})
        return name, provider['uuid']

    def allocate(self, provider_uuid, project, **resources):
        self.placement_client.put('/allocations/%s' % uuid.uuid4(), json={
            'allocations': {provider_uuid: {'resources': resources}},
            'project_id': project, 'user_id': 'someone',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
