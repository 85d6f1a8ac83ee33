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
"""The fairness rules through stock Blazar 18 and python-blazarclient.

Each test makes our service (which Blazar's ExternalServiceFilter calls)
run one rule, then acts as the project's member: allowed at the bound,
refused one minute past it (Blazar's API dates are minutes) with the
rule's message. No test waits for a lease to start.
"""

import datetime
import uuid

from tests.functional.blazar_e2e import base

MINUTE = datetime.timedelta(minutes=1)
HOUR = datetime.timedelta(hours=1)


class FairnessTestCase(base.BlazarE2ETestCase):

    def lease(self, start, end, name=None):
        """Create, through Blazar, a lease of one instance from ``start``
        to ``end`` (datetimes, to the minute); return Blazar's answer."""
        found = self.client.lease.create(
            name or 'lease-%s' % uuid.uuid4().hex[:8], base.api_date(start),
            base.api_date(end), [base.instance_reservation()], [])
        self.leases.append(found['id'])
        return found

    def extend(self, lease, end):
        return self.client.lease.update(lease['id'],
                                        end_date=base.api_date(end))

    def end_of(self, lease):
        return datetime.datetime.fromisoformat(
            self.client.lease.get(lease['id'])['end_date'])


class TestExtensionWindow(FairnessTestCase):

    def test_extension_is_refused_before_the_window_opens_and_allowed_in_it(
            self):
        self.use_chain(['ExtensionWindowFilter'],
                       {'extension_window': 2 * 3600})
        # The window of a lease ending in 2 hours from this minute opened
        # at its start; that of a lease ending 2 minutes later opens in
        # one to two minutes (Blazar's dates are minutes, and the clock
        # runs: the test needs no sleep).
        now = base.minute()
        inside = self.lease(now + HOUR, now + 2 * HOUR)
        outside = self.lease(now + HOUR, now + 2 * HOUR + 2 * MINUTE)
        self.assertDenied(
            lambda: self.extend(outside, now + 3 * HOUR),
            'can be extended only in the last 2 hours of its life: its '
            'extension window opens on %s' % base.api_date(now + 2 * MINUTE))

        self.extend(inside, now + 3 * HOUR)
        self.assertEqual(now + 3 * HOUR, self.end_of(inside))
        self.assertEqual(now + 2 * HOUR + 2 * MINUTE, self.end_of(outside))

    def test_extension_by_the_maximum_is_allowed_and_a_minute_more_refused(
            self):
        self.use_chain(['ExtensionWindowFilter'], {'max_extension': 3600})
        lease = self.lease(base.minute() + HOUR, base.minute() + 2 * HOUR)
        end = self.end_of(lease)
        self.assertDenied(
            lambda: self.extend(lease, end + HOUR + MINUTE),
            'can be extended by at most 1 hour at a time',
            'it may end on %s at the latest' % base.api_date(end + HOUR))

        self.extend(lease, end + HOUR)
        self.assertEqual(end + HOUR, self.end_of(lease))


class TestNoStacking(FairnessTestCase):

    def test_next_lease_may_start_the_gap_after_the_previous_end(self):
        self.use_chain(['NoStackingFilter'],
                       {'stacking_resources': 'instances',
                        'stacking_gap': 3600})
        first = self.lease(base.minute() + HOUR, base.minute() + 2 * HOUR)
        # Its ledger entry has Blazar's lease ID once lease.create came.
        self.bound_entry(first['id'])
        end = self.end_of(first)
        self.assertDenied(
            lambda: self.lease(end + HOUR - MINUTE, end + 2 * HOUR),
            'No stacking: the lease starts 59 minutes after lease %s (%s) '
            'of user %s ends' % (first['name'], first['id'], self.user.id),
            'it must start on %s or later' % base.api_date(end + HOUR))

        self.lease(end + HOUR, end + 2 * HOUR)
        self.assertEqual(2, len(self.client.lease.list()))

    def test_next_lease_may_overlap_by_the_allowance(self):
        self.use_chain(['NoStackingFilter'],
                       {'stacking_resources': 'instances',
                        'stacking_overlap_allowance': 600})
        first = self.lease(base.minute() + HOUR, base.minute() + 2 * HOUR)
        end = self.end_of(first)
        self.assertDenied(
            lambda: self.lease(end - 11 * MINUTE, end + HOUR),
            'No stacking: the lease overlaps lease %s' % first['name'],
            'may overlap by at most 10 minutes',
            'it must start on %s or later'
            % base.api_date(end - 10 * MINUTE))

        self.lease(end - 10 * MINUTE, end + HOUR)
        self.assertEqual(2, len(self.client.lease.list()))
