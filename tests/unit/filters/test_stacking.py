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
"""NoStackingFilter: leases of one resource of one owner keep a gap, or
overlap at most by an allowance, counted in the ledger."""

import datetime

import hypothesis
from hypothesis import strategies as st

from placement_quota.filters import stacking
from placement_quota.ledger import window
from placement_quota.selfservice import service
from tests import builders
from tests.builders import LEASE_ID
from tests.builders import at
from tests.builders import day
from tests.builders import hosts
from tests.builders import instances
from tests.builders import lease
from tests.unit.filters import base

HOUR = 3600


class StackingTestCase(base.LedgerTestCase):

    filter_class = stacking.NoStackingFilter
    options = {('enforcement', 'stacking_resources'): ['hosts'],
               ('enforcement', 'stacking_gap'): 6 * HOUR}

    def by(self, user, body, via=None):
        """check-create of ``body`` asked by ``user``."""
        return (via or self.filter).check_create(
            builders.context(self.project, user_id=user), body)

    def first(self, user='alice', **extra):
        """Lease gpu-1 of ``user``: hosts from June 2 to June 3."""
        body = lease(day(2), day(3), hosts('h1'), name='gpu-1',
                     lease_id=LEASE_ID, **extra)
        self.by(user, body)
        return body


class TestGap(StackingTestCase):

    def test_lease_starting_the_gap_after_the_previous_end_is_allowed(self):
        self.first()
        self.by('alice', lease(day(3, 6), day(4), hosts('h2')))

    def test_lease_starting_a_minute_sooner_is_denied(self):
        self.first()
        self.assertDenied(self.by, 'alice',
                          lease('2026-06-03 05:59', day(4), hosts('h2')))

    def test_denial_names_the_lease_it_stacks_on_and_the_earliest_start(
            self):
        self.first()
        message = self.assertDenied(self.by, 'alice',
                                    lease(day(3, 2), day(4), hosts('h2')))
        self.assertEqual(
            'No stacking: the lease starts 2 hours after lease gpu-1 (%s) '
            'of user alice ends (on 2026-06-03 00:00), both holding hosts; '
            'a lease of it must start at least 6 hours after the previous '
            'one of the same user ends: it must start on 2026-06-03 06:00 '
            'or later.' % LEASE_ID, message)

    def test_lease_ending_the_gap_before_the_next_start_is_allowed(self):
        self.first()
        self.by('alice', lease(day(1, 12), day(1, 18), hosts('h2')))

    def test_lease_ending_a_minute_later_is_denied_with_the_latest_end(
            self):
        self.first()
        message = self.assertDenied(
            self.by, 'alice',
            lease(day(1, 12), '2026-06-01 18:01', hosts('h2')))
        self.assertIn('the lease ends 5 hours 59 minutes before lease gpu-1',
                      message)
        self.assertIn('it must end on 2026-06-01 18:00 or earlier', message)

    def test_overlapping_lease_is_denied(self):
        self.first()
        message = self.assertDenied(self.by, 'alice',
                                    lease(day(2, 12), day(4), hosts('h2')))
        self.assertIn('overlaps lease gpu-1 (%s) of user alice (from '
                      '2026-06-02 00:00 to 2026-06-03 00:00) by 12 hours'
                      % LEASE_ID, message)
        self.assertIn('it must start on 2026-06-03 06:00 or later', message)

    def test_another_users_lease_is_not_compared(self):
        self.first()
        self.by('bob', lease(day(3), day(4), hosts('h2')))

    def test_lease_of_another_resource_is_not_compared(self):
        self.first()
        self.by('alice', lease(day(3), day(4), instances(2)))

    def test_update_of_the_lease_itself_is_not_compared_with_it(self):
        body = self.first()
        self.filter.check_update(
            builders.context(self.project, user_id='alice'), body,
            dict(body, end_date=day(3, 12)))

    def test_moving_a_lease_end_toward_the_next_one_is_denied(self):
        body = self.first()
        self.by('alice', lease(day(4), day(5), hosts('h2'), name='next'))
        message = self.assertDenied(
            self.filter.check_update,
            builders.context(self.project, user_id='alice'), body,
            dict(body, end_date='2026-06-03 18:01'))
        self.assertIn('before lease next of user alice starts', message)

    def test_a_denied_lease_does_not_count(self):
        chain = self.chain()
        self.first()
        self.assertDenied(self.by, 'alice',
                          lease(day(3, 1), day(3, 5), hosts('h2')),
                          via=chain)
        # Six hours after the denied lease's end, but not after gpu-1's.
        self.by('alice', lease(day(3, 6), day(3, 11), hosts('h3')),
                via=chain)

    def test_exempt_project_may_stack(self):
        self.first()
        self.by('alice', lease(day(3), day(4), hosts('h2')),
                via=self.chain(exempted=[self.project]))

    def test_request_without_a_user_is_not_compared_per_user(self):
        self.first()
        self.filter.check_create({'project_id': self.project},
                                 lease(day(3), day(4), hosts('h2')))


class TestProjectScope(StackingTestCase):

    options = {('enforcement', 'stacking_resources'): ['hosts'],
               ('enforcement', 'stacking_gap'): 6 * HOUR,
               ('enforcement', 'stacking_scope'): 'project'}

    def test_another_users_lease_of_the_project_is_compared(self):
        self.first()
        message = self.assertDenied(self.by, 'bob',
                                    lease(day(3), day(4), hosts('h2')))
        self.assertIn('the lease starts when lease gpu-1 (%s) of project '
                      'project-a (user alice) ends' % LEASE_ID, message)
        self.assertIn('the previous one of the same project ends', message)

    def test_another_projects_lease_is_not_compared(self):
        self.first()
        self.filter.check_create(builders.context('project-b'),
                                 lease(day(3), day(4), hosts('h2')))


class TestResourceClass(StackingTestCase):

    options = {('enforcement', 'stacking_resources'): ['class:VCPU'],
               ('enforcement', 'stacking_gap'): HOUR}

    def test_leases_holding_the_class_are_compared(self):
        self.by('alice', lease(day(2), day(3), instances(2, vcpus=4),
                               name='cpu-1'))
        message = self.assertDenied(
            self.by, 'alice', lease(day(3), day(4), instances(1, vcpus=1)))
        self.assertIn('both holding class:VCPU', message)

    def test_leases_without_the_class_are_not(self):
        self.by('alice', lease(day(2), day(3), hosts('h1'), name='h'))
        self.by('alice', lease(day(3), day(4), instances(1, vcpus=1)))


class TestOverlapAllowance(StackingTestCase):

    options = {('enforcement', 'stacking_resources'): ['hosts'],
               ('enforcement', 'stacking_overlap_allowance'): HOUR}

    def test_lease_overlapping_by_the_allowance_is_allowed(self):
        self.first()
        self.by('alice', lease(day(2, 23), day(4), hosts('h2')))

    def test_lease_overlapping_a_minute_more_is_denied(self):
        self.first()
        message = self.assertDenied(
            self.by, 'alice', lease('2026-06-02 22:59', day(4), hosts('h2')))
        self.assertIn('by 1 hour 1 minute, both holding hosts; two leases '
                      'of hosts of the same user may overlap by at most 1 '
                      'hour: it must start on 2026-06-02 23:00 or later',
                      message)

    def test_lease_following_at_once_is_allowed(self):
        self.first()
        self.by('alice', lease(day(3), day(4), hosts('h2')))

    def test_lease_ending_inside_the_next_by_more_is_denied(self):
        self.first()
        message = self.assertDenied(
            self.by, 'alice', lease(day(1), '2026-06-02 01:01', hosts('h2')))
        self.assertIn('it must end on 2026-06-02 01:00 or earlier', message)


class TestNoOverlap(StackingTestCase):

    options = {('enforcement', 'stacking_resources'): ['hosts']}

    def test_leases_back_to_back_are_allowed(self):
        self.first()
        self.by('alice', lease(day(3), day(4), hosts('h2')))

    def test_a_minute_of_overlap_is_denied(self):
        self.first()
        message = self.assertDenied(
            self.by, 'alice', lease('2026-06-02 23:59', day(4), hosts('h2')))
        self.assertIn('two leases of hosts of the same user may not overlap',
                      message)


class TestOptions(StackingTestCase):

    options = {}

    def test_without_resources_the_filter_is_inert(self):
        self.assertIn('stacking_resources is empty', self.filter.inert())

    def test_gap_and_allowance_together_are_refused_at_start(self):
        self.set(stacking_resources=['hosts'], stacking_gap=HOUR,
                 stacking_overlap_allowance=60)
        error = self.assertRaises(ValueError, self.filter_class, self.conf,
                                  services=self.services)
        self.assertIn('stacking_gap (3600) and stacking_overlap_allowance '
                      '(60) cannot both be set', str(error))

    def test_unknown_resource_name_is_refused_at_start(self):
        self.set(stacking_resources=['GPU'])
        error = self.assertRaises(ValueError, self.filter_class, self.conf,
                                  services=self.services)
        self.assertIn("stacking_resources: 'GPU' is not a resource",
                      str(error))


class TestSelfService(StackingTestCase):

    def setUp(self):
        super().setUp()
        self.selfservice = service.SelfService(self.chain())

    def test_extension_query_stops_the_gap_before_the_next_lease(self):
        self.first()
        self.by('alice', lease(day(4), day(5), hosts('h2'), name='next'))
        found = self.selfservice.extension(
            builders.context(self.project, user_id='alice'), LEASE_ID)
        self.assertEqual(('2026-06-03T18:00:00Z', 'NoStackingFilter'),
                         (found['latest_end_date'], found['bound_by']))

    def test_quote_reports_the_stacking_denial(self):
        self.first()
        body = lease(day(3, 2), day(4), hosts('h2'), name='quoted')
        found = self.selfservice.quote(
            builders.context(self.project, user_id='alice'), body)
        self.assertEqual((False, 'NoStackingFilter'),
                         (found['allowed'], found['denied_by']))
        self.assertEqual(
            self.assertDenied(self.by, 'alice', body), found['message'])

    def test_project_view_gives_the_earliest_start_after_the_last_lease(
            self):
        self.first()
        found = self.selfservice.view(self.project, 'alice', 7)
        self.assertEqual(
            [{'filter': 'NoStackingFilter', 'resource': 'hosts',
              'scope': 'user', 'limit': 6 * HOUR,
              'unit': 'seconds between leases', 'in_use': None,
              'peak': None, 'project_id': self.project,
              'user_id': 'alice', 'earliest_start': '2026-06-03T06:00:00Z'}],
            found['limits'])

    def test_project_view_without_a_lease_gives_no_earliest_start(self):
        self.now = at(1)
        found = self.selfservice.view(self.project, 'alice', 7)
        self.assertNotIn('earliest_start', found['limits'][0])


class TestMonotone(StackingTestCase):
    """A later end never clears a conflict: what the extension query's
    search relies on."""

    options = {('enforcement', 'stacking_resources'): ['hosts']}

    @hypothesis.settings(max_examples=300, deadline=None)
    @hypothesis.given(
        rule=st.sampled_from([('stacking_gap', 0), ('stacking_gap', 5),
                              ('stacking_overlap_allowance', 5)]),
        other=st.tuples(st.integers(0, 40), st.integers(1, 20)),
        start=st.integers(0, 40), ends=st.tuples(st.integers(1, 40),
                                                 st.integers(0, 20)))
    def test_a_later_end_is_never_allowed_where_an_earlier_one_is_not(
            self, rule, other, start, ends):
        # The filter reads its options as it decides.
        stacker = self.filter
        self.set(**{'stacking_gap': 0, 'stacking_overlap_allowance': 0,
                    rule[0]: rule[1] * HOUR})
        m_start = at(1) + datetime.timedelta(hours=other[0])
        interval = window.Interval(
            m_start, m_start + datetime.timedelta(hours=other[1]),
            {'hosts': 1})
        begin = at(1) + datetime.timedelta(hours=start)
        end = begin + datetime.timedelta(hours=ends[0])
        later = end + datetime.timedelta(hours=ends[1])
        if stacker.conflict(begin, end, interval, None, ('hosts',)):
            self.assertIsNotNone(stacker.conflict(
                begin, later, interval, None, ('hosts',)))
