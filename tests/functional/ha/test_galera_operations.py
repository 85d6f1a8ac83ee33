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
"""The ledger's own operations on the Galera cluster
(tests/fixtures/galera.py): what a connection knows about its node, locks
that Galera sees, the upgrade check's judgement of the node, ``db purge``
within the cluster's write-set limit."""

import datetime
import io
import os

import fixtures
import testtools

from placement_quota.cmd import status
from placement_quota.ledger.db import locks
from placement_quota.ledger import entry_states
from placement_quota.ledger import models
from placement_quota.ledger import purge
from placement_quota.ledger import store
from tests.fixtures import galera
from tests.functional.cmd import test_cli

JANUARY = datetime.datetime(2025, 1, 1)
#: The write-set bound set on the node for the purge test, and the
#: entries purged under it (each writes its row, its charge, a purged
#: charge and its project's lock row: far more than the bound at once).
MAX_WS_ROWS = 40
ENTRIES = 60


class GaleraLedgerTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(galera.GaleraDatabase())
        self.cluster = self.db.cluster
        self.node = self.cluster.nodes[0]

    def ledger(self, **kwargs):
        ledger = store.Ledger(self.db.url, migrate=True, **kwargs)
        self.addCleanup(ledger.dispose)
        return ledger

    def serial(self, ledger, project_id):
        with ledger.reader() as txn:
            return txn.connection.exec_driver_sql(
                'SELECT lock_serial FROM projects WHERE project_id = %s',
                (project_id,)).scalar()


class TestConnections(GaleraLedgerTestCase):

    def test_a_connection_knows_it_is_on_a_galera_node(self):
        with self.ledger().transaction(['p1']) as txn:
            self.assertTrue(locks.galera(txn.connection))

    def test_reads_wait_for_the_cluster_unless_told_otherwise(self):
        with self.ledger().reader() as txn:
            self.assertEqual(1, txn.connection.exec_driver_sql(
                'SELECT @@SESSION.wsrep_sync_wait').scalar())

    def test_mysql_wsrep_sync_wait_is_the_operators_choice(self):
        ledger = self.ledger(database={'mysql_wsrep_sync_wait': 3})
        with ledger.reader() as txn:
            self.assertEqual(3, txn.connection.exec_driver_sql(
                'SELECT @@SESSION.wsrep_sync_wait').scalar())

    def test_a_shared_lock_is_a_write_on_galera(self):
        ledger = self.ledger()
        before = self.serial(ledger, models.GLOBAL_LOCK) or 0
        with ledger.transaction(['p1', locks.shared(models.GLOBAL_LOCK)]):
            pass
        self.assertEqual(before + 1,
                         self.serial(ledger, models.GLOBAL_LOCK))


class TestDbSync(GaleraLedgerTestCase):

    def test_db_sync_brings_the_cluster_to_the_head_revision(self):
        directory = self.useFixture(fixtures.TempDir()).path
        config = os.path.join(directory, 'placement-quota.conf')
        with open(config, 'w') as out:
            out.write('[database]\nconnection = %s\n' % self.db.url)
        result = test_cli.command('db', 'sync', config=config)
        self.assertEqual(0, result.returncode, result.stderr)
        # Read on another node: the schema reached the whole cluster.
        ledger = store.Ledger(self.db.urls[2], migrate=False)
        self.addCleanup(ledger.dispose)
        self.assertEqual(ledger.head_revision(), ledger.current_revision())


class TestUpgradeCheck(GaleraLedgerTestCase):

    def check(self, database=''):
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, 'placement-quota.conf')
        with open(path, 'w') as out:
            out.write('[database]\nconnection = %s\n%s' % (self.db.url,
                                                           database))
        stdout = self.useFixture(fixtures.MonkeyPatch('sys.stdout',
                                                      io.StringIO()))
        code = status.main(['--config-file', path, 'upgrade', 'check'])
        return code, ' '.join(stdout.new_value.getvalue().replace(
            '|', ' ').split())

    def test_the_check_names_lazy_log_flushing_on_the_cluster(self):
        # The test cluster flushes its log once a second (disposable data).
        self.ledger()
        code, output = self.check()
        self.assertIn('Check: Ledger on Galera Result: Warning', output)
        self.assertIn('innodb_flush_log_at_trx_commit is 2', output)
        self.assertNotIn('wsrep_sync_wait is 0', output)

    def test_the_check_warns_when_reads_do_not_wait_for_the_cluster(self):
        self.ledger()
        code, output = self.check('mysql_wsrep_sync_wait = 0\n')
        self.assertIn('wsrep_sync_wait is 0', output)

    def test_a_node_out_of_sync_fails_the_check(self):
        # A desynced node (as during a backup) takes no admission and no
        # "db sync" now.
        self.ledger()
        self.node.query('SET GLOBAL wsrep_desync = ON')
        self.addCleanup(self.node.query, 'SET GLOBAL wsrep_desync = OFF')
        code, output = self.check()
        self.assertEqual(2, code, output)
        self.assertIn('Check: Ledger on Galera Result: Failure', output)
        self.assertIn('wait until it is Primary and Synced', output)


class TestPurge(GaleraLedgerTestCase):

    def setUp(self):
        super().setUp()
        self.ledger_ = self.ledger()
        self.ledger_.clock = lambda: JANUARY
        with self.ledger_.transaction(['p1']) as txn:
            allocation = txn.add_allocation('p1', store.to_micro(10 ** 6))
        for _ in range(ENTRIES // 10):
            with self.ledger_.transaction(['p1']) as txn:
                for _ in range(10):
                    row = txn.insert(
                        project_id='p1', provisional_key='k',
                        start_date=JANUARY,
                        end_date=JANUARY + datetime.timedelta(days=1),
                        state=models.PENDING, amounts={}, lease={},
                        hourly_rate=store.to_micro(1),
                        charged=store.to_micro(24),
                        allocation_id=allocation)
                    txn.charge('p1', row, allocation, store.to_micro(24),
                               models.CHARGE_CREATE)
                    entry_states.close(txn, txn.entry(row),
                                       JANUARY + datetime.timedelta(hours=1))
        self.allocation = allocation
        self.set_max_ws_rows(MAX_WS_ROWS)
        self.addCleanup(self.set_max_ws_rows, 0)

    def set_max_ws_rows(self, rows):
        # Set on the node the ledger writes through (a global variable of
        # each node).
        self.node.query('SET GLOBAL wsrep_max_ws_rows = %d' % rows)

    def spent(self):
        with self.ledger_.reader() as txn:
            return txn.spent(self.allocation)

    def test_a_purge_larger_than_the_write_set_bound_is_done_in_batches(
            self):
        spent = self.spent()
        counts, batches = purge.purge(self.ledger_,
                                      datetime.datetime(2025, 6, 1))
        self.assertEqual((ENTRIES, spent),
                         (counts[models.TERMINATED], self.spent()))
        self.assertGreater(batches, ENTRIES * 4 // MAX_WS_ROWS - 1)

    def test_one_batch_of_every_entry_is_refused_by_the_cluster(self):
        # What the batches avoid: the same purge in one transaction.
        with self.ledger_.reader() as txn:
            ids = [r.id for r in txn.leases('p1')]
        error = self.assertRaises(
            Exception, self.purge_at_once, ids)
        self.assertIn('wsrep_max_ws_rows', str(error) + repr(error))

    def purge_at_once(self, ids):
        with self.ledger_.transaction(['p1']) as txn:
            purge._purge_batch(txn, ids, datetime.datetime(2025, 6, 1),
                               purge.FINAL)
