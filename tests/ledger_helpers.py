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
"""What the ledger tests read and set up, whether they call the filters
in-process (tests/unit/filters) or the service over HTTP
(tests/functional/ledger): the ledger's entries and credits, and compute
nodes in a Placement."""

import uuid

import sqlalchemy as sa

from placement_quota.ledger import models
from placement_quota.ledger import store
from placement_quota.placement import client as placement_client
from placement_quota.placement import embedded
from tests.fixtures import placement as placement_fixtures


def watch_statements(test, engine):
    """A list every statement ``engine`` sends from now on is appended to,
    until ``test`` ends."""
    seen = []

    def count(conn, cursor, statement, *args):
        seen.append(statement)
    sa.event.listen(engine, 'before_cursor_execute', count)
    test.addCleanup(sa.event.remove, engine, 'before_cursor_execute', count)
    return seen


class LedgerHelpers:
    """For a test case with a ``ledger`` and a default ``project``."""

    def entries(self, project=None):
        """The ledger's entries of ``project``, denied ones included."""
        with self.ledger.transaction() as txn:
            return txn.leases(project or self.project)

    def live_entries(self, project=None):
        return [row for row in self.entries(project)
                if row.state not in models.NOT_COUNTED]

    def states(self, project=None):
        return [row.state for row in self.entries(project)]

    def give_credits(self, amount, project=None, start=None, end=None,
                     resource_class=None):
        """A credit allocation of ``amount`` credits (a pool of ``amount``
        hours of ``resource_class``); its ID."""
        with self.ledger.transaction() as txn:
            return txn.add_allocation(project or self.project,
                                      store.to_micro(amount), start, end,
                                      resource_class=resource_class)

    def spent(self, allocation_id):
        with self.ledger.transaction() as txn:
            return store.from_micro(txn.spent(allocation_id))


class PlacementHelpers:
    """For a test case with a ``placement_client`` (a
    :class:`~placement_quota.placement.client.PlacementClient`)."""

    def in_process_placement(self):
        """Set :attr:`placement_client` to a client of this process's
        embedded Placement (behind wsgi-intercept) and return it."""
        fixture = self.useFixture(placement_fixtures.PlacementInProcess())
        self.placement_client = \
            placement_client.PlacementClient.from_endpoint(
                fixture.endpoint, embedded.NOAUTH_HEADERS)
        return self.placement_client

    def compute_node(self, vcpus=8, memory_mb=8192, disk_gb=100):
        """A resource provider with this inventory; its name and UUID."""
        name = 'cn-%s' % uuid.uuid4().hex[:12]
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
        """An instance of ``project`` using ``resources`` of the provider
        now."""
        self.placement_client.put('/allocations/%s' % uuid.uuid4(), json={
            'allocations': {provider_uuid: {'resources': resources}},
            'project_id': project, 'user_id': 'someone',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
