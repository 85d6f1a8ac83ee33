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
"""Property-based test (hypothesis) of RollingCapFilter: random leases
admitted one by one on a SQLite ledger never hold more than the cap in
any window, and each denied one would have."""

import datetime
import itertools

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from placement_quota.filters import base as filters_base
from tests import builders
from tests.builders import instances
from tests.builders import lease
from tests.unit.filters import test_rolling_cap

PERIOD_MINUTES = 12 * 60
PROJECT_CAP = 12       # instance-hours in any 12 hours
USER_CAP = 8           # per user

#: Half hours: the leases meet, and reach the caps exactly, often.
HALF_HOURS = st.integers(0, 72).map(lambda n: n * 30)

#: (start, length) in minutes from now, instances, user.
LEASES = st.lists(
    st.tuples(HALF_HOURS, st.integers(1, 16).map(lambda n: n * 30),
              st.integers(1, 3), st.sampled_from(['alice', 'bob'])),
    min_size=1, max_size=10)


def usage(leases, t):
    """Instance-minutes ``leases`` (``(start, end, amount)``) hold in
    ``[t, t + PERIOD_MINUTES)``: a direct sum."""
    return sum(amount * max(0, min(end, t + PERIOD_MINUTES) - max(start, t))
               for start, end, amount in leases)


def worst(leases, first=None, last=None):
    """The most any window ``[t, t + P)`` holds, ``t`` in ``[first,
    last]`` (every window when not given): the usage is piecewise linear
    in ``t``, so its maximum is at a breakpoint (or an end of the
    range)."""
    moments = set()
    for start, end, _ in leases:
        moments.update((start, end, start - PERIOD_MINUTES,
                        end - PERIOD_MINUTES))
    if first is not None:
        moments = {t for t in moments if first <= t <= last} | {first, last}
    return max((usage(leases, t) for t in moments), default=0)


class TestRollingCapProperty(test_rolling_cap.RollingCapTestCase):

    options = {('enforcement', 'rolling_cap_resources'): ['instances'],
               ('enforcement', 'rolling_cap_period'): PERIOD_MINUTES * 60}
    limits = {'registered_limits': {'hours:instances': PROJECT_CAP,
                                    'user_hours:instances': USER_CAP}}

    projects = itertools.count()

    def over(self, admitted, candidate):
        """Whether ``candidate`` added to ``admitted`` passes a cap in a
        window overlapping it."""
        start, end, amount, user = candidate
        first, last = start - PERIOD_MINUTES, end
        scopes = [([a for a in admitted], PROJECT_CAP),
                  ([a for a in admitted if a[3] == user], USER_CAP)]
        return any(
            worst([a[:3] for a in found] + [candidate[:3]], first, last) >
            cap * 60 for found, cap in scopes)

    @settings(max_examples=60, deadline=None)
    @given(LEASES)
    def test_no_window_holds_more_than_the_cap(self, leases):
        project = 'prop-%d' % next(self.projects)
        admitted = []
        for i, (offset, length, amount, user) in enumerate(leases):
            start = builders.NOW + datetime.timedelta(minutes=offset)
            end = start + datetime.timedelta(minutes=length)
            candidate = (offset, offset + length, amount, user)
            body = lease(start.strftime('%Y-%m-%d %H:%M'),
                         end.strftime('%Y-%m-%d %H:%M'),
                         instances(amount), name='l%d' % i)
            try:
                self.filter.check_create(
                    builders.context(project, user_id=user), body)
            except filters_base.EnforcementDenied:
                # Denied only when it would have passed a cap.
                self.assertTrue(self.over(admitted, candidate), candidate)
            else:
                admitted.append(candidate)
        self.assertEqual(len(admitted), len(self.live_entries(project)))
        self.assertLessEqual(worst([a[:3] for a in admitted]),
                             PROJECT_CAP * 60)
        for user in ('alice', 'bob'):
            self.assertLessEqual(
                worst([a[:3] for a in admitted if a[3] == user]),
                USER_CAP * 60)
