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
"""The notification channel (placement_quota/warning/notify.py) on
oslo.messaging's in-memory ``test`` driver; tests/functional/warning/
test_notify.py publishes on a real RabbitMQ."""

import datetime
import os
import types

import fixtures
from oslo_messaging.notify import _impl_test
import testtools

from placement_quota import conf as pq_conf
from placement_quota.warning import model
from placement_quota.warning import notify

NOW = datetime.datetime(2026, 11, 28, 12, 0)


def notice(kind=model.IDLE, **facts):
    return model.Notice(kind=kind, key=model.key(kind, 7), project_id='p1',
                        user_id='u1', lease_id='L1', lease_name='quiet',
                        due_at=NOW, facts=facts)


def configured(workdir, **options):
    """Our configuration with ``[oslo_messaging_notifications]``
    ``options``, from a file as an operator writes it."""
    path = os.path.join(workdir, 'placement-quota.conf')
    with open(path, 'w') as f:
        f.write('[oslo_messaging_notifications]\n')
        for name, value in options.items():
            f.write('%s = %s\n' % (name, value))
    return pq_conf.new_config([], config_files=[path])


RENDERED = types.SimpleNamespace(subject='Lease quiet is idle')


class TestNotificationChannel(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.workdir = self.useFixture(fixtures.TempDir()).path
        _impl_test.reset()
        self.addCleanup(_impl_test.reset)

    def channel(self, **options):
        options.setdefault('driver', 'test')
        options.setdefault('transport_url', 'fake:/')
        channel = notify.NotificationChannel(
            configured(self.workdir, **options))
        self.addCleanup(channel.close)
        return channel

    def sent(self):
        return [(message, priority) for _, message, priority, _ in
                _impl_test.NOTIFICATIONS]

    def test_a_warning_is_published_with_its_event_type_and_payload(self):
        self.channel().send(notice(hosts=['h1']), RENDERED)
        [(message, priority)] = self.sent()
        self.assertEqual('placement_quota.warning.idle',
                         message['event_type'])
        self.assertEqual(dict(notice(hosts=['h1']).as_dict(),
                              subject='Lease quiet is idle'),
                         message['payload'])

    def test_the_publisher_is_placement_quota_on_this_host(self):
        self.channel().send(notice(), RENDERED)
        [(message, _)] = self.sent()
        self.assertTrue(message['publisher_id'].startswith(
            'placement-quota.'))

    def test_the_send_says_what_was_published(self):
        text = self.channel(topics='ops').send(notice(), RENDERED)
        self.assertEqual('published placement_quota.warning.idle (info) on '
                         'ops', text)

    def test_a_lease_ended_for_being_idle_is_a_warn_notification(self):
        self.channel().send(notice(model.IDLE_ENDED), RENDERED)
        self.assertEqual('WARN', self.sent()[0][1])

    def test_credits_used_up_are_a_warn_notification(self):
        self.channel().send(notice(model.CREDITS, threshold_pct=100.0,
                                   used_pct=101.5), RENDERED)
        self.assertEqual('WARN', self.sent()[0][1])

    def test_credits_below_their_allocation_are_an_info_notification(self):
        self.channel().send(notice(model.CREDITS, threshold_pct=90.0,
                                   used_pct=92.0), RENDERED)
        self.assertEqual('INFO', self.sent()[0][1])

    def test_no_driver_is_a_clear_error(self):
        error = self.assertRaises(ValueError, notify.NotificationChannel,
                                  configured(self.workdir,
                                             transport_url='fake:/'))
        self.assertIn('[oslo_messaging_notifications] driver is empty',
                      str(error))

    def test_an_unknown_driver_is_a_clear_error(self):
        error = self.assertRaises(ValueError, self.channel,
                                  driver='no-such-driver')
        self.assertIn('no-such-driver', str(error))

    def test_a_send_retries_a_bounded_number_of_times(self):
        self.channel().send(notice(), RENDERED)
        self.assertEqual(notify.RETRIES, _impl_test.NOTIFICATIONS[0][3])

    def test_the_operators_retry_is_kept_when_bounded(self):
        self.channel(retry='0').send(notice(), RENDERED)
        self.assertEqual(0, _impl_test.NOTIFICATIONS[0][3])
