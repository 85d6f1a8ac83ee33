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
"""The dispatcher: each recorded warning sent once on every channel,
retried with backoff, given up and listed, or dropped as obsolete
(placement_quota/warning/dispatch.py).

The channels here are test doubles that record what they are given (the
real e-mail and notification channels have their own tests against a real
SMTP server and RabbitMQ); the ledger is real (SQLite).
"""

import datetime

from placement_quota.ledger import models
from placement_quota.placement import client as placement_client
from placement_quota.warning import channels
from placement_quota.warning import dispatch
from placement_quota.warning import model
from placement_quota.warning import record
from placement_quota.warning import render
from tests.unit.warning import base

HOUR = base.HOUR
DAY = base.DAY


class RecordingChannel(channels.Channel):
    """A test double of a channel: records each send; fails the next
    ``failures`` sends with ``permanent``."""

    def __init__(self, name, failures=0, permanent=False):
        self.name = name
        self.sent = []
        self.failures = failures
        self.permanent = permanent

    def send(self, notice, rendered):
        if self.failures:
            self.failures -= 1
            raise channels.SendError('server said 451', self.permanent)
        self.sent.append((notice.key, rendered.subject))
        return 'sent to the test'


class DispatchCase(base.WarningCase):

    def setUp(self):
        super().setUp()
        self.mail = RecordingChannel('email')
        self.notifications = RecordingChannel('notification')

    def dispatcher(self, extension=None):
        return dispatch.Dispatcher(
            self.conf, self.ledger, [self.mail, self.notifications],
            renderer=render.Renderer(self.conf), extension=extension)

    def later(self, seconds):
        self.now += datetime.timedelta(seconds=seconds)


class TestSending(DispatchCase):

    def test_a_warning_due_is_sent_once_on_each_channel(self):
        self.allocation(100, spent=95)
        warner = self.dispatcher()
        for _ in range(3):
            warner.run_once()
            self.later(120)
        self.assertEqual((['credits:1:90'], ['credits:1:90']), (
            [k for k, _ in self.mail.sent],
            [k for k, _ in self.notifications.sent]))

    def test_a_warning_sent_is_listed_sent_with_what_each_channel_did(self):
        self.allocation(100, spent=95)
        self.dispatcher().run_once()
        [sent] = record.listing(self.ledger)
        self.assertEqual((models.WARNING_SENT, {
            'email': 'sent to the test',
            'notification': 'sent to the test'}),
            (sent.state, sent.channels_done))

    def test_two_dispatchers_send_a_warning_once(self):
        self.allocation(100, spent=95)
        first, second = self.dispatcher(), self.dispatcher()
        first.scan_once()
        second.scan_once()
        first.deliver_due()
        second.deliver_due()
        self.assertEqual(1, len(self.mail.sent))

    def test_without_channels_warnings_are_recorded_not_sent(self):
        self.allocation(100, spent=95)
        warner = dispatch.Dispatcher(self.conf, self.ledger, [],
                                     renderer=render.Renderer(self.conf))
        warner.run_once()
        [pending] = record.listing(self.ledger)
        self.assertEqual(models.WARNING_PENDING, pending.state)


class TestRetries(DispatchCase):

    def test_a_failed_send_is_retried_after_its_delay(self):
        self.allocation(100, spent=95)
        self.mail.failures = 1
        warner = self.dispatcher()
        warner.run_once()
        self.later(29)
        warner.deliver_due()
        self.assertEqual(0, len(self.mail.sent))
        self.later(1)
        warner.deliver_due()
        self.assertEqual(1, len(self.mail.sent))

    def test_a_channel_done_is_not_sent_again_when_another_is_retried(self):
        self.allocation(100, spent=95)
        self.notifications.failures = 1
        warner = self.dispatcher()
        warner.run_once()
        self.later(30)
        warner.deliver_due()
        self.assertEqual((1, 1), (len(self.mail.sent),
                                  len(self.notifications.sent)))

    def test_the_delay_doubles_up_to_its_maximum(self):
        self.set(retry_delay=30, retry_delay_max=100)
        self.assertEqual([30, 60, 100, 100], [
            dispatch.retry_delay(self.conf.warnings, n)
            for n in (1, 2, 3, 4)])

    def test_a_warning_is_given_up_after_max_attempts(self):
        self.set(max_attempts=2)
        self.allocation(100, spent=95)
        self.mail.failures = 5
        warner = self.dispatcher()
        warner.run_once()
        self.later(30)
        warner.deliver_due()
        self.later(3600)
        warner.deliver_due()
        [failed] = record.listing(self.ledger)
        self.assertEqual((models.WARNING_FAILED, 2, 'email: server said 451'),
                         (failed.state, failed.attempts, failed.last_error))

    def test_a_permanent_failure_is_given_up_at_once(self):
        self.allocation(100, spent=95)
        self.mail.failures, self.mail.permanent = 1, True
        self.dispatcher().run_once()
        [failed] = record.listing(self.ledger)
        self.assertEqual((models.WARNING_FAILED, 1),
                         (failed.state, failed.attempts))


class UnreachablePlacement:
    """A test double of the idle finder whose Placement cannot be
    reached."""

    def find(self, now, record=True):
        raise placement_client.Unreachable(
            'connection refused', 'GET', '/resource_providers')


class TestIdleStep(DispatchCase):

    def test_a_placement_outage_leaves_the_ledgers_warnings_going(self):
        self.allocation(100, spent=95)
        warner = dispatch.Dispatcher(
            self.conf, self.ledger, [self.mail],
            renderer=render.Renderer(self.conf),
            idle_finder=UnreachablePlacement())
        warner.run_once()
        self.assertEqual(['credits:1:90'], [k for k, _ in self.mail.sent])


class TestLeaseWarnings(DispatchCase):

    def test_a_lease_extended_before_its_turn_is_not_warned_of_its_old_end(
            self):
        row = self.lease(self.now - DAY, self.now + HOUR / 2, name='l1')
        warner = dispatch.Dispatcher(self.conf, self.ledger, [self.mail],
                                     renderer=render.Renderer(self.conf))
        warner.scan_once()
        new_end = self.now + 3 * DAY
        with self.ledger.transaction(['p1'], now=self.now) as txn:
            txn.update(row, end_date=new_end, effective_end=new_end)
        warner.deliver_due()
        [obsolete] = record.listing(self.ledger)
        self.assertEqual(([], models.WARNING_OBSOLETE),
                         (self.mail.sent, obsolete.state))

    def test_a_lease_warning_says_how_far_it_may_be_extended(self):
        self.lease(self.now - DAY, self.now + HOUR / 2, name='l1')
        latest = model.iso(self.now + DAY)
        seen = []

        def extension(notice):
            seen.append(notice.lease_id)
            return {'latest_end_date': latest, 'bound_by': 'LeaseCountFilter',
                    'message': 'a message'}
        rendered = []
        self.mail.send = lambda notice, r: rendered.append(
            (notice.facts, r.text)) or 'ok'
        self.dispatcher(extension=extension).run_once()
        [(facts, text)] = rendered
        self.assertEqual((['lease-l1'], latest),
                         (seen, facts['latest_end_date']))
        self.assertIn('2026-11-29 12:00', text)

    def test_a_failing_extension_query_still_sends_the_warning(self):
        self.lease(self.now - DAY, self.now + HOUR / 2, name='l1')

        def extension(notice):
            raise RuntimeError('Placement is down')
        self.dispatcher(extension=extension).run_once()
        self.assertEqual(1, len(self.mail.sent))
