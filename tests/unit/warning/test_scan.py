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
"""The scan of the ledger for warnings due (placement_quota/warning/scan.py)
and their recording once (record.py)."""

import datetime


from placement_quota.ledger import models
from placement_quota.ledger import shares
from placement_quota.ledger import store
from placement_quota.warning import model
from placement_quota.warning import record
from placement_quota.warning import scan
from tests import ledger_helpers
from tests.unit.warning import base

HOUR = base.HOUR
DAY = base.DAY


class ScanCase(base.WarningCase):

    def found(self, kind=None):
        return [n for n in scan.scan(self.ledger, self.conf, self.now)
                if kind is None or n.kind == kind]

    def scan_and_record(self):
        return record.record(self.ledger, self.found(), self.now)


class TestLeaseEnd(ScanCase):

    def test_a_lease_ending_within_the_longest_lead_is_warned(self):
        self.lease(self.now - DAY, self.now + 47 * HOUR, name='l1')
        [notice] = self.found(model.LEASE_END)
        self.assertEqual((172800, 'lease-l1', 'l1', 'u1'),
                         (notice.facts['lead_s'], notice.lease_id,
                          notice.lease_name, notice.user_id))

    def test_a_lease_ending_past_the_longest_lead_is_not_warned(self):
        self.lease(self.now - DAY, self.now + 49 * HOUR)
        self.assertEqual([], self.found(model.LEASE_END))

    def test_a_lease_inside_two_leads_gets_the_shortest_ones_only(self):
        self.lease(self.now - DAY, self.now + 30 * 60 * base.HOUR / 3600)
        [notice] = self.found(model.LEASE_END)
        self.assertEqual(3600, notice.facts['lead_s'])

    def test_a_lead_longer_than_the_lease_gives_no_warning(self):
        # A 3-hour lease: its 48 h warning would come before it starts.
        self.lease(self.now - HOUR, self.now + 2 * HOUR)
        self.assertEqual([], self.found(model.LEASE_END))

    def test_the_shorter_lead_is_warned_after_the_longer_one(self):
        self.lease(self.now - 3 * DAY, self.now + 47 * HOUR)
        self.assertEqual(1, self.scan_and_record())
        self.now += 46 * HOUR + datetime.timedelta(seconds=1)
        [notice] = self.found(model.LEASE_END)
        self.assertEqual(3600, notice.facts['lead_s'])

    def test_a_warning_recorded_is_not_found_again(self):
        self.lease(self.now - DAY, self.now + 47 * HOUR)
        self.assertEqual(1, self.scan_and_record())
        self.assertEqual([], self.found(model.LEASE_END))

    def test_an_extended_lease_is_warned_again_for_its_new_end(self):
        row = self.lease(self.now - 3 * DAY, self.now + 30 * 60 * HOUR / 3600)
        self.scan_and_record()
        with self.ledger.transaction(['p1'], now=self.now) as txn:
            txn.update(row, end_date=self.now + 50 * 60 * HOUR / 3600,
                       effective_end=self.now + 50 * 60 * HOUR / 3600)
        [notice] = self.found(model.LEASE_END)
        self.assertEqual(model.iso(self.now + 50 * 60 * HOUR / 3600),
                         notice.facts['end_date'])

    def test_ended_and_denied_leases_are_not_warned(self):
        self.lease(self.now - DAY, self.now + HOUR / 2,
                   state=models.TERMINATED, name='ended')
        self.lease(self.now - DAY, self.now + HOUR / 2,
                   state=models.DENIED, name='denied')
        self.lease(self.now - DAY, self.now + HOUR / 2,
                   state=models.ABANDONED, name='abandoned')
        self.assertEqual([], self.found(model.LEASE_END))

    def test_no_lead_time_no_lease_warning(self):
        self.set(lease_end_lead_times=[])
        self.lease(self.now - DAY, self.now + HOUR / 2)
        self.assertEqual([], self.found(model.LEASE_END))


class TestCredits(ScanCase):

    def test_credits_at_a_threshold_are_warned(self):
        self.allocation(100, spent=75)
        [notice] = self.found(model.CREDITS)
        self.assertEqual((75.0, 75.0, 25.0), (
            notice.facts['threshold_pct'], notice.facts['used_pct'],
            notice.facts['left']))

    def test_credits_just_under_a_threshold_are_not_warned(self):
        self.allocation(100, spent=74.99)
        self.assertEqual([], self.found(model.CREDITS))

    def test_crossing_two_thresholds_at_once_warns_the_highest(self):
        self.allocation(100, spent=95)
        [notice] = self.found(model.CREDITS)
        self.assertEqual(90.0, notice.facts['threshold_pct'])

    def test_what_leases_not_started_were_charged_counts(self):
        allocation = self.allocation(100)
        self.lease(self.now + DAY, self.now + 2 * DAY, charged=91,
                   allocation=allocation)
        [notice] = self.found(model.CREDITS)
        self.assertEqual((90.0, 91.0), (notice.facts['threshold_pct'],
                                        notice.facts['not_started']))

    def test_a_refund_under_a_threshold_warned_gives_no_lower_warning(self):
        allocation = self.allocation(100, spent=92)
        self.scan_and_record()
        self.charge(allocation, -10)   # 82 %: past 75 %, under 90 %
        self.assertEqual([], self.found(model.CREDITS))

    def test_the_next_threshold_is_warned_after_a_lower_one(self):
        allocation = self.allocation(100, spent=80)
        self.scan_and_record()
        self.charge(allocation, 20)
        [notice] = self.found(model.CREDITS)
        self.assertEqual(100.0, notice.facts['threshold_pct'])

    def test_an_ended_allocation_is_not_warned(self):
        self.allocation(100, spent=95, end=self.now - HOUR)
        self.assertEqual([], self.found(model.CREDITS))

    def test_a_pool_is_warned_in_its_hours(self):
        self.allocation(10, spent=9, resource_class='CUSTOM_GPU')
        [notice] = self.found(model.CREDITS)
        self.assertEqual(('CUSTOM_GPU', 1.0, None), (
            notice.facts['resource_class'], notice.facts['left'],
            notice.facts['not_started']))

    def test_a_users_share_past_a_threshold_warns_the_user(self):
        allocation = self.allocation(1000)
        with self.ledger.transaction(['p1'], now=self.now) as txn:
            shares.set_share(txn.connection, 'p1', 'u2', store.to_micro(10),
                             self.now)
        self.lease(self.now + DAY, self.now + 2 * DAY, user='u2',
                   charged=9, allocation=allocation)
        [notice] = self.found(model.USER_CREDITS)
        self.assertEqual(('u2', 90.0, 1.0), (
            notice.user_id, notice.facts['threshold_pct'],
            notice.facts['left']))


class TestAllocationEnd(ScanCase):

    def test_an_allocation_ending_within_a_lead_is_warned(self):
        self.allocation(100, start=self.now - 30 * DAY,
                        end=self.now + 6 * DAY)
        [notice] = self.found(model.ALLOCATION_END)
        self.assertEqual(7 * 86400, notice.facts['lead_s'])

    def test_an_allocation_another_takes_over_from_is_not_warned(self):
        self.allocation(100, start=self.now - 30 * DAY,
                        end=self.now + 6 * DAY)
        self.allocation(100, start=self.now + 6 * DAY,
                        end=self.now + 60 * DAY)
        self.assertEqual([], self.found(model.ALLOCATION_END))

    def test_a_pool_does_not_take_over_from_the_general_allocation(self):
        self.allocation(100, start=self.now - 30 * DAY,
                        end=self.now + 6 * DAY)
        self.allocation(100, start=self.now - DAY, end=self.now + 60 * DAY,
                        resource_class='CUSTOM_GPU')
        self.assertEqual(1, len(self.found(model.ALLOCATION_END)))


class TestStatements(ScanCase):
    """A scan reads the ledger in a fixed number of statements, whatever
    the number of projects."""

    def statements(self):
        seen = ledger_helpers.watch_statements(self, self.ledger.engine)
        scan.scan(self.ledger, self.conf, self.now)
        return len(seen)

    def populate(self, projects, first=0):
        for n in range(first, first + projects):
            project = 'p%d' % n
            allocation = self.allocation(100, project=project, spent=80,
                                         end=self.now + 3 * DAY)
            self.lease(self.now - DAY, self.now + HOUR / 2, project=project,
                       name='l%d' % n, allocation=allocation)

    def test_ten_times_the_projects_take_the_same_statements(self):
        self.populate(3)
        few = self.statements()
        self.populate(30, first=3)
        self.assertEqual(few, self.statements())


class TestRecord(ScanCase):

    def test_recording_twice_inserts_once(self):
        self.allocation(100, spent=95)
        found = self.found()
        self.assertEqual((1, 0), (record.record(self.ledger, found, self.now),
                                  record.record(self.ledger, found, self.now)))

    def test_a_warning_is_claimed_by_one_holder_at_a_time(self):
        self.allocation(100, spent=95)
        self.scan_and_record()
        first = record.claim(self.ledger, self.now, 300)
        self.assertEqual((1, []), (len(first), record.claim(
            self.ledger, self.now, 300)))

    def test_a_claim_expired_is_taken_again(self):
        self.allocation(100, spent=95)
        self.scan_and_record()
        record.claim(self.ledger, self.now, 300)
        later = self.now + datetime.timedelta(seconds=301)
        self.assertEqual(1, len(record.claim(self.ledger, later, 300)))

    def test_a_warning_sent_is_not_claimed_again(self):
        self.allocation(100, spent=95)
        self.scan_and_record()
        for held in record.claim(self.ledger, self.now, 300):
            record.finished(self.ledger, held.id, self.now)
        later = self.now + datetime.timedelta(seconds=301)
        self.assertEqual([], record.claim(self.ledger, later, 300))

    def test_a_failed_attempt_waits_for_its_delay(self):
        self.allocation(100, spent=95)
        self.scan_and_record()
        [held] = record.claim(self.ledger, self.now, 300)
        record.failed_attempt(self.ledger, held.id, 'down', self.now, 30,
                              give_up=False)
        soon = self.now + datetime.timedelta(seconds=29)
        after = self.now + datetime.timedelta(seconds=30)
        self.assertEqual(([], [held.id]), (
            [h.id for h in record.claim(self.ledger, soon, 300,
                                        ids=[held.id])],
            [h.id for h in record.claim(self.ledger, after, 300,
                                        ids=[held.id])]))

    def test_a_late_write_after_the_claim_expired_changes_nothing(self):
        self.allocation(100, spent=95)
        self.scan_and_record()
        [slow] = record.claim(self.ledger, self.now, 300)
        later = self.now + datetime.timedelta(seconds=301)
        [other] = record.claim(self.ledger, later, 300)
        record.finished(self.ledger, other.id, later,
                        held_until=other.claimed_until)
        self.assertEqual((False, None, False), (
            record.done(self.ledger, slow.id, 'email', 'late', later,
                        held_until=slow.claimed_until),
            record.failed_attempt(self.ledger, slow.id, 'late', later, 30,
                                  give_up=True,
                                  held_until=slow.claimed_until),
            record.finished(self.ledger, slow.id, later,
                            held_until=slow.claimed_until)))
        [sent] = record.listing(self.ledger)
        self.assertEqual((models.WARNING_SENT, {}),
                         (sent.state, sent.channels_done))

    def test_a_warning_given_up_is_listed_failed_with_its_error(self):
        self.allocation(100, spent=95)
        self.scan_and_record()
        [held] = record.claim(self.ledger, self.now, 300)
        record.failed_attempt(self.ledger, held.id, 'refused', self.now, 30,
                              give_up=True)
        [failed] = record.listing(self.ledger, state=models.WARNING_FAILED)
        self.assertEqual((held.id, 1, 'refused'),
                         (failed.id, failed.attempts, failed.last_error))

    def test_the_notice_comes_back_from_the_ledger_unchanged(self):
        self.allocation(100, spent=95)
        found = {n.key: n for n in self.found()}
        record.record(self.ledger, found.values(), self.now)
        for held in record.claim(self.ledger, self.now, 300):
            self.assertEqual(found[held.notice.key].facts,
                             held.notice.facts)
