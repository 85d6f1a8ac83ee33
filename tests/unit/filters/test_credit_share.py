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
"""CreditFilter with users' shares: a user may not spend more than their
share of the project's credits; the project's allocation still holds."""

from placement_quota.filters import credit
from placement_quota.ledger import shares
from placement_quota.ledger import store
from tests import builders
from tests.builders import day
from tests.builders import hosts
from tests.builders import lease
from tests.unit.filters import base


class TestCreditShares(base.LedgerTestCase):

    filter_class = credit.CreditFilter
    options = {('enforcement', 'credit_host_rate'): 1.0}

    def setUp(self):
        super().setUp()
        self.give_credits(100)
        self.share('alice', 30)

    def share(self, user, amount):
        with self.ledger.transaction([self.project]) as txn:
            shares.set_share(txn.connection, self.project, user,
                             store.to_micro(amount), txn.now)

    def by(self, user, body):
        return self.filter.check_create(
            builders.context(self.project, user_id=user), body)

    def test_a_lease_within_the_share_is_allowed(self):
        self.by('alice', lease(day(2), day(3), hosts('a')))
        self.assertEqual(1, len(self.live_entries()))

    def test_a_lease_past_the_share_is_denied_with_the_numbers(self):
        self.by('alice', lease(day(2), day(3), hosts('a'), name='a'))
        message = self.assertDenied(self.by, 'alice', lease(
            day(4), day(5), hosts('a'), name='b'))
        self.assertEqual(
            'The lease costs 24.00 credits (24.00 hours at 1 credit an '
            'hour); user alice of project project-a has spent 24.00 of '
            'their share of 30.00 credits (6.00 left).', message)

    def test_a_user_without_a_share_spends_the_projects_credits(self):
        self.by('bob', lease(day(2), day(4), hosts('a', 'b')))
        self.assertEqual(96.0, self.spent_of_project())

    def test_the_project_total_still_holds(self):
        self.share('alice', 1000)
        message = self.assertDenied(self.by, 'alice', lease(
            day(2), day(7), hosts('a')))
        self.assertIn('project project-a has 100.00 credits left', message)

    def test_a_refund_gives_the_share_back(self):
        first = lease(day(2), day(3), hosts('a'), name='a')
        self.by('alice', first)
        self.now = builders.NOW.replace(day=2, hour=12)
        self.filter.on_end(builders.context(self.project, user_id='alice'),
                           first)
        # 12 of the 24 credits came back: 18 of 30 are left.
        self.by('alice', lease(day(4), day(4, 18), hosts('a'), name='b'))
        self.assertEqual(2, len(self.entries()))

    def test_the_latest_share_is_in_force(self):
        self.share('alice', 10)
        self.assertDenied(self.by, 'alice', lease(day(2), day(3),
                                                  hosts('a')))

    def spent_of_project(self):
        with self.ledger.transaction() as txn:
            allocation, = txn.allocations(self.project)
            return store.from_micro(txn.spent(allocation.id))
