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
"""The pure finding logic, on hand-made ledger and Placement states."""

import dataclasses
import datetime
import types

import testtools

from placement_quota.ledger import models
from placement_quota.placement import reservations as rsv
from placement_quota.reconcile import findings
from placement_quota.reconcile import model as m

NOW = datetime.datetime(2026, 6, 10, 12, 0)
HOUR = datetime.timedelta(hours=1)
DAY = datetime.timedelta(days=1)
RID = '4d17d41a-830d-47b2-91c7-4f9fc0ae611e'
CLASS = 'CUSTOM_RESERVATION_4D17D41A_830D_47B2_91C7_4F9FC0AE611E'


def reservation(start=NOW - DAY, end=NOW + DAY, rid=RID, hosts=None,
                state=models.PENDING, rtype=m.INSTANCE):
    return m.Reservation(
        reservation_id=rid, resource_type=rtype, lease_id='L', lease_name='n',
        project_id='p', entry_id=1, start=start, end=end, state=state,
        hosts=hosts if hosts is not None else {'cn1': 2})


def cloud(inventory=None, used=0, classes=(CLASS,), disabled=False,
          child_parent='cn1-uuid', hosts=('cn1',)):
    providers = {}
    for host in hosts:
        providers[host] = m.Provider(host + '-uuid', host, None, 1)
    rp = m.Provider('rp-uuid', 'blazar_cn1', child_parent, 3,
                    inventories={})
    if inventory is not None:
        rp.inventories[CLASS] = rsv.reservation_inventory(inventory)
    if used:
        rp.usages[CLASS] = used
        rp.consumers[CLASS] = ['c-%d' % i for i in range(used)]
    providers[rp.name] = rp
    return m.PlacementState(providers=providers, classes=set(classes),
                            disabled={'cn1-uuid'} if disabled else set())


def kinds(found):
    return [(f.kind, f.safe) for f in found]


def find(reservations, state, entries=(), **kwargs):
    return findings.find(reservations, entries, state, NOW, **kwargs)


class TestInventories(testtools.TestCase):

    def test_matching_inventory_is_no_drift(self):
        self.assertEqual([], find([reservation()], cloud(inventory=2)))

    def test_missing_inventory_inside_the_grace_period_is_not_reported(self):
        r = reservation(start=NOW - datetime.timedelta(minutes=5))
        self.assertEqual([], find([r], cloud()))

    def test_missing_inventory_after_the_grace_period_is_safe_to_set(self):
        found = find([reservation()], cloud())
        self.assertEqual([(m.INVENTORY_MISMATCH, True)], kinds(found))
        self.assertEqual(m.Action(m.SET_INVENTORY, host='cn1',
                                  provider='rp-uuid', resource_class=CLASS,
                                  total=2), found[0].action)

    def test_lowering_a_total_to_what_is_used_is_safe(self):
        found = find([reservation()], cloud(inventory=5, used=2))
        self.assertEqual([(m.INVENTORY_MISMATCH, True)], kinds(found))

    def test_lowering_a_total_below_what_is_used_is_not_safe(self):
        found = find([reservation(hosts={'cn1': 1})],
                     cloud(inventory=5, used=2))
        self.assertEqual([(m.INVENTORY_MISMATCH, False)], kinds(found))
        self.assertIsNone(found[0].action)

    def test_pending_reservation_expects_no_inventory(self):
        r = reservation(start=NOW + HOUR)
        self.assertEqual([], find([r], cloud(inventory=2)))

    def test_reservation_without_an_id_is_not_checked_against_classes(self):
        r = reservation(rid=None)
        self.assertEqual([(m.ORPHAN_CLASS, False)],
                         kinds(find([r], cloud(inventory=2))))


class TestEnded(testtools.TestCase):

    def ended(self, **kwargs):
        return reservation(start=NOW - 3 * DAY, end=NOW - DAY,
                           state=models.TERMINATED, **kwargs)

    def test_unused_inventory_and_class_of_an_ended_reservation(self):
        found = find([self.ended()], cloud(inventory=2))
        self.assertEqual([(m.ORPHAN_CLASS, True), (m.ENDED_INVENTORY, True)],
                         kinds(found))

    def test_used_inventory_of_an_ended_reservation_is_never_safe(self):
        found = find([self.ended()], cloud(inventory=2, used=1))
        self.assertEqual([(m.ORPHAN_CLASS, False),
                          (m.ENDED_ALLOCATIONS, False)], kinds(found))
        self.assertIn('c-0', found[1].reason)

    def test_end_inside_the_grace_period_is_not_reported(self):
        r = reservation(start=NOW - DAY,
                        end=NOW - datetime.timedelta(minutes=5))
        self.assertEqual([], find([r], cloud(inventory=2)))


class TestProvidersAndHosts(testtools.TestCase):

    def test_reservation_provider_under_the_wrong_parent_is_not_safe(self):
        found = find([reservation()],
                     cloud(inventory=2, child_parent='other-uuid'))
        self.assertEqual([(m.ORPHAN_PROVIDER, False)], kinds(found))
        self.assertIn('its parent is none', found[0].reason)

    def test_disabled_compute_node_degrades_a_started_reservation(self):
        found = find([reservation()], cloud(inventory=2, disabled=True))
        self.assertEqual([(m.DEGRADED, False)], kinds(found))
        self.assertIn('resources changed after the start', found[0].reason)

    def test_gone_compute_node_is_missing_resources_before_start(self):
        r = reservation(start=NOW + DAY, end=NOW + 2 * DAY,
                        hosts={'cn9': 1}, rtype=m.HOST, rid=None)
        found = find([r], cloud(classes=()))
        self.assertEqual([(m.DEGRADED, False)], kinds(found))
        self.assertIn('missing resources before the start', found[0].reason)


def blazar(*reservations, leases=()):
    """A view of Blazar with ``reservations`` and ``leases``
    (:class:`~placement_quota.reconcile.lease_findings.Lease`)."""
    return findings.BlazarView(
        dict(reservations), frozenset(lease.fingerprint for lease in leases),
        frozenset(lease.id for lease in leases), leases=tuple(leases))


class TestWithBlazar(testtools.TestCase):

    def test_class_unknown_to_the_ledger_but_live_in_blazar_is_kept(self):
        self.assertEqual([], find([], cloud(inventory=2),
                                  blazar=blazar((RID, ('L', False)))))

    def test_class_blazar_does_not_know_is_safe_to_delete(self):
        found = find([], cloud(), blazar=blazar())
        self.assertEqual([(m.ORPHAN_CLASS, True)], kinds(found))
        self.assertIn('neither the ledger nor Blazar', found[0].reason)

    def test_blazar_view_reads_reservations_and_ledger_keys(self):
        view = findings.blazar_view([{
            'id': 'L', 'name': 'n', 'project_id': 'p', 'status': 'ACTIVE',
            'start_date': '2026-06-01T00:00:00',
            'end_date': '2026-06-02T00:00:00',
            'reservations': [{'id': RID, 'status': 'active',
                              'resource_type': m.INSTANCE}]}])
        self.assertEqual({RID: ('L', False)}, view.reservations)
        self.assertEqual(1, len(view.fingerprints))
        self.assertEqual([('L', 'p', 'ACTIVE', datetime.datetime(2026, 6, 1))],
                         [(lease.id, lease.project_id, lease.status,
                           lease.start) for lease in view.leases])


class TestBlazarFlags(testtools.TestCase):
    """Reservations Blazar's resource monitor flagged (Blazar's "Monitor states
    of resources" spec)."""

    LEASE = {'id': 'L', 'name': 'n', 'project_id': 'p', 'status': 'ACTIVE',
             'start_date': '2026-06-01T00:00:00',
             'end_date': '2026-06-20T00:00:00'}

    def view(self, status='active', **flags):
        reservation = dict({'missing_resources': False,
                            'resources_changed': False}, id=RID,
                           status=status, resource_type=m.INSTANCE)
        reservation.update(flags)
        view = findings.blazar_view([dict(self.LEASE,
                                          reservations=[reservation])])
        # Its lease, which the ledger lacks, is another test's matter
        # (test_lease_findings).
        return dataclasses.replace(view, leases=())

    def test_missing_resources_is_reported_as_degraded(self):
        found = find([], cloud(classes=()),
                     blazar=self.view(missing_resources=True))
        self.assertEqual([(m.DEGRADED, False)], kinds(found))
        self.assertIn('missing_resources', found[0].reason)
        self.assertIn('reservation %s (lease L)' % RID, found[0].subject)

    def test_resources_changed_is_reported_as_degraded(self):
        found = find([], cloud(classes=()),
                     blazar=self.view(resources_changed=True))
        self.assertEqual([(m.DEGRADED, False)], kinds(found))
        self.assertIn('Blazar replaced it', found[0].reason)

    def test_unflagged_reservation_is_not_degraded(self):
        self.assertEqual([], find([], cloud(classes=()), blazar=self.view()))

    def test_flags_of_an_ended_reservation_are_not_reported(self):
        self.assertEqual([], find([], cloud(classes=()), blazar=self.view(
            status='deleted', missing_resources=True)))

    def test_reservation_placement_shows_degraded_is_reported_once(self):
        found = find([reservation()], cloud(inventory=2, disabled=True),
                     blazar=self.view(resources_changed=True))
        self.assertEqual([(m.DEGRADED, False)], kinds(found))
        self.assertIn('compute node cn1 is disabled', found[0].reason)


def entry(start, end, key='k', lease_id=None, state=models.PENDING):
    return m.Entry(id=7, project_id='p', lease_id=lease_id,
                   provisional_key=key, name='n', state=state, start=start,
                   end=end, charged=5)


class TestStuckPending(testtools.TestCase):

    def stuck(self, entries, **kwargs):
        return find([], cloud(classes=()), entries, **kwargs)

    def test_entry_with_a_lease_id_is_not_stuck(self):
        self.assertEqual([], self.stuck([entry(NOW - 3 * DAY, NOW - DAY,
                                               lease_id='L')]))

    def test_entry_before_the_timeout_is_not_stuck(self):
        self.assertEqual([], self.stuck([entry(NOW - HOUR, NOW + DAY)]))

    def test_ended_entry_is_terminated_without_refund(self):
        found = self.stuck([entry(NOW - 3 * DAY, NOW - DAY)])
        self.assertEqual([(m.STUCK_PENDING, True)], kinds(found))
        self.assertEqual((models.TERMINATED, 0),
                         (found[0].action.state, found[0].action.refund))

    def test_entry_in_its_window_needs_blazar_to_decide(self):
        found = self.stuck([entry(NOW - 3 * DAY, NOW + DAY)])
        self.assertEqual([(m.STUCK_PENDING, False)], kinds(found))

    def test_with_blazar_the_lease_comparison_decides(self):
        # No "denied" any more: lease_findings abandons it (its tests).
        found = self.stuck([entry(NOW - 3 * DAY, NOW + DAY)],
                           blazar=blazar())
        self.assertEqual([(m.STUCK_PENDING, True)], kinds(found))
        self.assertEqual(m.ABANDON_ENTRY, found[0].action.op)


class TestModel(testtools.TestCase):

    def row(self, **kwargs):
        values = dict(id=1, project_id='p', lease_id='L', name='n',
                      start_date=NOW - DAY, effective_end=NOW + DAY,
                      state=models.PENDING, lease={'reservations': [
                          {'resource_type': m.INSTANCE, 'id': RID,
                           'allocations': [
                               {'hypervisor_hostname': 'a'},
                               {'hypervisor_hostname': 'a'},
                               {'hypervisor_hostname': 'b'}, {}]}]})
        values.update(kwargs)
        return types.SimpleNamespace(**values)

    def test_allocations_per_host_are_counted(self):
        r, = m.reservations_of(self.row())
        self.assertEqual({'a': 2, 'b': 1}, dict(r.hosts))
        self.assertEqual(CLASS, r.resource_class)

    def test_denied_entry_reserves_nothing(self):
        self.assertEqual([], m.reservations_of(
            self.row(state=models.DENIED)))

    def test_allocations_filter_by_host_and_lease(self):
        reservations = m.reservations_of(self.row())
        self.assertEqual(['b'], [r['host'] for r in m.allocations(
            reservations, NOW, host='b')])
        self.assertEqual([], m.allocations(reservations, NOW, lease='x'))
        self.assertEqual(['a', 'b'], [r['host'] for r in m.allocations(
            reservations, NOW, lease='n')])

    def test_ended_allocations_are_shown_only_when_asked(self):
        reservations = m.reservations_of(self.row(
            effective_end=NOW - HOUR))
        self.assertEqual([], m.allocations(reservations, NOW))
        self.assertEqual({'terminated'}, {r['state'] for r in m.allocations(
            reservations, NOW, include_ended=True)})
