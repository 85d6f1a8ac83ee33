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
"""The ledger against Blazar's lease list: each finding and its fix, on a
SQLite ledger, with Blazar's list as its API answers it (dicts)."""

import datetime
import os
import uuid

import fixtures
import testtools

from placement_quota.ledger import keys
from placement_quota.ledger import models
from placement_quota.ledger import store
from placement_quota.ledger import entry_states
from placement_quota.reconcile import findings
from placement_quota.reconcile import lease_findings
from placement_quota.reconcile import model as m
from placement_quota.reconcile import readers
from placement_quota.reconcile import repair
from tests import builders
from tests import ledger_helpers

NOW = datetime.datetime(2026, 6, 10, 12, 0)
HOUR = datetime.timedelta(hours=1)
DAY = datetime.timedelta(days=1)
TIMEOUT = DAY
#: 1 credit an hour.
RATE = store.MICRO


def blazar_lease(start, end, name='l', status='PENDING', user='u1',
                 project='project-a', lease_id=None, amount=2):
    """One lease of Blazar's list as ``GET /v1/leases`` answers it."""
    return {'id': lease_id or str(uuid.uuid4()), 'name': name,
            'project_id': project, 'user_id': user,
            'start_date': start.strftime('%Y-%m-%dT%H:%M:%S.000000'),
            'end_date': end.strftime('%Y-%m-%dT%H:%M:%S.000000'),
            'status': status, 'trust_id': 't', 'degraded': False,
            'created_at': '2026-06-01 00:00:00', 'events': [],
            'reservations': [{
                'id': str(uuid.uuid4()), 'status': 'pending',
                'resource_type': 'virtual:instance', 'amount': amount,
                'vcpus': 1, 'memory_mb': 512, 'disk_gb': 1,
                'affinity': None, 'resource_properties': '',
                'missing_resources': False, 'resources_changed': False}]}


class LedgerCase(ledger_helpers.LedgerHelpers, testtools.TestCase):
    """A SQLite ledger whose clock is :data:`NOW`, with a credit
    allocation for :attr:`project`."""

    project = 'project-a'

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.ledger = store.Ledger('sqlite:///' + os.path.join(
            tmp, 'ledger.sqlite'), lock_timeout=2)
        self.addCleanup(self.ledger.dispose)
        self.ledger.clock = lambda: NOW
        self.allocation = self.give_credits(1000)

    def record(self, start, end, name='l', user='u1', lease_id=None,
               state=models.PENDING, created_at=NOW - 2 * DAY, amount=2,
               project=None):
        """An entry as check-create records it (charged its window at
        :data:`RATE`, fingerprint and shape of the lease it saw); its
        ID."""
        project = project or self.project
        body = builders.lease(start.strftime('%Y-%m-%d %H:%M'),
                              end.strftime('%Y-%m-%d %H:%M'),
                              builders.instances(amount), name=name)
        charged = store.cost(RATE, start, end)
        with self.ledger.transaction([project]) as txn:
            row = txn.insert(
                project_id=project, lease_id=lease_id,
                provisional_key=keys.fingerprint(project, user, body),
                shape_key=keys.shape(project, body), name=name,
                user_id=user, start_date=start, end_date=end, state=state,
                amounts={}, lease=body, hourly_rate=RATE, charged=charged,
                allocation_id=self.allocation, created_at=created_at)
            txn.charge(project, row, self.allocation, charged,
                       models.CHARGE_CREATE)
        return row

    def entry(self, row_id):
        with self.ledger.transaction() as txn:
            return txn.entry(row_id)

    def find(self, leases):
        reservations, entries = readers.read_ledger(self.ledger)
        state = m.PlacementState(providers={}, classes=set())
        return findings.find(reservations, entries, state, NOW,
                             pending_timeout=TIMEOUT,
                             blazar=findings.blazar_view(leases))

    def fix(self, leases):
        """One ``reconcile --fix`` against ``leases``: its outcomes as
        ``[(kind, result)]``."""
        found = self.find(leases)
        return [(o.finding.kind, o.result) for o in
                repair.apply(found, None, self.ledger, now=NOW)]

    def kinds(self, found):
        return [(f.kind, f.safe) for f in found]

    def spent(self):
        with self.ledger.transaction() as txn:
            return txn.spent(self.allocation)


class TestGoneLease(LedgerCase):

    def test_entry_bound_to_a_deleted_lease_is_closed_now(self):
        row = self.record(NOW - DAY, NOW + DAY, lease_id='gone',
                          state=models.ACTIVE)
        found = self.find([])
        self.assertEqual([(m.GONE_LEASE, True)], self.kinds(found))
        self.assertIn('the best known time is now', found[0].reason)
        self.assertEqual(m.Action(m.END_ENTRY, entry_id=row,
                                  lease_id='gone', at=NOW), found[0].action)
        self.assertIn('refund the unused part of its 48000000 '
                      'micro-credits (24000000)', found[0].fix)

    def test_fix_refunds_the_unused_part_once_when_run_twice(self):
        row = self.record(NOW - DAY, NOW + DAY, lease_id='gone',
                          state=models.ACTIVE)
        self.assertEqual([(m.GONE_LEASE,
                           'fixed: 24000000 micro-credits refunded')],
                         self.fix([]))
        self.assertEqual([], self.fix([]))
        entry = self.entry(row)
        self.assertEqual((models.TERMINATED, NOW, 24 * RATE),
                         (entry.state, entry.effective_end, entry.charged))
        self.assertEqual(24 * RATE, self.spent())

    def test_entry_closed_by_on_end_meanwhile_is_not_refunded_twice(self):
        row = self.record(NOW - DAY, NOW + DAY, lease_id='gone',
                          state=models.ACTIVE)
        found = self.find([])
        # Blazar's lease.delete arrives between the read and the fix.
        with self.ledger.transaction([self.project]) as txn:
            entry_states.close(txn, txn.entry(row), NOW - HOUR)
        outcomes = repair.apply(found, None, self.ledger, now=NOW)
        self.assertTrue(outcomes[0].result.startswith('fixed already'))
        self.assertEqual(23 * RATE, self.spent())

    def test_pending_entry_of_a_deleted_lease_is_refunded_whole(self):
        row = self.record(NOW + DAY, NOW + 2 * DAY, lease_id='gone')
        self.fix([])
        self.assertEqual((models.TERMINATED, 0),
                         (self.entry(row).state, self.entry(row).charged))
        self.assertEqual(0, self.spent())

    def test_closed_entry_of_a_deleted_lease_is_no_drift(self):
        self.record(NOW - 2 * DAY, NOW - DAY, lease_id='gone',
                    state=models.TERMINATED)
        self.assertEqual([], self.find([]))


class TestLeaseState(LedgerCase):

    def test_lease_terminated_in_blazar_closes_the_entry_at_its_end(self):
        start, end = NOW - DAY, NOW - HOUR
        row = self.record(start, NOW + DAY, lease_id='L',
                          state=models.ACTIVE)
        lease = blazar_lease(start, NOW + DAY, status='TERMINATED',
                             lease_id='L')
        found = self.find([lease])
        self.assertEqual([(m.LEASE_STATE, True)], self.kinds(found))
        self.assertIn('is TERMINATED', found[0].reason)
        self.assertEqual(NOW, found[0].action.at)   # now is earlier
        lease['end_date'] = end.isoformat()
        found = self.find([lease])
        self.assertEqual([m.LEASE_WINDOW, m.LEASE_STATE],
                         [f.kind for f in found])
        self.assertEqual(end, found[1].action.at)   # the end is earlier
        self.fix([lease])
        entry = self.entry(row)
        self.assertEqual((models.TERMINATED, end, 23 * RATE),
                         (entry.state, entry.effective_end, entry.charged))
        self.assertEqual([], self.find([lease]))

    def test_lease_in_error_closes_the_entry(self):
        row = self.record(NOW - DAY, NOW + DAY, lease_id='L',
                          state=models.ACTIVE)
        self.fix([blazar_lease(NOW - DAY, NOW + DAY, status='ERROR',
                               lease_id='L')])
        self.assertEqual(models.TERMINATED, self.entry(row).state)

    def test_active_lease_marks_a_pending_entry_active(self):
        row = self.record(NOW - HOUR, NOW + DAY, lease_id='L')
        lease = blazar_lease(NOW - HOUR, NOW + DAY, status='ACTIVE',
                             lease_id='L')
        self.assertEqual([(m.LEASE_STATE, 'fixed')], self.fix([lease]))
        self.assertEqual(models.ACTIVE, self.entry(row).state)
        self.assertEqual([], self.find([lease]))

    def test_transitional_status_decides_nothing(self):
        self.record(NOW - HOUR, NOW + DAY, lease_id='L')
        self.assertEqual([], self.find([blazar_lease(
            NOW - HOUR, NOW + DAY, status='STARTING', lease_id='L')]))


class TestLeaseWindow(LedgerCase):

    def test_dates_blazar_moved_are_followed_and_priced(self):
        row = self.record(NOW + DAY, NOW + 2 * DAY, lease_id='L')
        lease = blazar_lease(NOW + DAY, NOW + 3 * DAY, lease_id='L')
        found = self.find([lease])
        self.assertEqual([(m.LEASE_WINDOW, True)], self.kinds(found))
        self.assertIn('charging 24000000 micro-credits', found[0].fix)
        self.assertEqual([(m.LEASE_WINDOW, 'fixed: +24000000 micro-credits')],
                         self.fix([lease]))
        entry = self.entry(row)
        self.assertEqual((NOW + 3 * DAY, 48 * RATE),
                         (entry.end_date, entry.charged))
        self.assertEqual(48 * RATE, self.spent())
        self.assertEqual([], self.find([lease]))

    def test_seconds_are_not_a_difference(self):
        self.record(NOW + DAY, NOW + 2 * DAY, lease_id='L')
        self.assertEqual([], self.find([blazar_lease(
            NOW + DAY + datetime.timedelta(seconds=30), NOW + 2 * DAY,
            lease_id='L')]))

    def test_dates_changed_since_the_read_are_not_overwritten(self):
        row = self.record(NOW + DAY, NOW + 2 * DAY, lease_id='L')
        found = self.find([blazar_lease(NOW + DAY, NOW + 3 * DAY,
                                        lease_id='L')])
        # A newer lease.update moves it first.
        with self.ledger.transaction([self.project]) as txn:
            entry_states.set_window(txn, txn.entry(row), NOW + DAY,
                                    NOW + 4 * DAY)
        outcomes = repair.apply(found, None, self.ledger, now=NOW)
        self.assertTrue(outcomes[0].result.startswith('skipped: its dates '
                                                      'changed'))
        self.assertEqual(NOW + 4 * DAY, self.entry(row).end_date)


class TestUnbound(LedgerCase):

    def test_entry_is_bound_to_the_lease_with_its_fingerprint(self):
        row = self.record(NOW + DAY, NOW + 2 * DAY, name='mine')
        lease = blazar_lease(NOW + DAY, NOW + 2 * DAY, name='mine')
        found = self.find([lease])
        self.assertEqual([(m.UNBOUND_ENTRY, True)], self.kinds(found))
        self.assertIn('its fingerprint', found[0].reason)
        self.assertEqual([(m.UNBOUND_ENTRY, 'fixed')], self.fix([lease]))
        self.assertEqual(lease['id'], self.entry(row).lease_id)
        self.assertEqual([], self.find([lease]))

    def test_renamed_lease_is_bound_by_its_shape(self):
        row = self.record(NOW + DAY, NOW + 2 * DAY, name='before')
        lease = blazar_lease(NOW + DAY, NOW + 2 * DAY, name='after')
        found = self.find([lease])
        self.assertIn('its shape', found[0].reason)
        self.fix([lease])
        self.assertEqual(lease['id'], self.entry(row).lease_id)

    def test_fingerprint_is_paired_before_shape(self):
        renamed = self.record(NOW + DAY, NOW + 2 * DAY, name='old',
                              created_at=NOW - HOUR)
        same = self.record(NOW + DAY, NOW + 2 * DAY, name='new',
                           created_at=NOW - HOUR)
        lease = blazar_lease(NOW + DAY, NOW + 2 * DAY, name='new')
        found = self.find([lease])
        self.assertEqual([(m.UNBOUND_ENTRY, same)],
                         [(f.kind, f.action.entry_id) for f in found])
        self.assertNotIn(renamed, [f.action.entry_id for f in found])

    def test_matched_entry_follows_its_lease_in_one_run(self):
        row = self.record(NOW - HOUR, NOW + DAY, name='mine')
        lease = blazar_lease(NOW - HOUR, NOW + DAY, name='mine',
                             status='ACTIVE')
        self.assertEqual([(m.UNBOUND_ENTRY, 'fixed'),
                          (m.LEASE_STATE, 'fixed')], self.fix([lease]))
        entry = self.entry(row)
        self.assertEqual((lease['id'], models.ACTIVE),
                         (entry.lease_id, entry.state))

    def test_abandoned_entry_of_a_lease_blazar_has_is_reopened(self):
        row = self.record(NOW + DAY, NOW + 2 * DAY, name='late')
        with self.ledger.transaction([self.project]) as txn:
            entry_states.abandon(txn, txn.entry(row))
        self.assertEqual(0, self.spent())
        lease = blazar_lease(NOW + DAY, NOW + 2 * DAY, name='late')
        found = self.find([lease])
        self.assertIn('reopen it', found[0].fix)
        self.assertEqual(
            [(m.UNBOUND_ENTRY,
              'fixed: bound and reopened (24000000 micro-credits charged)')],
            self.fix([lease]))
        self.assertEqual(models.PENDING, self.entry(row).state)
        self.assertEqual(24 * RATE, self.spent())

    def test_lease_an_entry_is_bound_to_is_not_paired_again(self):
        lease = blazar_lease(NOW + DAY, NOW + 2 * DAY, name='twice')
        self.record(NOW + DAY, NOW + 2 * DAY, name='twice',
                    lease_id=lease['id'])
        copy = self.record(NOW + DAY, NOW + 2 * DAY, name='twice')
        found = self.find([lease])
        self.assertEqual([(m.STUCK_PENDING, copy)],
                         [(f.kind, f.action.entry_id) for f in found])

    def test_lease_bound_meanwhile_is_not_bound_twice(self):
        row = self.record(NOW + DAY, NOW + 2 * DAY, name='race')
        other = self.record(NOW + DAY, NOW + 2 * DAY, name='other',
                            created_at=NOW - HOUR)
        lease = blazar_lease(NOW + DAY, NOW + 2 * DAY, name='race')
        found = self.find([lease])
        with self.ledger.transaction([self.project]) as txn:
            entry_states.bind(txn, txn.entry(other), lease['id'])
        outcomes = repair.apply(found, None, self.ledger, now=NOW)
        self.assertIn('holds lease %s already' % lease['id'],
                      outcomes[0].result)
        self.assertIsNone(self.entry(row).lease_id)


class TestAbandon(LedgerCase):

    def test_old_entry_no_lease_matches_is_abandoned(self):
        row = self.record(NOW + DAY, NOW + 2 * DAY, name='never')
        found = self.find([])
        self.assertEqual([(m.STUCK_PENDING, True)], self.kinds(found))
        self.assertIn('Blazar never created it', found[0].reason)
        self.assertEqual(m.Action(m.ABANDON_ENTRY, entry_id=row),
                         found[0].action)
        self.assertEqual(
            [(m.STUCK_PENDING, 'fixed: 24000000 micro-credits released')],
            self.fix([]))
        self.assertEqual((models.ABANDONED, 0),
                         (self.entry(row).state, self.spent()))
        self.assertEqual([], self.find([]))

    def test_recent_entry_is_given_time(self):
        self.record(NOW + DAY, NOW + 2 * DAY, created_at=NOW - HOUR)
        self.assertEqual([], self.find([]))

    def test_abandoned_entry_counts_toward_nothing(self):
        row = self.record(NOW - HOUR, NOW + DAY, name='never')
        self.fix([])
        reservations, entries = readers.read_ledger(self.ledger)
        self.assertEqual([], reservations)
        self.assertEqual([(row, models.ABANDONED)],
                         [(e.id, e.state) for e in entries])
        with self.ledger.transaction() as txn:
            self.assertEqual([], txn.intervals(NOW - DAY, NOW + DAY))


class TestUnknownLease(LedgerCase):

    def test_lease_the_ledger_lacks_is_reported_only(self):
        lease = blazar_lease(NOW + DAY, NOW + 2 * DAY, name='bypass')
        found = self.find([lease])
        self.assertEqual([(m.UNKNOWN_LEASE, False)], self.kinds(found))
        self.assertIn('created without placement-quota\'s check',
                      found[0].reason)
        self.assertIn('openstack reservation lease show %s' % lease['id'],
                      found[0].fix)
        self.assertIsNone(found[0].action)
        self.assertEqual([(m.UNKNOWN_LEASE, repair.UNSAFE)],
                         self.fix([lease]))

    def test_ended_lease_the_ledger_lacks_is_not_reported(self):
        self.assertEqual([], self.find([
            blazar_lease(NOW - 2 * DAY, NOW - DAY, status='TERMINATED'),
            blazar_lease(NOW - 2 * DAY, NOW + DAY, status='TERMINATED')]))

    def test_lease_without_dates_is_left_out(self):
        self.assertIsNone(lease_findings.lease_of(
            dict(blazar_lease(NOW, NOW + DAY), start_date='soon')))

    def test_dry_run_changes_nothing(self):
        row = self.record(NOW - DAY, NOW + DAY, lease_id='gone')
        outcomes = repair.plan(self.find([]))
        self.assertEqual([repair.DRY_RUN], [o.result for o in outcomes])
        self.assertEqual(models.PENDING, self.entry(row).state)
