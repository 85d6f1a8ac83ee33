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
"""The writer of a Galera cluster dies mid-burst: admissions go on
through the new writer, and stay exact.

Two service processes reach the ledger through HAProxy (node 1 active,
nodes 2 and 3 backups). Threads send check-creates to both; once some
leases are admitted, node 1 is killed with SIGKILL. HAProxy moves to
node 2, Galera evicts node 1, and admissions resume until the lease count
is reached. The killed node rejoins (IST) at cleanup, so the tests after
this one find three nodes again.
"""

from testtools import content

from placement_quota.ledger import store
from tests.fixtures import ledger_services
from tests.functional.ha import base

#: Leases one project may hold: reached only after the kill.
LIMIT = 40
#: Leases admitted before node 1 is killed.
BEFORE_KILL = 12
#: Each lease: 24 host-hours at 0.5 credits an hour.
LEASE_CREDITS = 12
#: Threads sending requests, and each one's pause between two requests
#: (so that the kill lands in the middle of the burst).
THREADS = 6
PAUSE = 0.05
#: Requests answered after the limit was reached (all denials) before
#: the burst stops, and the most the whole burst may take.
AFTER_LIMIT = 10
DEADLINE = 120


class TestWriterFailover(base.GaleraServicesTestCase):

    def setUp(self):
        super().setUp()
        # Last cleanup to run: node 1 back in the cluster, HAProxy on it.
        self.addCleanup(self.restore)

    def restore(self):
        self.cluster.restore()
        self.database.haproxy.wait_for_active('node1', timeout=30)

    def test_admissions_stay_exact_across_the_writers_death(self):
        services = self.start_services(
            self.single_writer(), ['LeaseCountFilter', 'CreditFilter'],
            'max_leases_per_project = %d\ncredit_host_rate = 0.5\n' % LIMIT)
        with self.ledger.transaction([self.project]) as txn:
            allocation = txn.add_allocation(self.project,
                                            store.to_micro(1000))
        answers, killed_at = ledger_services.failover_burst(
            ledger_services.Client(self.project), services,
            self.cluster.nodes[0].kill, LIMIT, BEFORE_KILL, threads=THREADS,
            pause=PAUSE, after_limit=AFTER_LIMIT, deadline=DEADLINE)
        self.assertIsNotNone(killed_at, 'node 1 was never killed')
        gap = ledger_services.failover_gap(answers, killed_at)
        statuses = self.statuses(answers)
        self.addDetail('failover', content.text_content(
            'gap %s s; statuses %s; slowest %.2f s' % (
                gap, statuses, max(a.seconds for a in answers))))
        # Every answer a decision (503 with JSON during the switch), none
        # slower than the ledger's timeouts allow.
        self.assertOnlyDecisions(answers)
        self.assertEqual([], [a for a in answers
                              if a.seconds > base.REQUEST_BOUND])
        # Admissions went on through the new writer, up to the limit
        # exactly; the ledger holds every lease answered 204, once.
        self.assertIsNotNone(gap, statuses)
        self.assertEqual(LIMIT, statuses.get(204), statuses)
        self.assertLedgerHoldsExactlyTheAdmitted(answers)
        # Nothing charged twice or half-written: each lease its 12
        # credits, the allocation exactly their sum.
        entries = self.live_entries()
        self.assertEqual({store.to_micro(LEASE_CREDITS)},
                         {row.charged for row in entries})
        with self.ledger.transaction() as txn:
            self.assertEqual(store.to_micro(LEASE_CREDITS * LIMIT),
                             txn.spent(allocation))
