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
"""Capacity admissions lock capacity pools, not the whole cloud: on a real
PostgreSQL and a real MariaDB, one admission holds its locks (stopped
after its check, inside its transaction) while others run, and which of
them complete and which wait shows the locks (ledger/db/locks.py) --
proven by lock waits, not by throughput. SQLite has one write lock for
everything, so these run on the row-locking databases only."""

import concurrent.futures
import threading

from placement_quota.filters import base as filters_base
from placement_quota.filters import placement_capacity
from placement_quota.filters import chain as chain_mod
from placement_quota.ledger import store
from tests.builders import day
from tests.builders import instances
from tests.builders import lease
from tests.functional.ledger import databases
from tests import ledger_helpers
from tests.unit.filters import base

#: Seconds an admission that must not wait may take, all in all.
NO_WAIT = 20
#: Seconds an admission that must wait is watched still waiting.
STILL_WAITING = 1.5


class Hold:
    """Stops an admission after its check until :meth:`release`."""

    def __init__(self):
        self.entered = threading.Event()
        self.released = threading.Event()

    def release(self):
        self.released.set()


class HeldCapacityFilter(placement_capacity.PlacementCapacityFilter):
    """PlacementCapacityFilter that, for the projects in :attr:`holds`,
    stops after its check -- inside the admission, its locks held --
    until the test releases it (a timing hook; the check is the real
    one)."""

    def __init__(self, conf, services=None):
        super().__init__(conf, services)
        self.holds = {}

    def check(self, admission):
        super().check(admission)
        hold = self.holds.get(admission.project_id)
        if hold is not None:
            hold.entered.set()
            hold.released.wait(60)


class PoolLocks(ledger_helpers.PlacementHelpers):

    filter_class = HeldCapacityFilter
    # A waiting admission waits, it does not time out, within a test.
    options = {('ledger', 'lock_timeout'): 30}

    def ledger_url(self):
        self.database = self.useFixture(self.database_fixture())
        store.Ledger(self.database.url, migrate=True).dispose()
        return self.database.url

    def placement(self):
        return self.in_process_placement()

    def setUp(self):
        super().setUp()
        self.h1 = self.compute_node(vcpus=8)[0]
        self.h2 = self.compute_node(vcpus=8)[0]
        self.pool = concurrent.futures.ThreadPoolExecutor(4)
        self.addCleanup(self.pool.shutdown, wait=True)
        self.via = chain_mod.FilterChain(self.conf, filters=[self.filter],
                                         services=self.services)

    def start(self, project, body, via=None):
        """Admit ``body`` for ``project`` in a thread: its future."""
        return self.pool.submit(self.create, body, project, via or self.via)

    def hold(self, project, body, via=None):
        """Admit ``body`` for ``project`` in a thread and stop it after its
        check, its locks held: ``(future, hold)``."""
        hold = self.filter.holds[project] = Hold()
        self.addCleanup(hold.release)
        future = self.start(project, body, via)
        self.assertTrue(hold.entered.wait(NO_WAIT), 'never got its locks')
        return future, hold

    def assertWaiting(self, future):
        self.assertRaises(concurrent.futures.TimeoutError, future.result,
                          timeout=STILL_WAITING)

    def test_admission_on_other_hosts_completes_while_one_holds_its_locks(
            self):
        held, hold = self.hold('pa', lease(day(2), day(3), instances(
            2, vcpus=4, hosts=[self.h1])))
        other = self.start('pb', lease(day(2), day(3), instances(
            2, vcpus=4, hosts=[self.h2])))
        self.assertIsNone(other.result(timeout=NO_WAIT))
        self.assertFalse(held.done())
        hold.release()
        self.assertIsNone(held.result(timeout=NO_WAIT))
        self.assertEqual((1, 1), (len(self.live_entries('pa')),
                                  len(self.live_entries('pb'))))

    def test_filter_called_alone_locks_pools_as_the_chain_does(self):
        held, hold = self.hold('pa', lease(day(2), day(3), instances(
            1, hosts=[self.h1])), via=self.filter)
        other = self.start('pb', lease(day(2), day(3), instances(
            1, hosts=[self.h2])), via=self.filter)
        self.assertIsNone(other.result(timeout=NO_WAIT))
        hold.release()
        self.assertIsNone(held.result(timeout=NO_WAIT))

    def test_admission_on_a_held_host_waits_then_counts_the_holder(self):
        held, hold = self.hold('pa', lease(day(2), day(3), instances(
            2, vcpus=4, hosts=[self.h1])))
        waiting = self.start('pc', lease(day(2), day(3), instances(
            1, vcpus=4, hosts=[self.h1])))
        self.assertWaiting(waiting)
        hold.release()
        self.assertIsNone(held.result(timeout=NO_WAIT))
        denial = self.assertRaises(filters_base.EnforcementDenied,
                                   waiting.result, timeout=NO_WAIT)
        self.assertIn('other leases hold 8', str(denial))

    def test_admission_of_unknown_hosts_waits_for_a_pool_admission(self):
        held, hold = self.hold('pa', lease(day(2), day(3), instances(
            1, hosts=[self.h1])))
        waiting = self.start('pd', lease(day(2), day(3), instances(1)))
        self.assertWaiting(waiting)
        hold.release()
        self.assertIsNone(held.result(timeout=NO_WAIT))
        self.assertIsNone(waiting.result(timeout=NO_WAIT))

    def test_pool_admission_waits_for_an_admission_of_unknown_hosts(self):
        held, hold = self.hold('pd', lease(day(2), day(3), instances(1)))
        waiting = self.start('pb', lease(day(2), day(3), instances(
            1, hosts=[self.h2])))
        self.assertWaiting(waiting)
        hold.release()
        self.assertIsNone(held.result(timeout=NO_WAIT))
        self.assertIsNone(waiting.result(timeout=NO_WAIT))


class TestPoolLocksOnPostgreSQL(databases.OnPostgreSQL, PoolLocks,
                                base.LedgerTestCase):
    pass


class TestPoolLocksOnMariaDB(databases.OnMariaDB, PoolLocks,
                             base.LedgerTestCase):
    pass
