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
"""The decision on real Nova objects, the query Nova builds from it, and a
real Placement's answer.

Each test builds, in the shared Placement, a small cloud as stock Blazar
and Nova leave it:

* compute node providers (VCPU, MEMORY_MB, DISK_GB), each in the
  Placement aggregates of the Nova aggregates that list its host, as
  Nova's aggregate API mirrors them;
* ``free1``, ``free2``: Blazar hosts, unreserved, in the free pool;
* ``resv1``: host-reserved (moved out of the free pool into the
  reservation's aggregate, AZ ``blazar_<id>``, ``blazar:owner``);
* ``inst1``: instance-reserved (still in the free pool, and in the
  reservation's aggregate ``reservation=<id>``), with the reservation
  provider ``blazar_<host>`` holding ``CUSTOM_RESERVATION_<ID>``;
* ``spec1``: in an aggregate ``reservation:<id>``, in the style of
  Placement's "Support filtering by forbidden aggregate membership" spec;
* ``plain1``, ``plain2``: not Blazar's (``plain2`` in an unrelated
  aggregate).

The Nova side (``RequestSpec.from_components``, ``nova.objects.Aggregate``,
``Destination``, ``resources_from_request_spec``) runs in the child
process of :mod:`.nova_process`: Nova and Blazar cannot share a process.
The query it returns is sent here, at Nova's own microversion, to the
Placement of :class:`PlacementInProcess`.

Placement's database is shared by every test of the process, so each
test's hosts also have one unit of a resource class of their own, and its
flavors ask for it: the candidates are then this test's hosts only, and
Nova's ``limit=1000`` cannot cut them.
"""

from urllib import parse
import uuid

import requests
import testtools

from placement_quota.scheduler import decision as dec
from placement_quota.placement import client as placement_client
from placement_quota.placement import embedded
from placement_quota.placement import reservations
from tests.fixtures import placement as placement_fixtures
from tests.functional.scheduler import nova_process

OWNER = 'a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1'
OTHER = 'b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2'
HOSTS = ('free1', 'free2', 'resv1', 'inst1', 'spec1', 'plain1', 'plain2')


def member_of_params(query):
    return sorted(v for k, v in parse.parse_qsl(query) if k == 'member_of')


class NovaPlacementCloud(testtools.TestCase):
    """The cloud above, in the shared Placement (no tests of its own)."""

    def setUp(self):
        super().setUp()
        self.nova = self.useFixture(nova_process.NovaProcess())
        self.placement = self.useFixture(
            placement_fixtures.PlacementInProcess())
        self.client = placement_client.PlacementClient.from_endpoint(
            self.placement.endpoint, embedded.NOAUTH_HEADERS)
        self.http = requests.Session()
        self.http.headers.update(self.placement.headers)
        self.addCleanup(self.http.close)
        suffix = uuid.uuid4().hex[:8]
        self.marker = 'CUSTOM_PQ_SCHED_' + suffix.upper()
        self.client.put('/resource_classes/' + self.marker)
        self.host = {h: '%s-%s' % (h, suffix) for h in HOSTS}
        self.name_of = {v: k for k, v in self.host.items()}
        self.rp = {h: self.compute_node(self.host[h]) for h in HOSTS}
        self.host_of_rp = {rp: h for h, rp in self.rp.items()}
        self.host_rsv = str(uuid.uuid4())
        self.inst_rsv = str(uuid.uuid4())
        self.spec_rsv = 'spec-' + suffix
        self.aggs = self.nova_aggregates()
        self.put_placement_aggregates()
        transitions = reservations.Transitions(self.client)
        transitions.start(self.inst_rsv, {self.host['inst1']: 2})
        self.addCleanup(transitions.end, self.inst_rsv, [self.host['inst1']])

    # -- the cloud -----------------------------------------------------------

    def compute_node(self, hostname):
        rp = self.client.post('/resource_providers', json={
            'name': hostname}).json()
        self.client.put('/resource_providers/%s/inventories' % rp['uuid'],
                        json={'resource_provider_generation':
                              rp['generation'],
                              'inventories': {
                                  'VCPU': {'total': 8},
                                  'MEMORY_MB': {'total': 16384},
                                  'DISK_GB': {'total': 100},
                                  self.marker: {'total': 4}}})
        return rp['uuid']

    def nova_aggregates(self):
        """The Nova aggregates as Blazar and the operator made them."""
        def agg(name, metadata, hosts):
            return {'uuid': str(uuid.uuid4()), 'name': name,
                    'metadata': metadata,
                    'hosts': [self.host[h] for h in hosts]}
        return {
            # Created by the operator; Blazar moves hosts in and out.
            'freepool': agg('freepool', {}, ['free1', 'free2', 'inst1']),
            # host_plugin.reserve_resource + ReservationPool.create.
            'host_rsv': agg(self.host_rsv, {
                'availability_zone': 'blazar_' + self.host_rsv,
                'blazar:owner': OWNER}, ['resv1']),
            # instance_plugin._create_resources + ReservationPool.create.
            'inst_rsv': agg(self.inst_rsv, {
                'reservation': self.inst_rsv, 'filter_tenant_id': OWNER,
                'blazar:owner': OWNER}, ['inst1']),
            # Placement's "Support filtering by forbidden aggregate membership"
            # spec, "Developer impact" step 2.
            'spec': agg('spec-pool', {'reservation:' + self.spec_rsv: 'true'},
                        ['spec1']),
            'ssd': agg('ssd', {'ssd': 'true'}, ['plain2']),
        }

    def put_placement_aggregates(self):
        """Nova's aggregate API puts each compute node provider in the
        Placement aggregate of the same UUID."""
        by_host = {h: [] for h in HOSTS}
        for agg in self.aggs.values():
            for hostname in agg['hosts']:
                by_host[self.name_of[hostname]].append(agg['uuid'])
        for h, uuids in by_host.items():
            rp = self.client.get('/resource_providers/' + self.rp[h])
            self.client.put('/resource_providers/%s/aggregates' % self.rp[h],
                            json={'resource_provider_generation':
                                  rp['generation'], 'aggregates': uuids})

    # -- a request, through Nova, to Placement -------------------------------

    def schedule(self, extra_specs=None, image_properties=None, hints=None,
                 project_id=OWNER):
        """Nova's answer for a 2 VCPU / 2 GB / 10 GB flavor."""
        specs = dict(extra_specs or {})
        specs['resources:' + self.marker] = '1'
        return self.nova.schedule(
            {'vcpus': 2, 'memory_mb': 2048, 'root_gb': 10,
             'extra_specs': specs}, image_properties, hints, project_id,
            list(self.aggs.values()), hosts=list(self.host.values()))

    def candidates(self, query, microversion):
        """Compute hosts of the allocation candidates for ``query``."""
        resp = self.http.get(
            '%s/allocation_candidates?%s' % (self.placement.endpoint, query),
            headers={'OpenStack-API-Version': 'placement %s' % microversion})
        self.assertEqual(200, resp.status_code, resp.text)
        body = resp.json()
        roots = {rp: summary['root_provider_uuid']
                 for rp, summary in body['provider_summaries'].items()}
        return {self.host_of_rp[roots[rp]]
                for request in body['allocation_requests']
                for rp in request['allocations']}

    def assertCandidates(self, expected, answer, kind):
        """Placement returns exactly ``expected``, and the host filter
        passes exactly those hosts."""
        decision = answer['decision']
        self.assertEqual(kind, decision['kind'])
        self.assertFalse(decision['refused'], decision['reason'])
        # Nova wrote exactly the member_of that to_query() renders.
        self.assertEqual(member_of_params(answer['member_of']),
                         member_of_params(answer['query']))
        self.assertEqual(expected, self.candidates(answer['query'],
                                                   answer['microversion']))
        self.assertEqual(expected, {
            self.name_of[h] for h, ok in answer['host_passes'].items()
            if ok})


class TestDecisionOnNovaAndPlacement(NovaPlacementCloud):

    # -- the scenarios ------------------------------------------------------

    def test_without_member_of_every_host_is_a_candidate(self):
        """The baseline: the query Nova builds with no decision applied."""
        answer = self.schedule()
        query = '&'.join(p for p in answer['query'].split('&')
                         if not p.startswith('member_of='))
        self.assertEqual(set(HOSTS),
                         self.candidates(query, answer['microversion']))

    def test_regular_request_gets_only_hosts_outside_blazar(self):
        answer = self.schedule({'hw:cpu_policy': 'shared'})
        self.assertCandidates({'plain1', 'plain2'}, answer, dec.REGULAR)
        self.assertEqual(
            sorted(a['uuid'] for k, a in self.aggs.items() if k != 'ssd'),
            answer['requested_destination']['forbidden_aggregates'])
        self.assertIsNone(answer['requested_destination']['aggregates'])

    def test_host_reservation_hint_gets_the_reserved_host(self):
        answer = self.schedule(hints={'reservation': self.host_rsv})
        self.assertEqual({'reservation': [self.host_rsv]},
                         answer['scheduler_hints'])
        self.assertCandidates({'resv1'}, answer, dec.HOST_RESERVATION)
        self.assertEqual([self.aggs['host_rsv']['uuid']],
                         answer['requested_destination']['aggregates'])
        self.assertEqual([], answer['requested_destination']
                         ['forbidden_aggregates'])

    def test_host_reservation_of_another_project_is_refused(self):
        answer = self.schedule(hints={'reservation': self.host_rsv},
                               project_id=OTHER)
        self.assertTrue(answer['decision']['refused'])
        self.assertIn('project %s is not admitted to reservation %s'
                      % (OTHER, self.host_rsv), answer['decision']['reason'])
        self.assertIsNone(answer['query'])
        self.assertFalse(any(answer['host_passes'].values()))

    def test_instance_reservation_flavor_gets_the_reserved_host(self):
        """Blazar's reserved flavor: both extra specs it writes."""
        rc = reservations.reservation_class(self.inst_rsv)
        answer = self.schedule({
            'aggregate_instance_extra_specs:reservation': self.inst_rsv,
            'resources:' + rc: '1'})
        self.assertCandidates({'inst1'}, answer, dec.INSTANCE_RESERVATION)
        self.assertIn('%s:1' % rc, parse.unquote(answer['query']))

    def test_instance_reservation_by_its_class_alone(self):
        rc = reservations.reservation_class(self.inst_rsv)
        answer = self.schedule({'resources:' + rc: '1'})
        self.assertCandidates({'inst1'}, answer, dec.INSTANCE_RESERVATION)
        self.assertEqual([self.inst_rsv],
                         answer['decision']['reservation_ids'])

    def test_preemptible_request_gets_the_unreserved_free_pool(self):
        """Not ``inst1``: in the free pool, but instance-reserved."""
        answer = self.schedule({'blazar:preemptible': 'true'})
        self.assertCandidates({'free1', 'free2'}, answer, dec.PREEMPTIBLE)

    def test_specs_004_flavor_key_gets_the_tagged_host(self):
        answer = self.schedule({'reservation:' + self.spec_rsv: 'true'})
        self.assertCandidates({'spec1'}, answer, dec.HOST_RESERVATION)

    def test_nova_image_meta_drops_blazar_image_properties(self):
        """Nova keeps only the image properties it knows: an image's
        ``blazar:preemptible`` never reaches the RequestSpec, so a request
        filter sees a regular request."""
        answer = self.schedule(image_properties={
            'blazar:preemptible': 'true', 'hw_machine_type': 'q35'})
        self.assertEqual({'hw_machine_type': 'q35'},
                         answer['image_properties'])
        self.assertCandidates({'plain1', 'plain2'}, answer, dec.REGULAR)
