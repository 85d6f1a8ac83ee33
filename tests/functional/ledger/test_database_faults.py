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
"""The ledger on a real PostgreSQL and a real MariaDB under faults:
admissions racing account moves never deadlock (one lock order), and a
database that does not answer (frozen with SIGSTOP, or too slow) is given
up within a bound, which the API answers with a JSON 503.

The frozen database is this test process's own server (see
tests/fixtures/postgresql.py and tests/fixtures/mariadb.py): every process
of it (PostgreSQL: its postmaster and every process it started, each
backend a session of its own, so not one process group; MariaDB: its one
process) is stopped, and always continued by a cleanup, before the other
cleanups need them.

Each test case is written once and run on each server by the subclasses
at the end (see :mod:`tests.functional.ledger.databases`).
"""

import concurrent.futures
import json
import os
import signal
import threading
import time
import types
import uuid

import fixtures
import requests
import testtools

from placement_quota.accounts import service as accounts_service
from placement_quota.accounts import store as accounts_store
from placement_quota.lease import model as lease_model
from placement_quota.ledger import admission
from placement_quota.ledger.db import engine
from placement_quota.ledger import errors as ledger_errors
from placement_quota.ledger import store
from tests import builders
from tests.fixtures import enforcement as service_fixture
from tests.functional.ledger import databases

#: [ledger] timeouts of the frozen-database tests (seconds).
CONNECT_TIMEOUT = 2
STATEMENT_TIMEOUT = 2
LOCK_TIMEOUT = 2
#: The most a new connection to a frozen database may take: PostgreSQL's
#: connect_timeout, with room for a loaded machine.
CONNECT_BOUND = CONNECT_TIMEOUT + 2
#: The most a request may take on a frozen database: the ping of the
#: pooled connection (connect_timeout), then a new connection
#: (connect_timeout), with room for a loaded machine.
FROZEN_BOUND = 2 * CONNECT_TIMEOUT + 4
#: On MySQL/MariaDB, PyMySQL reads the server's greeting of a new
#: connection under its read timeout (the statement deadline): the bound
#: is larger there. (The service's 503 on a frozen server is tested on
#: PostgreSQL only: the HTTP side is the same, the ledger's errors are
#: tested on both by FrozenLedger.)
MYSQL_DEADLINE = engine.statement_deadline(STATEMENT_TIMEOUT, LOCK_TIMEOUT)
MYSQL_CONNECT_BOUND = MYSQL_DEADLINE + 2


class MigratedTestCase(databases.DatabaseTestCase):
    """A migrated ledger database of the mixed-in backend."""

    def setUp(self):
        super().setUp()
        ledger = store.Ledger(self.database.url, migrate=True)
        ledger.dispose()

    def ledger(self, **kwargs):
        ledger = store.Ledger(self.database.url, **kwargs)
        self.addCleanup(ledger.dispose)
        return ledger


class LockOrder:
    """Check-creates of a child (locking it, its root and ``*``) race
    moves between the child and its root (locking both): with one lock
    order none deadlocks. The root's ID sorts before the child's, the
    opposite of the order the admission names them in."""

    root = 'a-root'
    child = 'z-child'
    rounds = 8

    def setUp(self):
        super().setUp()
        self.ledger = self.ledger(lock_timeout=10)
        with self.ledger.transaction() as txn:
            for account, parent in ((self.root, None),
                                    (self.child, self.root)):
                accounts_store.insert(txn.connection, account, parent, {},
                                      {}, txn.now)
        self.accounts = accounts_service.Accounts(self.ledger)
        # Widen the window between two locks of one transaction, where a
        # transaction taking them in the other order slips in.
        lock_row = store.Transaction._lock_row

        def slow_lock(txn, key, dialect):
            lock_row(txn, key, dialect)
            time.sleep(0.05)
        self.useFixture(fixtures.MockPatchObject(
            store.Transaction, '_lock_row', slow_lock))

    def admit(self, i):
        context = lease_model.Context.coerce(builders.context(self.child))
        body = lease_model.Lease.coerce(builders.lease(
            builders.day(2), builders.day(3), name='l-%d' % i))
        with admission.admit(self.ledger, admission.CHECK_CREATE, context,
                             body, locks=[self.root, '*']):
            pass

    def move(self, i):
        nothing = types.SimpleNamespace(leases=[], consumers=[])
        if i % 2:
            self.accounts._apply(self.root, self.child, nothing)
        else:
            self.accounts._apply(self.child, self.root, nothing)

    def race(self):
        errors = []

        def worker(call, i):
            try:
                call(i)
            except Exception as exc:
                errors.append(exc)
        calls = [(call, i) for i in range(self.rounds)
                 for call in (self.admit, self.move)]
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda c: worker(*c), calls))
        return errors

    def test_admissions_and_moves_do_not_deadlock(self):
        self.assertEqual([], [str(e).splitlines()[0] for e in self.race()])

    def test_admissions_and_moves_finish_within_seconds(self):
        began = time.monotonic()
        self.race()
        self.assertLess(time.monotonic() - began, 10)


def signal_all(pids, signum):
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def _stopped(pid):
    """Whether every thread of ``pid`` is stopped (or has ended)."""
    try:
        tasks = os.listdir('/proc/%d/task' % pid)
    except FileNotFoundError:
        return True
    for task in tasks:
        try:
            with open('/proc/%d/task/%s/stat' % (pid, task)) as f:
                # "pid (comm) S ...": the state follows the last ')'.
                state = f.read().rsplit(')', 1)[1].split()[0]
        except (FileNotFoundError, IndexError):
            continue
        if state not in ('T', 't', 'Z', 'X'):  # stopped, or ended
            return False
    return True


def wait_stopped(pids, timeout=5.0):
    """Wait until every thread of ``pids`` has taken its SIGSTOP (the
    signal is delivered asynchronously: a thread busy on the other core
    could still answer one more connection)."""
    deadline = time.monotonic() + timeout
    while not all(_stopped(pid) for pid in pids):
        if time.monotonic() > deadline:
            raise AssertionError('processes %s did not stop' % pids)
        time.sleep(0.005)


class Frozen:
    """Freezes the server of the mixed-in backend."""

    connect_bound = CONNECT_BOUND
    frozen_bound = FROZEN_BOUND

    def setUp(self):
        super().setUp()
        if not os.path.exists('/proc/self/stat'):
            self.skipTest('no /proc to find the database server\'s '
                          'processes in')

    def freeze(self):
        """Stop the whole server (its main process first: it starts no
        other then, and every other) until :meth:`thaw` or the test's
        cleanup; returns the stopped PIDs."""
        os.kill(self.database.server.process.pid, signal.SIGSTOP)
        pids = self.server_pids()
        self.addCleanup(self.thaw, pids)
        signal_all(pids, signal.SIGSTOP)
        wait_stopped(pids)
        return pids

    @staticmethod
    def thaw(pids):
        signal_all(pids, signal.SIGCONT)

    def timed_ledger(self):
        return self.ledger(connect_timeout=CONNECT_TIMEOUT,
                           statement_timeout=STATEMENT_TIMEOUT,
                           lock_timeout=LOCK_TIMEOUT)


class FrozenLedger(Frozen):

    def test_statement_on_a_frozen_database_is_given_up_at_its_deadline(
            self):
        ledger = self.timed_ledger()

        def frozen_statement():
            with ledger.transaction(['p']) as txn:
                self.freeze()
                txn.leases('p')
        began = time.monotonic()
        error = self.assertRaises(ledger_errors.LedgerUnavailable,
                                  frozen_statement)
        took = time.monotonic() - began
        deadline = engine.statement_deadline(STATEMENT_TIMEOUT, LOCK_TIMEOUT)
        self.addDetail('seconds', testtools.content.text_content(
            '%.2f' % took))
        self.assertIn('did not answer within %d seconds' % deadline,
                      str(error))
        self.assertLess(took, deadline + 2)

    def test_new_connection_to_a_frozen_database_is_given_up(self):
        ledger = self.timed_ledger()
        ledger.engine.dispose()
        self.freeze()
        began = time.monotonic()

        def connect():
            with ledger.transaction(['p']):
                pass
        error = self.assertRaises(ledger_errors.LedgerUnavailable, connect)
        self.assertIn('Cannot connect to the ledger database', str(error))
        self.assertLess(time.monotonic() - began, self.connect_bound)

    def test_ledger_works_again_once_the_database_continues(self):
        ledger = self.timed_ledger()
        pids = self.freeze()

        def frozen():
            with ledger.transaction(['p']):
                pass
        self.assertRaises(ledger_errors.LedgerUnavailable, frozen)
        self.thaw(pids)
        with ledger.transaction(['p']) as txn:
            self.assertEqual([], txn.leases('p'))

    def test_long_statement_is_cancelled_at_the_statement_timeout(self):
        ledger = self.ledger(statement_timeout=1)
        began = time.monotonic()

        def sleep():
            with ledger.transaction() as txn:
                txn.connection.exec_driver_sql(self.sleep_statement)
        error = self.assertRaises(ledger_errors.LedgerUnavailable, sleep)
        self.assertIn('ran longer than [ledger] statement_timeout (1 '
                      'seconds)', str(error))
        self.assertLess(time.monotonic() - began, 3)

    def test_lock_wait_past_the_lock_timeout_is_a_lock_timeout(self):
        ledger = self.ledger(lock_timeout=1)
        held = threading.Event()
        release = threading.Event()

        def hold():
            with ledger.transaction(['p']):
                held.set()
                release.wait(10)
        holder = threading.Thread(target=hold)
        holder.start()
        self.addCleanup(holder.join)
        self.addCleanup(release.set)
        self.assertTrue(held.wait(10))

        def wait():
            with ledger.transaction(['p']):
                pass
        error = self.assertRaises(ledger_errors.LockTimeout, wait)
        self.assertIsInstance(error, ledger_errors.LedgerUnavailable)


class FrozenService(Frozen):
    """The enforcement service over HTTP on a ledger database server."""

    def setUp(self):
        super().setUp()
        self.conf = service_fixture.config(
            connection=('database', self.database.url),
            connect_timeout=('ledger', CONNECT_TIMEOUT),
            statement_timeout=('ledger', STATEMENT_TIMEOUT),
            lock_timeout=('ledger', LOCK_TIMEOUT),
            count_host_resources=('ledger', False),
            enabled_filters=('enforcement', ['LeaseCountFilter']),
            max_leases_per_project=('enforcement', 100))
        self.service = self.useFixture(
            service_fixture.EnforcementService(self.conf))
        self.project = 'p-%s' % uuid.uuid4().hex[:8]
        # A pooled connection, as a running service has.
        self.assertEqual(204, self.create('warm')[0])

    def create(self, name):
        body = {'context': {'project_id': self.project, 'user_id': 'u'},
                'lease': builders.lease(builders.day(2), builders.day(3),
                                        name=name)}
        response = requests.post(self.service.url + '/v1/check-create',
                                 data=json.dumps(body), timeout=60)
        return (response.status_code,
                response.json() if response.content else None)

    def test_check_create_on_a_frozen_database_answers_503_in_time(self):
        self.freeze()
        began = time.monotonic()
        status, body = self.create('frozen')
        took = time.monotonic() - began
        self.addDetail('seconds', testtools.content.text_content(
            '%.2f' % took))
        self.assertEqual(503, status)
        self.assertIn('ledger database', body['message'])
        self.assertLess(took, self.frozen_bound)

    def test_check_create_is_allowed_again_once_the_database_continues(
            self):
        pids = self.freeze()
        self.create('frozen')
        self.thaw(pids)
        self.assertEqual((204, None), self.create('after'))


class TestLockOrderOnPostgreSQL(
        databases.OnPostgreSQL, LockOrder, MigratedTestCase):
    pass


class TestLockOrderOnMariaDB(
        databases.OnMariaDB, LockOrder, MigratedTestCase):
    pass


class TestFrozenLedgerOnPostgreSQL(
        databases.OnPostgreSQL, FrozenLedger, MigratedTestCase):
    pass


class TestFrozenLedgerOnMariaDB(
        databases.OnMariaDB, FrozenLedger, MigratedTestCase):
    connect_bound = MYSQL_CONNECT_BOUND


class TestFrozenServiceOnPostgreSQL(
        databases.OnPostgreSQL, FrozenService, MigratedTestCase):
    pass
