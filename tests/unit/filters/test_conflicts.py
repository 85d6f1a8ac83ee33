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
"""A conflict re-runs the whole admission: when the database rolls an
admission back because a competing transaction wrote the same rows (a
deadlock; on Galera a certification conflict at COMMIT or a brute-force
abort at any statement), it is locked, read and decided again, at most
``[ledger] conflict_attempts`` times, then answered 503."""

import contextlib

import fixtures

from placement_quota import errors as pq_errors
from placement_quota.filters import admit
from placement_quota.filters import base as filters_base
from placement_quota.filters import chain as chain_mod
from placement_quota.filters import lease_count
from placement_quota.ledger import errors as ledger_errors
from placement_quota.ledger.db import engine as ledger_engine
from tests.builders import day
from tests.builders import lease
from tests.unit.filters import base


class Outside(filters_base.BaseFilter):
    """A filter that does not use the ledger, counting what it is asked."""

    name = 'Outside'

    def __init__(self):
        self.asked = 0

    def check_create(self, context, lease):
        self.asked += 1

    def check_update(self, context, current_lease, lease):
        self.asked += 1

    def on_end(self, context, lease):
        self.asked += 1


class TestConflicts(base.LedgerTestCase):

    filter_class = lease_count.LeaseCountFilter
    options = {('enforcement', 'max_leases_per_project'): 1,
               ('ledger', 'conflict_attempts'): 3}

    def setUp(self):
        super().setUp()
        # No real pause between attempts.
        self.useFixture(fixtures.MockPatchObject(
            ledger_engine, 'conflict_pause', lambda attempt: 0))
        self.services.ledger.conflict_attempts = 3
        self.opened = 0

    def conflict_at_commit(self, times):
        """The ledger's next ``times`` transactions are rolled back at
        their end, as a Galera node does when certification fails."""
        original = self.services.ledger.transaction

        @contextlib.contextmanager
        def transaction(*args, **kwargs):
            self.opened += 1
            with original(*args, **kwargs) as txn:
                yield txn
                if self.opened <= times:
                    raise ledger_errors.LedgerConflict(
                        'Deadlock: wsrep aborted transaction')
        self.services.ledger.transaction = transaction

    def conflict_in_check(self, times):
        """The next ``times`` checks of the filter meet a conflict (a
        brute-force abort of a statement)."""
        original = self.filter_class.check
        calls = []

        def check(filter_, adm):
            calls.append(adm)
            if len(calls) <= times:
                raise ledger_errors.LedgerConflict('Deadlock found')
            return original(filter_, adm)
        self.useFixture(fixtures.MockPatchObject(self.filter_class, 'check',
                                                 check))
        return calls

    def test_a_conflict_at_commit_runs_the_admission_again(self):
        self.conflict_at_commit(1)
        self.create(lease(day(2), day(3)), via=self.chain())
        self.assertEqual((2, ['pending']), (self.opened, self.states()))

    def test_the_admission_run_again_reads_the_ledger_again(self):
        # The competitor that won took the project's last lease.
        self.create(lease(day(2), day(3)))
        self.conflict_at_commit(1)
        self.assertRaises(filters_base.EnforcementDenied, self.create,
                          lease(day(4), day(5)), via=self.chain())

    def test_a_conflict_in_a_filters_check_is_no_500_but_run_again(self):
        calls = self.conflict_in_check(1)
        self.create(lease(day(2), day(3)), via=self.chain())
        self.assertEqual((2, ['pending']), (len(calls), self.states()))

    def test_a_filter_alone_runs_again_after_a_conflict(self):
        calls = self.conflict_in_check(2)
        self.create(lease(day(2), day(3)))
        self.assertEqual((3, ['pending']), (len(calls), self.states()))

    def test_the_last_conflict_is_a_503_and_nothing_is_recorded(self):
        self.conflict_at_commit(3)
        error = self.assertRaises(chain_mod.ServiceUnavailable, self.create,
                                  lease(day(2), day(3)), via=self.chain())
        self.assertEqual((503, 3, []), (pq_errors.status_of(error),
                                        self.opened, self.states()))
        self.assertIn('conflicted with competing admissions 3 times',
                      str(error))

    def test_a_filter_outside_the_ledger_is_not_asked_again(self):
        self.conflict_at_commit(2)
        outside = Outside()
        chain = chain_mod.FilterChain(self.conf,
                                      filters=[outside, self.filter])
        self.create(lease(day(2), day(3)), via=chain)
        self.assertEqual((1, 3, ['pending']),
                         (outside.asked, self.opened, self.states()))

    def test_one_attempt_never_runs_again(self):
        self.services.ledger.conflict_attempts = 1
        self.conflict_at_commit(1)
        self.assertRaises(ledger_errors.LedgerConflict, self.create,
                          lease(day(2), day(3)))
        self.assertEqual((1, []), (self.opened, self.states()))

    def test_a_conflict_is_found_in_the_cause_chain(self):
        try:
            try:
                raise ledger_errors.LedgerConflict('Deadlock found')
            except ledger_errors.LedgerConflict as exc:
                raise RuntimeError('wrapped') from exc
        except RuntimeError as wrapped:
            self.assertIsInstance(admit.conflict(wrapped),
                                  ledger_errors.LedgerConflict)
        self.assertIsNone(admit.conflict(
            ledger_errors.LedgerUnavailable('down')))

    def raised_while_handling_a_conflict(self, error):
        """``error``, raised while a LedgerConflict was handled."""
        try:
            try:
                raise ledger_errors.LedgerConflict('Deadlock found')
            except ledger_errors.LedgerConflict:
                raise error
        except type(error) as raised:
            return raised

    def test_a_denial_raised_while_handling_a_conflict_is_an_answer(self):
        self.assertIsNone(admit.conflict(
            self.raised_while_handling_a_conflict(
                filters_base.EnforcementDenied('no'))))

    def test_an_outage_raised_while_handling_a_conflict_is_an_outage(self):
        self.assertIsNone(admit.conflict(
            self.raised_while_handling_a_conflict(
                ledger_errors.LedgerUnavailable('connection lost'))))
