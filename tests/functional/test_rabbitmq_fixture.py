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
"""The private RabbitMQ node of :mod:`tests.fixtures.rabbitmq` works."""

import os
import queue
import socket

import kombu
from oslo_config import cfg
import oslo_messaging
import testtools

from tests.fixtures import rabbitmq


class _Endpoint:
    def __init__(self):
        self.received = queue.Queue()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self.received.put((publisher_id, event_type, payload))


class TestRabbitMQFixture(testtools.TestCase):

    def test_publish_and_consume_with_kombu(self):
        broker = self.useFixture(rabbitmq.RabbitMQFixture())
        url = 'amqp://guest:guest@127.0.0.1:%d/%s' % (
            broker.server.port, broker.vhost)
        with kombu.Connection(url, connect_timeout=5) as conn:
            q = conn.SimpleQueue('pq-fixture-test')
            q.put({'hello': 'rabbit'})
            message = q.get(timeout=10)
            message.ack()
            self.assertEqual({'hello': 'rabbit'}, message.payload)
            q.close()

    def test_notification_round_trip_with_oslo_messaging(self):
        broker = self.useFixture(rabbitmq.RabbitMQFixture())
        conf = cfg.ConfigOpts()
        conf([], project='pq-test')
        transport = oslo_messaging.get_notification_transport(
            conf, url=broker.transport_url)
        self.addCleanup(transport.cleanup)
        endpoint = _Endpoint()
        listener = oslo_messaging.get_notification_listener(
            transport, [oslo_messaging.Target(topic='notifications')],
            [endpoint], executor='threading', pool='fixture-test')
        listener.start()
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)
        notifier = oslo_messaging.Notifier(
            transport, publisher_id='blazar.lease', driver='messagingv2',
            topics=['notifications'])
        notifier.info({}, 'lease.create', {'lease_id': 'abc'})
        self.assertEqual(('blazar.lease', 'lease.create',
                          {'lease_id': 'abc'}),
                         endpoint.received.get(timeout=30))

    def test_private_node_is_hermetic_and_loopback_only(self):
        broker = self.useFixture(rabbitmq.RabbitMQFixture(private=True,
                                                          vhost=False))
        server = broker.server
        self.assertTrue(server.startup_seconds > 0)
        self.assertEqual('rabbit://guest:guest@127.0.0.1:%d/' % server.port,
                         server.transport_url)
        # The Erlang cookie is in the node's own HOME, not the user's.
        self.assertTrue(os.path.exists(
            os.path.join(server.home, '.erlang.cookie')))
        self.assertTrue(server.log_file.startswith(server.workdir))
        with open(server.config_file) as f:
            self.assertIn('listeners.tcp.1 = 127.0.0.1:%d' % server.port,
                          f.read())
        self.assertTrue(server.accepts_connections())
        self.assertIn('Last lines of', server.log_tail())

    def test_stop_app_and_start_app(self):
        broker = self.useFixture(rabbitmq.RabbitMQFixture(vhost=False))
        server = broker.server
        server.stop_app()
        self.assertFalse(server.accepts_connections())
        self.assertRaises(OSError, socket.create_connection,
                          ('127.0.0.1', server.port), 2)
        server.start_app()
        self.assertTrue(server.accepts_connections())

    def test_restart_keeps_port_and_durable_queues(self):
        broker = self.useFixture(rabbitmq.RabbitMQFixture(private=True,
                                                          vhost=False))
        server = broker.server
        port = server.port
        url = 'amqp://guest:guest@127.0.0.1:%d//' % port
        with kombu.Connection(url, connect_timeout=5) as conn:
            q = conn.SimpleQueue('pq-durable', queue_opts={'durable': True})
            q.put('kept', delivery_mode=2)
            q.close()
        server.restart()
        self.assertEqual(port, server.port)
        with kombu.Connection(url, connect_timeout=5) as conn:
            q = conn.SimpleQueue('pq-durable', queue_opts={'durable': True})
            message = q.get(timeout=10)
            message.ack()
            self.assertEqual('kept', message.payload)
            q.close()

    def test_stop_removes_everything(self):
        server = rabbitmq.shared()  # skips when not installed
        self.assertTrue(server.alive())
        private = rabbitmq.RabbitMQServer().start()
        workdir = private.workdir
        private.stop()
        self.assertFalse(private.alive())
        self.assertFalse(os.path.exists(workdir))
        self.assertFalse(private.epmd.alive())
