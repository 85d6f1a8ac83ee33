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
"""The listener of ``placement-quota listen`` on a real RabbitMQ: Blazar's
notifications reach the ledger, and what must not break it does not."""

import datetime
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
import uuid

import amqp
import oslo_messaging
from prometheus_client import parser as prometheus_parser
import requests
import testtools

from placement_quota.ledger import models
from placement_quota.lifecycle import listener as listener_mod
from tests.builders import day
from tests.builders import hosts
from tests.builders import lease
from tests.fixtures import process as process_fixture
from tests.fixtures import rabbitmq
from tests.functional.lifecycle import base


def _lease_id():
    return str(uuid.uuid4())


class _Collector:
    """Another consumer of Blazar's notifications (e.g. Ceilometer)."""

    def __init__(self):
        self.received = queue.Queue()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self.received.put((event_type, payload['lease_id']))


class TestListener(base.ListenerTestCase):

    def test_create_binds_the_pending_entry(self):
        body = lease(day(2), day(3), hosts('a'), name='one')
        self.check_create(body)
        self.assertIsNone(self.entry().lease_id)
        self.start_listener()
        lease_id = _lease_id()
        self.notify('lease.create',
                    base.blazar_payload(body, lease_id, self.project))
        entry = self.wait_for_entry(lambda e: e.lease_id == lease_id,
                                    'binding')
        self.assertEqual(models.PENDING, entry.state)

    def test_malformed_notification_is_acknowledged_and_changes_nothing(self):
        body = lease(day(2), day(3), hosts('a'), name='one')
        self.check_create(body)
        before = self.entries()
        lifecycle = self.start_listener()
        lease_id = _lease_id()
        bad = base.blazar_payload(body, lease_id, self.project)
        bad['end_date'] = 'not a date'
        self.notify('lease.create', bad)
        base.wait_until(lambda: lifecycle.endpoint.counts['malformed'],
                        what='the malformed notification')
        self.assertEqual(before, self.entries())
        # Acknowledged: nothing waits in the queue to come back.
        self.assertEqual(0, self._queued(self.conf.lifecycle.pool))
        # The next good one is still handled.
        self.notify('lease.create',
                    base.blazar_payload(body, lease_id, self.project))
        self.wait_for_entry(lambda e: e.lease_id == lease_id, 'binding')
        self.assertEqual({'handled': 1, 'malformed': 1, 'requeued': 0,
                          'failed': 0}, lifecycle.endpoint.counts)

    def test_non_lease_notifications_are_acknowledged_unread(self):
        lifecycle = self.start_listener()
        self.notify('compute.instance.create.end', {'instance_id': 'x'})
        body = lease(day(2), day(3), hosts('a'))
        self.check_create(body)
        lease_id = _lease_id()
        self.notify('lease.create',
                    base.blazar_payload(body, lease_id, self.project))
        self.wait_for_entry(lambda e: e.lease_id == lease_id, 'binding')
        self.assertEqual(1, lifecycle.endpoint.counts['handled'])
        self.assertEqual(0, self._queued(self.conf.lifecycle.pool))

    def test_pool_never_steals_from_other_consumers(self):
        # Ceilometer-like: no pool, the plain notifications.info queue;
        # and another pool.
        plain, other = _Collector(), _Collector()
        for collector, pool in ((plain, None), (other, 'another-pool')):
            listener = oslo_messaging.get_notification_listener(
                self.transport(), [oslo_messaging.Target(
                    topic='notifications', exchange='openstack')],
                [collector], executor='threading', pool=pool)
            listener.start()
            self.addCleanup(listener.wait)
            self.addCleanup(listener.stop)
            base.wait_for_queue(self.broker.transport_url,
                                pool or 'notifications.info')
        self.start_listener()
        lease_ids = []
        for n in range(10):
            body = lease(day(2 + n), day(3 + n), hosts('a'), name='l%d' % n)
            self.check_create(body)
            lease_ids.append(_lease_id())
            self.notify('lease.create', base.blazar_payload(
                body, lease_ids[-1], self.project))
        for collector in (plain, other):
            got = sorted(collector.received.get(timeout=base.TIMEOUT)[1]
                         for _ in lease_ids)
            self.assertEqual(sorted(lease_ids), got)
        base.wait_until(lambda: sorted(e.lease_id for e in self.entries()
                                       if e.lease_id) == sorted(lease_ids),
                        what='binding every entry')

    def test_unavailable_ledger_requeues_until_it_is_back(self):
        body = lease(day(2), day(3), hosts('a'))
        self.check_create(body)
        lifecycle = self.start_listener()
        lifecycle.endpoint.requeue_delay = 0.2
        # Another process holds the SQLite database's write lock: every
        # ledger transaction times out ([ledger] lock_timeout = 1).
        blocker = sqlite3.connect(os.path.join(self.tmp, 'ledger.sqlite'),
                                  isolation_level=None)
        self.addCleanup(blocker.close)
        blocker.execute('BEGIN EXCLUSIVE')
        lease_id = _lease_id()
        self.notify('lease.create',
                    base.blazar_payload(body, lease_id, self.project))
        base.wait_until(lambda: lifecycle.endpoint.counts['requeued'] >= 2,
                        what='two requeues')
        blocker.execute('ROLLBACK')
        self.wait_for_entry(lambda e: e.lease_id == lease_id, 'binding')
        self.assertEqual(1, lifecycle.endpoint.counts['handled'])
        self.assertEqual(0, lifecycle.endpoint.counts['failed'])

    def test_settle_abandons_what_blazar_never_created(self):
        never = lease(day(2), day(3), hosts('a'), name='never')
        created = lease(day(5), day(6), hosts('b'), name='created')
        self.check_create(never)
        self.check_create(created)
        self.conf.set_override('settle_interval', 1, 'lifecycle')
        self.conf.set_override('pending_timeout', 60, 'lifecycle')
        self.start_listener()
        lease_id = _lease_id()
        # Sent now: long after check-create recorded both (June 2026).
        self.notify('lease.create',
                    base.blazar_payload(created, lease_id, self.project))
        self.wait_for_entry(lambda e: e.name == 'never' and
                            e.state == models.ABANDONED, 'abandoning')
        bound, = [e for e in self.entries() if e.name == 'created']
        self.assertEqual((lease_id, models.PENDING),
                         (bound.lease_id, bound.state))

    def transport(self):
        transport = oslo_messaging.get_notification_transport(
            self.conf, url=self.broker.transport_url)
        self.addCleanup(transport.cleanup)
        return transport

    def _queued(self, queue_name):
        """Messages waiting (ready or unacknowledged) in ``queue_name``."""
        url = self.broker.transport_url
        host_port, vhost = url.split('@', 1)[1].split('/', 1)
        conn = amqp.Connection(host_port, userid=rabbitmq.USER,
                               password=rabbitmq.PASSWORD,
                               virtual_host=vhost or '/')
        conn.connect()
        try:
            return conn.channel().queue_declare(queue_name,
                                                passive=True).message_count
        finally:
            conn.close()


class TestBrokerRestart(base.ListenerTestCase):

    private_broker = True

    def test_notifications_after_a_broker_restart_are_handled(self):
        first = lease(day(2), day(3), hosts('a'), name='first')
        second = lease(day(5), day(6), hosts('b'), name='second')
        self.check_create(first)
        self.check_create(second)
        self.start_listener()
        first_id, second_id = _lease_id(), _lease_id()
        self.notify('lease.create',
                    base.blazar_payload(first, first_id, self.project))
        self.wait_for_entry(lambda e: e.lease_id == first_id, 'binding')

        self.broker.server.restart()
        # The listener reconnects on its own and declares its queue again.
        base.wait_for_queue(self.broker.transport_url,
                            self.conf.lifecycle.pool, timeout=90)
        self.notify('lease.create',
                    base.blazar_payload(second, second_id, self.project))
        self.wait_for_entry(lambda e: e.lease_id == second_id, 'binding')

    def test_notifications_after_the_app_comes_back_are_handled(self):
        body = lease(day(2), day(3), hosts('a'))
        self.check_create(body)
        self.start_listener()
        self.broker.server.stop_app()
        self.broker.server.start_app()
        base.wait_for_queue(self.broker.transport_url,
                            self.conf.lifecycle.pool, timeout=90)
        lease_id = _lease_id()
        self.notify('lease.create',
                    base.blazar_payload(body, lease_id, self.project))
        self.wait_for_entry(lambda e: e.lease_id == lease_id, 'binding')


class ListenCommandTestCase(base.ListenerTestCase):
    """``placement-quota listen`` as a process of its own."""

    def start_command(self, extra=''):
        """Start ``placement-quota listen`` on the test's ledger and broker
        (plus ``extra`` configuration); wait until it listens; return the
        process and the list its stderr lines go to."""
        config = os.path.join(self.tmp, 'placement-quota.conf')
        with open(config, 'w') as f:
            f.write('[DEFAULT]\nuse_stderr = true\n\n'
                    '[ledger]\nconnection = sqlite:///%s\n\n'
                    '[lifecycle]\ntransport_url = %s\n%s'
                    % (os.path.join(self.tmp, 'ledger.sqlite'),
                       self.broker.transport_url, extra))
        home = os.path.join(self.tmp, 'home')
        os.mkdir(home)
        env = dict(os.environ, HOME=home,
                   XDG_CACHE_HOME=os.path.join(home, 'cache'),
                   XDG_CONFIG_HOME=os.path.join(home, 'config'),
                   XDG_STATE_HOME=os.path.join(home, 'state'))
        process = subprocess.Popen(
            [sys.executable, '-m', 'placement_quota.cmd.main',
             '--config-file', config, 'listen'],
            cwd=self.tmp, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(self._kill, process)
        stderr = []
        reader = threading.Thread(
            target=lambda: stderr.extend(process.stderr), daemon=True)
        reader.start()
        self.addCleanup(reader.join, 5)
        line = process.stdout.readline()
        self.assertIn('listening to Blazar\'s lease notifications', line,
                      ''.join(stderr))
        base.wait_for_queue(self.broker.transport_url, 'placement-quota')
        return process, stderr

    def create_and_bind(self):
        """check-create a lease, send its lease.create, wait until the
        entry is bound; return the lease ID."""
        body = lease(day(2), day(3), hosts('a'))
        self.check_create(body)
        lease_id = _lease_id()
        self.notify('lease.create',
                    base.blazar_payload(body, lease_id, self.project))
        self.wait_for_entry(lambda e: e.lease_id == lease_id, 'binding')
        return lease_id

    @staticmethod
    def _kill(process):
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()


class TestListenCommand(ListenCommandTestCase):

    def test_listen_handles_notifications_and_stops_on_sigterm(self):
        process, stderr = self.start_command()
        self.create_and_bind()

        process.send_signal(signal.SIGTERM)
        self.assertEqual(0, process.wait(base.TIMEOUT), ''.join(stderr))
        base.wait_until(lambda: 'Stopped;' in ''.join(stderr), 5,
                        'the summary line')
        self.assertIn('Stopped; notifications: 0 failed, 1 handled',
                      ''.join(stderr))

    def test_listen_warns_about_an_option_whose_filter_is_not_enabled(self):
        process, stderr = self.start_command(
            '[enforcement]\nmax_leases_per_project = 1\n')
        self.assertIn('[enforcement] max_leases_per_project is set, but '
                      'LeaseCountFilter, the filter that reads it, is not in '
                      '[enforcement] enabled_filters', ''.join(stderr))

    def test_metrics_port_counts_the_events_handled(self):
        port = process_fixture.free_port('127.0.0.1')
        self.start_command('metrics_port = %d\n' % port)
        self.create_and_bind()

        text = requests.get('http://127.0.0.1:%d/metrics' % port,
                            timeout=10).text
        found = {(s.name, tuple(sorted(s.labels.items()))): s.value
                 for f in prometheus_parser.text_string_to_metric_families(
                     text) for s in f.samples}
        self.assertEqual(1.0, found[(
            'placement_quota_lifecycle_events_total',
            (('event_type', 'lease.create'), ('result', 'handled')))])
        self.assertEqual(1.0, found[(
            'placement_quota_lifecycle_lag_seconds_count', ())])
        self.assertGreater(found[(
            'placement_quota_lifecycle_last_event_timestamp_seconds', ())],
            0)


class TestParseTimestamp(testtools.TestCase):
    """The metadata timestamp oslo.messaging sends, as naive UTC."""

    def test_forms(self):
        parse = listener_mod.parse_timestamp
        self.assertEqual(datetime.datetime(2026, 11, 23, 21, 0, 0, 123456),
                         parse('2026-11-23 21:00:00.123456'))
        self.assertEqual(datetime.datetime(2026, 11, 23, 21, 0),
                         parse('2026-11-23 21:00:00'))
        self.assertEqual(datetime.datetime(2026, 11, 23, 20, 0),
                         parse('2026-11-23T21:00:00+01:00'))
        for bad in (None, '', 'yesterday', 42):
            self.assertIsNone(parse(bad))
