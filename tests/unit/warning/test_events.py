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
"""Blazar's before_end_lease event as a warning
(placement_quota/warning/events.py)."""

import datetime

from placement_quota.warning import events
from placement_quota.warning import model
from placement_quota.warning import record
from placement_quota.warning import scan
from tests.unit.warning import base

HOUR = base.HOUR
DAY = base.DAY


def payload(lease_id, start, end, name='l1', project='p1', user='u1'):
    """A lease notification's payload as Blazar 18 sends it (the parts
    read here)."""
    return {'lease_id': lease_id, 'project_id': project, 'user_id': user,
            'name': name, 'start_date': start.isoformat(),
            'end_date': end.isoformat(), 'status': 'ACTIVE',
            'reservations': [], 'events': []}


class TestBeforeEnd(base.WarningCase):

    def setUp(self):
        super().setUp()
        self.start, self.end = self.now - DAY, self.now + HOUR
        self.row = self.lease(self.start, self.end, name='l1')

    def event(self, end=None):
        return events.before_end(self.ledger, payload(
            'lease-l1', self.start, end or self.end), self.now)

    def test_the_event_records_a_warning_with_the_lease_and_its_end(self):
        self.assertTrue(self.event())
        [warning] = record.listing(self.ledger)
        self.assertEqual(
            (model.BEFORE_END, 'lease-l1', 'l1', 'u1', model.iso(self.end),
             self.row),
            (warning.notice.kind, warning.notice.lease_id,
             warning.notice.lease_name, warning.notice.user_id,
             warning.notice.facts['end_date'],
             warning.notice.facts['lease_row']))

    def test_the_event_delivered_twice_is_recorded_once(self):
        self.event()
        self.assertFalse(self.event())
        self.assertEqual(1, len(record.listing(self.ledger)))

    def test_the_event_of_a_lease_ending_within_two_minutes_is_none(self):
        self.end = self.now + datetime.timedelta(seconds=119)
        self.assertFalse(self.event())
        self.assertEqual([], record.listing(self.ledger))

    def test_a_lease_already_warned_of_that_end_gets_no_second_warning(self):
        record.record(self.ledger, scan.scan(self.ledger, self.conf,
                                             self.now), self.now)
        self.assertFalse(self.event())
        self.assertEqual([model.LEASE_END], [
            w.notice.kind for w in record.listing(self.ledger)])

    def test_a_lease_not_in_the_ledger_is_warned_too(self):
        self.assertTrue(events.before_end(self.ledger, payload(
            'lease-elsewhere', self.start, self.end, name='other'),
            self.now))

    def test_the_scan_after_the_event_adds_no_lease_end_warning(self):
        self.event()
        record.record(self.ledger, scan.scan(self.ledger, self.conf,
                                             self.now), self.now)
        self.assertEqual([model.BEFORE_END], [
            w.notice.kind for w in record.listing(self.ledger)])

    def test_an_event_delivered_after_the_lease_ended_is_none(self):
        message_time = self.now
        self.now = self.end + HOUR   # the listener was down meanwhile
        self.assertFalse(events.before_end(self.ledger, payload(
            'lease-l1', self.start, self.end), message_time))
