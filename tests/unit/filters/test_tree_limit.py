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
"""ProjectTreeLimitFilter: a project's and its tree's reserved peaks
against the limits of an embedded limits file."""

import datetime
import os

from placement_quota.filters import tree_limit
from placement_quota.ledger import models
from tests.builders import day
from tests.builders import floatingips
from tests.builders import hosts
from tests.builders import instances
from tests.builders import lease
from tests.unit.filters import base

ROOT = 'root-x'
CHILD = 'child-x'
SIBLING = 'sibling-x'

LIMITS = """\
registered_limits: {hosts: 3}
projects:
  root-x: {limits: {hosts: 5}}
  child-x: {parent: root-x, limits: {hosts: 4}}
  sibling-x: {parent: root-x}
"""


class TestProjectTreeLimitFilter(base.LedgerTestCase):

    filter_class = tree_limit.ProjectTreeLimitFilter

    def setUp(self):
        super().setUp()
        path = os.path.join(self.tmp, 'limits.yaml')
        with open(path, 'w') as f:
            f.write(LIMITS)
        self.set('limits', limits_file=path)

    def test_child_within_its_limit_is_allowed_and_recorded(self):
        self.create(lease(day(2), day(3), hosts('a', 'b', 'c', 'd')),
                    project=CHILD)
        entry, = self.entries(CHILD)
        self.assertEqual({'hosts': 4}, entry.amounts)

    def test_child_over_its_own_limit_is_denied_with_numbers(self):
        self.create(lease(day(2), day(4), hosts('a', 'b', 'c')),
                    project=CHILD)
        message = self.assertDenied(self.create, lease(
            day(3), day(5), hosts('d', 'e')), project=CHILD)
        self.assertEqual(
            'Project child-x (parent root-x) is over a limit for hosts: the '
            'lease asks for 2 from 2026-06-03 00:00 to 2026-06-05 00:00; '
            'project child-x has 3 already reserved at the peak, from '
            '2026-06-03 00:00 to 2026-06-04 00:00; its limit is 4.', message)

    def test_tree_over_the_root_limit_is_denied(self):
        self.create(lease(day(2), day(4), hosts('a', 'b', 'c')),
                    project=CHILD)
        message = self.assertDenied(self.create, lease(
            day(3), day(5), hosts('d', 'e', 'f')), project=SIBLING)
        self.assertMentions(message, 'the tree of root-x has 3 already '
                            'reserved', 'its limit is 5.')

    def test_sibling_in_a_later_window_is_allowed(self):
        self.create(lease(day(2), day(4), hosts('a', 'b', 'c')),
                    project=CHILD)
        self.create(lease(day(4), day(5), hosts('d', 'e', 'f')),
                    project=SIBLING)
        self.assertEqual(1, len(self.entries(SIBLING)))

    def test_child_without_a_limit_of_its_own_gets_the_registered_one(self):
        message = self.assertDenied(self.create, lease(
            day(2), day(3), hosts(*'abcd')), project=SIBLING)
        self.assertMentions(message, 'project sibling-x has none reserved '
                            'then; its limit is 3.')

    def test_root_limit_counts_its_children(self):
        self.create(lease(day(2), day(4), hosts('a', 'b', 'c', 'd')),
                    project=CHILD)
        message = self.assertDenied(self.create, lease(
            day(2), day(3), hosts('e', 'f')), project=ROOT)
        self.assertMentions(message, 'Project root-x is over a limit',
                            'the tree of root-x has 4 already reserved')

    def test_other_trees_do_not_count(self):
        self.create(lease(day(2), day(3), hosts('a', 'b', 'c')),
                    project='elsewhere')
        self.create(lease(day(2), day(3), hosts(*'defg')), project=CHILD)
        self.assertEqual(1, len(self.entries(CHILD)))

    def test_unknown_project_gets_the_registered_limit(self):
        message = self.assertDenied(self.create, lease(
            day(2), day(3), hosts(*'abcd')))
        self.assertEqual(
            'Project project-a is over a limit for hosts: the lease asks for '
            '4 from 2026-06-02 00:00 to 2026-06-03 00:00; the tree of '
            'project-a has none reserved then; its limit is 3.', message)

    def test_resource_without_any_limit_is_not_checked(self):
        self.create(lease(day(2), day(3), floatingips(50)), project=CHILD)
        self.assertEqual(1, len(self.entries(CHILD)))

    def test_only_the_listed_resources_are_checked(self):
        self.set(tree_limit_resources=['instances'])
        self.create(lease(day(2), day(3), hosts(*'abcdefg')))
        self.assertEqual(1, len(self.entries()))

    def test_listed_resource_without_a_limit_gets_the_unregistered_one(self):
        self.set(tree_limit_resources=['instances'])
        self.set('limits', unregistered_resource_limit=2)
        message = self.assertDenied(self.create, lease(
            day(2), day(3), instances(3)))
        self.assertMentions(message, 'over a limit for instances',
                            'its limit is 2.')

    def test_registered_limits_option_applies_without_a_limits_file(self):
        self.conf.clear_override('limits_file', 'limits')
        self.set('limits', registered_limits={'hosts': '2'})
        message = self.assertDenied(self.create, lease(
            day(2), day(3), hosts('a', 'b', 'c')))
        self.assertMentions(message, 'its limit is 2.')

    def test_account_of_the_admin_api_replaces_the_files_entry(self):
        with self.ledger.transaction() as txn:
            txn.connection.execute(models.accounts.insert().values(
                account_id=CHILD, parent_id=ROOT, limits={'hosts': 1},
                properties={}, generation=1, created_at=self.now))
        message = self.assertDenied(self.create, lease(
            day(2), day(3), hosts('a', 'b')), project=CHILD)
        self.assertMentions(message, 'project child-x has none reserved '
                            'then; its limit is 1.')

    # --- locks ----------------------------------------------------------

    def test_child_admission_locks_its_root(self):
        self.assertEqual([ROOT], self.filter.ledger_locks(
            self.filter.context(self.context(CHILD))))

    def test_root_and_unknown_projects_lock_nothing_more(self):
        self.assertEqual(([], []), (
            self.filter.ledger_locks(self.filter.context(self.context(ROOT))),
            self.filter.ledger_locks(self.filter.context(self.context()))))

    # --- update and end -------------------------------------------------

    def test_update_counts_only_the_difference(self):
        first = lease(day(2), day(4), hosts('a', 'b', 'c'), name='l')
        self.create(first, project=CHILD)
        self.update(first, lease(day(2), day(4), hosts(*'abcd'), name='l'),
                    project=CHILD)
        entry, = self.entries(CHILD)
        self.assertEqual({'hosts': 4}, entry.amounts)

    def test_update_past_the_limit_is_denied(self):
        first = lease(day(2), day(4), hosts('a', 'b', 'c'), name='l')
        self.create(first, project=CHILD)
        message = self.assertDenied(self.update, first, lease(
            day(2), day(4), hosts(*'abcde'), name='l'), project=CHILD)
        self.assertMentions(message, 'the lease asks for 5',
                            'project child-x has none reserved then; its '
                            'limit is 4.')

    def test_ended_lease_frees_the_rest_of_its_window(self):
        first = lease(day(2), day(9), hosts(*'abcd'), name='l')
        self.create(first, project=CHILD)
        self.now = datetime.datetime(2026, 6, 3, 0)
        self.end(first, project=CHILD)
        self.create(lease(day(4), day(5), hosts(*'efgh'), name='m'),
                    project=CHILD)
        self.assertEqual(['terminated', 'pending'], self.states(CHILD))

    def test_ended_lease_still_holds_the_part_it_used(self):
        first = lease(day(2), day(9), hosts(*'abcd'), name='l')
        self.create(first, project=CHILD)
        self.now = datetime.datetime(2026, 6, 3, 0)
        self.end(first, project=CHILD)
        self.assertDenied(self.create, lease(day(2), day(5), hosts('e'),
                                             name='m'), project=CHILD)

    # --- exemption ------------------------------------------------------

    def test_exempted_project_is_not_limited(self):
        chain = self.chain(exempted=[CHILD])
        self.assertIsNone(self.create(lease(day(2), day(3), hosts(*'abcdef')),
                                      project=CHILD, via=chain))
