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
"""RollingCapFilter: resource-hours per project and per user in any
window of the period, counted in the ledger, the caps from a limits
file."""

import os

import fixtures
import testtools
import yaml

from placement_quota.filters import rolling_cap
from placement_quota.ledger import rolling
from placement_quota.limits import sources
from placement_quota.selfservice import service
from tests import builders
from tests.builders import day
from tests.builders import hosts
from tests.builders import instances
from tests.builders import lease
from tests.unit.filters import base

WEEK = 7 * 86400


class RollingCapTestCase(base.LedgerTestCase):

    filter_class = rolling_cap.RollingCapFilter
    options = {('enforcement', 'rolling_cap_resources'): ['hosts'],
               ('enforcement', 'rolling_cap_period'): WEEK}
    #: The limits file (the caps are limits named hours:<resource>...).
    limits = {'registered_limits': {'hours:hosts': 48}}

    def setUp(self):
        super().setUp()
        path = os.path.join(self.tmp, 'limits.yaml')
        with open(path, 'w') as f:
            yaml.safe_dump(self.limits, f)
        self.set('limits', limits_file=path)

    def by(self, user, body, project=None):
        """check-create of ``body`` asked by ``user``."""
        return self.filter.check_create(
            builders.context(project or self.project, user_id=user), body)


class TestProjectCap(RollingCapTestCase):

    def test_leases_up_to_exactly_the_cap_are_allowed(self):
        # 48 host-hours a week: two one-host leases of a day.
        self.create(lease(day(2), day(3), hosts('a'), name='a'))
        self.create(lease(day(4), day(5), hosts('b'), name='b'))
        self.assertEqual(2, len(self.live_entries()))

    def test_one_minute_past_the_cap_is_denied_with_the_numbers(self):
        self.create(lease(day(2), day(3), hosts('a'), name='a'))
        message = self.assertDenied(self.create, lease(
            day(4), '2026-06-05 00:01', hosts('b'), name='b'))
        self.assertEqual(
            'Project project-a may use at most 48 host-hours (hosts) in '
            'any 7 days; from 2026-05-29 00:01 to 2026-06-05 00:01 it '
            'would use 48.0167 (24.0 already reserved, 24.0167 by this '
            'lease): 24.0 more fit there.', message)

    def test_a_lease_crossing_the_window_edge_counts_its_part_inside(self):
        # Days 1-3 fill the cap; a window reaching day 8 holds at most
        # the part of them after its start: day 8-9 fits exactly.
        self.create(lease(day(1), day(3), hosts('a'), name='a'))
        self.create(lease(day(8), day(9), hosts('b'), name='b'))
        self.assertEqual(2, len(self.live_entries()))

    def test_the_part_inside_still_counts(self):
        self.create(lease(day(1), day(3), hosts('a'), name='a'))
        message = self.assertDenied(self.create, lease(
            day(8), day(9), hosts('b', 'c'), name='b'))
        # The busiest window: day 2 to day 9, a day of each lease.
        self.assertIn('from 2026-06-02 00:00 to 2026-06-09 00:00 it would '
                      'use 72.0 (24.0 already reserved, 48.0 by this '
                      'lease)', message)

    def test_leases_a_period_apart_are_both_allowed_at_the_cap(self):
        self.create(lease(day(1), day(3), hosts('a'), name='a'))
        self.create(lease(day(10), day(12), hosts('b'), name='b'))
        self.assertEqual(2, len(self.live_entries()))

    def test_the_caps_are_read_before_the_ledger_is_locked(self):
        original = sources.EmbeddedSource.refresh
        read = []

        def refresh(source, project_ids):
            # The project's lock is free: taking it here does not wait.
            with self.ledger.transaction(list(project_ids)):
                read.append(list(project_ids))
            return original(source, project_ids)

        self.useFixture(fixtures.MonkeyPatch(
            'placement_quota.limits.sources.EmbeddedSource.refresh',
            refresh))
        self.create(lease(day(2), day(3), hosts('a'), name='a'))
        self.assertEqual([['project-a']], read)

    def test_the_caps_of_the_limits_file_are_read_once(self):
        read = []
        original = sources.EmbeddedSource.refresh
        self.useFixture(fixtures.MonkeyPatch(
            'placement_quota.limits.sources.EmbeddedSource.refresh',
            lambda source, ids: read.append(ids) or original(source, ids)))
        self.create(lease(day(2), day(3), hosts('a'), name='a'))
        self.create(lease(day(4), day(5), hosts('b'), name='b'))
        self.assertEqual([['project-a']], read)

    def test_other_projects_do_not_count(self):
        self.create(lease(day(2), day(4), hosts('a'), name='a'),
                    project='other')
        self.create(lease(day(2), day(4), hosts('a'), name='a'))
        self.assertEqual(1, len(self.live_entries()))

    def test_an_update_replaces_its_own_entry(self):
        first = lease(day(2), day(4), hosts('a'), name='a')
        self.create(first)
        moved = lease(day(3), day(5), hosts('a'), name='a')
        self.update(first, moved)
        self.assertEqual(1, len(self.live_entries()))
        self.assertDenied(self.update, moved, lease(
            day(3), '2026-06-05 00:01', hosts('a'), name='a'))

    def test_an_ended_lease_counts_until_it_ended(self):
        first = lease(day(2), day(4), hosts('a'), name='a')
        self.create(first)
        self.now = builders.at(3)
        self.end(first)
        # 24 of its 48 hours were used: a day more fits.
        self.create(lease(day(5), day(6), hosts('b'), name='b'))
        self.assertEqual(['a', 'b'], [e.name for e in self.live_entries()])

    def test_a_lease_without_the_resource_reads_no_cap(self):
        # A limits file that cannot be read is never asked.
        self.set('limits', limits_file=os.path.join(self.tmp, 'missing'))
        self.create(lease(day(2), day(20), instances(5), name='a'))
        self.assertEqual(1, len(self.live_entries()))


class TestCapsFromTheLimits(RollingCapTestCase):

    options = {('enforcement', 'rolling_cap_resources'): [
        'hosts', 'instances']}
    limits = {'registered_limits': {'hours:hosts': 48},
              'projects': {'project-b': {'limits': {'hours:hosts': 72}}}}

    def test_a_project_limit_overrides_the_registered_default(self):
        for name, start in (('a', 2), ('b', 4), ('c', 6)):
            self.create(lease(day(start), day(start + 1), hosts(name),
                              name=name), project='project-b')
        self.assertEqual(3, len(self.live_entries('project-b')))
        message = self.assertDenied(self.create, lease(
            day(8), day(8, 1), hosts('d'), name='d'), project='project-b')
        self.assertIn('at most 72 host-hours', message)

    def test_the_default_applies_to_a_project_without_its_own(self):
        self.create(lease(day(2), day(4), hosts('a'), name='a'))
        self.assertDenied(self.create,
                          lease(day(5), day(5, 1), hosts('b'), name='b'))

    def test_a_resource_without_a_cap_is_not_capped(self):
        self.create(lease(day(2), day(30), instances(50), name='a'))
        self.assertEqual(1, len(self.live_entries()))

    def test_the_tree_filter_does_not_read_the_caps_as_its_limits(self):
        self.set(enabled_filters=['ProjectTreeLimitFilter'])
        view = service.SelfService(self.chain('ProjectTreeLimitFilter'))
        found = view.view(self.project, 'u', 30)
        self.assertEqual([], found['limits'])


class TestUserCap(RollingCapTestCase):

    limits = {'registered_limits': {'hours:hosts': 100,
                                    'user_hours:hosts': 24}}

    def test_a_user_is_denied_past_their_own_cap(self):
        self.by('alice', lease(day(2), day(3), hosts('a'), name='a'))
        message = self.assertDenied(self.by, 'alice', lease(
            day(4), day(4, 1), hosts('b'), name='b'))
        self.assertIn('User alice of project project-a may use at most 24 '
                      'host-hours (hosts) in any 7 days', message)

    def test_another_user_of_the_project_has_a_cap_of_their_own(self):
        self.by('alice', lease(day(2), day(3), hosts('a'), name='a'))
        self.by('bob', lease(day(4), day(5), hosts('b'), name='b'))
        self.assertEqual(2, len(self.live_entries()))

    def test_the_project_cap_holds_over_all_users(self):
        for i, user in enumerate(('a', 'b', 'c', 'd')):
            self.by(user, lease(day(2), day(3), hosts('h%d' % i),
                                name=user))
        message = self.assertDenied(self.by, 'e', lease(
            day(2), day(2, 5), hosts('h9'), name='e'))
        self.assertIn('Project project-a may use at most 100 host-hours',
                      message)

    def test_an_update_counts_against_the_leases_owner(self):
        first = lease(day(2), day(3), hosts('a'), name='a')
        self.by('alice', first)
        message = self.assertDenied(
            self.filter.check_update,
            builders.context(self.project, user_id='bob'), first,
            lease(day(2), day(3, 1), hosts('a'), name='a'))
        self.assertIn('User alice of project project-a', message)


class TestInert(RollingCapTestCase):

    options = {}

    def test_without_resources_it_says_it_caps_nothing(self):
        self.assertIn('rolling_cap_resources is empty', self.filter.inert())

    def test_without_resources_nothing_is_denied(self):
        self.create(lease(day(2), day(20), hosts('a', 'b'), name='a'))
        self.assertEqual(1, len(self.live_entries()))


class TestSelfService(RollingCapTestCase):

    limits = {'registered_limits': {'hours:hosts': 60,
                                    'user_hours:hosts': 100}}

    def setUp(self):
        super().setUp()
        self.service_chain = self.chain('RollingCapFilter')
        self.selfservice = service.SelfService(self.service_chain)

    def test_the_extension_query_finds_the_exact_bound(self):
        # 60 host-hours: 24 taken by day 5-6, so lease-1 from day 2 may
        # hold 36: until day 3 12:00.
        self.create(lease(day(5), day(6), hosts('b'), name='b'),
                    via=self.service_chain)
        body = lease(day(2), day(3), hosts('a'), lease_id='lease-1')
        self.create(body, via=self.service_chain)
        found = self.selfservice.extension(self.context(), 'lease-1')
        self.assertEqual(('2026-06-03T12:00:00Z', 'RollingCapFilter'),
                         (found['latest_end_date'], found['bound_by']))
        self.update(body, dict(body, end_date=day(3, 12)),
                    via=self.service_chain)

    def test_a_quote_past_the_cap_names_the_rule_and_records_nothing(self):
        self.create(lease(day(2), day(4), hosts('a'), name='a'),
                    via=self.service_chain)
        found = self.selfservice.quote(self.context(), lease(
            day(5), day(5, 13), hosts('b'), name='b'))
        self.assertFalse(found['allowed'])
        self.assertIn('may use at most 60 host-hours (hosts) in any 7 days',
                      found['filters'][0]['message'])
        self.assertEqual(1, len(self.live_entries()))

    def test_the_project_view_shows_the_cap_and_the_busiest_window(self):
        self.create(lease(day(2), day(3), hosts('a'), name='a'),
                    via=self.service_chain)
        self.create(lease(day(4), day(5), hosts('b'), name='b'),
                    via=self.service_chain)
        found = self.selfservice.view(self.project, 'u', 30)
        self.assertEqual({
            'filter': 'RollingCapFilter', 'resource': 'hours:hosts',
            'scope': 'project', 'project_id': 'project-a', 'limit': 60,
            'unit': 'host-hours', 'in_use': 0.0,
            'peak': {'amount': 48.0, 'at': '2026-05-29T00:00:00Z',
                     'until': '2026-06-05T00:00:00Z'}}, found['limits'][0])

    def test_the_project_view_shows_the_users_own_cap(self):
        self.create(lease(day(2), day(3, 12), hosts('a'), name='a'),
                    via=self.service_chain)
        found = self.selfservice.view(self.project, 'v', 30)['limits']
        self.assertEqual(
            [('project', 36.0), ('user', 0.0)],
            [(m['scope'], m['peak']['amount']) for m in found])
        self.assertEqual(('user_hours:hosts', 100, 'v'),
                         (found[1]['resource'], found[1]['limit'],
                          found[1]['user_id']))

    def test_in_use_is_the_window_ending_now(self):
        self.create(lease(day(1), day(3), hosts('a'), name='a'),
                    via=self.service_chain)
        self.now = builders.at(2, 6)
        found = self.selfservice.view(self.project, 'u', 30)['limits']
        self.assertEqual([30.0, 30.0], [m['in_use'] for m in found])


class TestRollingWindows(testtools.TestCase):
    """The pure computation: the busiest window, exact."""

    def test_busiest_window_is_found_at_a_breakpoint(self):
        hour = rolling.HOUR
        spans = [(0, 10 * hour, 1), (20 * hour, 25 * hour, 2)]
        found = rolling.busiest(spans, -24 * hour, 30 * hour, 24 * hour)
        # [1h, 25h): 9 of the first, all 10 of the second.
        self.assertEqual((19 * hour, 1 * hour),
                         (found.usage, found.start))

    def test_cumulative_matches_the_direct_sum(self):
        spans = [(0, 7, 3), (5, 11, 2), (9, 30, 1)]
        held = rolling.Cumulative(spans)
        for t in range(-5, 35):
            self.assertEqual(rolling.usage(spans, t, 6), held(t + 6) -
                             held(t))
