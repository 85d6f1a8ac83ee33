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
"""What only MySQL and MariaDB need, on a real MariaDB: the ledger's
timeouts as session variables, a deadlock while locking retried, locks
taken by writing their rows, a lost connection reported as
"unavailable".

What every backend does (migrations, exact admissions, lock order, frozen
servers) is in test_databases.py and test_database_faults.py.
"""

import concurrent.futures
import time

import fixtures
import testtools

from placement_quota.ledger.db import locks
from placement_quota.ledger import errors as ledger_errors
from placement_quota.ledger import store
from tests.functional.ledger import databases

#: Seconds anything here may wait at most.
TIMEOUT = 10


class MariaDBTestCase(databases.OnMariaDB, databases.DatabaseTestCase):

    def ledger(self, **kwargs):
        ledger = store.Ledger(self.database.url, migrate=True, **kwargs)
        self.addCleanup(ledger.dispose)
        return ledger


class TestSession(MariaDBTestCase):

    def test_connections_carry_the_ledger_timeouts_and_read_committed(self):
        ledger = self.ledger(lock_timeout=7, statement_timeout=9)
        with ledger.transaction() as txn:
            found = txn.connection.exec_driver_sql(
                'SELECT @@innodb_lock_wait_timeout, @@max_statement_time, '
                '@@tx_isolation, @@character_set_connection').one()
        self.assertEqual((7, 9.0, 'READ-COMMITTED', 'utf8mb4'),
                         tuple(found))

    def test_migrations_run_without_the_statement_timeout_and_restore_it(
            self):
        ledger = self.ledger(statement_timeout=9)
        ledger.upgrade()
        with ledger.engine.connect() as connection:
            self.assertEqual(9.0, connection.exec_driver_sql(
                'SELECT @@max_statement_time').scalar())


class TestDeadlock(MariaDBTestCase):
    """Three transactions wait to lock a project row another connection
    is inserting; it rolls back, all three insert it: one does, the two
    others wait for it with a shared lock each, and when it commits both
    want the row exclusively -- MariaDB kills one of them (a deadlock),
    which is tried again.

    Whether the two shared locks meet depends on the scheduler (on a
    loaded machine one transaction may finish before the next inserts),
    so the scene is played again, on a new row, until MariaDB reports a
    deadlock; every round must admit all three."""

    #: Rounds played at most before the deadlock counts as never seen.
    ROUNDS = 8

    def test_deadlock_while_taking_the_locks_is_retried(self):
        ledger = self.ledger(lock_timeout=TIMEOUT)
        log = self.useFixture(fixtures.FakeLogger(
            name='placement_quota.ledger.db.engine'))
        for round_ in range(self.ROUNDS):
            self.assertEqual([0, 1, 2],
                             self.three_lock_a_row_being_inserted(
                                 ledger, 'new-%d' % round_))
            if 'deadlocked (attempt 1 of 5)' in log.output:
                return
        self.fail('no deadlock in %d rounds: %r' % (self.ROUNDS,
                                                    log.output))

    def three_lock_a_row_being_inserted(self, ledger, project_id):
        """What three transactions locking ``project_id`` returned, the
        row inserted meanwhile by a fourth that then rolls back."""
        inserting = self.database.connect()
        self.addCleanup(inserting.close)
        with inserting.cursor() as cursor:
            cursor.execute("INSERT INTO projects (project_id, created_at) "
                           "VALUES (%s, NOW())", (project_id,))

        def lock(i):
            with ledger.transaction([project_id]):
                time.sleep(0.2)
            return i
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            futures = [pool.submit(lock, i) for i in range(3)]
            self.wait_for_lock_waits(3, futures)
            inserting.rollback()
            return [f.result(timeout=TIMEOUT * 2) for f in futures]

    def wait_for_lock_waits(self, count, futures):
        """Until ``count`` connections wait to write the lock row (a
        lock is taken by writing its row: ledger/db/locks.py); what a
        future raised meanwhile is raised."""
        watcher = self.database.connect(autocommit=True)
        self.addCleanup(watcher.close)
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            for future in futures:
                if future.done():
                    future.result()
            with watcher.cursor() as cursor:
                cursor.execute("SELECT COUNT(*) FROM information_schema."
                               "processlist WHERE info LIKE "
                               "'UPDATE projects SET lock_serial%%'")
                if cursor.fetchone()[0] >= count:
                    return
            time.sleep(0.02)
        self.fail('%d transactions did not come to wait for the lock'
                  % count)


class TestLockRowsAreWritten(MariaDBTestCase):
    """Galera does not replicate the locks of ``SELECT ... FOR UPDATE``:
    on MySQL/MariaDB a ledger lock writes its row, which Galera
    certifies."""

    def serial(self, ledger, project_id):
        with ledger.reader() as txn:
            return txn.connection.exec_driver_sql(
                'SELECT lock_serial FROM projects WHERE project_id = %s',
                (project_id,)).scalar()

    def test_taking_a_lock_moves_its_rows_serial(self):
        ledger = self.ledger()
        for _ in range(3):
            with ledger.transaction(['p1']):
                pass
        self.assertEqual(3, self.serial(ledger, 'p1'))

    def test_a_shared_lock_on_a_server_without_galera_is_no_write(self):
        ledger = self.ledger()
        with ledger.transaction(['p1', '*']):
            pass
        with ledger.transaction(['p1', '* (shared)']):
            pass
        self.assertEqual((2, 1), (self.serial(ledger, 'p1'),
                                  self.serial(ledger, '*')))

    def test_a_server_without_galera_is_said_to_be_none(self):
        ledger = self.ledger()
        with ledger.transaction(['p1']) as txn:
            self.assertFalse(locks.galera(txn.connection))


class TestLostConnection(MariaDBTestCase):

    def kill_own_connection(self, txn):
        thread = txn.connection.exec_driver_sql(
            'SELECT CONNECTION_ID()').scalar()
        killer = self.database.connect(autocommit=True)
        try:
            with killer.cursor() as cursor:
                cursor.execute('KILL %d' % thread)
        finally:
            killer.close()

    def test_a_killed_connection_is_the_ledger_unavailable(self):
        ledger = self.ledger()

        def killed():
            with ledger.transaction(['p']) as txn:
                self.kill_own_connection(txn)
                txn.leases('p')
        error = self.assertRaises(ledger_errors.LedgerUnavailable, killed)
        self.assertIn('Lost the connection to the ledger database',
                      str(error))

    def test_the_next_transaction_works_on_a_new_connection(self):
        ledger = self.ledger()
        with testtools.ExpectedException(ledger_errors.LedgerUnavailable):
            with ledger.transaction(['p']) as txn:
                self.kill_own_connection(txn)
                txn.leases('p')
        with ledger.transaction(['p']) as txn:
            self.assertEqual([], txn.leases('p'))


class TestConnectionRefused(testtools.TestCase):

    def test_a_missing_server_is_the_ledger_unavailable(self):
        if databases.mariadb.pymysql is None:
            self.skipTest('PyMySQL is not installed')
        directory = self.useFixture(fixtures.TempDir()).path
        url = ('mysql+pymysql://root@localhost/ledger?unix_socket=%s/none'
               % directory)
        error = self.assertRaises(ledger_errors.LedgerError, store.Ledger,
                                  url, connect_timeout=2)
        self.assertIn('Cannot reach the ledger', str(error))
