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
"""Two ``placement-quota serve`` processes on a ledger in the Galera
cluster (tests/fixtures/galera.py), and the requests and checks the HA
tests share.

Topologies: *multi-writer*, one service writing through node 1 and the
other through node 2 (each node certifies the other's writes: a conflict
shows at COMMIT), and *single writer*, both through HAProxy (node 1 active,
the others backups, as OpenStack deployment tools configure Galera).
"""

import uuid

import testtools
from testtools import content

from tests.fixtures import galera
from tests.fixtures import ledger_services

#: What a request may take at most (see ledger_services).
REQUEST_BOUND = ledger_services.REQUEST_BOUND
Services = ledger_services.Services


class GaleraServicesTestCase(testtools.TestCase):
    """Service processes on a ledger database of the cluster."""

    #: Requests of a burst, and the threads sending them.
    requests_sent = 40
    threads = 16

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(galera.GaleraDatabase(haproxy=True))
        self.cluster = self.database.cluster
        self.project = 'p-%s' % uuid.uuid4().hex[:8]
        self.ledger = None

    def multi_writer(self, database=None):
        """The URLs of a service through node 1 and one through node
        2."""
        return (database or self.database).urls[:2]

    def single_writer(self, database=None):
        """Twice the URL through HAProxy."""
        return [(database or self.database).url] * 2

    def start_services(self, urls, filters, extra=''):
        """:class:`Services` for this test: their processes; their logs
        are attached to a failure; :attr:`ledger` reads their ledger."""
        found = self.use_services(self.useFixture(
            Services(self.database, urls, filters, extra)))
        return found.services

    def use_services(self, services):
        """Attach the logs of ``services`` to a failure; read their
        ledger."""
        self.ledger = services.ledger

        def attach(exc_info):
            # Read now: their temp dir may be gone when details are shown.
            for name, text in services.log_tails().items():
                self.addDetail(name, content.text_content(text))
        self.addOnException(attach)
        return services

    def burst(self, services, count=None, first=0, hosts=None, user=None):
        """``count`` check-creates of this test's project (see
        :func:`ledger_services.burst`): their answers."""
        client = ledger_services.Client(self.project, user)
        return ledger_services.burst(
            client, services,
            self.requests_sent if count is None else count,
            threads=self.threads, first=first, hosts=hosts)

    # --- checks ---------------------------------------------------------

    def statuses(self, answers):
        return ledger_services.statuses(answers)

    def assertOnlyDecisions(self, answers):
        """Every answer is a 204, a 403 denial or a 503 with a JSON
        message: no 500, no other status, no lost connection."""
        for answer in answers:
            if answer.status == 204:
                continue
            self.assertIn(answer.status, (403, 503), answer)
            self.assertIsInstance(answer.body, dict, answer)
            self.assertIn('message', answer.body, answer)

    def live_entries(self):
        return ledger_services.live_entries(self.ledger, self.project)

    def assertLedgerHoldsExactlyTheAdmitted(self, answers):
        """The ledger's live entries are the leases answered 204, each
        once (by name): none lost, none added, none twice."""
        self.assertEqual(ledger_services.admitted_names(answers),
                         sorted(row.name for row in self.live_entries()))

    def assertExactlyAdmitted(self, limit, answers):
        """No error; exactly ``limit`` answered 204 and the ledger holds
        exactly them."""
        self.assertOnlyDecisions(answers)
        self.assertEqual(limit, self.statuses(answers).get(204, 0),
                         self.statuses(answers))
        self.assertLedgerHoldsExactlyTheAdmitted(answers)
