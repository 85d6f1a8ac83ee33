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
"""``reconcile`` comparing the ledger with the lease list of a real Blazar
API (tests/fixtures/blazar.py, tokens checked by the real Keystone): one
drift per kind of finding, what a dry run says, what ``--fix`` does, and
that a second ``--fix`` changes nothing (a refund happens once)."""

import uuid

import sqlalchemy as sa
import testtools

from placement_quota.ledger import models
from placement_quota.ledger import store
from placement_quota.reconcile import model as m
from placement_quota.reconcile import readers
from tests.fixtures import blazar as blazar_fixture
from tests.fixtures import keystone as keystone_fixture
from tests.functional.keystone import test_reconcile_blazar
from tests.functional.reconcile import base

HOUR, DAY = base.HOUR, base.DAY
#: 1 credit an hour.
RATE = store.MICRO


class TestLedgerAgainstBlazar(testtools.TestCase):
    """One real Placement, ledger, Keystone and Blazar for the class.

    Blazar's leases (project p1 unless said) and the ledger's entries:

    ========  ===================================  ==========================
    name      Blazar                               ledger
    ========  ===================================  ==========================
    running   ACTIVE since an hour                 bound, pending
    ended     TERMINATED an hour ago               bound, active
    moved     PENDING, tomorrow for 2 days         bound, tomorrow for 1 day
    (gone)    none                                 bound to a deleted lease,
                                                   active since a day, for 2
                                                   days, charged 48 credits
    fresh     PENDING                              not bound, same fingerprint
    renamed   PENDING                              not bound, named ``before``
    (never)   none                                 not bound, 2 days old
    bypass    PENDING, project p2                  none
    ========  ===================================  ==========================
    """

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.keystone = keystone_fixture.KeystoneFixture()
        cls.keystone.setUp()
        try:
            cls.blazar = blazar_fixture.BlazarServer(cls.keystone).start()
        except BaseException:
            cls.keystone.cleanUp()
            raise
        cls.cloud = c = base.Cloud()
        now = c.now
        windows = {
            'running': (now - HOUR, now + DAY, 'ACTIVE'),
            'ended': (now - 2 * DAY, now - HOUR, 'TERMINATED'),
            'moved': (now + DAY, now + 3 * DAY, 'PENDING'),
            'fresh': (now + DAY, now + 2 * DAY, 'PENDING'),
            'renamed': (now + 2 * DAY, now + 4 * DAY, 'PENDING'),
            'bypass': (now + DAY, now + 2 * DAY, 'PENDING'),
        }
        names = sorted(windows)
        ids = cls.blazar.seed([
            {'name': name, 'project_id': 'p2' if name == 'bypass' else 'p1',
             'user_id': 'u1', 'start_date': windows[name][0],
             'end_date': windows[name][1], 'status': windows[name][2],
             'trust_id': 't', 'reservations': []} for name in names])
        cls.ids = dict(zip(names, ids))
        old = now - 2 * DAY
        cls.entries = {
            'running': c.lease([], now - HOUR, now + DAY, name='running',
                               lease_id=cls.ids['running']),
            'ended': c.lease([], now - 2 * DAY, now - HOUR, name='ended',
                             lease_id=cls.ids['ended'],
                             state=models.ACTIVE),
            'moved': c.lease([], now + DAY, now + 2 * DAY, name='moved',
                             lease_id=cls.ids['moved']),
            'gone': c.lease([], now - DAY, now + DAY, name='gone',
                            lease_id=str(uuid.uuid4()), state=models.ACTIVE,
                            hourly_rate=RATE, charged=48 * RATE),
            'fresh': c.lease([], now + DAY, now + 2 * DAY, name='fresh'),
            'renamed': c.lease([], now + 2 * DAY, now + 4 * DAY,
                               name='before'),
            'never': c.lease([], now + DAY, now + 2 * DAY, name='never',
                             created_at=old, hourly_rate=RATE,
                             charged=24 * RATE),
        }
        cls.reader = readers.BlazarReader.from_conf(
            test_reconcile_blazar._blazar_conf(cls.keystone,
                                               cls.blazar.endpoint))
        cls.dry = c.reconcile(blazar=cls.reader, now=now)
        cls.fixed = c.reconcile(fix=True, blazar=cls.reader, now=now)
        cls.again = c.reconcile(fix=True, blazar=cls.reader, now=now)

    @classmethod
    def tearDownClass(cls):
        cls.cloud.close()
        cls.blazar.stop()
        cls.keystone.cleanUp()
        super().tearDownClass()

    def finding(self, kind, name):
        """The dry run's finding of ``kind`` about entry ``name``."""
        row = self.entries[name]
        found = [f for f in self.dry.findings if f.kind == kind and
                 f.action is not None and f.action.entry_id == row]
        self.assertEqual(1, len(found), self.dry.findings)
        return found[0]

    def outcome(self, kind, name):
        row = self.entries[name]
        return [o.result for o in self.fixed.outcomes
                if o.finding.kind == kind and o.finding.action is not None
                and o.finding.action.entry_id == row]

    def entry(self, name):
        return self.cloud.entry(self.entries[name])

    def charges(self, name):
        t = models.charges
        with self.cloud.ledger.engine.connect() as connection:
            return [row.amount for row in connection.execute(
                sa.select(t.c.amount).where(
                    t.c.lease_row == self.entries[name]).order_by(t.c.id))]

    def test_blazar_lists_every_lease_in_one_call(self):
        self.assertEqual(6, self.dry.blazar_leases)

    def test_active_lease_marks_its_pending_entry_active(self):
        found = self.finding(m.LEASE_STATE, 'running')
        self.assertIn('is ACTIVE', found.reason)
        self.assertEqual(['fixed'], self.outcome(m.LEASE_STATE, 'running'))
        self.assertEqual(models.ACTIVE, self.entry('running').state)

    def test_terminated_lease_closes_its_entry_at_the_lease_end(self):
        found = self.finding(m.LEASE_STATE, 'ended')
        self.assertIn('is TERMINATED', found.reason)
        row = self.entry('ended')
        self.assertEqual((models.TERMINATED, self.cloud.now - HOUR),
                         (row.state, row.effective_end))

    def test_window_blazar_moved_is_followed(self):
        found = self.finding(m.LEASE_WINDOW, 'moved')
        self.assertIn('Blazar\'s lease %s' % self.ids['moved'], found.reason)
        self.assertEqual(self.cloud.now + 3 * DAY,
                         self.entry('moved').end_date)

    def test_entry_of_a_deleted_lease_is_closed_now(self):
        found = self.finding(m.GONE_LEASE, 'gone')
        self.assertIn('which Blazar no longer has', found.reason)
        self.assertIn('the best known time is now', found.reason)
        self.assertEqual(['fixed: 24000000 micro-credits refunded'],
                         self.outcome(m.GONE_LEASE, 'gone'))
        row = self.entry('gone')
        self.assertEqual((models.TERMINATED, self.cloud.now, 24 * RATE),
                         (row.state, row.effective_end, row.charged))

    def test_second_fix_refunds_nothing_more(self):
        self.assertEqual([-24 * RATE], self.charges('gone'))
        self.assertEqual(24 * RATE, self.entry('gone').charged)
        self.assertNotIn(m.GONE_LEASE,
                         [f.kind for f in self.again.findings])

    def test_unbound_entry_is_bound_by_its_fingerprint(self):
        found = self.finding(m.UNBOUND_ENTRY, 'fresh')
        self.assertIn('its fingerprint', found.reason)
        self.assertEqual(self.ids['fresh'], self.entry('fresh').lease_id)

    def test_renamed_lease_is_bound_by_its_shape(self):
        found = self.finding(m.UNBOUND_ENTRY, 'renamed')
        self.assertIn('its shape', found.reason)
        self.assertEqual(self.ids['renamed'],
                         self.entry('renamed').lease_id)

    def test_entry_blazar_never_created_is_abandoned(self):
        found = self.finding(m.STUCK_PENDING, 'never')
        self.assertIn('Blazar never created it', found.reason)
        row = self.entry('never')
        self.assertEqual((models.ABANDONED, 0), (row.state, row.charged))
        self.assertEqual([-24 * RATE], self.charges('never'))

    def test_lease_the_ledger_lacks_is_reported_only(self):
        found = [f for f in self.dry.findings
                 if f.kind == m.UNKNOWN_LEASE]
        self.assertEqual(['lease %s (bypass, project p2)'
                          % self.ids['bypass']],
                         [f.subject for f in found])
        self.assertFalse(found[0].safe)
        self.assertIn('openstack reservation lease show %s'
                      % self.ids['bypass'], found[0].fix)

    def test_second_fix_finds_only_what_needs_an_operator(self):
        self.assertEqual([(m.UNKNOWN_LEASE, 'left: needs an operator')],
                         [(o.finding.kind, o.result)
                          for o in self.again.outcomes])
