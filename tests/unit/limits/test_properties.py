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
"""Property-based tests (hypothesis) of the enforcer on random trees.

For random trees, limits and claim sequences: the aggregate path and the
naive path decide the same every time, the aggregates always equal the
naive sums, and no sequence of accepted claims leaves a tree over its
root's limit or a project over its own.
"""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from placement_quota.limits import enforcer as enforcer_mod
from placement_quota.limits import errors
from placement_quota.limits import sources
from placement_quota.limits import tree as tree_mod

R = ('cores', 'ram')
limit_values = st.integers(min_value=-1, max_value=30)


@st.composite
def trees(draw):
    """A LimitData of 1-3 roots with 0-6 children each, valid limits."""
    registered = {r: draw(limit_values) for r in R}
    projects = {}
    for i in range(draw(st.integers(1, 3))):
        root = 'r%d' % i
        root_limits = {r: draw(limit_values) for r in R
                       if draw(st.booleans())}
        projects[root] = tree_mod.Project(root, limits=root_limits)
        for j in range(draw(st.integers(0, 6))):
            child_limits = {}
            for r in R:
                if not draw(st.booleans()):
                    continue
                cap = root_limits.get(r, registered[r])
                child_limits[r] = draw(
                    limit_values if cap == -1
                    else st.integers(0, cap))
            child = '%s-c%d' % (root, j)
            projects[child] = tree_mod.Project(child, root,
                                               limits=child_limits)
    return tree_mod.LimitData(registered_limits=registered,
                              projects=projects)


@st.composite
def scenarios(draw):
    data = draw(trees())
    ids = sorted(data.projects)
    steps = draw(st.lists(st.tuples(
        st.sampled_from(ids), st.sampled_from(R),
        st.integers(min_value=-6, max_value=12)), max_size=40))
    return data, steps


class Store:
    """Usage as the service records it: what the naive path reads."""

    def __init__(self):
        self.usage = {}

    def __call__(self, project_id, resources):
        own = self.usage.get(project_id, {})
        return {r: own.get(r, 0) for r in resources}

    def add(self, project_id, resource, delta):
        own = self.usage.setdefault(project_id, {})
        own[resource] = own.get(resource, 0) + delta


def decide(enforcer, project_id, deltas):
    try:
        enforcer.enforce(project_id, deltas)
    except errors.ProjectOverLimit as exc:
        return [(i.resource, i.scope) for i in exc.over_limits]
    return []


class TestProperties(testtools.TestCase):

    @settings(max_examples=300, deadline=None)
    @given(scenarios())
    def test_aggregate_and_naive_paths_decide_the_same(self, scenario):
        data, steps = scenario
        store = Store()
        aggregate = enforcer_mod.Enforcer(sources.EmbeddedSource(data))
        naive = enforcer_mod.Enforcer(sources.EmbeddedSource(data),
                                      usage=store, aggregate=False)
        for project_id, resource, delta in steps:
            if delta < 0:
                amount = min(-delta, store(project_id, [resource])[resource])
                aggregate.release(project_id, {resource: amount})
                store.add(project_id, resource, -amount)
                continue
            deltas = {resource: delta}
            decision = decide(aggregate, project_id, deltas)
            self.assertEqual(decision, decide(naive, project_id, deltas))
            if not decision:
                with aggregate.claim(project_id, deltas):
                    pass
                store.add(project_id, resource, delta)

    @settings(max_examples=200, deadline=None)
    @given(scenarios(), st.dictionaries(
        st.sampled_from(['x0', 'x1', 'r0-c0']),
        st.dictionaries(st.sampled_from(R), st.integers(0, 12)),
        max_size=3), st.data())
    def test_usage_read_from_a_source_decides_as_the_naive_path(
            self, scenario, initial, draw):
        # Usage the service already has, for named projects and for
        # projects the limits source does not name (implicit roots), some
        # of them first seen after the enforcer started.
        data, steps = scenario
        store = Store()
        for project_id, usage in initial.items():
            for resource, amount in usage.items():
                store.add(project_id, resource, amount)
        aggregate = enforcer_mod.Enforcer(sources.EmbeddedSource(data),
                                          usage=store)
        naive = enforcer_mod.Enforcer(sources.EmbeddedSource(data),
                                      usage=store, aggregate=False)
        projects = sorted(data.projects) + ['x0', 'x1']
        for _, resource, delta in steps:
            project_id = draw.draw(st.sampled_from(projects))
            deltas = {resource: max(delta, 0)}
            decision = decide(aggregate, project_id, deltas)
            self.assertEqual(decision, decide(naive, project_id, deltas))
            if not decision:
                with aggregate.claim(project_id, deltas):
                    store.add(project_id, resource, deltas[resource])

    @settings(max_examples=300, deadline=None)
    @given(scenarios())
    def test_accepted_claims_never_leave_a_tree_over_its_limit(self,
                                                               scenario):
        data, steps = scenario
        enforcer = enforcer_mod.Enforcer(sources.EmbeddedSource(data))
        tree = enforcer.tree
        for project_id, resource, delta in steps:
            if delta < 0:
                enforcer.release(project_id, {resource: min(
                    -delta, tree.usage(project_id, resource))})
                continue
            try:
                with enforcer.claim(project_id, {resource: delta}):
                    pass
            except errors.ProjectOverLimit:
                pass
            root = tree.root(project_id)
            self.assertFalse(tree_mod.exceeds(
                tree.tree_usage(root, resource),
                tree.effective_limit(root, resource)))
            self.assertFalse(tree_mod.exceeds(
                tree.usage(project_id, resource),
                tree.effective_limit(project_id, resource)))
        self.assertEqual([], [v for v in tree_mod.check(tree.to_data())
                              if v.rule == 'usage'])

    @settings(max_examples=300, deadline=None)
    @given(scenarios())
    def test_aggregates_always_equal_the_naive_sum(self, scenario):
        data, steps = scenario
        tree = tree_mod.ProjectTree.from_data(data)
        for project_id, resource, delta in steps:
            tree.add_usage(project_id, {resource: delta})
            for root in tree.roots():
                self.assertEqual(tree.naive_tree_usage(root, resource),
                                 tree.aggregate(root, resource))

    @settings(max_examples=200, deadline=None)
    @given(trees())
    def test_generated_valid_trees_pass_the_check(self, data):
        self.assertEqual([], tree_mod.check(data))
