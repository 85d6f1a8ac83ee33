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
"""The notification channel on a real RabbitMQ: what an operator's
pipeline listening on the topic receives."""

import socket
import threading
import time

import fixtures
import oslo_messaging
import testtools

from placement_quota.warning import channels
from placement_quota.warning import model
from placement_quota.warning import notify
from tests.fixtures import rabbitmq
from tests.unit.warning import test_notify as unit

TOPIC = 'pq-warnings'
WAIT = 30


class Pipeline:
    """An operator's listener on the warnings' topic: oslo.messaging's
    notification listener, every priority recorded."""

    def __init__(self, workdir, transport_url):
        self.transport = oslo_messaging.get_notification_transport(
            unit.configured(workdir), url=transport_url)
        self.received = []
        self.arrived = threading.Event()
        self.listener = oslo_messaging.get_notification_listener(
            self.transport, [oslo_messaging.Target(topic=TOPIC)], [self],
            executor='threading')

    def _record(self, priority, publisher_id, event_type, payload):
        self.received.append({'priority': priority, 'event_type': event_type,
                              'publisher_id': publisher_id,
                              'payload': payload})
        self.arrived.set()
        return oslo_messaging.NotificationResult.HANDLED

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        return self._record('INFO', publisher_id, event_type, payload)

    def warn(self, ctxt, publisher_id, event_type, payload, metadata):
        return self._record('WARN', publisher_id, event_type, payload)

    def start(self):
        self.listener.start()
        return self

    def stop(self):
        self.listener.stop()
        self.listener.wait()
        self.transport.cleanup()


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class TestNotificationsOnRabbitMQ(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.workdir = self.useFixture(fixtures.TempDir()).path

    def channel(self, transport_url, **options):
        channel = notify.NotificationChannel(unit.configured(
            self.workdir, driver='messagingv2', topics=TOPIC,
            transport_url=transport_url, **options))
        self.addCleanup(channel.close)
        return channel

    def test_a_warning_arrives_with_its_event_type_and_payload(self):
        broker = self.useFixture(rabbitmq.RabbitMQFixture())
        pipeline = Pipeline(self.workdir, broker.transport_url).start()
        self.addCleanup(pipeline.stop)
        sent = unit.notice(model.IDLE_ENDED, hosts=['h1'], refunded=12.5)
        self.channel(broker.transport_url).send(sent, unit.RENDERED)
        self.assertTrue(pipeline.arrived.wait(WAIT),
                        'no notification within %ds' % WAIT)
        [received] = pipeline.received
        self.assertEqual(
            ('placement_quota.warning.idle_ended', 'WARN',
             dict(sent.as_dict(), subject=unit.RENDERED.subject)),
            (received['event_type'], received['priority'],
             received['payload']))

    def test_a_broker_that_cannot_be_reached_is_a_transient_send_error(self):
        url = 'rabbit://guest:guest@127.0.0.1:%d/' % free_port()
        channel = self.channel(url, retry='0')
        started = time.monotonic()
        error = self.assertRaises(channels.SendError, channel.send,
                                  unit.notice(), unit.RENDERED)
        self.assertFalse(error.permanent)
        self.assertLess(time.monotonic() - started, WAIT)
