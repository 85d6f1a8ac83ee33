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
"""ExtensionWindowFilter: a lease is extended only in the last part of
its life, by at most so much at a time, on the ledger's clock."""

import datetime

from placement_quota.filters import extension_window
from placement_quota.selfservice import service
from tests.builders import LEASE_ID
from tests.builders import at
from tests.builders import day
from tests.builders import hosts
from tests.builders import lease
from tests.unit.filters import base

DAY = 86400
SECOND = datetime.timedelta(seconds=1)


class ExtensionTestCase(base.LedgerTestCase):

    filter_class = extension_window.ExtensionWindowFilter

    def setUp(self):
        super().setUp()
        # June 2 to June 5, midnight.
        self.current = lease(day(2), day(5), hosts('h1'), name='gpu-1',
                             lease_id=LEASE_ID)
        self.create(self.current)

    def extend_to(self, end, via=None):
        """An update of the lease moving its end to ``end``."""
        return self.update(self.current, dict(self.current, end_date=end),
                           via=via)


class TestExtensionWindow(ExtensionTestCase):

    # Two days: the window opens on June 3, midnight.
    options = {('enforcement', 'extension_window'): 2 * DAY}

    def test_extension_is_allowed_once_the_window_opens(self):
        self.now = at(3)
        self.extend_to(day(8))

    def test_extension_a_second_before_the_window_opens_is_denied(self):
        self.now = at(3) - SECOND
        self.assertDenied(self.extend_to, day(6))

    def test_denial_names_the_window_and_when_it_opens(self):
        self.now = at(2, 10)
        message = self.assertDenied(self.extend_to, day(6))
        self.assertEqual(
            'Lease gpu-1 (%s) can be extended only in the last 2 days of '
            'its life: its extension window opens on 2026-06-03 00:00 (it '
            'ends on 2026-06-05 00:00); the update asks it to end on '
            '2026-06-06 00:00.' % LEASE_ID, message)

    def test_update_that_does_not_move_the_end_later_is_allowed_anytime(
            self):
        self.now = at(1)
        self.update(self.current, dict(self.current, start_date=day(2, 6)))
        self.update(self.current, dict(self.current, end_date=day(4)))

    def test_create_is_not_affected(self):
        self.create(lease(day(2), day(30), hosts('h2'), name='long'))

    def test_exempt_project_may_extend_outside_the_window(self):
        self.now = at(1)
        self.extend_to(day(9), via=self.chain(exempted=[self.project]))

    def test_the_same_extension_through_a_chain_is_denied(self):
        self.now = at(1)
        self.assertDenied(self.extend_to, day(9), via=self.chain())


class TestMaximumExtension(ExtensionTestCase):

    options = {('enforcement', 'max_extension'): DAY}

    def test_extension_by_the_maximum_is_allowed(self):
        self.extend_to(day(6))

    def test_extension_by_a_minute_more_is_denied(self):
        self.assertDenied(self.extend_to, '2026-06-06 00:01')

    def test_denial_gives_the_maximum_what_was_asked_and_the_latest_end(
            self):
        message = self.assertDenied(self.extend_to, day(8))
        self.assertEqual(
            'Lease gpu-1 (%s) can be extended by at most 1 day at a time; '
            'the update asks 3 days (from 2026-06-05 00:00 to 2026-06-08 '
            '00:00): it may end on 2026-06-06 00:00 at the latest.'
            % LEASE_ID, message)

    def test_each_update_may_extend_by_the_maximum_again(self):
        self.extend_to(day(6))
        self.current = dict(self.current, end_date=day(6))
        self.extend_to(day(7))


class TestUnset(ExtensionTestCase):

    def test_without_options_the_filter_is_inert(self):
        self.assertIn('extension_window and max_extension are 0',
                      self.filter.inert())

    def test_without_options_any_extension_is_allowed(self):
        self.extend_to(day(30))


class TestExtensionQuery(ExtensionTestCase):
    """The self-service extension query finds the bound each rule gives,
    and names the filter."""

    options = {('enforcement', 'extension_window'): 2 * DAY,
               ('enforcement', 'max_extension'): DAY}

    def extension(self, *filters):
        chain = self.chain(*filters)
        return service.SelfService(chain).extension(self.context(),
                                                    LEASE_ID)

    def test_bound_is_the_current_end_plus_the_maximum_extension(self):
        self.now = at(3, 12)
        found = self.extension()
        self.assertEqual(('2026-06-06T00:00:00Z', 'ExtensionWindowFilter'),
                         (found['latest_end_date'], found['bound_by']))

    def test_before_the_window_opens_the_bound_is_the_current_end(self):
        self.now = at(2, 12)
        found = self.extension()
        self.assertEqual(('2026-06-05T00:00:00Z', 'ExtensionWindowFilter'),
                         (found['latest_end_date'], found['bound_by']))
        self.assertIn('its extension window opens on 2026-06-03 00:00',
                      found['message'])

    def test_maximum_length_bounds_the_lease_when_it_comes_first(self):
        # 3 days long; at most 3 days 12 hours: the extension may add 12
        # hours of its 1 day.
        self.set(reservation_max_length=3 * DAY + 12 * 3600)
        self.now = at(3, 12)
        found = self.extension('MaximumReservationLengthFilter',
                               'ExtensionWindowFilter')
        self.assertEqual(('2026-06-05T12:00:00Z',
                          'MaximumReservationLengthFilter'),
                         (found['latest_end_date'], found['bound_by']))


class TestProjectView(ExtensionTestCase):

    options = {('enforcement', 'extension_window'): 2 * DAY,
               ('enforcement', 'max_extension'): DAY}

    def test_the_window_and_the_maximum_are_per_lease_limits(self):
        found = service.SelfService(self.chain()).view(self.project, 'u', 7)
        self.assertEqual(
            [('extension_window', 'lease', 2 * DAY, 'seconds before the end'),
             ('extension', 'lease', DAY, 'seconds')],
            [(m['resource'], m['scope'], m['limit'], m['unit'])
             for m in found['limits']])
