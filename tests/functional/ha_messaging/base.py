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
"""The listener tests of tests/functional/lifecycle on the RabbitMQ
cluster of :mod:`tests.fixtures.rabbitmq_cluster`: leases whose Blazar
notifications are published by name (``'start'``, ``'end'``...), and a
record of when the listener handled each one."""

import datetime
import threading
import time
import uuid

from oslo_log import log as logging
from oslo_utils import timeutils

from placement_quota.lifecycle import events
from placement_quota.lifecycle import listener as listener_mod
from tests.builders import hosts
from tests.builders import lease
from tests.fixtures import rabbitmq_cluster
from tests.functional.lifecycle import base

LOG = logging.getLogger(__name__)

#: Seconds to wait for what follows a node's death (the listener's
#: reconnection, the new leader, the queue declared again).
FAILOVER_TIMEOUT = 60

EVENTS = {'create': events.CREATE, 'start': events.START,
          'end': events.END}


class RecordingEndpoint(listener_mod.LeaseEndpoint):
    """The listener's endpoint, noting when it handled what:
    ``handled`` is a list of ``(time.monotonic(), event_type,
    lease_id)``."""

    def __init__(self, ledger):
        super().__init__(ledger)
        self.handled = []
        self._handled_lock = threading.Lock()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        result = super().info(ctxt, publisher_id, event_type, payload,
                              metadata)
        with self._handled_lock:
            self.handled.append((time.monotonic(), event_type,
                                 payload.get('lease_id')))
        return result

    def first_after(self, moment, steps):
        """Seconds from ``moment`` (``time.monotonic()``) to the first of
        ``steps`` (``(event_type, lease_id)`` pairs) handled after it;
        None if none was."""
        steps = set(steps)
        with self._handled_lock:
            after = [at for at, event_type, lease_id in self.handled
                     if at > moment and (event_type, lease_id) in steps]
        return min(after) - moment if after else None


class ClusterListenerTestCase(base.ListenerTestCase):
    """A :class:`~tests.functional.lifecycle.base.ListenerTestCase` on a
    vhost of the cluster (all three nodes in the transport URL), with
    :attr:`leases` named ``'l0'``, ``'l1'``... recorded by check-create
    and given their Blazar lease IDs."""

    #: How many leases (:meth:`lease_window` says when they run; the
    #: window is kept as :attr:`window`).
    lease_count = 6
    #: Whether the ledger's clock is the real one (not June 2026's).
    real_clock = False

    def broker_fixture(self):
        return rabbitmq_cluster.RabbitMQClusterFixture()

    @property
    def cluster(self):
        return self.broker.cluster

    def lease_window(self):
        """The leases' start and end (naive UTC datetimes)."""
        return (datetime.datetime(2026, 6, 2), datetime.datetime(2026, 6, 3))

    def setUp(self):
        super().setUp()
        if self.real_clock:
            self.ledger.clock = timeutils.utcnow
        self.window = start, end = self.lease_window()
        self.published = []
        self.leases = {}
        for n in range(self.lease_count):
            name = 'l%d' % n
            body = lease(start.strftime('%Y-%m-%d %H:%M'),
                         end.strftime('%Y-%m-%d %H:%M'), hosts('a'),
                         name=name)
            self.check_create(body)
            self.leases[name] = (body, str(uuid.uuid4()))

    def publish(self, *steps):
        """Publish Blazar's notification of each ``(event, name)`` step
        (``('start', 'l0')``: ``lease.event.start_lease`` of lease l0);
        return them as ``(event_type, lease_id)`` pairs (:attr:`published`
        has all the test's)."""
        published = []
        for event, name in steps:
            body, lease_id = self.leases[name]
            self.notify(EVENTS[event], base.blazar_payload(
                body, lease_id, self.project))
            published.append((EVENTS[event], lease_id))
        self.published.extend(published)
        return published

    def states_by_name(self):
        """``{lease name: entry state}``."""
        return {entry.name: entry.state for entry in self.entries()}

    def wait_for_new_holder(self, queue, killed):
        """Wait until a node other than ``killed`` holds ``queue`` (the
        listener declared it again, or a new leader was elected); return
        that node."""
        def holder():
            try:
                node = self.cluster.queue_node(self.broker.vhost, queue)
            except KeyError:
                return None
            return node if node is not killed else None

        return base.wait_until(holder, FAILOVER_TIMEOUT,
                               'a node other than %s to hold queue %s'
                               % (killed.nodename, queue))

    def wait_for_states(self, expected, timeout=FAILOVER_TIMEOUT):
        """Wait until the entries of the leases in ``expected`` (``{name:
        state}``) are in those states."""
        base.wait_until(
            lambda: all(self.states_by_name().get(name) == state
                        for name, state in expected.items()),
            timeout, 'the states %s (now: %s)' % (expected,
                                                  self.states_by_name()))

    def create_all(self):
        """Publish every lease's ``lease.create`` and wait until each
        entry is bound."""
        self.publish(*[('create', name) for name in self.leases])
        ids = {lease_id for _, lease_id in self.leases.values()}
        base.wait_until(
            lambda: {e.lease_id for e in self.entries()} == ids,
            what='every entry bound')
