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
"""Every enforcement diagram of Keystone's "Strict Two-Level Limits Enforcement
Model", in the spec's order.

The resource is ``cores`` and its registered default is 10. Each test
builds the state its diagram starts from through the enforcer's claims,
then does what the diagram does: green is allowed, red is refused.
"""

import testtools

from placement_quota.limits import enforcer as enforcer_mod
from placement_quota.limits import errors
from placement_quota.limits import sources
from placement_quota.limits import tree as tree_mod

CORES = 'cores'


def spec_enforcer(root_limit=20, children=('B', 'C')):
    """A (l=root_limit) with ``children``, registered default 10."""
    projects = {'A': tree_mod.Project('A', limits={CORES: root_limit})}
    for child in children:
        projects[child] = tree_mod.Project(child, 'A')
    data = tree_mod.LimitData(registered_limits={CORES: 10},
                              projects=projects)
    return enforcer_mod.Enforcer(sources.EmbeddedSource(data))


def claim(enforcer, project_id, cores):
    with enforcer.claim(project_id, {CORES: cores}):
        pass


class TestSpecDiagrams(testtools.TestCase):

    def full_tree(self):
        """A (l=20, u=4), B (u=8), C (u=8): the tree at its limit."""
        enforcer = spec_enforcer()
        claim(enforcer, 'A', 4)
        claim(enforcer, 'B', 8)
        claim(enforcer, 'C', 8)
        return enforcer

    def assertUsage(self, enforcer, expected):
        self.assertEqual(expected, {p: enforcer.tree.usage(p, CORES)
                                    for p in expected})

    def test_01_b_and_c_can_use_8_cores_each(self):
        enforcer = spec_enforcer()
        claim(enforcer, 'A', 4)
        claim(enforcer, 'B', 8)
        claim(enforcer, 'C', 8)
        self.assertUsage(enforcer, {'A': 4, 'B': 8, 'C': 8})
        self.assertEqual(20, enforcer.tree.tree_usage('A', CORES))

    def test_02_a_claiming_two_more_cores_fails(self):
        enforcer = self.full_tree()
        error = self.assertRaises(errors.ProjectOverLimit, claim, enforcer,
                                  'A', 2)
        [info] = error.over_limits
        self.assertEqual(('tree', 20, 20, 2),
                         (info.scope, info.limit, info.tree_usage,
                          info.delta))
        self.assertUsage(enforcer, {'A': 4, 'B': 8, 'C': 8})

    def test_03_a_child_can_be_added_to_a_tree_at_its_limit(self):
        enforcer = self.full_tree()
        enforcer.tree.add_project('D', 'A')
        self.assertEqual(['B', 'C', 'D'], sorted(enforcer.tree.children('A')))
        self.assertEqual(0, enforcer.tree.usage('D', CORES))

    def test_04_d_cannot_claim_cores_of_a_full_tree(self):
        enforcer = self.full_tree()
        enforcer.tree.add_project('D', 'A')
        error = self.assertRaises(errors.ProjectOverLimit, claim, enforcer,
                                  'D', 2)
        self.assertEqual(('D', 'A', 'A'),
                         (error.project_id, error.parent_id, error.root_id))
        self.assertEqual(0, enforcer.tree.usage('D', CORES))

    def test_05_a_grandchild_of_a_is_forbidden(self):
        enforcer = self.full_tree()
        error = self.assertRaises(errors.DepthExceeded,
                                  enforcer.tree.add_project, 'D', 'C')
        self.assertEqual(('D', 'C', 'A'), (error.project_id, error.parent_id,
                                           error.grandparent_id))
        self.assertNotIn('D', enforcer.tree)

    def test_06_b_gets_an_override_of_12(self):
        enforcer = self.full_tree()
        enforcer.tree.set_limit('B', CORES, 12)
        self.assertEqual(12, enforcer.tree.effective_limit('B', CORES))
        # The tree is still at A's limit: B cannot use its override yet.
        self.assertRaises(errors.ProjectOverLimit, claim, enforcer, 'B', 1)

    def test_07_cores_released_from_a_and_c_can_be_claimed_by_b(self):
        enforcer = self.full_tree()
        enforcer.tree.set_limit('B', CORES, 12)
        enforcer.release('A', {CORES: 2})
        enforcer.release('C', {CORES: 2})
        self.assertUsage(enforcer, {'A': 2, 'B': 8, 'C': 6})
        claim(enforcer, 'B', 4)
        self.assertUsage(enforcer, {'A': 2, 'B': 12, 'C': 6})
        self.assertEqual(20, enforcer.tree.tree_usage('A', CORES))

    def test_08_c_cannot_reclaim_its_cores_under_its_own_limit(self):
        enforcer = self.full_tree()
        enforcer.tree.set_limit('B', CORES, 12)
        enforcer.release('A', {CORES: 2})
        enforcer.release('C', {CORES: 2})
        claim(enforcer, 'B', 4)
        error = self.assertRaises(errors.ProjectOverLimit, claim, enforcer,
                                  'C', 2)
        [info] = error.over_limits
        # C is under its own default of 10 (6 + 2 = 8); the tree is not.
        self.assertEqual(('tree', 10, 6, 20, 20),
                         (info.scope, info.project_limit, info.project_usage,
                          info.tree_limit, info.tree_usage))

    def test_09_a_child_limit_of_30_over_the_parent_20_is_refused(self):
        enforcer = spec_enforcer()
        error = self.assertRaises(errors.ChildLimitExceedsParent,
                                  enforcer.tree.set_limit, 'B', CORES, 30)
        self.assertEqual(('B', 'A', CORES, 20, 30),
                         (error.project_id, error.parent_id, error.resource,
                          error.limit, error.value))
        self.assertIsNone(enforcer.tree.explicit_limit('B', CORES))

    def test_10_a_new_child_with_limit_30_over_the_parent_is_refused(self):
        enforcer = spec_enforcer()
        error = self.assertRaises(errors.ChildLimitExceedsParent,
                                  enforcer.tree.add_project, 'D', 'A',
                                  limits={CORES: 30})
        self.assertEqual(('D', 'A', 20, 30), (error.project_id,
                                              error.parent_id, error.limit,
                                              error.value))
        self.assertNotIn('D', enforcer.tree)

    def test_11_a_root_can_have_a_limit_of_6_under_the_default_of_10(self):
        enforcer = spec_enforcer(root_limit=6, children=())
        self.assertEqual(6, enforcer.tree.effective_limit('A', CORES))

    def test_12_a_child_of_a_with_limit_6_defaults_to_6_not_10(self):
        enforcer = spec_enforcer(root_limit=6, children=('B',))
        self.assertEqual(6, enforcer.tree.effective_limit('B', CORES))
        self.assertRaises(errors.ProjectOverLimit, claim, enforcer, 'B', 7)

    def test_13_every_child_of_a_with_limit_6_defaults_to_6(self):
        enforcer = spec_enforcer(root_limit=6, children=('B',))
        enforcer.tree.add_project('C', 'A')
        enforcer.tree.add_project('D', 'A')
        self.assertEqual({'B': 6, 'C': 6, 'D': 6}, {
            p: enforcer.tree.effective_limit(p, CORES) for p in 'BCD'})

    def test_14_hierarchy_example_limits_with_d_on_the_default(self):
        # The GET /limits?show_hierarchy=true example: ram_mb, default 2560.
        data = tree_mod.LimitData(
            registered_limits={'ram_mb': 2560},
            projects={'A': tree_mod.Project('A', limits={'ram_mb': 20480}),
                      'B': tree_mod.Project('B', 'A', limits={
                          'ram_mb': 10240}),
                      'C': tree_mod.Project('C', 'A', limits={
                          'ram_mb': 5120}),
                      'D': tree_mod.Project('D', 'A')})
        tree = tree_mod.ProjectTree.from_data(data)
        self.assertEqual(
            {'A': 20480, 'B': 10240, 'C': 5120, 'D': 2560},
            {p: tree.effective_limit(p, 'ram_mb') for p in 'ABCD'})


class TestOptimizedUsageCalculation(testtools.TestCase):
    """The aggregate walk-through at the end of Keystone's "Strict Two-Level
    Limits Enforcement Model".

    Its example tree has depth three (A -> B -> D, E), which the strict
    two-level model forbids; the same claims on a two-level tree (A with
    children C, D, E; limits 10) bubble up exactly as the spec describes.
    """

    def setUp(self):
        super().setUp()
        data = tree_mod.LimitData(
            registered_limits={CORES: 10},
            projects={p: tree_mod.Project(p, None if p == 'A' else 'A')
                      for p in 'ACDE'})
        self.enforcer = enforcer_mod.Enforcer(sources.EmbeddedSource(data))
        self.tree = self.enforcer.tree

    def test_a_claim_on_d_sets_its_usage_aggregate_and_the_roots(self):
        claim(self.enforcer, 'D', 4)
        self.assertEqual((4, 4, 4), (self.tree.usage('D', CORES),
                                     self.tree.aggregate('D', CORES),
                                     self.tree.aggregate('A', CORES)))
        self.assertEqual(0, self.tree.usage('A', CORES))

    def test_a_claim_on_c_adds_to_the_roots_aggregate(self):
        claim(self.enforcer, 'D', 4)
        claim(self.enforcer, 'C', 6)
        self.assertEqual(10, self.tree.aggregate('A', CORES))

    def test_e_claiming_2_fails_once_the_root_aggregate_is_at_limit(self):
        claim(self.enforcer, 'D', 4)
        claim(self.enforcer, 'C', 6)
        self.assertRaises(errors.ProjectOverLimit, claim, self.enforcer, 'E',
                          2)
        self.assertEqual(0, self.tree.usage('E', CORES))
        self.assertEqual(10, self.tree.aggregate('A', CORES))

    def test_the_spec_depth_three_example_tree_is_refused(self):
        data = tree_mod.LimitData(projects={
            'A': tree_mod.Project('A'), 'B': tree_mod.Project('B', 'A'),
            'C': tree_mod.Project('C', 'A'), 'D': tree_mod.Project('D', 'B'),
            'E': tree_mod.Project('E', 'B')})
        found = tree_mod.check(data)
        self.assertEqual([('depth', 'D'), ('depth', 'E')],
                         [(v.rule, v.project_id) for v in found])
