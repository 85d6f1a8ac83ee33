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
"""Admissions on a Galera cluster are exact: a burst of concurrent
check-creates for one project, sent to two service processes, admits
exactly the limit, and the ledger holds exactly the leases answered 204.

Galera does not replicate the row locks of ``SELECT ... FOR UPDATE``: two
admissions on two nodes both read the project under its limit, and only
certification at COMMIT can refuse one of them. Each policy is played on
both topologies (see :mod:`tests.functional.ha.base`): *multi-writer*
(through node 1 and node 2: the conflicts show at COMMIT) and *single
writer* (both through HAProxy: one node, its locks hold as on one
MariaDB).

Every answer must be a 204, a 403 denial or a 503 with a JSON message (a
conflict retried until ``[ledger] conflict_attempts`` ran out), never a
500. Placement capacity, whose admissions of different projects meet on
the hosts' locks instead, is in test_galera_capacity.
"""

from placement_quota.ledger import shares
from placement_quota.ledger import store
from tests.fixtures import galera
from tests.functional.ha import base

#: Every policy at once, each test binding one of them: its own limit and
#: the message of its denials say which one decided.
FILTERS = ['ReservationSizeFilter', 'LeaseCountFilter', 'UserLimitFilter',
           'CreditFilter']
LEASES = 10
USER_HOSTS = 6
#: Each lease: 24 host-hours at 0.5 credits an hour = 12 credits.
LEASE_CREDITS = 12
OPTIONS = ('max_hosts_per_reservation = 1\n'
           'max_leases_per_project = %d\n'
           'max_hosts_per_user = %d\n'
           'credit_host_rate = 0.5\n' % (LEASES, USER_HOSTS))
#: Credits that bind no test but the credit tests.
PLENTY = 1000


class Policies:
    """Each policy, written once; run on a topology by the subclasses
    below (``topology`` names :meth:`base.GaleraServicesTestCase.
    multi_writer` or ``single_writer``). The two service processes are
    started once per class (each takes seconds to start), on a database
    of their own; each test has a project of its own."""

    _shared = None

    @classmethod
    def tearDownClass(cls):
        if cls._shared is not None:
            services, database = cls._shared
            cls._shared = None
            services.cleanUp()
            database.cleanUp()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        cls = type(self)
        if cls._shared is None:
            database = galera.GaleraDatabase(haproxy=True)
            database.setUp()
            try:
                services = base.Services(
                    database, getattr(self, self.topology)(database),
                    FILTERS, OPTIONS)
                services.setUp()
            except BaseException:
                database.cleanUp()
                raise
            cls._shared = services, database
        self.services = self.use_services(cls._shared[0]).services

    def give_credits(self, amount, user_share=None):
        with self.ledger.transaction([self.project]) as txn:
            allocation = txn.add_allocation(self.project,
                                            store.to_micro(amount))
            if user_share is not None:
                shares.set_share(txn.connection, self.project, 'alice',
                                 store.to_micro(user_share), txn.now)
        return allocation

    def assertDeniedBy(self, text, answers):
        """Every 403 says ``text``: the policy under test decided."""
        denials = [a for a in answers if a.status == 403]
        self.assertTrue(denials)
        self.assertEqual([], [a for a in denials
                              if text not in a.body['message']])

    def test_lease_count_admits_exactly_the_limit(self):
        self.give_credits(PLENTY)
        answers = self.burst(self.services)
        self.assertExactlyAdmitted(LEASES, answers)
        self.assertDeniedBy('pending or active leases; at most %d'
                            % LEASES, answers)

    def test_reservation_size_denies_every_oversized_lease(self):
        # One lease in three asks for 2 hosts: always denied, whatever
        # the count; the others fill the lease count exactly.
        self.give_credits(PLENTY)

        def hosts(index):
            return 2 if index % 3 == 0 else 1
        answers = self.burst(self.services, hosts=hosts)
        self.assertExactlyAdmitted(LEASES, answers)
        oversized = [a for a in answers if a.index % 3 == 0]
        self.assertEqual({403}, {a.status for a in oversized})
        self.assertDeniedBy('at most 1 are allowed in one reservation',
                            oversized)

    def test_user_limit_admits_exactly_the_limit(self):
        # Each lease: one host over the same day; 6 hosts per user.
        self.give_credits(PLENTY)
        answers = self.burst(self.services, user='alice')
        self.assertExactlyAdmitted(USER_HOSTS, answers)
        self.assertDeniedBy('at most %d per user' % USER_HOSTS, answers)

    def test_credits_admit_exactly_what_the_allocation_pays(self):
        # 96 credits pay for 8 leases; every credit spent is a lease's
        # charge, once.
        allocation = self.give_credits(8 * LEASE_CREDITS)
        answers = self.burst(self.services)
        self.assertExactlyAdmitted(8, answers)
        self.assertDeniedBy('credits left of its allocation', answers)
        with self.ledger.transaction() as txn:
            spent = txn.spent(allocation)
        self.assertEqual(store.to_micro(8 * LEASE_CREDITS), spent)
        self.assertEqual(spent, sum(row.charged
                                    for row in self.live_entries()))

    def test_a_users_credit_share_admits_exactly_what_it_pays(self):
        # alice's share of 60 credits pays for 5 leases.
        self.give_credits(PLENTY, user_share=5 * LEASE_CREDITS)
        answers = self.burst(self.services, user='alice')
        self.assertExactlyAdmitted(5, answers)
        self.assertDeniedBy('of their share of', answers)
        self.assertEqual(store.to_micro(5 * LEASE_CREDITS),
                         sum(row.charged for row in self.live_entries()))


class TestMultiWriter(Policies, base.GaleraServicesTestCase):
    """One service through node 1, the other through node 2."""

    topology = 'multi_writer'


class TestSingleWriter(Policies, base.GaleraServicesTestCase):
    """Both services through HAProxy (node 1 the one writer)."""

    topology = 'single_writer'
