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
"""Placement capacity on a Galera cluster: many projects ask for room on
the same two hosts at once, through two service processes; exactly what
the hosts hold is admitted.

Unlike the policies of test_galera_exactness, no project lock orders
these admissions (each request is a project of its own): only the hosts'
capacity locks (one row per host, and the cloud row shared, which a
Galera node takes exclusively) keep two admissions from handing out the
same room. A real Placement (the embedded server, a subprocess) holds the
two hosts, 8 VCPU each; each lease is one instance of 2 VCPU on one of
them, over the same day: each host holds exactly 4.
"""

import uuid

from placement_quota.placement import client as placement_client
from tests import builders
from tests.fixtures import ledger_services
from tests.fixtures import placement as placement_fixtures
from tests.functional.ha import base

HOSTS = 2
VCPUS_PER_HOST = 8
VCPUS_PER_LEASE = 2
PER_HOST = VCPUS_PER_HOST // VCPUS_PER_LEASE


def host_of(index):
    """The host (its index) request ``index`` asks for."""
    return index // 2 % HOSTS


class InstanceClient(ledger_services.Client):
    """Request ``index``: project ``<prefix>-<index>``, one instance of
    2 VCPU on host ``index // 2 % HOSTS`` (the bursts send even indexes
    to one service, odd ones to the other: each host is asked through
    both)."""

    def __init__(self, prefix, hosts):
        super().__init__(prefix)
        self.hosts = hosts

    def project_of(self, index):
        return '%s-%d' % (self.project, index)

    def lease(self, index, hosts=1):
        host = self.hosts[host_of(index)]
        return builders.lease(
            self.start.strftime(ledger_services.DATE),
            self.end.strftime(ledger_services.DATE),
            builders.instances(1, vcpus=VCPUS_PER_LEASE, hosts=[host]),
            name='lease-%d' % index)


class Capacity:
    """Written once; run on each topology by the subclasses below."""

    requests_sent = 24

    def test_capacity_admits_exactly_what_the_hosts_hold(self):
        placement = self.useFixture(placement_fixtures.PlacementServer())
        client = placement_client.PlacementClient.from_endpoint(
            placement.endpoint, placement.headers)
        hosts = [self.compute_node(client) for _ in range(HOSTS)]
        services = self.start_services(
            getattr(self, self.topology)(), ['PlacementCapacityFilter'],
            '[placement]\nauth_type = admin_token\nendpoint = %s\n'
            'token = admin\n' % placement.endpoint)
        requests = InstanceClient('p-%s' % uuid.uuid4().hex[:8], hosts)
        answers = ledger_services.burst(requests, services,
                                        self.requests_sent,
                                        threads=self.threads)
        self.assertOnlyDecisions(answers)
        admitted = [a for a in answers if a.status == 204]
        self.assertEqual(HOSTS * PER_HOST, len(admitted),
                         self.statuses(answers))
        # Each host exactly full; the ledger holds exactly the leases
        # answered 204 (each request a project of its own).
        for index, host in enumerate(hosts):
            self.assertEqual(PER_HOST, len([
                a for a in admitted if host_of(a.index) == index]), host)
        found = []
        for answer in answers:
            found.extend(row.name for row in ledger_services.live_entries(
                self.ledger, requests.project_of(answer.index)))
        self.assertEqual(ledger_services.admitted_names(answers),
                         sorted(found))

    def compute_node(self, client):
        """A compute node of 8 VCPU in Placement: its name."""
        name = 'cn-%s' % uuid.uuid4().hex[:12]
        provider = client.post('/resource_providers',
                               json={'name': name}).json()
        client.put('/resource_providers/%s/inventories' % provider['uuid'],
                   json={'resource_provider_generation':
                         provider['generation'],
                         'inventories': {
                             'VCPU': {'total': VCPUS_PER_HOST},
                             'MEMORY_MB': {'total': 65536},
                             'DISK_GB': {'total': 1000}}})
        return name


class TestCapacityMultiWriter(Capacity, base.GaleraServicesTestCase):
    """One service through node 1, the other through node 2."""

    topology = 'multi_writer'


class TestCapacitySingleWriter(Capacity, base.GaleraServicesTestCase):
    """Both services through HAProxy."""

    topology = 'single_writer'
