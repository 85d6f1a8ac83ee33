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
"""UserLimitFilter: leases, hosts and instances per user inside a
project, counted in the ledger."""

from placement_quota.filters import user_limit
from tests import builders
from tests.builders import day
from tests.builders import hosts
from tests.builders import instances
from tests.builders import lease
from tests.unit.filters import base


class UserLimitTestCase(base.LedgerTestCase):

    filter_class = user_limit.UserLimitFilter

    def by(self, user, body, project=None):
        """check-create of ``body`` asked by ``user``."""
        return self.filter.check_create(
            builders.context(project or self.project, user_id=user), body)


class TestLeasesPerUser(UserLimitTestCase):

    options = {('enforcement', 'max_leases_per_user'): 2}

    def test_leases_up_to_the_limit_are_allowed(self):
        self.by('alice', lease(day(2), day(3), name='a'))
        self.by('alice', lease(day(4), day(5), name='b'))
        self.assertEqual(2, len(self.live_entries()))

    def test_one_more_is_denied_with_the_numbers(self):
        self.by('alice', lease(day(2), day(3), name='a'))
        self.by('alice', lease(day(4), day(5), name='b'))
        message = self.assertDenied(self.by, 'alice',
                                    lease(day(6), day(7), name='c'))
        self.assertEqual(
            'User alice of project project-a already holds 2 pending or '
            'active leases; at most 2 are allowed per user.', message)

    def test_another_user_of_the_project_has_a_limit_of_its_own(self):
        self.by('alice', lease(day(2), day(3), name='a'))
        self.by('alice', lease(day(4), day(5), name='b'))
        self.by('bob', lease(day(6), day(7), name='c'))
        self.assertEqual(3, len(self.live_entries()))

    def test_the_same_user_in_another_project_is_counted_apart(self):
        self.by('alice', lease(day(2), day(3), name='a'))
        self.by('alice', lease(day(4), day(5), name='b'))
        self.by('alice', lease(day(6), day(7), name='c'), project='other')
        self.assertEqual(1, len(self.live_entries('other')))

    def test_an_update_does_not_count_a_new_lease(self):
        first = lease(day(2), day(3), name='a')
        self.by('alice', first)
        self.by('alice', lease(day(4), day(5), name='b'))
        self.filter.check_update(
            builders.context(self.project, user_id='alice'), first,
            lease(day(2), day(4), name='a'))
        self.assertEqual(2, len(self.live_entries()))

    def test_a_request_without_a_user_is_not_limited_per_user(self):
        for name in 'abc':
            self.filter.check_create({'project_id': self.project},
                                     lease(day(2), day(3), name=name))
        self.assertEqual(3, len(self.live_entries()))


class TestPeaksPerUser(UserLimitTestCase):

    options = {('enforcement', 'max_hosts_per_user'): 3,
               ('enforcement', 'max_instances_per_user'): 4}

    def test_overlapping_hosts_of_one_user_add_up(self):
        self.by('alice', lease(day(2), day(4), hosts('h1', 'h2'), name='a'))
        message = self.assertDenied(self.by, 'alice', lease(
            day(3), day(5), hosts('h3', 'h4'), name='b'))
        self.assertEqual(
            'User alice of project project-a: the lease asks for 2 hosts '
            'from 2026-06-03 00:00 to 2026-06-05 00:00, and the user has 2 '
            'already reserved at the peak, from 2026-06-03 00:00 to '
            '2026-06-04 00:00; at most 3 per user.', message)

    def test_hosts_of_another_user_do_not_count(self):
        self.by('alice', lease(day(2), day(4), hosts('h1', 'h2'), name='a'))
        self.by('bob', lease(day(3), day(5), hosts('h3', 'h4'), name='b'))
        self.assertEqual(2, len(self.live_entries()))

    def test_leases_apart_in_time_do_not_add_up(self):
        self.by('alice', lease(day(2), day(3), hosts('h1', 'h2'), name='a'))
        self.by('alice', lease(day(3), day(4), hosts('h3', 'h4'), name='b'))
        self.assertEqual(2, len(self.live_entries()))

    def test_instances_per_user_are_limited(self):
        self.by('alice', lease(day(2), day(4), instances(3), name='a'))
        message = self.assertDenied(self.by, 'alice', lease(
            day(3), day(5), instances(2), name='b'))
        self.assertIn('asks for 2 instances', message)
        self.assertIn('at most 4 per user', message)

    def test_an_update_counts_against_the_leases_owner(self):
        first = lease(day(2), day(4), hosts('h1'), name='a')
        self.by('alice', first)
        self.by('alice', lease(day(2), day(4), hosts('h2'), name='b'))
        # bob (an admin of the project) grows alice's lease past her limit.
        message = self.assertDenied(
            self.filter.check_update,
            builders.context(self.project, user_id='bob'), first,
            lease(day(2), day(4), hosts('h1', 'h3', 'h4'), name='a'))
        self.assertIn('User alice of project project-a', message)
