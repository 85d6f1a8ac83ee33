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
"""Reservation providers, classes and lease transitions (Blazar's "Placement
API support for instance reservation" spec) against a real Placement."""

import threading
import uuid

import testtools

from placement_quota.placement import client as placement_client
from placement_quota.placement import embedded
from placement_quota.placement import reservations
from tests.fixtures import placement as placement_fixtures

ADMIN_ONLY = {'X-Auth-Token': 'admin', 'X-Roles': 'admin'}


class PlacementTestCase(testtools.TestCase):

    headers = embedded.NOAUTH_HEADERS

    def setUp(self):
        super().setUp()
        self.placement = self.useFixture(
            placement_fixtures.PlacementInProcess())
        self.client = self.new_client()
        # An independent client, standing for other writers (nova-compute).
        self.other = placement_client.PlacementClient.from_endpoint(
            self.placement.endpoint, embedded.NOAUTH_HEADERS)

    def new_client(self):
        return placement_client.PlacementClient.from_endpoint(
            self.placement.endpoint, self.headers)

    def compute_nodes(self, count):
        """Create compute node providers with VCPU; return their names."""
        names = []
        for _ in range(count):
            name = 'cn-%s' % uuid.uuid4().hex[:12]
            rp = self.other.post('/resource_providers',
                                 json={'name': name}).json()
            self.other.put('/resource_providers/%s/inventories' % rp['uuid'],
                           json={'resource_provider_generation':
                                 rp['generation'],
                                 'inventories': {'VCPU': {'total': 8}}})
            names.append(name)
        return names

    def provider(self, name):
        found = self.other.get('/resource_providers?name=%s' % name)
        return found['resource_providers'][0]

    def inventory_of(self, host):
        rp = self.provider(reservations.provider_name(host))
        return self.other.get('/resource_providers/%s/inventories'
                              % rp['uuid'])

    def calls(self, function, *args):
        before = self.client.calls
        result = function(*args)
        return result, self.client.calls - before


class TestReservationProviders(PlacementTestCase):

    def test_provider_is_created_as_child_of_the_compute_node(self):
        host, = self.compute_nodes(1)
        reservations.ReservationProviders(self.client).ensure([host])
        child = self.provider('blazar_' + host)
        self.assertEqual(self.provider(host)['uuid'],
                         child['parent_provider_uuid'])

    def test_ensure_is_idempotent_and_free_the_second_time(self):
        hosts = self.compute_nodes(3)
        providers = reservations.ReservationProviders(self.client)
        first = providers.ensure(hosts)
        second, calls = self.calls(providers.ensure, hosts)
        self.assertEqual(0, calls)
        self.assertEqual({h: s.uuid for h, s in first.items()},
                         {h: s.uuid for h, s in second.items()})

    def test_provider_made_by_blazar_is_adopted_not_duplicated(self):
        host, = self.compute_nodes(1)
        made = self.other.post('/resource_providers', json={
            'name': 'blazar_' + host,
            'parent_provider_uuid': self.provider(host)['uuid']}).json()
        state = reservations.ReservationProviders(self.client).ensure(
            [host])[host]
        self.assertEqual(made['uuid'], state.uuid)

    def test_unknown_host_is_named(self):
        error = self.assertRaises(
            reservations.HostNotFound,
            reservations.ReservationProviders(self.client).ensure,
            ['no-such-host-' + uuid.uuid4().hex])
        self.assertIn('no-such-host-', str(error))

    def test_remove_deletes_an_unused_provider(self):
        host, = self.compute_nodes(1)
        providers = reservations.ReservationProviders(self.client)
        providers.ensure([host])
        self.assertTrue(providers.remove(host))
        self.assertEqual([], self.other.get(
            '/resource_providers?name=blazar_' + host)['resource_providers'])

    def test_remove_is_refused_naming_the_consumers_with_allocations(self):
        host, = self.compute_nodes(1)
        transitions = reservations.Transitions(self.client)
        reservation = str(uuid.uuid4())
        transitions.start(reservation, {host: 2})
        consumer = str(uuid.uuid4())
        state = transitions.providers.ensure([host])[host]
        self.other.put('/allocations/%s' % consumer, json={
            'allocations': {state.uuid: {'resources': {
                reservations.reservation_class(reservation): 1}}},
            'project_id': str(uuid.uuid4()), 'user_id': str(uuid.uuid4()),
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
        error = self.assertRaises(placement_client.InUse,
                                  transitions.providers.remove, host)
        self.assertIn(consumer, str(error))


class TestReservationClasses(PlacementTestCase):

    def test_class_name_follows_blazars_rule(self):
        self.assertEqual(
            'CUSTOM_RESERVATION_7375755F_717E_4883_91C1_06CEBA2DA96E',
            reservations.reservation_class(
                '7375755f-717e-4883-91c1-06ceba2da96e'))

    def test_id_that_makes_an_invalid_class_is_refused(self):
        error = self.assertRaises(ValueError,
                                  reservations.reservation_class, 'a b')
        self.assertIn("'a b'", str(error))

    def test_create_is_idempotent(self):
        classes = reservations.ReservationClasses(self.client)
        name = reservations.reservation_class(str(uuid.uuid4()))
        classes.ensure(name)
        classes.ensure(name)
        self.other.get('/resource_classes/' + name)

    def test_deleting_an_absent_class_is_fine(self):
        self.assertFalse(reservations.ReservationClasses(self.client).delete(
            reservations.reservation_class(str(uuid.uuid4()))))

    def test_deleting_a_class_in_use_is_refused_with_the_reason(self):
        host, = self.compute_nodes(1)
        reservation = str(uuid.uuid4())
        reservations.Transitions(self.client).start(reservation, {host: 1})
        error = self.assertRaises(
            placement_client.InUse,
            reservations.ReservationClasses(self.client).delete,
            reservations.reservation_class(reservation))
        self.assertIn('in use', error.detail.lower())


class _TransitionBehaviour:
    """What start and end do, whichever way they write."""

    hosts = 20

    def setUp(self):
        super().setUp()
        self.names = self.compute_nodes(self.hosts)
        self.transitions = reservations.Transitions(self.client)
        self.transitions.providers.ensure(self.names)
        self.reservation = str(uuid.uuid4())
        self.rc = reservations.reservation_class(self.reservation)
        self.wanted = {h: i % 3 + 1 for i, h in enumerate(self.names)}

    def test_start_sets_every_hosts_inventory_to_its_instances(self):
        self.transitions.start(self.reservation, self.wanted)
        for host, total in self.wanted.items():
            inventory = self.inventory_of(host)['inventories'][self.rc]
            self.assertEqual((total, 1, 1, 1, 1.0), (
                inventory['total'], inventory['min_unit'],
                inventory['max_unit'], inventory['step_size'],
                inventory['allocation_ratio']))

    def test_start_returns_exactly_what_changed(self):
        changes = self.transitions.start(self.reservation, self.wanted)
        self.assertEqual(sorted(self.names), sorted(c.host for c in changes))
        self.assertTrue(all(c.before is None for c in changes))

    def test_repeated_start_changes_nothing(self):
        self.transitions.start(self.reservation, self.wanted)
        changes, calls = self.calls(self.transitions.start,
                                    self.reservation, self.wanted)
        self.assertEqual([], changes)
        self.assertEqual(2, calls)  # PUT the class, list the providers

    def test_lease_started_by_another_writer_is_ended(self):
        other_transitions = reservations.Transitions(self.new_client())
        other_transitions.start(self.reservation, self.wanted)
        changes = self.transitions.end(self.reservation, self.names)
        self.assertEqual(sorted(self.names), sorted(c.host for c in changes))
        for host in self.names:
            self.assertNotIn(self.rc, self.inventory_of(host)['inventories'])

    def test_start_already_done_by_another_writer_reports_no_change(self):
        reservations.Transitions(self.new_client()).start(self.reservation,
                                                          self.wanted)
        self.assertEqual([], self.transitions.start(self.reservation,
                                                    self.wanted))

    def test_provider_removed_elsewhere_is_created_again_on_start(self):
        host = self.names[3]
        gone = self.transitions.providers.ensure([host])[host]
        self.other.delete('/resource_providers/%s' % gone.uuid)
        self.transitions.start(self.reservation, self.wanted)
        self.assertEqual(self.wanted[host], self.inventory_of(host)[
            'inventories'][self.rc]['total'])

    def test_end_on_a_host_without_provider_creates_none(self):
        host, = self.compute_nodes(1)
        self.assertEqual([], self.transitions.end(self.reservation, [host]))
        self.assertEqual([], self.other.get(
            '/resource_providers?name=blazar_' + host)['resource_providers'])

    def test_end_removes_the_inventories_and_the_class(self):
        self.transitions.start(self.reservation, self.wanted)
        self.transitions.end(self.reservation, self.names)
        for host in self.names:
            self.assertNotIn(self.rc, self.inventory_of(host)['inventories'])
        self.assertRaises(placement_client.NotFound, self.other.get,
                          '/resource_classes/' + self.rc)

    def test_class_still_used_elsewhere_is_kept_after_a_partial_end(self):
        self.transitions.start(self.reservation, self.wanted)
        self.transitions.end(self.reservation, self.names[:5])
        self.other.get('/resource_classes/' + self.rc)
        self.assertIn(self.rc, self.inventory_of(self.names[5])['inventories'])

    def test_repeated_end_changes_nothing(self):
        self.transitions.start(self.reservation, self.wanted)
        self.transitions.end(self.reservation, self.names)
        self.assertEqual([], self.transitions.end(self.reservation,
                                                  self.names))

    def test_known_generations_match_placements_after_start_and_end(self):
        self.transitions.start(self.reservation, self.wanted)
        self.transitions.end(self.reservation, self.names[:5])
        for host in self.names:
            state = self.transitions.providers.ensure([host])[host]
            self.assertEqual(
                self.inventory_of(host)['resource_provider_generation'],
                state.generation, host)

    def test_other_reservations_on_the_same_hosts_are_kept(self):
        other = str(uuid.uuid4())
        self.transitions.start(other, {self.names[0]: 4})
        self.transitions.start(self.reservation, self.wanted)
        self.transitions.end(self.reservation, self.names)
        self.assertEqual(4, self.inventory_of(self.names[0])['inventories'][
            reservations.reservation_class(other)]['total'])

    def test_change_by_another_writer_is_reread_not_lost(self):
        host = self.names[0]
        state = self.transitions.providers.ensure([host])[host]
        foreign = reservations.reservation_class(str(uuid.uuid4()))
        self.other.put('/resource_classes/' + foreign)
        current = self.inventory_of(host)
        self.other.put('/resource_providers/%s/inventories' % state.uuid,
                       json={'resource_provider_generation':
                             current['resource_provider_generation'],
                             'inventories': {foreign: {'total': 1}}})
        self.transitions.start(self.reservation, self.wanted)
        inventories = self.inventory_of(host)['inventories']
        self.assertIn(foreign, inventories)
        self.assertIn(self.rc, inventories)

    #: The reshaper writes all or nothing: even generations stay as they
    #: were. Provider by provider, a rollback restores the inventories.
    unchanged = staticmethod(lambda inventory: inventory)

    def inject_before_first_write(self, event):
        """Run ``event`` once, just before our first inventory write (the
        reshaper, or the first per-provider PUT): an outside change at a
        precise moment, on the real Placement."""
        real = {'post': self.client.post, 'put': self.client.put}
        fired = []

        def wrap(method):
            def call(url, json=None, **kwargs):
                if not fired and ('/reshaper' in url or
                                  url.endswith('/inventories')):
                    fired.append(url)
                    event()
                return real[method](url, json=json, **kwargs)
            return call

        self.client.post, self.client.put = wrap('post'), wrap('put')

    def test_failure_part_way_leaves_placement_as_before(self):
        before = {h: self.unchanged(self.inventory_of(h))
                  for h in self.names}
        doomed = self.transitions.providers.ensure([self.names[7]])[
            self.names[7]]
        self.inject_before_first_write(lambda: self.other.delete(
            '/resource_providers/%s' % doomed.uuid))
        self.assertRaises(placement_client.NotFound,
                          self.transitions.start, self.reservation,
                          self.wanted)
        for host in self.names[:7] + self.names[8:]:
            self.assertEqual(before[host],
                             self.unchanged(self.inventory_of(host)), host)


class TestLeaseTransitions(_TransitionBehaviour, PlacementTestCase):
    """With POST /reshaper: every host in one atomic call."""

    def test_start_costs_three_calls_whatever_the_number_of_hosts(self):
        _, calls = self.calls(self.transitions.start, self.reservation,
                              self.wanted)
        self.assertEqual(3, calls)  # PUT class, list providers, reshaper

    def test_end_costs_three_calls_whatever_the_number_of_hosts(self):
        self.transitions.start(self.reservation, self.wanted)
        _, calls = self.calls(self.transitions.end, self.reservation,
                              self.names)
        self.assertEqual(3, calls)  # list providers, reshaper, DELETE class


class TestTransitionsWithoutReshaper(_TransitionBehaviour,
                                     PlacementTestCase):
    """Placement's reshaper policy wants the service role: with an admin
    only, writes go provider by provider, with rollback."""

    headers = ADMIN_ONLY
    unchanged = staticmethod(lambda inventory: inventory['inventories'])

    def test_reshaper_refusal_is_remembered(self):
        self.transitions.start(self.reservation, self.wanted)
        self.assertIs(False, self.transitions._reshaper)

    def test_rollback_goes_on_past_a_write_it_cannot_undo(self):
        transitions = reservations.Transitions(self.client,
                                               max_concurrency=1)
        states = transitions.providers.ensure(self.names[:6])
        first, last = states[self.names[0]], states[self.names[5]]
        real_put = self.client.put
        injected = []

        def put(url, json=None, **kwargs):
            # Fault injection at a precise moment, on the real Placement:
            # right after the first host is written, an instance lands on
            # it (so it cannot be undone) and the last host's provider is
            # deleted (so its write fails).
            response = real_put(url, json=json, **kwargs)
            if first.uuid in url and not injected:
                injected.append(url)
                self.other.put('/allocations/%s' % uuid.uuid4(), json={
                    'allocations': {first.uuid: {'resources': {self.rc: 1}}},
                    'project_id': str(uuid.uuid4()),
                    'user_id': str(uuid.uuid4()),
                    'consumer_generation': None,
                    'consumer_type': 'INSTANCE'})
                self.other.delete('/resource_providers/%s' % last.uuid)
            return response

        self.client.put = put
        self.assertRaises(placement_client.NotFound, transitions.start,
                          self.reservation,
                          {h: 1 for h in self.names[:6]})
        for host in self.names[1:5]:
            self.assertNotIn(self.rc, self.inventory_of(host)['inventories'])
        self.assertIn(self.rc,
                      self.inventory_of(self.names[0])['inventories'])


class TestConcurrentWriters(PlacementTestCase):

    def test_eight_writers_on_one_provider_lose_no_update(self):
        host, = self.compute_nodes(1)
        reservations.ReservationProviders(self.client).ensure([host])
        ids = [str(uuid.uuid4()) for _ in range(8)]
        errors = []

        def writer(reservation):
            # Each writer has its own client and cache, like a process.
            try:
                reservations.Transitions(
                    self.new_client(), conflict_retries=20).start(
                        reservation, {host: 1})
            except Exception as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(i,)) for i in ids]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        self.assertEqual([], errors)
        inventories = self.inventory_of(host)['inventories']
        self.assertEqual(
            sorted(reservations.reservation_class(i) for i in ids),
            sorted(k for k in inventories if k.startswith('CUSTOM_')))
