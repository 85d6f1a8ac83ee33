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
"""The end-to-end environment, started once per test process.

Everything is real and talks over real sockets:

* the Keystone of :mod:`tests.fixtures.keystone`;
* a RabbitMQ node (:func:`tests.fixtures.rabbitmq.shared`), with a vhost
  of this environment's own;
* stock Blazar 18 (:class:`tests.fixtures.blazar.BlazarServer`): its API
  and manager over that vhost, its notifications (``messagingv2``) on it,
  its ``ExternalServiceFilter`` calling our service, the manager's event
  processing every second, and the fixture's test double of the dummy VM
  plugin (``virtual:instance``), the only test double here;
* our enforcement service (:class:`EnforcementFront`): the real app and
  filter chain (:data:`FILTERS`: every policy but Placement's capacity,
  which needs hosts in Placement; the Nova quota from a limits file) on a
  SQLite ledger in a temp dir, on a port that stays the same when a test
  stops and starts it;
* our lifecycle listener on Blazar's notifications
  (:class:`LifecycleListener`);
* a second notification listener, in a pool of its own
  (:class:`NotificationTap`), that records what Blazar publishes.

A test is a user: a project and a ``member`` of it in Keystone, and
python-blazarclient on a keystoneauth session of that user
(:class:`BlazarE2ETestCase`).
"""

from concurrent import futures
import datetime
import io
import logging
import json
import os
import shutil
import tempfile
import threading
import time
import uuid

import fixtures
from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session
from oslo_config import cfg
import oslo_messaging
import testtools
import testtools.content

from blazarclient import client as blazar_client
from blazarclient import exception as blazar_exception

from placement_quota.api.enforcement import app as api_app
from placement_quota.filters import chain as chain_mod
from placement_quota.lifecycle import listener as listener_mod
from placement_quota.ledger import store
from placement_quota import services as services_mod
from placement_quota.httpserver import server as wsgi_server
from tests.fixtures import blazar as blazar_fixture
from tests.fixtures import enforcement as enforcement_fixture
from tests.fixtures import keystone as keystone_fixture
from tests.fixtures import process as processes
from tests.fixtures import rabbitmq

#: The policies every test runs against, and their limits.
FILTERS = ['MaximumReservationLengthFilter', 'LeaseCountFilter',
           'CreditFilter', 'ReservationSizeFilter', 'UserLimitFilter',
           'ProjectTreeLimitFilter', 'NovaQuotaFilter']
MAX_LENGTH = 7 * 86400
MAX_LEASES = 3
# The other filters' limits are past what the lifecycle tests reserve (at
# most 3 leases of 2 instances of 2 VCPUs and 1024 MB): only the
# self-service tests reach them.
MAX_INSTANCES_PER_RESERVATION = 4
MAX_INSTANCES_PER_USER = 7
TREE_VCPU_LIMIT = 24
NOVA_RAM_QUOTA_MB = 12 * 1024
#: Credits an hour of one instance: 1 plus 1 a VCPU.
INSTANCE_RATE = 1.0
VCPU_RATE = 1.0
#: Seconds between two runs of Blazar's event processing.
EVENT_INTERVAL = 1
#: Seconds, by Blazar's notification clock, after which the listener
#: abandons an entry that no lease.create bound.
PENDING_TIMEOUT = 5
#: How long a test waits for something asynchronous (a notification, its
#: effect on the ledger, an event run).
WAIT = 30
#: Blazar's API date format.
DATE_FORMAT = '%Y-%m-%d %H:%M'
#: What tests/functional/blazar_e2e/payloads holds.
PAYLOADS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            'payloads')


def instance_reservation(**overrides):
    """A ``virtual:instance`` reservation as a user asks for it."""
    values = {'resource_type': blazar_fixture.DUMMY_RESOURCE_TYPE,
              'amount': 1, 'vcpus': 2, 'memory_mb': 1024, 'disk_gb': 10,
              'affinity': None, 'resource_properties': ''}
    values.update(overrides)
    return values


def hourly_rate(reservation):
    """Credits an hour of ``reservation`` under this environment's rates."""
    return reservation['amount'] * (INSTANCE_RATE +
                                    VCPU_RATE * reservation['vcpus'])


def minute(value=None):
    """``value`` (now when None, naive UTC) truncated to the minute."""
    value = value or datetime.datetime.utcnow()
    return value.replace(second=0, microsecond=0)


def clear_of_minute_turn(margin=5):
    """Sleep past the next minute turn when one is less than ``margin``
    seconds away: Blazar resolves a start of ``'now'`` on its own clock,
    and a request crossing the turn would start the lease a minute after
    the one the test computed its end from (the lease would be a minute
    short, and charged so)."""
    now = datetime.datetime.utcnow()
    left = 60 - now.second - now.microsecond / 1e6
    if left < margin:
        time.sleep(left + 0.2)


def api_date(value):
    return value.strftime(DATE_FORMAT)


def wait_for(what, predicate, timeout=WAIT, interval=0.2):
    """Poll ``predicate`` until it returns something true; return that.

    :raises AssertionError: naming ``what`` after ``timeout`` seconds.
    """
    return processes.poll(predicate, timeout, what, interval)


def scrub(value):
    """``value`` without secrets: every ``*token*`` field, the trust ID
    and the service catalog (which holds nothing of the payload's meaning
    and every endpoint of the test cloud) replaced by a marker."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            lowered = str(key).lower()
            if 'token' in lowered or lowered in ('trust_id', 'password'):
                out[key] = '<scrubbed>' if item else item
            elif lowered == 'service_catalog':
                out[key] = '<scrubbed>' if item else item
            else:
                out[key] = scrub(item)
        return out
    if isinstance(value, list):
        return [scrub(item) for item in value]
    return value


class EnforcementFront:
    """Our enforcement service: the real app and filter chain of ``conf``
    and ``services``, served on one port for the environment's life.

    :meth:`stop` closes the port ("placement-quota is down": Blazar's
    calls are refused), :meth:`start` serves again on the same port.
    A small WSGI middleware of the test records each request Blazar sends
    (:attr:`calls`: ``(kind, body)``, ``kind`` being ``check-create``,
    ``check-update`` or ``on-end``) before the app answers it.
    """

    def __init__(self, conf, services):
        self.conf = conf
        self.chain = chain_mod.FilterChain(conf, services=services)
        self.app = api_app.make_app(conf, self.chain)
        self._default = (self.chain, self.app)
        self.port = processes.free_port('127.0.0.1')
        self.url = 'http://127.0.0.1:%d' % self.port
        #: Where Blazar's ExternalServiceFilter joins "check-create"...
        self.endpoint = self.url + '/v1/'
        self.calls = []
        self._lock = threading.Lock()
        self.server = None

    def _capture(self, environ, start_response):
        length = int(environ.get('CONTENT_LENGTH') or 0)
        body = environ['wsgi.input'].read(length) if length else b''
        environ['wsgi.input'] = io.BytesIO(body)
        kind = environ.get('PATH_INFO', '').rstrip('/').rsplit('/', 1)[-1]
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = body.decode('utf-8', 'replace')
        with self._lock:
            self.calls.append((kind, parsed))
        return self.app(environ, start_response)

    @property
    def up(self):
        return self.server is not None

    def use(self, conf, services):
        """Answer with the chain of ``conf`` (on ``services``) until
        :meth:`restore`."""
        self.chain = chain_mod.FilterChain(conf, services=services)
        self.app = api_app.make_app(conf, self.chain)

    def restore(self):
        """Answer with the environment's own chain again."""
        self.chain, self.app = self._default

    def start(self):
        if self.server is None:
            self.server = wsgi_server.WSGIServer(
                self._capture, port=self.port, threads=4,
                timeout=self.conf.api.client_socket_timeout).start()
        return self

    def stop(self):
        if self.server is not None:
            self.server.stop()
            self.server = None


class NotificationTap:
    """An oslo.messaging notification listener in a pool of its own on
    Blazar's notification topic: it sees every notification Blazar
    publishes, whatever our lifecycle listener consumes.

    :attr:`received` holds ``{'event_type', 'publisher_id', 'priority',
    'payload', 'ctxt', 'metadata'}`` in the order they arrived.
    """

    POOL = 'pq-e2e-tap'

    def __init__(self, transport_url, topic='notifications'):
        conf = cfg.ConfigOpts()
        conf([], project='pq-e2e-tap', default_config_files=[],
             default_config_dirs=[])
        self.transport = oslo_messaging.get_notification_transport(
            conf, url=transport_url)
        self.received = []
        self._lock = threading.Lock()
        self.listener = oslo_messaging.get_notification_listener(
            self.transport, [oslo_messaging.Target(topic=topic)], [self],
            executor='threading', pool=self.POOL)

    def _record(self, priority, ctxt, publisher_id, event_type, payload,
                metadata):
        with self._lock:
            self.received.append({
                'priority': priority, 'publisher_id': publisher_id,
                'event_type': event_type, 'payload': payload,
                'ctxt': ctxt, 'metadata': metadata})
        return oslo_messaging.NotificationResult.HANDLED

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        return self._record('INFO', ctxt, publisher_id, event_type, payload,
                            metadata)

    def warn(self, ctxt, publisher_id, event_type, payload, metadata):
        return self._record('WARN', ctxt, publisher_id, event_type, payload,
                            metadata)

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        return self._record('ERROR', ctxt, publisher_id, event_type,
                            payload, metadata)

    def of(self, lease_id, event_type=None):
        """The notifications about ``lease_id`` (of ``event_type``)."""
        with self._lock:
            return [n for n in self.received
                    if n['payload'].get('lease_id') == lease_id and
                    (event_type is None or n['event_type'] == event_type)]

    def start(self):
        self.listener.start()
        return self

    def stop(self):
        self.listener.stop()
        self.listener.wait()
        self.transport.cleanup()


class LifecycleListener:
    """Our lifecycle listener
    (:class:`placement_quota.lifecycle.listener.LifecycleListener`, what
    ``placement-quota listen`` runs) on Blazar's notifications, with the
    environment's configuration and ledger. :meth:`stop` and
    :meth:`start` take it down and up again: its queue on the broker (the
    ``[lifecycle] pool``) keeps what Blazar publishes meanwhile."""

    def __init__(self, conf, ledger):
        self.conf = conf
        self.ledger = ledger
        self.listener = None

    @property
    def up(self):
        return self.listener is not None

    @property
    def queue(self):
        """The broker queue the listener reads: its pool's."""
        return self.conf.lifecycle.pool

    def start(self):
        if self.listener is None:
            self.listener = listener_mod.LifecycleListener(self.conf,
                                                           self.ledger)
            self.listener.start()
        return self

    def stop(self):
        if self.listener is not None:
            self.listener.stop()
            self.listener.wait()
            self.listener = None


class Environment:
    """Keystone, RabbitMQ, Blazar, our service and listeners (see the
    module's documentation); :meth:`stop` stops what it started."""

    def __init__(self):
        self.workdir = None
        self.config_file = None
        self.keystone = None
        self.blazar = None
        self.front = None
        self.tap = None
        self.lifecycle = None
        self.services = None
        self.startup_seconds = None

    def start(self):
        began = time.monotonic()
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began
        return self

    def _start(self):
        self.workdir = tempfile.mkdtemp(prefix='pq-blazar-e2e-')
        # The broker starts while Keystone does.
        with futures.ThreadPoolExecutor(1) as executor:
            rabbit = executor.submit(rabbitmq.shared)
            self.keystone = keystone_fixture.KeystoneFixture()
            self.keystone.setUp()
            self.rabbit = rabbit.result()
        self.vhost = 'pq-e2e-%s' % uuid.uuid4().hex[:12]
        self.transport_url = self.rabbit.add_vhost(self.vhost)
        self.conf = self._config()
        self.services = services_mod.Services(self.conf)
        self.ledger = self.services.ledger
        self.front = EnforcementFront(self.conf, self.services).start()
        # Both listeners declare their queues before Blazar publishes.
        self.tap = NotificationTap(self.transport_url).start()
        self.lifecycle = LifecycleListener(self.conf, self.ledger).start()
        self.blazar = blazar_fixture.BlazarServer(
            self.keystone, transport_url=self.transport_url,
            notifications='messagingv2',
            enforcement_endpoint=self.front.endpoint,
            test_double_plugin=True, event_interval=EVENT_INTERVAL).start()

    def chain_config(self, filters, options=None, limits=None):
        """A configuration of our service on the environment's ledger and
        broker, whose chain is ``filters`` (names) with ``options``
        (``{[enforcement] option: value}``; a list is joined with commas,
        a dict written ``key:value,...``) and, given ``limits`` (the
        embedded limits file's data), that ``[limits] limits_file``."""
        name = uuid.uuid4().hex[:8]
        lines = ['[DEFAULT]', 'transport_url = %s' % self.transport_url,
                 '[ledger]', 'connection = sqlite:///%s' % os.path.join(
                     self.workdir, 'ledger.sqlite'),
                 'count_host_resources = false',
                 '[enforcement]',
                 'enabled_filters = %s' % ','.join(filters)]
        for option, value in sorted((options or {}).items()):
            if isinstance(value, dict):
                value = ','.join('%s:%s' % item for item in value.items())
            elif isinstance(value, (list, tuple)):
                value = ','.join(str(item) for item in value)
            lines.append('%s = %s' % (option, value))
        if limits is not None:
            limits_file = os.path.join(self.workdir, 'limits-%s.yaml' % name)
            with open(limits_file, 'w') as f:
                json.dump(limits, f)  # JSON is YAML
            lines += ['[limits]', 'limits_file = %s' % limits_file]
        path = os.path.join(self.workdir, 'placement-quota-%s.conf' % name)
        with open(path, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        return enforcement_fixture.new_config([], config_files=[path])

    def _config(self):
        path = os.path.join(self.workdir, 'placement-quota.conf')
        self.config_file = path
        nova_limits = os.path.join(self.workdir, 'nova-limits.yaml')
        with open(nova_limits, 'w') as f:
            f.write('registered_limits:\n  class:MEMORY_MB: %d\n'
                    % NOVA_RAM_QUOTA_MB)
        tree_limits = os.path.join(self.workdir, 'limits.yaml')
        with open(tree_limits, 'w') as f:
            f.write('registered_limits:\n  class:VCPU: %d\n'
                    % TREE_VCPU_LIMIT)
        with open(path, 'w') as f:
            f.write('\n'.join([
                '[DEFAULT]',
                'transport_url = %s' % self.transport_url,
                '[ledger]',
                'connection = sqlite:///%s' % os.path.join(
                    self.workdir, 'ledger.sqlite'),
                'count_host_resources = false',
                '[enforcement]',
                'enabled_filters = %s' % ','.join(FILTERS),
                'reservation_max_length = %d' % MAX_LENGTH,
                'max_leases_per_project = %d' % MAX_LEASES,
                'credit_instance_rate = %s' % INSTANCE_RATE,
                'credit_class_rates = VCPU:%s' % VCPU_RATE,
                'max_instances_per_reservation = %d'
                % MAX_INSTANCES_PER_RESERVATION,
                'max_instances_per_user = %d' % MAX_INSTANCES_PER_USER,
                'tree_limit_resources = class:VCPU',
                'nova_quota_source = file',
                'nova_quota_limits_file = %s' % nova_limits,
                'nova_quota_include_usage = false',
                '[limits]',
                'limits_file = %s' % tree_limits,
                '[lifecycle]',
                'pending_timeout = %d' % PENDING_TIMEOUT,
                'settle_interval = 1',
            ]) + '\n')
        return enforcement_fixture.new_config([], config_files=[path])

    # --- configurations of the warnings tests -------------------------

    def config_with(self, text):
        """The environment's configuration (its ledger, broker,
        filters and listener) plus ``text``, more sections of a
        configuration file (``[warnings]``, ``[keystone]``...)."""
        path = os.path.join(self.workdir, 'placement-quota-%s.conf'
                            % uuid.uuid4().hex[:8])
        with open(path, 'w') as f:
            f.write(text)
        return enforcement_fixture.new_config(
            [], config_files=[self.config_file, path])

    def alive(self):
        return self.blazar is not None and self.blazar.alive()

    def purge_lifecycle_queue(self):
        """Drop what waits in our listener's queue on the broker."""
        self.rabbit.ctl('purge_queue', '-p', self.vhost,
                        self.lifecycle.queue)

    def republish(self, notification):
        """Publish again a notification the tap received, as Blazar sent
        it (its context, publisher, event type and payload): a delivery
        the broker makes late."""
        notifier = oslo_messaging.Notifier(
            self.tap.transport, publisher_id=notification['publisher_id'],
            driver='messagingv2', topics=['notifications'])
        notifier.info(notification['ctxt'], notification['event_type'],
                      notification['payload'])

    def stop(self):
        """Stop everything started (once: later calls do nothing)."""
        parts = (self.blazar, self.lifecycle, self.tap, self.front)
        self.blazar = self.lifecycle = self.tap = self.front = None
        for part in parts:
            if part is not None:
                try:
                    part.stop()
                except Exception:  # stopping the rest matters more
                    pass
        if self.services is not None:
            self.services.close()
            self.services = None
        if self.keystone is not None:
            self.keystone.cleanUp()
            self.keystone = None
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None


_environment = processes.OncePerProcess('Blazar end-to-end environment',
                                        lambda: Environment().start())


def environment():
    """This test process's :class:`Environment`, started once."""
    return _environment.get()


class BlazarE2ETestCase(testtools.TestCase):
    """A user of a project of their own, with python-blazarclient
    (:attr:`client`); helpers to create leases and read the ledger."""

    def setUp(self):
        super().setUp()
        reason = rabbitmq.unavailable_reason()
        if reason is not None:
            self.skipTest('RabbitMQ is not installed: %s' % reason)
        self.useFixture(fixtures.Timeout(180, gentle=True))
        # What our service and listener log, shown when a test fails.
        self.useFixture(fixtures.FakeLogger(level=logging.INFO))
        self.env = environment()
        self.addOnException(self._blazar_log)
        self.addCleanup(self._services_up)
        keystone = self.useFixture(keystone_fixture.KeystoneFixture())
        self.keystone = keystone
        self.project = keystone.create_project().id
        self.user = keystone.create_user(self.project)
        auth = v3.Password(auth_url=keystone.auth_url,
                           username=self.user.name,
                           password=self.user.password,
                           project_id=self.project,
                           user_domain_name=keystone.user_domain_name)
        self.client = blazar_client.Client(
            session=ks_session.Session(auth=auth),
            endpoint_override=self.blazar_server().endpoint)
        # Run before the user is deleted (cleanups run last in, first out).
        self.leases = []
        self.addCleanup(self._delete_leases)

    def blazar_server(self):
        """The :class:`~tests.fixtures.blazar.BlazarServer` the user's
        client talks to: the environment's."""
        return self.env.blazar

    def _blazar_log(self, exc_info):
        server = self.blazar_server()
        if server is not None:
            self.addDetail('blazar-log', testtools.content.text_content(
                server.log_tail(100)))

    def _services_up(self):
        self.env.front.start()
        self.env.lifecycle.start()

    def use_chain(self, filters, options=None, limits=None):
        """Make our service (which Blazar's ExternalServiceFilter calls)
        run ``filters`` (names) with ``options`` and ``limits`` (see
        :meth:`Environment.chain_config`) until the test ends; the ledger
        stays the environment's. Return the chain's
        :class:`~placement_quota.services.Services`."""
        conf = self.env.chain_config(filters, options, limits)
        services = services_mod.Services(conf)
        self.addCleanup(services.close)
        self.env.front.use(conf, services)
        self.addCleanup(self.env.front.restore)
        return services

    def _delete_leases(self):
        for lease_id in self.leases:
            try:
                self.client.lease.delete(lease_id)
            except blazar_exception.BlazarClientException:
                pass  # deleted by the test, or never created

    # --- Blazar, as a user --------------------------------------------

    def create_lease(self, name=None, start=None, hours=2,
                     reservations=None):
        """Create a lease through Blazar's API (``start``: a datetime,
        or ``'now'``; default an hour from now, to the minute); return
        Blazar's answer."""
        if start is None:
            start = minute() + datetime.timedelta(hours=1)
        if start == 'now':
            clear_of_minute_turn()
        begin = minute() if start == 'now' else start
        end = begin + datetime.timedelta(hours=hours)
        lease = self.client.lease.create(
            name or 'lease-%s' % uuid.uuid4().hex[:8],
            start if start == 'now' else api_date(start), api_date(end),
            reservations or [instance_reservation()], [])
        self.leases.append(lease['id'])
        return lease

    def assertDenied(self, call, *fragments):
        """``call()`` fails in blazarclient with all ``fragments`` in the
        error; return its text."""
        error = self.assertRaises(blazar_exception.BlazarClientException,
                                  call)
        text = str(error)
        for fragment in fragments:
            self.assertIn(fragment, text)
        return text

    # --- the ledger ----------------------------------------------------

    def entries(self):
        with self.env.ledger.transaction() as txn:
            return txn.leases(self.project)

    def entry(self, lease_id=None, name=None):
        """The one entry of this project bound to ``lease_id``, or named
        ``name``; None when there is none."""
        found = [row for row in self.entries()
                 if (lease_id is None or row.lease_id == lease_id) and
                 (name is None or row.name == name)]
        if len(found) > 1:
            self.fail('%d ledger entries match %s/%s: %s'
                      % (len(found), lease_id, name, found))
        return found[0] if found else None

    def bound_entry(self, lease_id):
        """Wait until an entry is bound to Blazar's ``lease_id`` (by its
        ``lease.create`` notification); return it."""
        return wait_for('the ledger entry of lease %s' % lease_id,
                        lambda: self.entry(lease_id=lease_id))

    def give_credits(self, amount):
        with self.env.ledger.transaction() as txn:
            return txn.add_allocation(self.project, store.to_micro(amount),
                                      None, None)

    def credits(self, row):
        return store.from_micro(row.charged)

    def spent(self, allocation_id):
        with self.env.ledger.transaction() as txn:
            return store.from_micro(txn.spent(allocation_id))

    def notification(self, lease_id, event_type):
        """Wait for Blazar's ``event_type`` notification about
        ``lease_id``; return it."""
        return wait_for('%s of lease %s' % (event_type, lease_id),
                        lambda: self.env.tap.of(lease_id, event_type))[-1]
