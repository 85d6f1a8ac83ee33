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
"""Our Nova plugins as nova-scheduler runs them, and a real Placement's
answer.

The request filter is the one :mod:`placement_quota.scheduler.nova_filters`
put in Nova's ``ALL_REQUEST_FILTERS``; it reads the aggregates from Nova's
API database (``AggregateList.get_all``) and writes the RequestSpec's
``requested_destination``; Nova's ``resources_from_request_spec`` builds
the query sent here to Placement. ``ReservationHostFilter`` runs through
Nova's ``HostFilterHandler`` over ``HostState`` objects. All of it in the
child process of :mod:`.nova_process` (Nova and Blazar cannot share a
process); the cloud is :class:`.test_nova_placement.NovaPlacementCloud`'s.
"""

import uuid

import testtools

from placement_quota.placement import reservations
from tests.functional.scheduler import nova_process
from tests.functional.scheduler import test_nova_placement as cloud

OWNER = cloud.OWNER
OTHER = cloud.OTHER


class FiltersCloud(cloud.NovaPlacementCloud):

    def run_filters(self, extra_specs=None, image_properties=None,
                    hints=None, project_id=OWNER, aggregates=None,
                    blazar_filter=False):
        """Nova's scheduling of a 2 VCPU / 2 GB / 10 GB flavor."""
        specs = dict(extra_specs or {})
        specs['resources:' + self.marker] = '1'
        if aggregates is None:
            aggregates = list(self.aggs.values())
        return self.nova.run_filters(
            {'vcpus': 2, 'memory_mb': 2048, 'root_gb': 10,
             'extra_specs': specs}, image_properties, hints, project_id,
            aggregates, hosts=list(self.host.values()),
            blazar_filter=blazar_filter)

    def filtered_candidates(self, answer):
        """Placement's candidates for the query of the filtered spec."""
        self.assertIsNone(answer['refused'])
        self.assertTrue(answer['ran'])
        return self.candidates(answer['query'], answer['microversion'])

    def host_filter_passes(self, answer):
        return {self.name_of[h] for h, ok in answer['host_passes'].items()
                if ok}

    # The scenarios of the scheduler decision, as flavor extra specs and hints.

    def regular(self):
        return self.run_filters({'hw:cpu_policy': 'shared'})

    def host_reserved(self):
        return self.run_filters(hints={'reservation': self.host_rsv})

    def instance_reserved(self):
        rc = reservations.reservation_class(self.inst_rsv)
        return self.run_filters({
            'aggregate_instance_extra_specs:reservation': self.inst_rsv,
            'resources:' + rc: '1'})

    def preemptible(self):
        return self.run_filters({'blazar:preemptible': 'true'})


class TestRequestFilterOnPlacement(FiltersCloud):

    def test_regular_request_gets_only_hosts_outside_blazar(self):
        self.assertEqual({'plain1', 'plain2'},
                         self.filtered_candidates(self.regular()))

    def test_host_reserved_request_gets_the_reserved_host(self):
        self.assertEqual({'resv1'},
                         self.filtered_candidates(self.host_reserved()))

    def test_instance_reserved_request_gets_the_reserved_host(self):
        self.assertEqual({'inst1'},
                         self.filtered_candidates(self.instance_reserved()))

    def test_preemptible_request_gets_the_unreserved_free_pool(self):
        self.assertEqual({'free1', 'free2'},
                         self.filtered_candidates(self.preemptible()))

    def test_specs_004_flavor_key_gets_the_tagged_host(self):
        answer = self.run_filters({'reservation:' + self.spec_rsv: 'true'})
        self.assertEqual({'spec1'}, self.filtered_candidates(answer))

    def test_filter_writes_the_destination_as_nova_filters_do(self):
        """Required aggregates as ``in:`` groups, forbidden as a set."""
        answer = self.host_reserved()
        self.assertEqual({'aggregates': [self.aggs['host_rsv']['uuid']],
                          'forbidden_aggregates': []},
                         answer['requested_destination'])

    def test_regular_destination_forbids_every_blazar_aggregate(self):
        answer = self.regular()
        self.assertEqual(
            sorted(a['uuid'] for k, a in self.aggs.items() if k != 'ssd'),
            answer['requested_destination']['forbidden_aggregates'])
        self.assertIsNone(answer['requested_destination']['aggregates'])

    def test_other_project_is_refused_with_no_valid_host_reason(self):
        answer = self.run_filters(hints={'reservation': self.host_rsv},
                                  project_id=OTHER)
        self.assertIn('project %s is not admitted to reservation %s'
                      % (OTHER, self.host_rsv), answer['refused'])
        self.assertIsNone(answer['query'])


class TestHostFilterAgreesWithRequestFilter(FiltersCloud):

    def test_host_filter_passes_exactly_placements_candidates(self):
        """On every host, in each scenario."""
        for scenario in (self.regular, self.host_reserved,
                         self.instance_reserved, self.preemptible):
            answer = scenario()
            self.assertEqual(self.filtered_candidates(answer),
                             self.host_filter_passes(answer),
                             scenario.__name__)
            self.assertEqual(set(cloud.HOSTS), {
                self.name_of[h] for h in answer['host_passes']})

    def test_host_filter_decides_once_per_request(self):
        answer = self.regular()
        self.assertEqual(1, answer['host_filter_decisions'])
        self.assertEqual(len(cloud.HOSTS), answer['host_filter_checks'])

    def test_blazar_filter_agrees_on_host_reservations(self):
        """blazar-nova's own BlazarFilter, on the same hosts."""
        answer = self.run_filters(hints={'reservation': self.host_rsv},
                                  blazar_filter=True)
        self.assertEqual(answer['blazar_passes'], answer['host_passes'])

    def test_blazar_filter_lets_regular_requests_on_specs_004_hosts(self):
        """Where ours differs: BlazarFilter knows no ``reservation:`` tag
        (and no instance reservation aggregate)."""
        answer = self.run_filters(blazar_filter=True)
        blazar = {self.name_of[h] for h, ok in
                  answer['blazar_passes'].items() if ok}
        self.assertEqual({'plain1', 'plain2', 'spec1'}, blazar)
        self.assertEqual({'plain1', 'plain2'},
                         self.host_filter_passes(answer))


def agg(name, metadata, hosts, uuid_=None):
    return {'uuid': uuid_ or str(uuid.uuid4()), 'name': name,
            'metadata': metadata, 'hosts': hosts}


class TestBadMetadata(testtools.TestCase):
    """Reported clearly (the refusal and the log say what is wrong),
    never a crash: the request is refused, every host too."""

    def setUp(self):
        super().setUp()
        self.nova = self.useFixture(nova_process.NovaProcess())
        self.rsv = str(uuid.uuid4())

    def run_filters(self, aggregates, extra_specs=None, hints=None):
        return self.nova.run_filters({'extra_specs': extra_specs or {}},
                                     hints=hints, project_id=OWNER,
                                     aggregates=aggregates, hosts=['plain'])

    def assertRefusedEverywhere(self, answer, *needles):
        for needle in needles:
            self.assertIn(needle, answer['refused'])
        self.assertFalse(any(answer['host_passes'].values()))
        warnings = [r['message'] for r in answer['logged']]
        self.assertEqual(2, len(warnings), warnings)  # each filter, once
        for needle in needles:
            for message in warnings:
                self.assertIn(needle, message)
        self.assertFalse(any(r['traceback'] for r in answer['logged']))

    def test_malformed_uuid_of_a_blazar_aggregate_refuses_regular(self):
        answer = self.run_filters([
            agg('freepool', {}, ['free']),
            agg('broken', {'reservation:x': '1'}, ['bad'], 'not-a-uuid')])
        self.assertRefusedEverywhere(
            answer, "aggregate 'broken' has a malformed UUID 'not-a-uuid'")

    def test_free_pool_tagged_as_reservation_refuses_that_reservation(self):
        answer = self.run_filters([
            agg('freepool', {'reservation': self.rsv}, ['free'])],
            hints={'reservation': self.rsv})
        self.assertRefusedEverywhere(
            answer, "is the free pool and is also tagged as reservation "
                    "aggregate (reservation=%s)" % self.rsv)

    def test_free_pool_tagged_as_reservation_refuses_preemptible(self):
        answer = self.run_filters([
            agg('freepool', {'reservation': self.rsv}, ['free'])],
            extra_specs={'blazar:preemptible': 'true'})
        self.assertRefusedEverywhere(answer, 'is the free pool and is also')

    def test_free_pool_tagged_as_reservation_warns_a_regular_request(self):
        answer = self.run_filters([
            agg('freepool', {'reservation': self.rsv}, ['free'])])
        self.assertIsNone(answer['refused'])
        self.assertEqual({'free': False, 'plain': True},
                         answer['host_passes'])
        self.assertIn('is the free pool and is also tagged',
                      answer['logged'][0]['message'])

    def test_missing_reservation_aggregate_refuses(self):
        answer = self.run_filters([agg('freepool', {}, ['free'])],
                                  hints={'reservation': self.rsv})
        self.assertRefusedEverywhere(
            answer, 'reservation %s has no aggregate' % self.rsv)


class TestRegistration(testtools.TestCase):
    """``[filter_scheduler] available_filters =
    placement_quota.scheduler.nova_filters.all_filters`` in a Nova process,
    and its deprecated path ``placement_quota.compute.nova_filters``: the
    host filters are loaded from the deprecated path, as nova.conf files
    written before the scheduler package name it."""

    def setUp(self):
        super().setUp()
        self.registration = self.useFixture(
            nova_process.NovaProcess()).registration()

    def test_request_filter_is_in_nova_list_once_after_import(self):
        self.assertEqual(1, self.registration['counts']['import'])

    def test_second_import_and_reloads_keep_it_once(self):
        self.assertEqual({1}, set(self.registration['counts'].values()))

    def test_registered_filter_is_the_current_one(self):
        self.assertTrue(self.registration['is_current'])
        self.assertEqual('reservation_aggregates',
                         self.registration['name'])

    def test_nova_own_request_filters_are_untouched(self):
        self.assertTrue(self.registration['nova_filters_unchanged'])

    def test_host_filter_handler_loads_ours_by_name(self):
        names = self.registration['host_filter_names']
        self.assertEqual(1, names.count('ReservationHostFilter'))
        self.assertIn('ComputeFilter', names)


class TestOptionsInNova(testtools.TestCase):
    """``[placement_quota_scheduler]`` read from Nova's configuration."""

    def setUp(self):
        super().setUp()
        self.nova = self.useFixture(nova_process.NovaProcess())
        self.pool = agg('spare', {}, ['free'])

    def run_filters(self, settings):
        return self.nova.run_filters(
            {'extra_specs': {'blazar:preemptible': 'true'}},
            project_id=OWNER, aggregates=[self.pool], hosts=['plain'],
            settings=settings)

    def test_disabled_request_filter_leaves_the_request_alone(self):
        answer = self.run_filters({'request_filter_enabled': False})
        self.assertFalse(answer['ran'])
        self.assertIsNone(answer['requested_destination'])
        self.assertNotIn('member_of', answer['query'])

    def test_free_pool_name_comes_from_nova_conf(self):
        answer = self.run_filters({'freepool_name': 'spare'})
        self.assertEqual([self.pool['uuid']],
                         answer['requested_destination']['aggregates'])
        self.assertEqual({'free': True, 'plain': False},
                         answer['host_passes'])
