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
"""A user's leases through stock Blazar, and what the ledger makes of them.

Every test is a user of a project of its own, with python-blazarclient
against the real Blazar API (see :mod:`tests.functional.blazar_e2e.base`
for the environment): Blazar's ExternalServiceFilter calls our service,
and our lifecycle listener follows Blazar's notifications.
"""

import datetime
import time

from placement_quota.ledger import models
from tests.fixtures import blazar as blazar_fixture
from tests.functional.blazar_e2e import base

HOUR = datetime.timedelta(hours=1)


class TestCharges(base.BlazarE2ETestCase):
    """What check-create and check-update charge."""

    def test_allowed_lease_is_charged(self):
        allocation = self.give_credits(100)
        reservation = base.instance_reservation(vcpus=2)
        lease = self.create_lease(hours=2, reservations=[reservation])

        self.assertEqual('PENDING', lease['status'])
        entry = self.entry(name=lease['name'])
        self.assertIsNotNone(entry, 'no ledger entry for %s' % lease)
        self.assertEqual(models.PENDING, entry.state)
        # 2 hours at 1 + 2 VCPUs x 1 credits an hour.
        self.assertEqual(2 * base.hourly_rate(reservation), 6)
        self.assertEqual(6, self.credits(entry))
        self.assertEqual(6, self.spent(allocation))
        self.assertEqual(self.project, entry.project_id)
        self.assertEqual(self.user.id, entry.user_id)

    def test_lease_create_notification_binds_blazar_lease_id(self):
        self.give_credits(100)
        lease = self.create_lease()

        entry = self.bound_entry(lease['id'])
        self.assertEqual(lease['name'], entry.name)
        self.assertEqual(6, self.credits(entry))

    def test_update_charges_the_difference(self):
        allocation = self.give_credits(100)
        lease = self.create_lease(hours=2)
        self.assertEqual(6, self.spent(allocation))

        end = datetime.datetime.fromisoformat(lease['end_date'])
        self.client.lease.update(lease['id'],
                                 end_date=base.api_date(end + HOUR))
        entry = self.entry(name=lease['name'])
        self.assertEqual(9, self.credits(entry))
        self.assertEqual(9, self.spent(allocation))
        self.assertEqual(lease['id'], entry.lease_id)

        self.client.lease.update(lease['id'], reduce_by='2h')
        entry = self.entry(lease_id=lease['id'])
        self.assertEqual(3, self.credits(entry))
        self.assertEqual(3, self.spent(allocation))


class TestDenials(base.BlazarE2ETestCase):
    """Each policy's denial reaches the user, in Blazar's answer, with our
    message; Blazar creates nothing."""

    def assertNoLease(self):
        self.assertEqual([], self.client.lease.list())

    def test_lease_count_denial_reaches_user(self):
        self.give_credits(100)
        for _ in range(base.MAX_LEASES):
            self.create_lease()

        self.assertDenied(
            self.create_lease,
            'Project %s already holds %d pending or active leases; at most '
            '%d are allowed.' % (self.project, base.MAX_LEASES,
                                 base.MAX_LEASES))
        self.assertEqual(base.MAX_LEASES, len(self.client.lease.list()))

    def test_max_length_denial_reaches_user(self):
        self.give_credits(10000)
        self.assertDenied(
            lambda: self.create_lease(hours=8 * 24),
            'Lease length of 8 days (691200 seconds) exceeds the maximum '
            'of 7 days (604800 seconds).')
        self.assertNoLease()

    def test_credit_denial_reaches_user(self):
        self.give_credits(5)
        self.assertDenied(
            lambda: self.create_lease(hours=2),
            'The lease costs 6.00 credits (2.00 hours at 3 credits an '
            'hour); project %s has 5.00 credits left of its allocation of '
            '5.00.' % self.project)
        self.assertNoLease()

    def test_credit_denial_without_allocation_reaches_user(self):
        self.assertDenied(
            self.create_lease,
            'project %s has no credit allocation in force' % self.project)
        self.assertNoLease()

    def test_update_denial_reaches_user_and_changes_nothing(self):
        allocation = self.give_credits(7)
        lease = self.create_lease(hours=2)

        self.assertDenied(
            lambda: self.client.lease.update(lease['id'],
                                             prolong_for='1h'),
            'The update costs 3.00 more', '1.00 credits left')
        self.assertEqual(6, self.spent(allocation))
        got = self.client.lease.get(lease['id'])
        self.assertEqual(lease['end_date'], got['end_date'])


class TestIdentity(base.BlazarE2ETestCase):
    """Leases are told apart by Blazar's lease ID, not by their names."""

    def test_two_leases_with_one_name_keep_their_own_entries(self):
        allocation = self.give_credits(100)
        start = base.minute() + HOUR
        first = self.create_lease(name='twin', start=start, hours=2)
        second = self.create_lease(name='twin', start=start, hours=2)
        self.bound_entry(first['id'])
        self.bound_entry(second['id'])
        self.assertEqual(12, self.spent(allocation))

        self.client.lease.update(first['id'], prolong_for='1h')
        self.assertEqual(9, self.credits(self.entry(lease_id=first['id'])))
        self.assertEqual(6, self.credits(self.entry(lease_id=second['id'])))

        self.client.lease.delete(second['id'])
        ended = self.entry(lease_id=second['id'])
        self.assertEqual(models.TERMINATED, ended.state)
        self.assertEqual(0, self.credits(ended))
        kept = self.entry(lease_id=first['id'])
        self.assertEqual(models.PENDING, kept.state)
        self.assertEqual(9, self.credits(kept))
        self.assertEqual(9, self.spent(allocation))

        self.client.lease.delete(first['id'])
        self.assertEqual(0, self.credits(self.entry(lease_id=first['id'])))
        self.assertEqual(0, self.spent(allocation))

    def test_rename_then_delete_refunds(self):
        allocation = self.give_credits(100)
        lease = self.create_lease(name='before-rename')
        self.assertEqual(6, self.spent(allocation))

        # A name-only update: Blazar calls no enforcement for it.
        self.client.lease.update(lease['id'], name='after-rename')
        self.assertEqual('after-rename',
                         self.client.lease.get(lease['id'])['name'])
        self.client.lease.delete(lease['id'])

        entry = base.wait_for(
            'the entry of the renamed lease closed',
            lambda: [e for e in self.entries()
                     if e.state == models.TERMINATED])[0]
        self.assertEqual(0, self.credits(entry))
        self.assertEqual(0, self.spent(allocation))
        self.assertEqual(1, len(self.entries()))


class TestLifecycle(base.BlazarE2ETestCase):
    """Blazar's events and notifications move the entries."""

    def test_delete_while_service_down_is_refunded_when_back(self):
        allocation = self.give_credits(100)
        lease = self.create_lease()
        self.bound_entry(lease['id'])

        self.env.lifecycle.stop()
        self.env.front.stop()
        # Blazar's on-end call is refused; Blazar logs it and deletes.
        self.client.lease.delete(lease['id'])
        self.notification(lease['id'], 'lease.delete')
        self.assertEqual(6, self.spent(allocation))
        self.assertEqual(models.PENDING,
                         self.entry(lease_id=lease['id']).state)

        self.env.front.start()
        self.env.lifecycle.start()
        entry = base.wait_for(
            'the refund of the deleted lease',
            lambda: [e for e in self.entries()
                     if e.state == models.TERMINATED])[0]
        self.assertEqual(lease['id'], entry.lease_id)
        self.assertEqual(0, self.credits(entry))
        self.assertEqual(0, self.spent(allocation))

    def test_start_and_end_events_move_the_entry_state(self):
        allocation = self.give_credits(100)
        lease = self.create_lease(start='now', hours=2)
        entry = self.bound_entry(lease['id'])
        self.assertEqual(6, self.credits(entry))

        # The manager's event run starts it (its start is this minute).
        self.notification(lease['id'], 'lease.event.start_lease')
        base.wait_for('the entry active', lambda: self.entry(
            lease_id=lease['id']).state == models.ACTIVE)
        self.assertEqual('ACTIVE', self.client.lease.get(lease['id'])[
            'status'])

        self.env.blazar.move_events(lease['id'], event_types=['end_lease'])
        self.notification(lease['id'], 'lease.event.end_lease')
        entry = base.wait_for('the entry terminated', lambda: [
            e for e in self.entries() if e.state == models.TERMINATED])[0]
        self.assertEqual('TERMINATED',
                         self.client.lease.get(lease['id'])['status'])
        # Charged what it used (under an hour: the lease started this
        # minute), refunded the rest, once.
        self.assertLess(self.credits(entry), 3)
        self.assertEqual(self.credits(entry), self.spent(allocation))


class TestAbandoned(base.BlazarE2ETestCase):
    """A create that Blazar fails after our check allowed it is settled
    as abandoned; a lease.create arriving late reopens its entry."""

    def wait_abandoned(self, name):
        """Let Blazar's notification clock pass the pending timeout (a
        lease of the test made after it), then wait until the listener
        abandons the entry named ``name``; return it."""
        time.sleep(base.PENDING_TIMEOUT + 1)
        traffic = self.create_lease(name='traffic')
        self.bound_entry(traffic['id'])
        return base.wait_for(
            'the entry %s abandoned' % name,
            lambda: [e for e in self.entries()
                     if e.name == name and e.state == models.ABANDONED])[0]

    def test_failed_create_is_settled_as_abandoned(self):
        allocation = self.give_credits(100)
        failing = base.instance_reservation(
            resource_properties=blazar_fixture.FAIL_RESERVATION)
        # Our check allows it; the test double plugin then fails and
        # Blazar rolls the lease back.
        self.assertDenied(lambda: self.create_lease(
            name='never-created', reservations=[failing]))
        self.assertEqual([], self.client.lease.list())
        entry = self.entry(name='never-created')
        self.assertEqual(models.PENDING, entry.state)
        self.assertIsNone(entry.lease_id)
        self.assertEqual(6, self.spent(allocation))

        entry = self.wait_abandoned('never-created')
        self.assertEqual(0, self.credits(entry))
        self.assertIsNone(entry.lease_id)
        # What is left spent is the other lease's charge.
        self.assertEqual(6, self.spent(allocation))

    def test_late_lease_create_reopens_the_abandoned_entry(self):
        allocation = self.give_credits(100)
        self.env.lifecycle.stop()
        lease = self.create_lease(name='late')
        created = self.notification(lease['id'], 'lease.create')
        # The lease.create waiting for our listener is held back: taken
        # off its queue, to be delivered late, as Blazar sent it.
        self.env.purge_lifecycle_queue()
        self.env.lifecycle.start()

        entry = self.wait_abandoned('late')
        self.assertIsNone(entry.lease_id)
        self.assertEqual(0, self.credits(entry))
        self.assertEqual(6, self.spent(allocation))

        self.env.republish(created)
        entry = self.bound_entry(lease['id'])
        self.assertEqual(models.PENDING, entry.state)
        self.assertEqual(6, self.credits(entry))
        self.assertEqual(12, self.spent(allocation))
