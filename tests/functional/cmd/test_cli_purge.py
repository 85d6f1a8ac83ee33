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
"""``placement-quota db purge``: the real command on a SQLite ledger, and
the purge itself on a real PostgreSQL.

Every test starts from the same ledger (:func:`populate`): in 2025, entries
closed in January (terminated, denied, abandoned), entries still recorded
pending and active with January dates, and a terminated entry closed in
July; every entry charged to its project's credit allocation."""

import datetime
import json
import os

import fixtures
from oslo_utils import timeutils
import sqlalchemy as sa
import testtools

from placement_quota.ledger import models
from placement_quota.ledger import purge
from placement_quota.ledger import store
from placement_quota.ledger import entry_states
from tests.fixtures import postgresql
from tests.functional.cmd.test_cli import CLITestCase
from tests.functional.cmd.test_cli import command

JANUARY = datetime.datetime(2025, 1, 1)
JULY = datetime.datetime(2025, 7, 1)
#: The cut-off of the tests: after January, before July.
BEFORE = '2025-06-01'


def _entry(txn, project, allocation, start, days, state=models.PENDING,
           charged=None):
    """An entry of ``days`` at 1 credit an hour, charged its window."""
    if charged is None:
        charged = 24 * days
    row = txn.insert(project_id=project, provisional_key='k',
                     start_date=start,
                     end_date=start + datetime.timedelta(days=days),
                     state=state, amounts={}, lease={},
                     hourly_rate=store.to_micro(1),
                     charged=store.to_micro(charged),
                     allocation_id=allocation)
    txn.charge(project, row, allocation, store.to_micro(charged),
               models.CHARGE_CREATE)
    return txn.entry(row)


def populate(ledger):
    """The ledger of the tests (see the module's docstring)."""
    for project in ('p1', 'p2'):
        ledger.clock = lambda: JANUARY
        with ledger.transaction([project]) as txn:
            allocation = txn.add_allocation(project, store.to_micro(1000))
            ended = _entry(txn, project, allocation, JANUARY, 2)
            _entry(txn, project, allocation, JANUARY, 1, models.DENIED, 0)
            pending = _entry(txn, project, allocation, JANUARY, 3)
            _entry(txn, project, allocation, JANUARY, 3)
            _entry(txn, project, allocation, JANUARY, 3, models.ACTIVE)
            recent = _entry(txn, project, allocation, JULY, 2)
        ledger.clock = lambda: JANUARY + datetime.timedelta(days=1)
        with ledger.transaction([project]) as txn:
            entry_states.close(txn, ended, txn.now)   # 1 day of 2 used
            entry_states.abandon(txn, pending)
        ledger.clock = lambda: JULY + datetime.timedelta(days=1)
        with ledger.transaction([project]) as txn:
            entry_states.close(txn, recent, txn.now)
    ledger.clock = timeutils.utcnow


def states(ledger):
    """The recorded states of the ledger's entries, sorted."""
    with ledger.transaction() as txn:
        return sorted(r.state for r in txn.connection.execute(
            sa.select(models.leases.c.state)))


def balances(ledger):
    """``{allocation ID: micro-credits spent}``."""
    with ledger.transaction() as txn:
        return {a.id: txn.spent(a.id) for project in ('p1', 'p2')
                for a in txn.allocations(project)}


class PurgeCLITestCase(CLITestCase):

    def setUp(self):
        super().setUp()
        url = 'sqlite:///%s' % os.path.join(self.dir, 'ledger.sqlite')
        self.conf = self.config('[ledger]\nconnection = %s\n' % url)
        self.ledger = store.Ledger(url)
        self.addCleanup(self.ledger.dispose)
        populate(self.ledger)

    def purge(self, *args):
        return command('db', 'purge', '--before', BEFORE, *args,
                       config=self.conf)

    def assertBadInput(self, result, *needles):
        self.assertEqual(2, result.returncode, result.stdout)
        for needle in needles:
            self.assertIn(needle, result.stderr)
        self.assertNotIn('Traceback', result.stderr)


class TestDbPurge(PurgeCLITestCase):

    def test_only_final_entries_closed_before_the_date_are_deleted(self):
        result = self.purge('-f', 'json')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual([{'State': 'terminated', 'Deleted': 2},
                          {'State': 'denied', 'Deleted': 2},
                          {'State': 'abandoned', 'Deleted': 2}],
                         json.loads(result.stdout))
        self.assertEqual(['active', 'active', 'pending', 'pending',
                          'terminated', 'terminated'], states(self.ledger))

    def test_credits_list_is_the_same_before_and_after(self):
        before = command('credits', 'list', 'p1', '-f', 'json',
                         config=self.conf)
        self.assertEqual(0, self.purge().returncode)
        after = command('credits', 'list', 'p1', '-f', 'json',
                        config=self.conf)
        self.assertEqual(json.loads(before.stdout), json.loads(after.stdout))
        self.assertEqual(0, after.returncode, after.stderr)

    def test_dry_run_counts_and_deletes_nothing(self):
        result = self.purge('--dry-run', '--state', 'denied', '-f', 'json')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual([{'State': 'denied', 'Would delete': 2}],
                         json.loads(result.stdout))
        self.assertIn('Dry run: 2 ledger entries', result.stderr)
        self.assertEqual(12, len(states(self.ledger)))

    def test_a_date_less_than_a_day_ago_is_refused(self):
        today = timeutils.utcnow().strftime('%Y-%m-%d %H:%M')
        result = command('db', 'purge', '--before', today, config=self.conf)
        self.assertBadInput(result, '--before %s is too recent' % today)
        self.assertEqual(12, len(states(self.ledger)))

    def test_a_state_that_is_not_final_is_refused(self):
        self.assertBadInput(self.purge('--state', 'terminated,active'),
                            '--state active')

    def test_a_bad_date_is_refused_naming_the_option(self):
        result = command('db', 'purge', '--before', '2025-13-01',
                         config=self.conf)
        self.assertBadInput(result, '--before "2025-13-01"')


class TestPurge(testtools.TestCase):
    """The purge itself, in the process (no command to start)."""

    def setUp(self):
        super().setUp()
        self.ledger = self.make_ledger()
        self.addCleanup(self.ledger.dispose)
        populate(self.ledger)
        self.before = datetime.datetime(2025, 6, 1)

    def make_ledger(self):
        path = self.useFixture(fixtures.TempDir()).path
        return store.Ledger('sqlite:///%s/ledger.sqlite' % path)

    def test_batches_bound_each_transaction(self):
        counts, batches = purge.purge(self.ledger, self.before,
                                      batch_size=4)
        self.assertEqual(({'terminated': 2, 'denied': 2, 'abandoned': 2},
                          2), (counts, batches))

    def test_no_allocation_balance_changes(self):
        spent = balances(self.ledger)
        purge.purge(self.ledger, self.before, batch_size=4)
        self.assertEqual(spent, balances(self.ledger))

    def test_charges_of_deleted_entries_become_one_per_allocation(self):
        purge.purge(self.ledger, self.before)
        c = models.charges
        with self.ledger.transaction() as txn:
            purged = txn.connection.execute(
                sa.select(c.c.allocation_id, c.c.amount, c.c.lease_row)
                .where(c.c.kind == purge.CHARGE_PURGED)).all()
        # Per project: the closed entry used 1 day of 2 (24 credits); the
        # abandoned one released its charge, the denied one had none.
        self.assertEqual(sorted([(1, store.to_micro(24), None),
                                 (2, store.to_micro(24), None)]),
                         sorted(tuple(r) for r in purged))

    def test_a_second_purge_finds_nothing(self):
        purge.purge(self.ledger, self.before)
        self.assertEqual(({'terminated': 0, 'denied': 0, 'abandoned': 0},
                          0), purge.purge(self.ledger, self.before))


class TestPurgeOnPostgreSQL(TestPurge):
    """The same on a real PostgreSQL (foreign keys enforced, row locks)."""

    def make_ledger(self):
        database = self.useFixture(postgresql.PostgreSQLDatabase())
        return store.Ledger(database.url, migrate=True)
