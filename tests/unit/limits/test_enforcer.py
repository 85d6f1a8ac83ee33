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
"""The enforcer: checks, claims, the flat model, usage sources."""

import fixtures
import testtools

from placement_quota.limits import enforcer as enforcer_mod
from placement_quota.limits import errors
from placement_quota.limits import sources
from placement_quota.limits import tree as tree_mod

CORES = 'cores'
RAM = 'ram_mb'
P = tree_mod.Project


def family_data(model=tree_mod.STRICT_TWO_LEVEL, usage=None):
    """A (cores 20, ram 1000) with children B and C; defaults 10 / 500."""
    return tree_mod.LimitData(
        model=model, registered_limits={CORES: 10, RAM: 500},
        projects={'A': P('A', limits={CORES: 20, RAM: 1000}),
                  'B': P('B', 'A'), 'C': P('C', 'A')},
        usage=usage or {})


class UsageStore:
    """The service's own usage records, as a usage callback reads them."""

    def __init__(self, usage=None):
        self.usage = {p: dict(u) for p, u in (usage or {}).items()}
        self.reads = 0

    def __call__(self, project_id, resources):
        self.reads += 1
        own = self.usage.get(project_id, {})
        return {r: own.get(r, 0) for r in resources}

    def add(self, project_id, resource, amount):
        own = self.usage.setdefault(project_id, {})
        own[resource] = own.get(resource, 0) + amount


class CountingSource(sources.EmbeddedSource):
    """A non-local source (like Keystone) whose data a test can change;
    counts the refreshes the enforcer asks for."""

    local = False

    def __init__(self, data):
        super().__init__(data, implicit_projects=False)
        self.refreshes = 0

    def refresh(self, project_ids):
        self.refreshes += 1
        return super().refresh(project_ids)

    def set_limit(self, project_id, resource, value):
        self._data.projects[project_id].limits[resource] = value


class TestEnforce(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.enforcer = enforcer_mod.Enforcer(sources.EmbeddedSource(
            family_data(usage={'B': {CORES: 9}, 'C': {CORES: 9}})))

    def test_a_claim_within_both_limits_passes(self):
        self.assertIsNone(self.enforcer.enforce('A', {CORES: 2}))

    def test_enforce_counts_nothing(self):
        self.enforcer.enforce('A', {CORES: 2})
        self.assertEqual(18, self.enforcer.tree.tree_usage('A', CORES))

    def test_over_the_project_limit_names_scope_project(self):
        error = self.assertRaises(errors.ProjectOverLimit,
                                  self.enforcer.enforce, 'B', {CORES: 2})
        [info] = error.over_limits
        self.assertEqual(('project', 10, 9, 2),
                         (info.scope, info.limit, info.project_usage,
                          info.delta))

    def test_the_error_has_what_a_support_ticket_needs(self):
        error = self.assertRaises(errors.ProjectOverLimit,
                                  self.enforcer.enforce, 'B', {CORES: 2})
        message = str(error)
        for fact in ('Project B', 'parent A', CORES, 'requested 2',
                     'project usage 9 of limit 10',
                     'usage of the tree of A 18 of limit 20'):
            self.assertIn(fact, message)

    def test_every_refused_resource_is_listed(self):
        error = self.assertRaises(errors.ProjectOverLimit,
                                  self.enforcer.enforce, 'C',
                                  {CORES: 5, RAM: 501})
        self.assertEqual([CORES, RAM],
                         [i.resource for i in error.over_limits])

    def test_a_negative_delta_is_always_allowed(self):
        self.assertIsNone(self.enforcer.enforce('B', {CORES: -3}))

    def test_a_non_integer_delta_names_the_resource(self):
        error = self.assertRaises(ValueError, self.enforcer.enforce, 'B',
                                  {CORES: '2'})
        self.assertIn('cores', str(error))

    def test_an_unknown_project_is_a_root_with_the_defaults(self):
        self.enforcer.enforce('stranger', {CORES: 10})
        self.assertRaises(errors.ProjectOverLimit, self.enforcer.enforce,
                          'stranger', {CORES: 11})

    def test_a_project_unknown_to_a_strict_source_is_refused(self):
        enforcer = enforcer_mod.Enforcer(sources.EmbeddedSource(
            family_data(), implicit_projects=False))
        self.assertRaises(errors.UnknownProject, enforcer.enforce, 'X',
                          {CORES: 1})

    def test_limits_and_usage_are_reported_per_resource(self):
        self.assertEqual({CORES: (10, 20)},
                         self.enforcer.limits('B', [CORES]))
        self.assertEqual({CORES: (9, 18)},
                         self.enforcer.calculate_usage('B', [CORES]))


class TestFlatModel(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.enforcer = enforcer_mod.Enforcer(sources.EmbeddedSource(
            family_data(tree_mod.FLAT,
                        usage={'B': {CORES: 9}, 'C': {CORES: 9}})))

    def test_a_child_is_limited_by_its_own_limit_only(self):
        self.enforcer.enforce('B', {CORES: 1})
        self.assertRaises(errors.ProjectOverLimit, self.enforcer.enforce,
                          'B', {CORES: 2})

    def test_the_parent_ignores_its_childrens_usage(self):
        self.assertIsNone(self.enforcer.enforce('A', {CORES: 20}))

    def test_a_flat_refusal_names_no_parent(self):
        error = self.assertRaises(errors.ProjectOverLimit,
                                  self.enforcer.enforce, 'B', {CORES: 2})
        self.assertIsNone(error.parent_id)


class TestNaivePath(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.store = UsageStore({'B': {CORES: 9}, 'C': {CORES: 9}})
        self.enforcer = enforcer_mod.Enforcer(
            sources.EmbeddedSource(family_data()), usage=self.store,
            aggregate=False)

    def test_every_check_reads_every_project_of_the_tree(self):
        self.enforcer.enforce('A', {CORES: 1})
        self.assertEqual(3, self.store.reads)

    def test_usage_written_by_the_service_is_seen_at_the_next_check(self):
        self.enforcer.enforce('A', {CORES: 2})
        self.store.add('C', CORES, 1)
        self.assertRaises(errors.ProjectOverLimit, self.enforcer.enforce,
                          'A', {CORES: 2})

    def test_a_claim_in_flight_counts_for_the_next_check(self):
        with self.enforcer.claim('A', {CORES: 2}):
            self.assertRaises(errors.ProjectOverLimit,
                              self.enforcer.enforce, 'B', {CORES: 1})
            self.store.add('A', CORES, 2)

    def test_the_naive_path_needs_a_usage_source(self):
        self.assertRaises(ValueError, enforcer_mod.Enforcer,
                          sources.EmbeddedSource(family_data()),
                          aggregate=False)

    def test_a_get_usage_object_is_read_once_per_check(self):
        calls = []

        class Bulk:
            def get_usage(self, project_ids, resources):
                calls.append(sorted(project_ids))
                return {}

        enforcer = enforcer_mod.Enforcer(
            sources.EmbeddedSource(family_data()), usage=Bulk(),
            aggregate=False)
        enforcer.enforce('B', {CORES: 1})
        self.assertEqual([['A', 'B', 'C']], calls)


class TestClaims(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.enforcer = enforcer_mod.Enforcer(sources.EmbeddedSource(
            family_data(usage={'B': {CORES: 9}, 'C': {CORES: 9}})))

    def test_a_successful_claim_is_counted(self):
        with self.enforcer.claim('A', {CORES: 2}):
            pass
        self.assertEqual(20, self.enforcer.tree.tree_usage('A', CORES))

    def test_a_claim_is_reserved_while_its_block_runs(self):
        with self.enforcer.claim('A', {CORES: 2}):
            self.assertRaises(errors.ProjectOverLimit,
                              self.enforcer.enforce, 'B', {CORES: 1})

    def test_a_block_that_raises_drops_the_claim(self):
        def failing():
            with self.enforcer.claim('A', {CORES: 2}):
                raise RuntimeError('boom')
        self.assertRaises(RuntimeError, failing)
        self.assertEqual(18, self.enforcer.tree.tree_usage('A', CORES))

    def test_a_refused_claim_does_not_run_its_block(self):
        ran = []

        def refused():
            with self.enforcer.claim('B', {CORES: 5}):
                ran.append(True)
        self.assertRaises(errors.ProjectOverLimit, refused)
        self.assertEqual([], ran)

    def test_verify_refuses_when_another_request_filled_the_tree(self):
        store = UsageStore({'B': {CORES: 9}, 'C': {CORES: 9}})
        enforcer = enforcer_mod.Enforcer(
            sources.EmbeddedSource(family_data()), usage=store)

        def racing():
            with enforcer.claim('A', {CORES: 2}):
                store.add('A', CORES, 2)   # our work
                store.add('C', CORES, 1)   # another process's, meanwhile
        error = self.assertRaises(errors.ProjectOverLimit, racing)
        self.assertEqual(21, error.over_limits[0].tree_usage)
        self.assertEqual(18, enforcer.tree.tree_usage('A', CORES))

    def test_verify_switched_off_lets_the_race_through(self):
        store = UsageStore({'B': {CORES: 9}, 'C': {CORES: 9}})
        enforcer = enforcer_mod.Enforcer(
            sources.EmbeddedSource(family_data()), usage=store)
        with enforcer.claim('A', {CORES: 2}, verify=False):
            store.add('A', CORES, 2)
            store.add('C', CORES, 1)
        self.assertEqual(20, enforcer.tree.tree_usage('A', CORES))

    def test_verify_sees_a_limit_lowered_during_the_claim(self):
        source = CountingSource(family_data())
        enforcer = enforcer_mod.Enforcer(source)

        def lowered():
            with enforcer.claim('B', {CORES: 5}):
                source.set_limit('A', CORES, 4)
        self.assertRaises(errors.ProjectOverLimit, lowered)
        self.assertEqual(0, enforcer.tree.tree_usage('A', CORES))

    def test_project_claims_of_one_project_add_up(self):
        claims = [enforcer_mod.ProjectClaim(CORES, 'A', 1),
                  enforcer_mod.ProjectClaim(CORES, 'A', 1)]
        with self.enforcer.project_claim(*claims):
            pass
        self.assertEqual(2, self.enforcer.tree.usage('A', CORES))

    def test_project_claims_of_two_projects_are_refused(self):
        self.assertRaises(ValueError, self.enforcer.project_claim,
                          enforcer_mod.ProjectClaim(CORES, 'A'),
                          enforcer_mod.ProjectClaim(CORES, 'B'))

    def test_rebuild_reads_usage_from_the_source(self):
        store = UsageStore({'B': {CORES: 1}})
        enforcer = enforcer_mod.Enforcer(
            sources.EmbeddedSource(family_data()), usage=store)
        store.add('C', CORES, 5)
        enforcer.rebuild()
        self.assertEqual(6, enforcer.tree.tree_usage('A', CORES))


class TestFreshLimits(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.source = CountingSource(family_data())
        self.enforcer = enforcer_mod.Enforcer(self.source)

    def test_a_remote_source_is_refreshed_before_every_check(self):
        self.enforcer.enforce('B', {CORES: 1})
        self.enforcer.enforce('B', {CORES: 1})
        self.assertEqual(2, self.source.refreshes)

    def test_a_lowered_limit_applies_at_the_next_check(self):
        self.enforcer.enforce('B', {CORES: 10})
        self.source.set_limit('A', CORES, 5)
        self.assertRaises(errors.ProjectOverLimit, self.enforcer.enforce,
                          'B', {CORES: 10})

    def test_a_cached_source_applies_a_lowered_limit_after_its_ttl(self):
        now = [0.0]
        enforcer = enforcer_mod.Enforcer(sources.CachingSource(
            self.source, ttl=60, clock=lambda: now[0]))
        enforcer.enforce('B', {CORES: 10})
        self.source.set_limit('A', CORES, 5)
        enforcer.enforce('B', {CORES: 10})
        now[0] = 61
        self.assertRaises(errors.ProjectOverLimit, enforcer.enforce, 'B',
                          {CORES: 10})


class TestReviewFindings(testtools.TestCase):
    """Behaviours a review found missing, one per test."""

    def test_a_project_first_seen_later_gets_its_usage_read(self):
        store = UsageStore({'late': {CORES: 10}})
        enforcer = enforcer_mod.Enforcer(
            sources.EmbeddedSource(family_data()), usage=store)
        self.assertRaises(errors.ProjectOverLimit, enforcer.enforce, 'late',
                          {CORES: 1})

    def test_a_resource_first_claimed_later_gets_its_usage_read(self):
        store = UsageStore({'B': {'gpus': 2}})
        data = family_data()
        enforcer = enforcer_mod.Enforcer(sources.EmbeddedSource(data),
                                         usage=store, unregistered_limit=3)
        self.assertRaises(errors.ProjectOverLimit, enforcer.enforce, 'B',
                          {'gpus': 2})

    def test_rebuild_of_one_resource_keeps_the_others(self):
        store = UsageStore({'B': {CORES: 4, RAM: 100}})
        enforcer = enforcer_mod.Enforcer(
            sources.EmbeddedSource(family_data()), usage=store)
        enforcer.rebuild([CORES])
        self.assertEqual(100, enforcer.tree.usage('B', RAM))

    def test_rebuild_keeps_a_claim_in_flight_counted(self):
        store = UsageStore({'B': {CORES: 4}})
        enforcer = enforcer_mod.Enforcer(
            sources.EmbeddedSource(family_data()), usage=store)

        def failing():
            with enforcer.claim('B', {CORES: 2}):
                enforcer.rebuild()
                raise RuntimeError('the work failed')
        self.assertRaises(RuntimeError, failing)
        self.assertEqual(4, enforcer.tree.usage('B', CORES))

    def test_a_release_never_takes_usage_below_zero(self):
        enforcer = enforcer_mod.Enforcer(sources.EmbeddedSource(
            family_data()))
        with enforcer.claim('B', {CORES: 2}):
            pass
        enforcer.release('B', {CORES: 5})
        self.assertEqual(0, enforcer.tree.usage('B', CORES))
        self.assertRaises(errors.ProjectOverLimit, enforcer.enforce, 'B',
                          {CORES: 11})

    def test_a_claim_of_a_negative_amount_is_refused(self):
        enforcer = enforcer_mod.Enforcer(sources.EmbeddedSource(
            family_data()))
        error = self.assertRaises(ValueError, enforcer.claim, 'B',
                                  {CORES: -5})
        self.assertIn('cores=-5', str(error))

    def test_a_project_id_that_is_not_a_string_is_refused(self):
        enforcer = enforcer_mod.Enforcer(sources.EmbeddedSource(
            family_data()))
        self.assertRaises(ValueError, enforcer.enforce, None, {CORES: 1})
        self.assertNotIn(None, enforcer.tree)

    def test_the_flat_model_enforces_a_grandchild_on_its_own_limit(self):
        data = family_data(tree_mod.FLAT)
        data.projects['D'] = P('D', 'B', limits={CORES: 3})
        enforcer = enforcer_mod.Enforcer(sources.EmbeddedSource(data))
        enforcer.enforce('D', {CORES: 3})
        self.assertRaises(errors.ProjectOverLimit, enforcer.enforce, 'D',
                          {CORES: 4})

    def test_a_named_project_with_an_unknown_parent_is_refused(self):
        data = family_data()
        data.projects['D'] = P('D', 'ghost')
        enforcer = enforcer_mod.Enforcer(sources.EmbeddedSource(data))
        error = self.assertRaises(errors.UnknownParent, enforcer.enforce,
                                  'D', {CORES: 1})
        self.assertEqual(('D', 'ghost'), (error.project_id, error.parent_id))

    def test_adopting_a_third_level_is_refused_without_recursion(self):
        source = CountingSource(tree_mod.LimitData(registered_limits={
            CORES: 10}))
        enforcer = enforcer_mod.Enforcer(source)
        # Created since the load: a chain of 3000 projects.
        for i in range(3000):
            parent = None if i == 2999 else 'p%d' % (i + 1)
            source._data.projects['p%d' % i] = P('p%d' % i, parent)
        error = self.assertRaises(errors.DepthExceeded, enforcer.enforce,
                                  'p0', {CORES: 1})
        self.assertEqual(('p0', 'p1'), (error.project_id, error.parent_id))

    def test_a_source_failure_at_verify_keeps_the_finished_claim(self):
        source = CountingSource(family_data())
        enforcer = enforcer_mod.Enforcer(source)
        self.useFixture(fixtures.FakeLogger())

        def outage(project_ids):
            raise sources.SourceError('keystone down')
        with enforcer.claim('B', {CORES: 4}):
            source.refresh = outage
        self.assertEqual(4, enforcer.tree.usage('B', CORES))
