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
"""A ledger, a real RabbitMQ vhost, Blazar's notifier and our listener.

The ledger is a SQLite file in a temp dir; its entries are recorded the
way Blazar's check-create records them (CreditFilter called in-process),
then Blazar-shaped notifications (the payload of Blazar's
``format_lease_payload``) are published with the same oslo.messaging
``Notifier`` Blazar uses, on the broker of
:class:`tests.fixtures.rabbitmq.RabbitMQFixture`. Also used by
``tools/bench/lifecycle.py``.
"""

import datetime
import os
import time
import uuid

import amqp
import fixtures
from oslo_config import cfg
import oslo_messaging
import oslo_messaging.opts
import testtools

from placement_quota import conf as pq_conf
from placement_quota import filters as filters_mod
from placement_quota.filters import chain as chain_mod
from placement_quota.filters import credit
from placement_quota.lifecycle import listener as listener_mod
from placement_quota import services as services_mod
from tests import builders
from tests.fixtures import process as processes
from tests.fixtures import rabbitmq
from tests import ledger_helpers

TIMEOUT = 30
USER = 'u'


class NoPlacement:
    """Stands for Placement where nothing may read it."""

    def __getattr__(self, name):
        raise AssertionError('Placement was used (%s)' % name)


def make_conf(tmp, transport_url, **lifecycle):
    """Our configuration: a SQLite ledger in ``tmp``, CreditFilter at 1
    credit per host-hour, ``[lifecycle]`` on ``transport_url``."""
    conf = pq_conf.new_config([], config_files=[])
    chain_mod.register_filter_opts(conf, filters_mod.all_filters)
    conf.set_override('connection', 'sqlite:///' + os.path.join(
        tmp, 'ledger.sqlite'), 'ledger')
    conf.set_override('count_host_resources', False, 'ledger')
    conf.set_override('lock_timeout', 1, 'ledger')
    conf.set_override('embedded_state_dir', os.path.join(tmp, 'placement'),
                      'placement')
    conf.set_override('credit_host_rate', 1.0, 'enforcement')
    conf.set_override('transport_url', transport_url, 'lifecycle')
    conf.set_override('settle_interval', 3600, 'lifecycle')
    for name, value in lifecycle.items():
        conf.set_override(name, value, 'lifecycle')
    return conf


def set_rabbit_options(conf, options):
    """Set ``options`` (a dict) in ``conf``'s ``[oslo_messaging_rabbit]``
    (registering oslo.messaging's options there first), as a deployment
    sets them in every service's configuration file."""
    if not options:
        return
    for group, opts in oslo_messaging.opts.list_opts():
        if group == 'oslo_messaging_rabbit':
            conf.register_opts(opts, group=group)
    for name, value in options.items():
        conf.set_override(name, value, 'oslo_messaging_rabbit')


def blazar_notifier(transport_url, rabbit_options=None):
    """A Notifier set up as Blazar's (``blazar.notification.notifier``
    with ``[oslo_messaging_notifications] driver = messagingv2``), on a
    configuration of its own (``rabbit_options`` in its
    ``[oslo_messaging_rabbit]``); and its transport."""
    conf = cfg.ConfigOpts()
    conf([], project='blazar')
    set_rabbit_options(conf, rabbit_options)
    transport = oslo_messaging.get_notification_transport(
        conf, url=transport_url)
    notifier = oslo_messaging.Notifier(
        transport, publisher_id='blazar.lease', driver='messagingv2',
        topics=['notifications'])
    return notifier, transport


def blazar_payload(lease_body, lease_id, project, user=USER,
                   status='PENDING', created_at=None, updated_at=None):
    """What Blazar's ``format_lease_payload`` sends for the lease
    check-create saw as ``lease_body`` (a :func:`tests.builders.lease`),
    once Blazar stored it as ``lease_id``: its database's rows, datetimes
    included (the messagingv2 driver serializes them)."""
    def date(value):
        if isinstance(value, datetime.datetime):
            return value
        return datetime.datetime.strptime(value, '%Y-%m-%d %H:%M')

    start = date(lease_body['start_date'])
    end = date(lease_body['end_date'])
    created_at = created_at or datetime.datetime(2026, 5, 31, 12, 0)
    reservations = []
    for reservation in lease_body['reservations']:
        row = {key: value for key, value in reservation.items()
               if key != 'allocations'}
        row.update(id=str(uuid.uuid4()), lease_id=lease_id,
                   resource_id=str(uuid.uuid4()), status='pending',
                   missing_resources=False, resources_changed=False,
                   created_at=created_at, updated_at=None)
        reservations.append(row)
    events = [
        {'id': str(uuid.uuid4()), 'lease_id': lease_id,
         'event_type': event_type, 'time': when, 'status': 'UNDONE',
         'created_at': created_at, 'updated_at': None}
        for event_type, when in (('start_lease', start),
                                 ('end_lease', end))]
    return {
        'lease_id': lease_id,
        'user_id': user,
        'project_id': project,
        'trust_id': uuid.uuid4().hex,
        'start_date': start,
        'end_date': end,
        'status': status,
        'reservations': reservations,
        'events': events,
        'name': lease_body.get('name'),
        'created_at': created_at,
        'updated_at': updated_at,
        'degraded': False,
    }


def wait_for_queue(transport_url, queue, timeout=TIMEOUT):
    """Wait until ``queue`` exists on the broker (the listener declared
    it: from then on it gets every notification). A URL of several hosts
    (a cluster) is asked through the first one that answers."""
    hosts, vhost = transport_url.split('://', 1)[1].rsplit('/', 1)
    addresses = [host.rsplit('@', 1)[1] for host in hosts.split(',')]
    deadline = time.monotonic() + timeout
    while True:
        for address in addresses:
            conn = amqp.Connection(address, userid=rabbitmq.USER,
                                   password=rabbitmq.PASSWORD,
                                   virtual_host=vhost or '/',
                                   connect_timeout=5)
            try:
                conn.connect()
                conn.channel().queue_declare(queue, passive=True)
                return
            except amqp.exceptions.NotFound:
                break  # the broker answered: not there (yet)
            except (OSError, amqp.exceptions.AMQPError):
                continue  # that node is down: ask the next one
            finally:
                try:
                    conn.close()
                except Exception:
                    pass
        if time.monotonic() > deadline:
            raise AssertionError('queue %s was not declared within %ds'
                                 % (queue, timeout))
        time.sleep(0.1)


def wait_until(predicate, timeout=TIMEOUT, what='the condition'):
    """Poll ``predicate()`` until it is true; its last value."""
    return processes.poll(predicate, timeout, what, 0.05)


class ListenerTestCase(ledger_helpers.LedgerHelpers, testtools.TestCase):
    """A ledger whose clock is :data:`tests.builders.NOW`, credits for
    :attr:`project`, a fresh vhost (``private_broker``: a node of the
    test's own, for tests that restart it; :meth:`broker_fixture` another
    broker), Blazar's notifier (:meth:`notify`), and
    :meth:`start_listener`; both with :attr:`rabbit_options`."""

    project = 'project-a'
    private_broker = False
    #: ``[oslo_messaging_rabbit]`` of the listener and of Blazar.
    rabbit_options = {}

    def broker_fixture(self):
        """The broker's fixture; it has a ``transport_url``."""
        return rabbitmq.RabbitMQFixture(private=self.private_broker,
                                        vhost=not self.private_broker)

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.broker = self.useFixture(self.broker_fixture())
        self.conf = make_conf(self.tmp, self.broker.transport_url)
        set_rabbit_options(self.conf, self.rabbit_options)
        self.services = services_mod.Services(self.conf,
                                              placement=NoPlacement())
        self.addCleanup(self.services.close)
        self.ledger = self.services.ledger
        self.ledger.clock = lambda: builders.NOW
        self.credit = credit.CreditFilter(self.conf, services=self.services)
        self.allocation = self.give_credits(10000)
        self.notifier, transport = blazar_notifier(
            self.broker.transport_url, self.rabbit_options)
        self.addCleanup(transport.cleanup)

    def check_create(self, lease_body, project=None):
        """Record ``lease_body`` as Blazar's check-create would."""
        self.credit.check_create(builders.context(project or self.project,
                                                  USER), lease_body)

    def notify(self, event_type, payload):
        self.notifier.info({}, event_type, payload)

    def start_listener(self, conf=None, pool=None, endpoint=None):
        """Our listener on ``conf`` (default: the test's) with
        ``endpoint`` (default: a new LeaseEndpoint), started, its queue
        declared; stopped at cleanup."""
        conf = conf or self.conf
        lifecycle = listener_mod.LifecycleListener(conf, self.ledger,
                                                   endpoint=endpoint)
        lifecycle.start()
        self.addCleanup(lifecycle.wait)
        self.addCleanup(lifecycle.stop)
        wait_for_queue(self.broker.transport_url,
                       pool or conf.lifecycle.pool)
        return lifecycle

    def entry(self, project=None):
        """The project's only entry."""
        entry, = self.entries(project)
        return entry

    def wait_for_entry(self, predicate, what, project=None):
        return wait_until(
            lambda: next((e for e in self.entries(project) if predicate(e)),
                         None), what=what)
