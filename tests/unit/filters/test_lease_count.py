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
"""LeaseCountFilter: how many pending and active leases a project holds."""

import datetime

from placement_quota.filters import lease_count
from tests.builders import day
from tests.builders import lease
from tests.unit.filters import base


class TestLeaseCountFilter(base.LedgerTestCase):

    filter_class = lease_count.LeaseCountFilter
    options = {('enforcement', 'max_leases_per_project'): 2}

    def two_leases(self, project=None):
        first = lease(day(2), day(3), name='a')
        self.create(first, project)
        self.create(lease(day(4), day(5), name='b'), project)
        return first

    def test_leases_up_to_the_limit_are_allowed_and_recorded(self):
        self.two_leases()
        self.assertEqual(['pending', 'pending'], self.states())

    def test_third_lease_is_denied_when_two_are_allowed(self):
        self.two_leases()
        message = self.assertDenied(self.create, lease(day(6), day(7),
                                                       name='c'))
        self.assertEqual('Project project-a already holds 2 pending or '
                         'active leases; at most 2 are allowed.', message)

    def test_no_limit_by_default(self):
        self.conf.clear_override('max_leases_per_project', 'enforcement')
        for d in range(2, 7):
            self.create(lease(day(d), day(d + 1), name='l%d' % d))
        self.assertEqual(5, len(self.live_entries()))

    def test_ended_lease_frees_its_place(self):
        first = self.two_leases()
        self.end(first)
        self.assertIsNone(self.create(lease(day(6), day(7), name='c')))

    def test_lease_past_its_end_date_no_longer_counts(self):
        self.two_leases()
        self.now = datetime.datetime(2026, 6, 3, 12)
        self.assertIsNone(self.create(lease(day(6), day(7), name='c')))

    def test_active_lease_still_counts(self):
        self.two_leases()
        self.now = datetime.datetime(2026, 6, 2, 12)
        self.assertDenied(self.create, lease(day(6), day(7), name='c'))

    def test_update_of_a_counted_lease_is_allowed_at_the_limit(self):
        first = self.two_leases()
        self.assertIsNone(self.update(first, lease(day(2), day(4),
                                                   name='a')))

    def test_update_replaces_its_lease_instead_of_adding_one(self):
        first = self.two_leases()
        self.update(first, lease(day(2), day(4), name='a'))
        self.assertEqual(2, len(self.live_entries()))

    def test_other_projects_do_not_count(self):
        self.two_leases(project='other')
        self.assertIsNone(self.create(lease(day(2), day(3), name='a')))

    def test_denied_lease_takes_no_place(self):
        self.two_leases()
        self.assertDenied(self.create, lease(day(6), day(7), name='c'))
        self.end(lease(day(2), day(3), name='a'))
        self.assertIsNone(self.create(lease(day(8), day(9), name='d')))

    def test_chain_records_the_denied_lease_and_does_not_count_it(self):
        chain = self.chain()
        for d, name in ((2, 'a'), (4, 'b')):
            self.create(lease(day(d), day(d + 1), name=name), via=chain)
        self.assertDenied(self.create, lease(day(6), day(7), name='c'),
                          via=chain)
        self.assertEqual(['pending', 'pending', 'denied'], self.states())
        self.end(lease(day(2), day(3), name='a'), via=chain)
        self.assertIsNone(self.create(lease(day(8), day(9), name='d'),
                                      via=chain))

    def test_exempted_project_is_not_limited(self):
        chain = self.chain(exempted=[self.project])
        for d in (2, 4, 6):
            self.create(lease(day(d), day(d + 1), name='l%d' % d), via=chain)
        self.assertEqual([], self.entries())
