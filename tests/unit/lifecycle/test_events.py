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
"""Blazar's lease notifications applied to the ledger: each event's step,
identity by ID then fingerprint then shape, exactly-once refunds whatever
the order and the number of deliveries, and the settling of creates Blazar
never completed.

Leases are priced at 1 credit per host-hour; a lease of one host for two
days costs 48 credits."""

import datetime
import threading

import sqlalchemy as sa

from placement_quota.ledger import errors as ledger_errors
from placement_quota.ledger import models
from placement_quota.lifecycle import events
from tests.builders import at
from tests.builders import day
from tests.builders import hosts
from tests.builders import lease
from tests.unit.filters import base

L1 = 'aaaaaaaa-0000-4000-8000-000000000001'
L2 = 'aaaaaaaa-0000-4000-8000-000000000002'


def payload(body, ident, project='project-a', user='u', **changes):
    """A notification payload of Blazar's ``format_lease_payload`` for the
    lease ``body`` (as check-create saw it), as Blazar's database gives
    it back: IDs and statuses added, dates in ISO form with seconds."""
    def iso(text):
        return datetime.datetime.strptime(text, '%Y-%m-%d %H:%M').isoformat(
        ) + '.000000'
    reservations = []
    for i, r in enumerate(body['reservations']):
        stored = {k: v for k, v in r.items() if k != 'allocations'}
        stored.update(id='r%d-%s' % (i, ident), lease_id=ident,
                      resource_id='x', status='pending',
                      missing_resources=False, resources_changed=False)
        reservations.append(stored)
    values = {'lease_id': ident, 'project_id': project, 'user_id': user,
              'trust_id': 'trust', 'name': body.get('name'),
              'start_date': iso(body['start_date']),
              'end_date': iso(body['end_date']), 'status': 'PENDING',
              'reservations': reservations, 'events': [],
              'created_at': '2026-06-01T00:00:00.000000',
              'updated_at': None, 'degraded': False}
    values.update(changes)
    return values


class EventsTestCase(base.LedgerTestCase):

    options = {('enforcement', 'credit_host_rate'): 1.0,
               ('enforcement', 'max_leases_per_project'): 2}

    def setUp(self):
        super().setUp()
        self.allocation = self.give_credits(1000)
        self.via = self.chain('LeaseCountFilter', 'CreditFilter')

    def checked(self, start=2, end=4, name='l'):
        """A lease of host ``a`` admitted by check-create; its body."""
        body = lease(day(start), day(end), hosts('a'), name=name)
        self.create(body, via=self.via)
        return body

    def notify(self, event_type, body, ident, when=None, **changes):
        return events.handle(self.ledger, event_type,
                             payload(body, ident, **changes),
                             when or self.now)

    def entry(self, lease_id=None):
        rows = self.entries()
        if lease_id is None:
            row, = rows
            return row
        row, = [r for r in rows if r.lease_id == lease_id]
        return row

    def credits_spent(self):
        return self.spent(self.allocation)


class TestCreate(EventsTestCase):

    def test_create_binds_the_entry_check_create_recorded(self):
        body = self.checked()
        self.notify(events.CREATE, body, L1)
        self.assertEqual((L1, 'pending', 48.0),
                         (self.entry().lease_id, self.entry().state,
                          self.credits_spent()))

    def test_two_leases_with_one_name_are_bound_to_their_own_entries(self):
        first = self.checked(2, 4, name='dup')
        second = self.checked(5, 6, name='dup')
        self.notify(events.CREATE, second, L2)
        self.notify(events.CREATE, first, L1)
        self.assertEqual([(at(2), L1), (at(5), L2)],
                         [(e.start_date, e.lease_id)
                          for e in self.entries()])

    def test_identical_leases_are_bound_oldest_first_each_once(self):
        body = self.checked()
        self.checked()
        self.notify(events.CREATE, body, L1)
        self.notify(events.CREATE, body, L2)
        self.assertEqual([L1, L2], [e.lease_id for e in self.entries()])

    def test_duplicate_create_changes_nothing_more(self):
        body = self.checked()
        self.notify(events.CREATE, body, L1)
        before = [tuple(r) for r in self.entries()]
        self.notify(events.CREATE, body, L1)
        self.assertEqual(before, [tuple(r) for r in self.entries()])

    def test_create_of_a_lease_never_checked_changes_nothing(self):
        body = lease(day(2), day(4), hosts('a'), name='l')
        self.assertEqual('not in the ledger',
                         self.notify(events.CREATE, body, L1))
        self.assertEqual([], self.entries())

    def test_an_entry_bound_to_another_lease_is_never_taken(self):
        body = self.checked()
        self.notify(events.CREATE, body, L1)
        self.notify(events.CREATE, body, L2)
        self.assertEqual([L1], [e.lease_id for e in self.entries()])

    def test_a_notification_of_another_project_finds_nothing_by_fingerprint(
            self):
        body = self.checked()
        self.notify(events.CREATE, body, L1, project='project-b')
        self.assertIsNone(self.entry().lease_id)


class TestRename(EventsTestCase):

    def test_a_renamed_lease_takes_its_new_name_from_the_next_event(self):
        body = self.checked()
        self.notify(events.CREATE, body, L1)
        self.notify(events.START, body, L1, name='renamed')
        self.assertEqual('renamed', self.entry().name)

    def test_rename_then_delete_refunds(self):
        body = self.checked()
        self.notify(events.CREATE, body, L1)
        self.notify(events.DELETE, body, L1, when=at(3), name='renamed')
        self.assertEqual(('terminated', 24.0),
                         (self.entry().state, self.credits_spent()))

    def test_rename_then_delete_refunds_without_a_create_seen(self):
        # The listener missed lease.create: the delete finds the entry by
        # its shape (project, dates, reservations), whatever its name.
        body = self.checked()
        self.notify(events.DELETE, body, L1, when=at(3), name='renamed')
        self.assertEqual(('terminated', L1, 24.0),
                         (self.entry().state, self.entry().lease_id,
                          self.credits_spent()))


class TestLifecycle(EventsTestCase):

    def test_start_moves_the_entry_to_active(self):
        body = self.checked()
        self.notify(events.START, body, L1, when=at(2))
        self.assertEqual('active', self.entry().state)

    def test_end_at_the_leases_end_refunds_nothing(self):
        body = self.checked()
        self.notify(events.START, body, L1, when=at(2))
        self.notify(events.END, body, L1, when=at(4))
        self.assertEqual(('terminated', at(4), 48.0),
                         (self.entry().state, self.entry().effective_end,
                          self.credits_spent()))

    def test_delete_before_the_start_refunds_everything(self):
        body = self.checked()
        self.notify(events.DELETE, body, L1, when=at(1))
        self.assertEqual(0.0, self.credits_spent())

    def test_delete_refunds_the_unused_part_as_of_blazars_time(self):
        # Delivered a day late (the listener was down): the refund is
        # counted from when Blazar deleted the lease, not from now.
        body = self.checked()
        self.now = at(4)
        self.notify(events.DELETE, body, L1, when=at(3))
        self.assertEqual((at(3), 24.0), (self.entry().effective_end,
                                         self.credits_spent()))

    def test_duplicate_delete_refunds_once(self):
        body = self.checked()
        self.notify(events.DELETE, body, L1, when=at(3))
        self.notify(events.DELETE, body, L1, when=at(3))
        self.assertEqual(24.0, self.credits_spent())

    def test_delete_after_on_end_refunds_nothing_more(self):
        body = self.checked()
        self.now = at(3)
        self.end(dict(body, id=L1), via=self.via)
        self.notify(events.DELETE, body, L1, when=at(3, 12))
        self.assertEqual(24.0, self.credits_spent())

    def test_on_end_after_delete_refunds_nothing_more(self):
        body = self.checked()
        self.notify(events.DELETE, body, L1, when=at(3))
        self.now = at(3, 12)
        self.end(dict(body, id=L1), via=self.via)
        self.assertEqual(24.0, self.credits_spent())

    def test_a_start_delivered_after_the_end_leaves_it_closed(self):
        body = self.checked()
        self.notify(events.END, body, L1, when=at(4))
        self.notify(events.START, body, L1, when=at(2))
        self.assertEqual('terminated', self.entry().state)

    def test_before_end_only_binds(self):
        body = self.checked()
        self.notify(events.BEFORE_END, body, L1, when=at(3))
        self.assertEqual((L1, 'pending', 48.0),
                         (self.entry().lease_id, self.entry().state,
                          self.credits_spent()))

    def test_a_closed_lease_no_longer_counts_toward_the_lease_limit(self):
        body = self.checked()
        self.checked(5, 6)
        self.notify(events.DELETE, body, L1, when=at(1))
        self.checked(7, 8)
        self.assertEqual(['terminated', 'pending', 'pending'], self.states())


class TestUpdate(EventsTestCase):

    def test_update_moves_the_window_and_charges_the_difference(self):
        body = self.checked()
        self.notify(events.CREATE, body, L1)
        self.notify(events.UPDATE, body, L1,
                    end_date='2026-06-05T00:00:00.000000',
                    updated_at='2026-06-01T01:00:00.000000')
        self.assertEqual((at(5), 72.0), (self.entry().end_date,
                                         self.credits_spent()))

    def test_update_already_checked_charges_nothing_more(self):
        body = self.checked()
        self.update(dict(body, id=L1), lease(day(2), day(5), hosts('a')),
                    via=self.via)
        self.notify(events.UPDATE, lease(day(2), day(5), hosts('a'),
                                         name='l'), L1)
        self.assertEqual(72.0, self.credits_spent())

    def test_an_older_update_delivered_late_changes_nothing(self):
        body = self.checked()
        self.notify(events.CREATE, body, L1)
        self.notify(events.UPDATE, body, L1,
                    end_date='2026-06-06T00:00:00.000000',
                    updated_at='2026-06-01T02:00:00.000000')
        self.notify(events.UPDATE, body, L1,
                    end_date='2026-06-05T00:00:00.000000',
                    updated_at='2026-06-01T01:00:00.000000')
        self.assertEqual((at(6), 96.0), (self.entry().end_date,
                                         self.credits_spent()))

    def test_date_only_update_keeps_the_name(self):
        body = self.checked()
        self.update(dict(body, id=L1), lease(day(2), day(5), hosts('a')),
                    via=self.via)
        self.assertEqual('l', self.entry().name)


class TestIdentityWithoutTheListener(EventsTestCase):
    """The enforcement calls alone find the right entry too."""

    def test_update_of_the_older_of_two_same_named_leases_changes_only_it(
            self):
        first = self.checked(2, 4, name='dup')
        second = self.checked(5, 6, name='dup')
        self.update(dict(first, id=L1), lease(day(2), day(4, 1), hosts('a')),
                    via=self.via)
        older, newer = self.entries()
        self.assertEqual(((L1, at(4, 1)), (None, at(6))),
                         ((older.lease_id, older.end_date),
                          (newer.lease_id, newer.end_date)))
        self.assertEqual(second['name'], newer.name)

    def test_delete_of_the_older_of_two_same_named_leases_refunds_it(self):
        first = self.checked(2, 4, name='dup')
        self.checked(5, 6, name='dup')
        self.now = at(3)
        self.end(dict(first, id=L1), via=self.via)
        self.assertEqual(['terminated', 'pending'], self.states())
        self.assertEqual(24.0 + 24.0, self.credits_spent())

    def test_on_end_of_a_renamed_lease_refunds(self):
        body = self.checked()
        self.now = at(3)
        self.end(dict(body, id=L1, name='renamed'), via=self.via)
        self.assertEqual(('terminated', 24.0),
                         (self.entry().state, self.credits_spent()))


class TestMalformed(EventsTestCase):

    def assertMalformed(self, field, **changes):
        body = self.checked()
        before = [tuple(r) for r in self.entries()]
        error = self.assertRaises(events.Malformed, self.notify,
                                  events.DELETE, body, L1, **changes)
        self.assertEqual(field, error.field)
        self.assertEqual(before, [tuple(r) for r in self.entries()])

    def test_a_payload_without_a_lease_id_is_malformed(self):
        self.assertMalformed('lease_id', lease_id=None)

    def test_a_bad_date_is_malformed(self):
        self.assertMalformed('end_date', end_date='tomorrow')

    def test_an_end_before_the_start_is_malformed(self):
        self.assertMalformed('end_date',
                             end_date='2026-06-01T00:00:00.000000')

    def test_reservations_that_are_no_list_are_malformed(self):
        self.assertMalformed('reservations', reservations='all')

    def test_a_control_character_in_the_project_is_malformed(self):
        self.assertMalformed('project_id', project='a\nb')

    def test_a_payload_that_is_no_object_is_malformed(self):
        self.assertRaises(events.Malformed, events.handle, self.ledger,
                          events.CREATE, ['x'], self.now)

    def test_an_unknown_lease_event_is_ignored(self):
        self.assertEqual('ignored', events.handle(
            self.ledger, 'lease.something_new', {}, self.now))


class TestSettle(EventsTestCase):

    def test_an_unbound_pending_entry_past_the_timeout_is_abandoned(self):
        self.checked()
        settled = events.settle(self.ledger, at(1, 2), 3600)
        self.assertEqual(([self.entry().id], 'abandoned', 0.0),
                         (settled, self.entry().state,
                          self.credits_spent()))

    def test_a_recent_entry_is_not_settled(self):
        self.checked()
        self.assertEqual([], events.settle(self.ledger, at(1, 0), 3600))

    def test_a_bound_entry_is_not_settled(self):
        body = self.checked()
        self.notify(events.CREATE, body, L1)
        self.assertEqual([], events.settle(self.ledger, at(2), 3600))

    def test_settling_twice_settles_once(self):
        self.checked()
        events.settle(self.ledger, at(2), 3600)
        self.assertEqual([], events.settle(self.ledger, at(2), 3600))

    def test_an_abandoned_entry_counts_toward_nothing(self):
        self.checked()
        self.checked(5, 6)
        events.settle(self.ledger, at(2), 3600)
        self.checked(7, 8)
        self.assertEqual(['abandoned', 'abandoned', 'pending'],
                         self.states())

    def test_a_late_create_reopens_it_and_charges_it_again(self):
        body = self.checked()
        events.settle(self.ledger, at(2), 3600)
        self.notify(events.CREATE, body, L1)
        self.assertEqual(('pending', L1, 48.0),
                         (self.entry().state, self.entry().lease_id,
                          self.credits_spent()))

    def test_an_abandoned_lease_that_ends_is_charged_what_it_used(self):
        body = self.checked()
        events.settle(self.ledger, at(2), 3600)
        self.notify(events.DELETE, body, L1, when=at(3))
        self.assertEqual(('terminated', 24.0),
                         (self.entry().state, self.credits_spent()))


class TestRacing(EventsTestCase):

    def test_on_end_and_the_delete_notification_racing_refund_once(self):
        # The two paths that close a lease, started together on one
        # ledger (a SQLite file, BEGIN IMMEDIATE), many times over.
        for i in range(10):
            body = self.checked(10 + 2 * i, 11 + 2 * i, name='race%d' % i)
            lease_id = 'race-%d' % i
            errors = []

            def by_call():
                try:
                    self.end(dict(body, id=lease_id), via=self.via)
                except Exception as exc:  # noqa: B902 - reported below
                    errors.append(exc)

            def by_notification():
                try:
                    self.notify(events.DELETE, body, lease_id,
                                when=self.now)
                except ledger_errors.LedgerUnavailable as exc:
                    errors.append(exc)
            threads = [threading.Thread(target=by_call),
                       threading.Thread(target=by_notification)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual([], errors)
            self.assertEqual(models.TERMINATED,
                             self.entry(lease_id).state)
        refunds = self._refunds()
        self.assertEqual(10, len(refunds))
        self.assertEqual(0.0, self.credits_spent())

    def _refunds(self):
        t = models.charges
        with self.ledger.transaction() as txn:
            return list(txn.connection.execute(
                sa.select(t.c.lease_row).where(
                    t.c.kind == models.REFUND_END)))


class TestReservationIds(EventsTestCase):
    """Check-create is sent before Blazar gives the reservations their
    IDs: the first notification gives them to the entry's lease."""

    def test_create_gives_the_entrys_reservation_its_id(self):
        body = self.checked()
        self.notify(events.CREATE, body, L1)
        self.assertEqual(['r0-%s' % L1], [
            r.get('id') for r in self.entry().lease['reservations']])

    def test_an_id_the_entry_holds_is_kept(self):
        self.assertIsNone(events.with_reservation_ids(
            {'reservations': [{'resource_type': 't', 'id': 'mine'}]},
            [{'resource_type': 't', 'id': 'other'}]))

    def test_two_reservations_of_one_type_without_ids_are_left_alone(self):
        self.assertIsNone(events.with_reservation_ids(
            {'reservations': [{'resource_type': 't'},
                              {'resource_type': 't'}]},
            [{'resource_type': 't', 'id': 'a'},
             {'resource_type': 't', 'id': 'b'}]))

    def test_each_type_gets_the_id_of_its_own_reservation(self):
        found = events.with_reservation_ids(
            {'reservations': [{'resource_type': 'physical:host'},
                              {'resource_type': 'virtual:instance'}]},
            [{'resource_type': 'virtual:instance', 'id': 'i'},
             {'resource_type': 'physical:host', 'id': 'h'}])
        self.assertEqual(['h', 'i'],
                         [r['id'] for r in found['reservations']])
