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
"""The oslo.messaging listener of ``placement-quota listen``.

It consumes Blazar's notifications from the broker of ``[lifecycle]
transport_url`` (else ``[oslo_messaging_notifications] transport_url``,
else ``[DEFAULT] transport_url``), on each of ``[lifecycle] topics`` in
``[lifecycle] exchange``, through a queue of its own: the listener pool
``[lifecycle] pool``, so Blazar's other consumers (Ceilometer reads the
plain ``notifications.info`` queue) still get every message.

Only ``info`` notifications whose event type starts with ``lease.`` reach
:class:`LeaseEndpoint`; oslo.messaging acknowledges the others unread.
What happens to each message is decided by what
:func:`placement_quota.lifecycle.events.handle` does with it:

* it returns: the message is acknowledged;
* it raises :class:`~placement_quota.lifecycle.events.Malformed`: a
  warning names the event type and what is wrong, and the message is
  acknowledged (the ledger is unchanged; delivering it again would not
  help);
* it raises :class:`~placement_quota.ledger.errors.LedgerUnavailable`: the
  message is requeued (after a short pause, so that a ledger that is down
  is not hammered) and handled when the ledger answers again;
* anything else: the error is logged once with its traceback and the
  message is acknowledged. A message that breaks the code would otherwise
  come back forever and hold up the queue (a poison message); placement-
  quota reconcile reports what the ledger then misses.

Every ``settle_interval`` seconds a thread calls
:func:`~placement_quota.lifecycle.events.settle` with the timestamp of the
newest ``lease.*`` notification seen (Blazar's clock, not ours: while no
notification arrives, nothing is abandoned).

A broker outage is oslo.messaging's to handle: its rabbit driver logs
``AMQP server on HOST:PORT is unreachable: ... Trying again in N
seconds`` and then ``Reconnected to AMQP server``, retries forever and
declares the pool's queue again (``[oslo_messaging_rabbit]
rabbit_retry_interval``, ``rabbit_retry_backoff`` and
``rabbit_interval_max`` pace the retries; ``heartbeat_timeout_threshold``
notices a broker that vanished without closing the connection). The
queue survives a broker restart only with ``[oslo_messaging_rabbit]
amqp_durable_queues = true``; without it, the messages waiting in it
when the broker restarts are lost, and placement-quota reconcile reports
the drift.
"""

import datetime
import functools
import signal
import threading
import time

from oslo_log import log as logging
import oslo_messaging
from oslo_utils import timeutils

from placement_quota.ledger import errors as ledger_errors
from placement_quota.lifecycle import events
from placement_quota import metrics
from placement_quota.warning import events as warning_events

LOG = logging.getLogger(__name__)

#: What a transport URL or driver that cannot be used raises.
BROKER_ERRORS = (oslo_messaging.InvalidTransportURL,
                 oslo_messaging.DriverLoadFailure)

#: The event types the endpoint receives (a regular expression).
EVENT_TYPE_FILTER = r'^lease\.'

#: Seconds to wait before requeueing a message the ledger could not take,
#: doubled after each consecutive failure up to :data:`REQUEUE_DELAY_MAX`.
REQUEUE_DELAY = 0.5
REQUEUE_DELAY_MAX = 10.0


def parse_timestamp(value):
    """The notification metadata's ``timestamp`` (oslo.messaging sends
    ``str(utcnow())``, e.g. ``'2026-11-23 21:00:00.123456'``) as a naive
    UTC datetime, or None when it is missing or not a date."""
    if isinstance(value, datetime.datetime):
        parsed = value
    elif isinstance(value, str) and value:
        try:
            parsed = datetime.datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    else:
        return None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(datetime.timezone.utc).replace(
            tzinfo=None)
    return parsed


class LeaseEndpoint:
    """The oslo.messaging endpoint of the ``lease.*`` notifications.

    ``newest`` is the newest timestamp of a ``lease.*`` notification seen
    so far (naive UTC; None until one arrives). ``counts`` counts the
    outcomes: ``handled``, ``malformed``, ``requeued``, ``failed``.
    """

    filter_rule = oslo_messaging.NotificationFilter(
        event_type=EVENT_TYPE_FILTER)

    def __init__(self, ledger, requeue_delay=REQUEUE_DELAY,
                 requeue_delay_max=REQUEUE_DELAY_MAX, before_end=None):
        self.ledger = ledger
        #: ``before_end(payload, timestamp)``, called for each
        #: ``lease.event.before_end_lease`` once the ledger has it (the
        #: warning of ``[warnings] enabled``); None: nothing more is done.
        self.before_end = before_end
        self.requeue_delay = requeue_delay
        self.requeue_delay_max = requeue_delay_max
        self.newest = None
        self.counts = {'handled': 0, 'malformed': 0, 'requeued': 0,
                       'failed': 0}
        self._failures = 0
        self._lock = threading.Lock()

    def _seen(self, timestamp):
        with self._lock:
            if self.newest is None or timestamp > self.newest:
                self.newest = timestamp

    def _count(self, outcome, event_type=''):
        metrics.EVENTS.labels(
            event_type if event_type in events.EVENT_TYPES else 'other',
            outcome).inc()
        with self._lock:
            self.counts[outcome] += 1
            if outcome == 'requeued':
                self._failures += 1
                failures = self._failures
            else:
                self._failures = 0
                failures = 0
        return failures

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        """Apply one notification; see the module's docstring for what is
        acknowledged and what is requeued."""
        metadata = metadata or {}
        timestamp = parse_timestamp(metadata.get('timestamp'))
        if timestamp is None:
            LOG.debug('%s from %s has no usable timestamp (%r): using now',
                      event_type, publisher_id, metadata.get('timestamp'))
            timestamp = timeutils.utcnow(with_timezone=False)
        self._seen(timestamp)
        message_id = metadata.get('message_id')
        try:
            result = events.handle(self.ledger, event_type, payload,
                                   timestamp)
            if event_type == events.BEFORE_END and \
                    self.before_end is not None:
                self.before_end(payload, timestamp)
        except events.Malformed as exc:
            self._count('malformed', event_type)
            LOG.warning('Dropped %s (message %s from %s): %s', event_type,
                        message_id, publisher_id, exc)
            return oslo_messaging.NotificationResult.HANDLED
        except ledger_errors.LedgerUnavailable as exc:
            failures = self._count('requeued', event_type)
            delay = min(self.requeue_delay * 2 ** (failures - 1),
                        self.requeue_delay_max)
            LOG.warning('The ledger is unavailable; %s (message %s) goes '
                        'back to the queue in %.1fs: %s', event_type,
                        message_id, delay, exc)
            time.sleep(delay)
            return oslo_messaging.NotificationResult.REQUEUE
        except Exception:
            self._count('failed', event_type)
            LOG.exception('%s (message %s from %s) could not be applied; '
                          'it is dropped, not retried (placement-quota '
                          'reconcile reports the drift). Payload: %.500r',
                          event_type, message_id, publisher_id, payload)
            return oslo_messaging.NotificationResult.HANDLED
        self._count('handled', event_type)
        metrics.LAST_EVENT.set(time.time())
        metrics.LAG_SECONDS.observe(max(0.0, (
            timeutils.utcnow(with_timezone=False) - timestamp
        ).total_seconds()))
        lease_id = payload.get('lease_id') if isinstance(payload, dict) \
            else None
        LOG.info('%s of lease %s: %s', event_type, lease_id, result)
        return oslo_messaging.NotificationResult.HANDLED


class Settler(threading.Thread):
    """Every ``interval`` seconds, abandons the pending entries Blazar
    never created (:func:`~placement_quota.lifecycle.events.settle`),
    measured against ``endpoint.newest``."""

    def __init__(self, ledger, endpoint, interval, pending_timeout):
        super().__init__(name='lifecycle-settle', daemon=True)
        self.ledger = ledger
        self.endpoint = endpoint
        self.interval = interval
        self.pending_timeout = pending_timeout
        self._stopping = threading.Event()

    def run(self):
        while not self._stopping.wait(self.interval):
            self.settle_once()

    def settle_once(self):
        """One pass; returns the settled entry IDs (empty before the first
        notification and on errors, which are logged)."""
        seen_until = self.endpoint.newest
        if seen_until is None:
            return []
        try:
            settled = events.settle(self.ledger, seen_until=seen_until,
                                    pending_timeout=self.pending_timeout)
        except ledger_errors.LedgerUnavailable as exc:
            LOG.warning('Could not settle pending entries (next try in '
                        '%ds): %s', self.interval, exc)
            return []
        except Exception:
            LOG.exception('Could not settle pending entries (next try in '
                          '%ds)', self.interval)
            return []
        if settled:
            LOG.info('Abandoned %d pending entries that no lease.create '
                     'bound within %ds of the newest notification (%s): %s',
                     len(settled), self.pending_timeout,
                     seen_until.isoformat(' '),
                     ', '.join(str(s) for s in settled))
        return settled

    def stop(self):
        self._stopping.set()


class LifecycleListener:
    """The listener of ``conf``'s ``[lifecycle]`` on ``ledger``:
    :meth:`start`, then :meth:`stop` and :meth:`wait`.

    ``endpoint`` is its :class:`LeaseEndpoint` (one is made unless given);
    ``transport_url`` the broker, credentials masked (for logs).
    """

    def __init__(self, conf, ledger, endpoint=None, before_end=None):
        group = conf.lifecycle
        self.conf = conf
        self.transport = oslo_messaging.get_notification_transport(
            conf, url=group.transport_url)
        self.transport_url = _masked(conf, group.transport_url)
        self.targets = [oslo_messaging.Target(topic=topic,
                                              exchange=group.exchange)
                        for topic in group.topics]
        self.endpoint = endpoint or LeaseEndpoint(ledger,
                                                  before_end=before_end)
        self.listener = oslo_messaging.get_notification_listener(
            self.transport, self.targets, [self.endpoint],
            executor='threading', allow_requeue=True, pool=group.pool)
        self.settler = Settler(ledger, self.endpoint,
                               group.settle_interval, group.pending_timeout)

    def start(self):
        self.listener.start()
        self.settler.start()
        LOG.info('Listening to Blazar\'s lease notifications on %s, '
                 'exchange %s, topics %s, pool %s',
                 self.transport_url, self.conf.lifecycle.exchange,
                 ', '.join(self.conf.lifecycle.topics),
                 self.conf.lifecycle.pool)

    def stop(self):
        """Stop consuming (messages being handled finish)."""
        self.settler.stop()
        self.listener.stop()

    def wait(self):
        """Wait until the messages being handled are done; release the
        broker connections."""
        self.listener.wait()
        self.settler.join()
        self.transport.cleanup()


def _masked(conf, url):
    """The transport URL in use, its password masked."""
    if url is None:
        url = conf.oslo_messaging_notifications.transport_url or \
            conf.transport_url
    try:
        parsed = oslo_messaging.TransportURL.parse(conf, url)
    except Exception:
        return '(unparsable transport URL)'
    hosts = ','.join('%s%s:%s' % (h.username + '@' if h.username else '',
                                  h.hostname, h.port)
                     for h in parsed.hosts)
    return '%s://%s/%s' % (parsed.transport, hosts, parsed.virtual_host or '')


def run(conf, services, ready=None, on_ready=None, dispatcher=None):
    """Run the listener of ``conf`` on ``services.ledger`` until SIGTERM or
    SIGINT, then stop it cleanly (the messages being handled finish).

    With a ``dispatcher`` (:class:`~placement_quota.warning.dispatch.
    Dispatcher`, ``[warnings] enabled``), Blazar's ``before_end_lease``
    events become warnings, and the dispatcher scans and sends in a thread
    of its own beside the listener.

    Once it listens, ``on_ready(listener)`` is called and ``ready`` (an
    Event) is set, when given. Must run in the main thread (it installs
    the signal handlers; the previous ones are put back on return).
    """
    before_end = None
    if dispatcher is not None:
        before_end = functools.partial(warning_events.before_end,
                                       services.ledger)
    listener = LifecycleListener(conf, services.ledger,
                                 before_end=before_end)
    stopping = threading.Event()
    warner = None

    def _stop(signum, frame):
        LOG.info('Signal %d received: stopping', signum)
        stopping.set()

    previous = {sig: signal.signal(sig, _stop)
                for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        listener.start()
        if dispatcher is not None:
            warner = threading.Thread(target=dispatcher.run,
                                      args=(stopping,), name='warnings',
                                      daemon=True)
            warner.start()
        group = conf.lifecycle
        if group.metrics_port:
            server = metrics.serve_metrics(group.metrics_port,
                                           group.metrics_host)
            LOG.info('Metrics on http://%s:%d/metrics', group.metrics_host,
                     server.server_port)
        if on_ready is not None:
            on_ready(listener)
        if ready is not None:
            ready.set()
        while not stopping.wait(1):
            pass
    finally:
        stopping.set()
        listener.stop()
        listener.wait()
        if warner is not None:
            warner.join()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    LOG.info('Stopped; notifications: %s',
             ', '.join('%d %s' % (n, outcome) for outcome, n in
                       sorted(listener.endpoint.counts.items())))
