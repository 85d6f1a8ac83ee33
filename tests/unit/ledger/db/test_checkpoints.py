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
"""A SQLite ledger's WAL is checkpointed by a thread of its own, not by
the commits of admissions."""

import os
import time

import fixtures
import testtools

from placement_quota.ledger.db import checkpoints
from placement_quota.ledger import store


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


class TestCheckpoints(testtools.TestCase):

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.ledger = store.Ledger(
            'sqlite:///' + os.path.join(tmp, 'ledger.sqlite'), migrate=True)
        self.addCleanup(self.ledger.dispose)
        self.checkpointer = checkpoints.of(self.ledger.engine)
        # The migration wrote: let its checkpoint pass first.
        self.checkpointer.stop()

    def write(self, count=1):
        for _ in range(count):
            with self.ledger.transaction() as txn:
                txn.add_allocation('p', store.to_micro(1))

    def test_commits_leave_the_checkpoint_to_the_thread(self):
        with self.ledger.engine.connect() as connection:
            pages = connection.exec_driver_sql(
                'PRAGMA wal_autocheckpoint').scalar()
        self.assertEqual(checkpoints.SAFETY_PAGES, pages)

    def test_a_write_is_checkpointed_within_the_interval(self):
        done = self.checkpointer.done
        self.write(20)
        self.assertTrue(wait_for(lambda: self.checkpointer.done > done))
        busy, log, checkpointed = self.checkpointer.last
        self.assertEqual((0, log), (busy, checkpointed))
        self.assertGreater(log, 0)

    def test_reads_start_no_thread(self):
        with self.ledger.reader() as txn:
            txn.generation('p')
        self.assertFalse(self.checkpointer.running)

    def test_a_write_starts_the_thread(self):
        self.write()
        self.assertTrue(self.checkpointer.running)

    def test_an_idle_thread_ends_and_the_next_write_starts_one(self):
        self.checkpointer.idle = 0.2
        self.write()
        self.assertTrue(wait_for(lambda: not self.checkpointer.running))
        done = self.checkpointer.done
        self.write()
        self.assertTrue(self.checkpointer.running)
        self.assertTrue(wait_for(lambda: self.checkpointer.done > done))

    def test_dispose_ends_the_thread(self):
        self.write()
        self.ledger.engine.dispose()
        self.assertFalse(self.checkpointer.running)

    def test_a_ledger_in_memory_has_no_checkpointer(self):
        ledger = store.Ledger('sqlite://', migrate=True)
        self.addCleanup(ledger.dispose)
        self.assertIsNone(checkpoints.of(ledger.engine))
