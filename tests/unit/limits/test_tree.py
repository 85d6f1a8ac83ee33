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
"""The rules of the project tree, one per test, and tree.check()."""

import testtools

from placement_quota.limits import errors
from placement_quota.limits import tree as tree_mod

CORES = 'cores'
P = tree_mod.Project


def data(registered=None, usage=None, **projects):
    return tree_mod.LimitData(registered_limits=registered or {CORES: 10},
                              projects={p.id: p for p in projects.values()},
                              usage=usage or {})


class TestModelNames(testtools.TestCase):

    def test_keystone_spelling_is_accepted(self):
        self.assertEqual(tree_mod.STRICT_TWO_LEVEL,
                         tree_mod.normalize_model('strict_two_level'))

    def test_spec_spelling_is_accepted(self):
        self.assertEqual(tree_mod.STRICT_TWO_LEVEL,
                         tree_mod.normalize_model('strict-two-level'))

    def test_flat_is_accepted(self):
        self.assertEqual(tree_mod.FLAT, tree_mod.normalize_model('flat'))

    def test_unknown_model_names_the_value(self):
        error = self.assertRaises(ValueError, tree_mod.normalize_model,
                                  'three-level')
        self.assertIn("'three-level'", str(error))


class TestStructure(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tree = tree_mod.ProjectTree({CORES: 10})
        self.tree.add_project('A')
        self.tree.add_project('B', 'A')

    def test_projects_are_networkx_nodes_with_parent_edges(self):
        self.assertEqual([('A', 'B')], list(self.tree.graph.edges))

    def test_a_duplicate_project_is_refused(self):
        self.assertRaises(errors.DuplicateProject, self.tree.add_project,
                          'B', 'A')

    def test_an_unknown_parent_is_refused(self):
        error = self.assertRaises(errors.UnknownParent,
                                  self.tree.add_project, 'X', 'nope')
        self.assertEqual(('X', 'nope'), (error.project_id, error.parent_id))

    def test_a_root_can_have_any_number_of_children(self):
        for i in range(50):
            self.tree.add_project('child-%d' % i, 'A')
        self.assertEqual(51, len(self.tree.children('A')))

    def test_several_trees_have_one_root_each(self):
        self.tree.add_project('Z')
        self.assertEqual(['A', 'Z'], sorted(self.tree.roots()))
        self.assertEqual('A', self.tree.root('B'))
        self.assertEqual('Z', self.tree.root('Z'))

    def test_a_project_with_children_cannot_be_removed(self):
        error = self.assertRaises(errors.HasChildren,
                                  self.tree.remove_project, 'A')
        self.assertEqual(['B'], error.children)

    def test_removing_a_child_takes_its_usage_out_of_the_root(self):
        self.tree.add_usage('B', {CORES: 3})
        self.tree.remove_project('B')
        self.assertEqual(0, self.tree.aggregate('A', CORES))
        self.assertNotIn('B', self.tree.graph)

    def test_unknown_project_lookups_raise_unknown_project(self):
        self.assertRaises(errors.UnknownProject, self.tree.usage, 'X', CORES)


class TestLimits(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tree = tree_mod.ProjectTree({CORES: 10})
        self.tree.add_project('A', limits={CORES: 20})
        self.tree.add_project('B', 'A')

    def test_a_root_without_override_gets_the_registered_default(self):
        self.tree.add_project('Z')
        self.assertEqual(10, self.tree.effective_limit('Z', CORES))

    def test_a_child_limit_equal_to_the_parent_is_allowed(self):
        self.tree.set_limit('B', CORES, 20)
        self.assertEqual(20, self.tree.effective_limit('B', CORES))

    def test_children_limits_may_sum_over_the_parent(self):
        self.tree.add_project('C', 'A', limits={CORES: 15})
        self.tree.set_limit('B', CORES, 15)
        self.assertEqual(30, sum(self.tree.explicit_limit(p, CORES)
                                 for p in 'BC'))

    def test_a_root_limit_under_a_childs_override_is_refused(self):
        self.tree.set_limit('B', CORES, 15)
        error = self.assertRaises(errors.ChildLimitExceedsParent,
                                  self.tree.set_limit, 'A', CORES, 12)
        self.assertEqual(('B', 'A', 12, 15), (error.project_id,
                                              error.parent_id, error.limit,
                                              error.value))
        self.assertEqual(20, self.tree.explicit_limit('A', CORES))

    def test_an_unlimited_child_under_a_limited_parent_is_refused(self):
        self.assertRaises(errors.ChildLimitExceedsParent,
                          self.tree.set_limit, 'B', CORES, -1)

    def test_a_child_of_an_unlimited_root_gets_the_default(self):
        self.tree.set_limit('A', CORES, -1)
        self.assertEqual(10, self.tree.effective_limit('B', CORES))

    def test_an_unregistered_resource_is_limited_to_zero_by_default(self):
        self.assertEqual(0, self.tree.effective_limit('B', 'gpus'))

    def test_the_unregistered_limit_is_configurable(self):
        tree = tree_mod.ProjectTree(unregistered_limit=-1)
        tree.add_project('A')
        self.assertEqual(-1, tree.effective_limit('A', 'gpus'))

    def test_unsetting_an_override_falls_back_to_the_default(self):
        self.tree.set_limit('B', CORES, 15)
        self.tree.unset_limit('B', CORES)
        self.assertEqual(10, self.tree.effective_limit('B', CORES))

    def test_a_limit_below_minus_one_names_project_resource_value(self):
        error = self.assertRaises(errors.InvalidLimitValue,
                                  self.tree.set_limit, 'B', CORES, -2)
        self.assertEqual(('B', CORES, -2), (error.project_id, error.resource,
                                            error.value))
        self.assertIn('-2', str(error))

    def test_a_boolean_limit_is_refused(self):
        self.assertRaises(errors.InvalidLimitValue,
                          self.tree.set_registered_limit, CORES, True)

    def test_the_flat_limit_ignores_the_parent(self):
        self.tree.set_limit('A', CORES, 5)
        self.assertEqual((10, 5), (self.tree.flat_limit('B', CORES),
                                   self.tree.effective_limit('B', CORES)))


class TestLimitChangesKeepTheRules(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tree = tree_mod.ProjectTree({CORES: 10})
        self.tree.add_project('A', limits={CORES: 20})
        self.tree.add_project('B', 'A', limits={CORES: 15})

    def test_unsetting_a_root_limit_under_a_childs_is_refused(self):
        self.assertRaises(errors.ChildLimitExceedsParent,
                          self.tree.unset_limit, 'A', CORES)
        self.assertEqual(20, self.tree.explicit_limit('A', CORES))

    def test_lowering_the_default_under_a_childs_limit_is_refused(self):
        self.tree.add_project('Z')
        self.tree.add_project('Y', 'Z', limits={CORES: 8})
        self.assertRaises(errors.ChildLimitExceedsParent,
                          self.tree.set_registered_limit, CORES, 5)
        self.assertEqual(10, self.tree.default_limit(CORES))


class TestUsage(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tree = tree_mod.ProjectTree({CORES: 10})
        self.tree.add_project('A')
        self.tree.add_project('B', 'A')
        self.tree.add_project('C', 'A')

    def test_usage_bubbles_up_to_the_root_aggregate(self):
        self.tree.add_usage('B', {CORES: 3})
        self.tree.add_usage('C', {CORES: 2})
        self.tree.add_usage('A', {CORES: 1})
        self.assertEqual((3, 6), (self.tree.aggregate('B', CORES),
                                  self.tree.aggregate('A', CORES)))

    def test_tree_usage_equals_the_naive_sum(self):
        self.tree.add_usage('B', {CORES: 3})
        self.tree.add_usage('C', {CORES: 4})
        self.assertEqual(self.tree.naive_tree_usage('C', CORES),
                         self.tree.tree_usage('C', CORES))

    def test_set_usage_adjusts_the_aggregate_by_the_difference(self):
        self.tree.add_usage('B', {CORES: 3})
        self.tree.set_usage('B', {CORES: 1})
        self.assertEqual(1, self.tree.aggregate('A', CORES))

    def test_rebuild_recomputes_aggregates_from_usage(self):
        self.tree.add_usage('B', {CORES: 3})
        self.tree._node('A').aggregate[CORES] = 99
        self.tree.rebuild_aggregates()
        self.assertEqual(3, self.tree.aggregate('A', CORES))

    def test_to_data_round_trips_through_from_data(self):
        self.tree.set_limit('B', CORES, 5)
        self.tree.add_usage('C', {CORES: 2})
        copy = tree_mod.ProjectTree.from_data(self.tree.to_data())
        self.assertEqual((5, 2, 2), (copy.explicit_limit('B', CORES),
                                     copy.usage('C', CORES),
                                     copy.aggregate('A', CORES)))


class TestCheck(testtools.TestCase):

    def rules(self, limit_data):
        return [(v.rule, v.project_id) for v in tree_mod.check(limit_data)]

    def test_a_valid_tree_has_no_violation(self):
        self.assertEqual([], self.rules(data(a=P('A', limits={CORES: 20}),
                                             b=P('B', 'A'))))

    def test_a_grandchild_is_reported_with_parent_and_grandparent(self):
        [error] = tree_mod.check(data(a=P('A'), b=P('B', 'A'),
                                      c=P('C', 'B')))
        self.assertIsInstance(error, errors.DepthExceeded)
        self.assertEqual(('C', 'B', 'A'), (error.project_id, error.parent_id,
                                           error.grandparent_id))

    def test_an_unknown_parent_is_reported(self):
        self.assertEqual([('unknown-parent', 'B')],
                         self.rules(data(b=P('B', 'ghost'))))

    def test_a_cycle_is_reported_once_with_its_members(self):
        [error] = tree_mod.check(data(a=P('A', 'B'), b=P('B', 'A')))
        self.assertEqual(['A', 'B'], error.project_ids)

    def test_below_a_cycle_nothing_is_reported_twice(self):
        self.assertEqual(['cycle'], [r for r, _ in self.rules(data(
            a=P('A', 'B'), b=P('B', 'A'), c=P('C', 'A')))])

    def test_a_child_limit_over_the_parent_is_reported(self):
        [error] = tree_mod.check(data(a=P('A', limits={CORES: 5}),
                                      b=P('B', 'A', limits={CORES: 8})))
        self.assertEqual(('child-limit', 'B', 'A', 5, 8),
                         (error.rule, error.project_id, error.parent_id,
                          error.limit, error.value))

    def test_a_child_limit_over_a_root_on_the_default_is_reported(self):
        self.assertEqual([('child-limit', 'B')], self.rules(data(
            a=P('A'), b=P('B', 'A', limits={CORES: 11}))))

    def test_an_invalid_limit_value_is_reported(self):
        self.assertEqual([('invalid-limit', 'A')], self.rules(data(
            a=P('A', limits={CORES: 'ten'}))))

    def test_an_invalid_registered_limit_is_reported(self):
        [error] = tree_mod.check(data(registered={CORES: -5}))
        self.assertEqual((None, CORES, -5), (error.project_id,
                                             error.resource, error.value))

    def test_a_project_over_its_own_limit_is_reported(self):
        self.assertEqual([('usage', 'B')], self.rules(data(
            a=P('A', limits={CORES: 20}), b=P('B', 'A'),
            usage={'B': {CORES: 11}})))

    def test_a_tree_over_its_root_limit_is_reported_with_the_total(self):
        [error] = tree_mod.check(data(
            a=P('A', limits={CORES: 20}), b=P('B', 'A'), c=P('C', 'A'),
            usage={'A': {CORES: 5}, 'B': {CORES: 9}, 'C': {CORES: 9}}))
        self.assertEqual(('tree', 'A', 20, 23), (
            error.scope, error.project_id, error.limit, error.value))

    def test_every_violation_is_reported_not_only_the_first(self):
        found = self.rules(data(
            a=P('A', limits={CORES: 5}), b=P('B', 'A', limits={CORES: 8}),
            c=P('C', 'B'), d=P('D', 'nowhere')))
        self.assertEqual([('unknown-parent', 'D'), ('depth', 'C'),
                          ('child-limit', 'B')], found)

    def test_usage_of_a_project_the_data_does_not_name_is_checked(self):
        self.assertEqual([('usage', 'Q')], self.rules(data(
            usage={'Q': {CORES: 50}})))

    def test_the_order_does_not_depend_on_the_input_order(self):
        forward = data(b=P('B', 'ghost'), c=P('C', 'spook'))
        backward = data(c=P('C', 'spook'), b=P('B', 'ghost'))
        self.assertEqual(self.rules(forward), self.rules(backward))

    def test_a_cycle_of_three_names_its_three_members(self):
        [error] = tree_mod.check(data(a=P('A', 'C'), b=P('B', 'A'),
                                      c=P('C', 'B')))
        self.assertEqual(['A', 'C', 'B'], error.project_ids)

    def test_a_3000_deep_chain_is_checked_quickly(self):
        projects = {'p%d' % i: P('p%d' % i, 'p%d' % (i + 1))
                    for i in range(2999)}
        projects['p2999'] = P('p2999')
        found = tree_mod.check(tree_mod.LimitData(projects=projects))
        self.assertEqual(2998, len(found))

    def test_strict_from_data_raises_the_first_violation(self):
        self.assertRaises(errors.DepthExceeded, tree_mod.ProjectTree.from_data,
                          data(a=P('A'), b=P('B', 'A'), c=P('C', 'B')))

    def test_lenient_from_data_leaves_out_projects_in_bad_positions(self):
        seen = []
        tree = tree_mod.ProjectTree.from_data(
            data(a=P('A'), b=P('B', 'A'), c=P('C', 'B')), strict=False,
            on_violation=seen.append)
        self.assertEqual((['A', 'B'], ['depth']),
                         (sorted(tree), [v.rule for v in seen]))

    def test_lenient_from_data_caps_a_child_limit_at_the_parent(self):
        tree = tree_mod.ProjectTree.from_data(
            data(a=P('A', limits={CORES: 5}),
                 b=P('B', 'A', limits={CORES: 8})), strict=False)
        self.assertEqual(5, tree.effective_limit('B', CORES))

    def test_usage_over_a_lowered_limit_does_not_stop_strict_loading(self):
        tree = tree_mod.ProjectTree.from_data(data(
            a=P('A', limits={CORES: 2}), usage={'A': {CORES: 3}}))
        self.assertEqual(3, tree.usage('A', CORES))

    def test_errors_serialize_their_facts(self):
        [error] = tree_mod.check(data(a=P('A', limits={CORES: 5}),
                                      b=P('B', 'A', limits={CORES: 8})))
        facts = error.as_dict()
        self.assertEqual({'rule': 'child-limit', 'project_id': 'B',
                          'parent_id': 'A', 'resource': CORES, 'limit': 5,
                          'value': 8},
                         {k: v for k, v in facts.items() if k != 'message'})
