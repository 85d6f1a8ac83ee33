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
"""The ledger store on a SQLite file: the lock order, window queries over
entries of any length, lookups scoped to a project, lock timeouts."""

import datetime
import os
import shutil
import sqlite3

import fixtures
import sqlalchemy as sa

from placement_quota.accounts import store as accounts_store
from placement_quota.ledger import errors as ledger_errors
from placement_quota.ledger.db import built
from placement_quota.ledger.db import locks
from placement_quota.ledger import models
from placement_quota.ledger import store
from tests.builders import at
from tests.builders import NOW
from tests import ledger_helpers
from tests.unit.filters import base

YEAR_9999 = datetime.datetime(9999, 12, 31)
YEAR_1 = datetime.datetime(1, 1, 1)


class TestLockOrder(base.LedgerTestCase):

    def test_projects_come_first_then_accounts_pools_and_the_cloud(self):
        self.assertEqual(
            ['p', '*accounts', '*pool:gpu', '*'],
            locks.lock_order(['*', locks.pool_lock('gpu'),
                              models.ACCOUNTS_LOCK, 'p']))

    def test_keys_of_one_kind_are_sorted_by_name(self):
        self.assertEqual(['a', 'b', 'c', '*pool:x', '*pool:y'],
                         locks.lock_order(['c', '*pool:y', 'a', '*pool:x',
                                           'b']))

    def test_a_tree_root_sorts_with_the_projects_by_name(self):
        # An admission of z-child names its own project first, a move
        # names the accounts sorted: both take a-root first.
        self.assertEqual(['a-root', 'z-child', '*'],
                         locks.lock_order(['z-child', 'a-root', '*']))

    def test_each_lock_is_named_once(self):
        self.assertEqual(['p', '*'], locks.lock_order(['p', '*', 'p']))

    def test_a_shared_lock_sorts_with_its_row(self):
        self.assertEqual(
            ['p', locks.host_pool_lock('h1'), locks.shared('*')],
            locks.lock_order([locks.shared('*'), locks.host_pool_lock('h1'),
                              'p']))

    def test_a_row_named_in_both_modes_is_taken_exclusively(self):
        self.assertEqual(['*'], locks.lock_order(['*', locks.shared('*')]))

    def test_a_shared_lock_names_its_row_and_mode(self):
        self.assertEqual([('*', True), ('*', False)],
                         [locks.lock_row(locks.shared('*')),
                          locks.lock_row('*')])

    def test_admin_api_accounts_lock_is_the_ledgers(self):
        self.assertEqual(models.ACCOUNTS_LOCK, accounts_store.ACCOUNTS_LOCK)

    def test_transaction_takes_its_locks_in_the_lock_order(self):
        taken = []
        original = locks.take_rows

        def spy(connection, dialect, keys, now):
            taken.extend(keys)
            return original(connection, dialect, keys, now)
        self.useFixture(fixtures.MockPatchObject(locks, 'take_rows', spy))
        with self.ledger.transaction(['*', 'z-child', 'a-root']) as txn:
            held = list(txn.locked)
        self.assertEqual(['a-root', 'z-child', '*'], taken)
        self.assertEqual(['a-root', 'z-child', '*'], held)

    def test_a_later_lock_is_taken_row_by_row_in_the_lock_order(self):
        taken = []
        original = store.Transaction._lock_row

        def spy(txn, key, dialect):
            taken.append(key)
            return original(txn, key, dialect)
        self.useFixture(fixtures.MockPatchObject(
            store.Transaction, '_lock_row', spy))
        with self.ledger.transaction(['a-root']) as txn:
            txn.lock(['*', 'z-child'])
        self.assertEqual(['z-child', '*'], taken)

    def test_lock_sorting_before_a_held_one_is_refused(self):
        with self.ledger.transaction(['z']) as txn:
            error = self.assertRaises(ledger_errors.LedgerError, txn.lock,
                                      ['a'])
        self.assertIn('cannot be taken after z', str(error))

    def test_lock_sorting_after_the_held_ones_is_taken(self):
        with self.ledger.transaction(['a']) as txn:
            txn.lock(['*'])
            self.assertEqual(['a', '*'], txn.locked)


class TestLockTimeout(base.LedgerTestCase):

    def test_lock_held_too_long_is_a_lock_timeout_the_service_gives_up(self):
        self.set(group='ledger', lock_timeout=1)
        ledger = store.Ledger(self.conf.ledger.connection, lock_timeout=1)
        self.addCleanup(ledger.dispose)
        holder = sqlite3.connect(os.path.join(self.tmp, 'ledger.sqlite'),
                                 isolation_level=None)
        self.addCleanup(holder.close)
        holder.execute('BEGIN IMMEDIATE')
        self.addCleanup(holder.execute, 'ROLLBACK')

        def locked():
            with ledger.transaction(['p']):
                pass
        error = self.assertRaises(ledger_errors.LockTimeout, locked)
        self.assertIsInstance(error, ledger_errors.LedgerUnavailable)
        self.assertIn('waiting for the ledger lock of p', str(error))

    def test_a_reader_on_a_locked_database_is_not_held_up(self):
        holder = sqlite3.connect(os.path.join(self.tmp, 'ledger.sqlite'),
                                 isolation_level=None)
        self.addCleanup(holder.close)
        holder.execute('BEGIN IMMEDIATE')
        self.addCleanup(holder.execute, 'ROLLBACK')
        with self.ledger.reader() as txn:
            self.assertEqual(0, txn.open_count('p'))


class TestConnectionsLost(base.LedgerTestCase):

    def test_a_pooled_connection_closed_behind_the_pool_is_replaced(self):
        with self.ledger.transaction(['p']):
            pass
        with self.ledger.engine.connect() as connection:
            connection.connection.dbapi_connection.close()
        with self.ledger.transaction(['p']) as txn:
            self.assertEqual(0, txn.open_count('p'))

    def test_a_ledger_file_that_cannot_be_opened_is_unavailable(self):
        ledger = store.Ledger('sqlite:///' + os.path.join(
            self.tmp, 'gone', 'x', 'ledger.sqlite'), lock_timeout=1)
        self.addCleanup(ledger.dispose)
        shutil.rmtree(os.path.join(self.tmp, 'gone'))
        ledger.engine.dispose()   # no connection left to the old file

        def read():
            with ledger.reader():
                pass
        error = self.assertRaises(ledger_errors.LedgerUnavailable, read)
        self.assertIn('SQLITE_CANTOPEN', str(error))


class EntriesTestCase(base.LedgerTestCase):

    def insert_row(self, start, end, state='pending', project=None,
                   duration_s=None, vcpus=4, lease_id=None,
                   instance_hosts=''):
        """An entry written as any earlier version could have written it
        (``duration_s`` unclamped), bypassing every check."""
        values = dict(
            project_id=project or self.project, lease_id=lease_id,
            provisional_key='k-%s-%s' % (start, end), start_date=start,
            end_date=end, effective_end=end, state=state,
            duration_s=(int((end - start).total_seconds())
                        if duration_s is None else duration_s),
            amounts={'instances': 1, 'class:VCPU': vcpus},
            instance_vcpus=vcpus, instance_memory_mb=0, instance_disk_gb=0,
            instance_hosts=instance_hosts, lease={}, hourly_rate=0,
            charged=0,
            created_at=NOW)
        with self.ledger.engine.begin() as connection:
            return connection.execute(
                models.leases.insert().values(**values)
            ).inserted_primary_key[0]

    def instance_intervals(self, start, end, hosts=None):
        with self.ledger.transaction() as txn:
            return txn.instance_intervals(start, end, hosts=hosts)


class TestInstanceIntervals(EntriesTestCase):

    def test_denied_entry_ending_in_year_9999_breaks_no_window_query(self):
        self.insert_row(at(2), YEAR_9999, state=models.DENIED)
        self.assertEqual([], self.instance_intervals(at(2), at(3)))

    def test_denied_entry_starting_in_year_1_breaks_no_window_query(self):
        self.insert_row(YEAR_1, at(3), state=models.DENIED)
        self.assertEqual([], self.instance_intervals(at(2), at(3)))

    def test_live_entry_from_year_1_to_9999_breaks_no_window_query(self):
        self.insert_row(YEAR_1, YEAR_9999)
        self.assertEqual(1, len(self.instance_intervals(at(2), at(3))))

    def test_live_entry_longer_than_any_bound_is_still_found(self):
        row = self.insert_row(datetime.datetime(1900, 1, 1), at(3),
                              duration_s=store.MAX_DURATION)
        self.assertEqual([row], [r.id for i, r in
                                 self.instance_intervals(at(2), at(3))])

    def on_hosts(self, *hosts):
        return sorted(r.instance_hosts for _, r in self.instance_intervals(
            at(2), at(3), hosts=set(hosts)))

    def test_with_hosts_only_the_entries_on_them_are_read(self):
        self.insert_row(at(1), at(4), instance_hosts='h1 h2')
        self.insert_row(at(1), at(4), instance_hosts='h3')
        self.assertEqual(['h1 h2'], self.on_hosts('h2'))

    def test_with_hosts_entries_on_hosts_not_named_are_read(self):
        self.insert_row(at(1), at(4), instance_hosts='')
        self.assertEqual([''], self.on_hosts('h1'))

    def test_a_host_key_matches_whole_keys_only(self):
        self.insert_row(at(1), at(4), instance_hosts='h10 xh1')
        self.assertEqual([], self.on_hosts('h1'))

    def test_percent_and_underscore_in_a_host_key_are_no_wildcards(self):
        self.insert_row(at(1), at(4), instance_hosts='rack1-node')
        self.insert_row(at(1), at(4), instance_hosts='a%20b')
        self.assertEqual(['a%20b'], self.on_hosts('a%20b', 'rack__node',
                                                  'rack%'))

    def test_denied_entries_do_not_widen_the_window_query(self):
        self.insert_row(at(1), YEAR_9999, state=models.DENIED)
        self.insert_row(at(1), at(4))
        statements = []

        def record(conn, cursor, statement, parameters, context, many):
            statements.append((statement, parameters))
        sa.event.listen(self.ledger.engine, 'before_cursor_execute', record)
        self.addCleanup(sa.event.remove, self.ledger.engine,
                        'before_cursor_execute', record)
        self.instance_intervals(at(2), at(3))
        query = [p for s, p in statements if 'instance_hosts' in s][0]
        # The bound is the live entry's 3 days, not the denied one's.
        self.assertIn('2026-05-30 00:00:00.000000', query)

    def test_the_window_query_reads_its_index_alone(self):
        self.insert_row(at(1), at(4), instance_hosts='h1')
        statements = []

        def record(conn, cursor, statement, parameters, context, many):
            if 'instance_hosts' in statement:
                statements.append((statement, parameters))
        sa.event.listen(self.ledger.engine, 'before_cursor_execute', record)
        self.addCleanup(sa.event.remove, self.ledger.engine,
                        'before_cursor_execute', record)
        self.on_hosts('h1', 'h2')
        statement, parameters = statements[0]
        with self.ledger.engine.connect() as connection:
            plan = ' '.join(row[-1] for row in connection.exec_driver_sql(
                'EXPLAIN QUERY PLAN ' + statement, parameters))
        self.assertIn('COVERING INDEX %s' % models.INSTANCE_WINDOW_INDEX,
                      plan)


class TestDuration(base.LedgerTestCase):

    def test_duration_is_clamped_to_what_the_column_holds(self):
        self.assertEqual(store.MAX_DURATION, store.duration(
            {'start_date': NOW, 'end_date': YEAR_9999}))

    def test_negative_duration_is_zero(self):
        self.assertEqual(0, store.duration({'start_date': at(3),
                                            'end_date': at(2)}))

    def test_earliest_start_before_year_1_bounds_nothing(self):
        self.assertIsNone(store.earliest_start(
            at(2), int((YEAR_9999 - YEAR_1).total_seconds())))

    def test_earliest_start_of_the_longest_duration_bounds_nothing(self):
        self.assertIsNone(store.earliest_start(at(2), store.MAX_DURATION))

    def test_earliest_start_is_the_start_less_the_duration(self):
        self.assertEqual(at(1), store.earliest_start(at(2), 86400))


class TestFind(EntriesTestCase):

    def test_lease_id_of_another_project_finds_nothing(self):
        self.insert_row(at(2), at(3), project='proj-1', lease_id='L1')
        with self.ledger.transaction() as txn:
            self.assertIsNone(txn.find('proj-2', 'L1', 'no-such-key'))

    def test_lease_id_of_the_project_finds_its_entry(self):
        row = self.insert_row(at(2), at(3), project='proj-1',
                              lease_id='L1')
        with self.ledger.transaction() as txn:
            self.assertEqual(row, txn.find('proj-1', 'L1', 'x').id)

    def test_lease_id_holder_is_found_in_any_project(self):
        row = self.insert_row(at(2), at(3), project='proj-1',
                              lease_id='L1')
        with self.ledger.transaction() as txn:
            self.assertEqual((row, 'proj-1'),
                             tuple(txn.lease_id_holder('L1')))


class TestReadAhead(EntriesTestCase):
    """The scalars an admission's filters ask for are read in one
    statement; a write of the transaction forgets them."""

    def setUp(self):
        super().setUp()
        self.insert_row(at(10), at(11))
        self.insert_row(at(10), at(13))
        self.statements = ledger_helpers.watch_statements(
            self, self.ledger.engine)

    def read(self, txn):
        before = len(self.statements)
        found = (txn.open_count(self.project), txn.generation(self.project),
                 txn.longest_duration())
        return found, len(self.statements) - before

    def test_read_ahead_answers_without_a_statement(self):
        with self.ledger.transaction([self.project]) as txn:
            before = len(self.statements)
            txn.read_ahead(self.project, store.READ_AHEAD)
            self.assertEqual(1, len(self.statements) - before)
            found, statements = self.read(txn)
        self.assertEqual(((2, 0, 3 * 86400), 0), (found, statements))

    def test_read_ahead_gives_what_the_statements_give(self):
        with self.ledger.transaction([self.project]) as txn:
            expected, _ = self.read(txn)
            txn.read_ahead(self.project, store.READ_AHEAD)
            self.assertEqual(expected, self.read(txn)[0])

    def test_one_scalar_is_not_read_ahead(self):
        with self.ledger.transaction([self.project]) as txn:
            before = len(self.statements)
            txn.read_ahead(self.project, ['open_count'])
            self.assertEqual(0, len(self.statements) - before)

    def test_a_written_lease_is_counted_after_the_read_ahead(self):
        with self.ledger.transaction([self.project]) as txn:
            txn.read_ahead(self.project, store.READ_AHEAD)
            txn.insert(project_id=self.project, lease_id=None,
                       provisional_key='new', start_date=at(20),
                       end_date=at(30), state=models.PENDING,
                       amounts={}, lease={}, hourly_rate=0, charged=0)
            self.assertEqual(3, txn.open_count(self.project))
            self.assertEqual(10 * 86400, txn.longest_duration())

    def test_a_moved_generation_is_read_after_the_read_ahead(self):
        with self.ledger.transaction([self.project]) as txn:
            txn.read_ahead(self.project, store.READ_AHEAD)
            txn.bump_generation(self.project)
            self.assertEqual(1, txn.generation(self.project))

    def test_the_entry_left_out_of_the_read_ahead_is_not_counted(self):
        left_out = self.insert_row(at(10), at(12))
        with self.ledger.transaction([self.project]) as txn:
            txn.read_ahead(self.project, store.READ_AHEAD, exclude=left_out)
            before = len(self.statements)
            counted = txn.open_count(self.project, exclude=left_out)
            self.assertEqual((2, 0), (counted, len(self.statements) - before))

    def test_an_other_projects_scalars_are_its_own(self):
        self.insert_row(at(10), at(11), project='other')
        with self.ledger.transaction([self.project, 'other']) as txn:
            txn.read_ahead(self.project, store.READ_AHEAD)
            txn.read_ahead('other', store.READ_AHEAD)
            self.assertEqual((2, 1), (txn.open_count(self.project),
                                      txn.open_count('other')))


class TestBuiltStatements(base.LedgerTestCase):
    """A decision's statements are built once for each shape, their
    values bound at execution."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MonkeyPatch(
            'placement_quota.ledger.db.built.STATEMENTS', {}))
        self.builds = []

    def build(self):
        self.builds.append(1)
        return sa.select(sa.literal(1))

    def test_a_shape_is_built_once(self):
        first = built.built(('shape',), self.build)
        self.assertIs(first, built.built(('shape',), self.build))
        self.assertEqual(1, len(self.builds))

    def test_past_the_limit_a_shape_is_built_for_each_use(self):
        self.useFixture(fixtures.MonkeyPatch(
            'placement_quota.ledger.db.built.LIMIT', 0))
        built.built(('shape',), self.build)
        built.built(('shape',), self.build)
        self.assertEqual(2, len(self.builds))

    def test_the_lock_statement_is_built_once_for_a_count_and_mode(self):
        self.assertIs(locks._locking(2, False), locks._locking(2, False))
        self.assertIsNot(locks._locking(2, False), locks._locking(2, True))


class TestAllocationReadsItsSpendingAlong(base.LedgerTestCase):

    def setUp(self):
        super().setUp()
        with self.ledger.transaction() as txn:
            self.allocation = txn.add_allocation(self.project, 1000)
            txn.charge(self.project, None, self.allocation, 300, 'create')
        self.statements = ledger_helpers.watch_statements(
            self, self.ledger.engine)

    def test_spent_and_share_come_with_the_allocation(self):
        with self.ledger.transaction([self.project]) as txn:
            before = len(self.statements)
            row = txn.allocation(self.project, NOW, share_of='alice')
            found = (txn.spent(row.id), txn.share(self.project, 'alice'))
            self.assertEqual(1, len(self.statements) - before)
        self.assertEqual((300, None), found)

    def test_a_charge_is_spent_after_the_allocation_was_read(self):
        with self.ledger.transaction([self.project]) as txn:
            row = txn.allocation(self.project, NOW)
            txn.charge(self.project, None, row.id, 200, 'create')
            self.assertEqual(500, txn.spent(row.id))
