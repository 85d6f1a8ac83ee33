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
"""Benchmark: Blazar's lease notifications through a real RabbitMQ into
the ledger.

Starts a private RabbitMQ node (tests/fixtures/rabbitmq.py) and a SQLite
ledger in a temp dir; records N leases as Blazar's check-create would
(CreditFilter, 1 credit per host-hour, leases over 20 projects), then
publishes, with the oslo.messaging Notifier Blazar uses, in three bursts:
``lease.create`` of every lease (binds its pending entry),
``lease.update`` (one more day: charged the difference), and
``lease.event.end_lease`` (closed now: the unused part refunded). The
listener of ``placement-quota listen`` runs in this process.

Prints one JSON line::

    {"leases": N, "events": 3N, "events_per_s": ..., "lag_p99_ms": ...,
     "refund_errors": 0}

``events_per_s`` is the events over the time from the first publish of a
burst to its last ledger change, summed over the three bursts;
``lag_p99_ms`` the 99th percentile of publish-to-commit (the change
visible in the ledger) of every event: in a burst of N messages, or at
the pace of ``--rate``.
``refund_errors`` counts the entries not closed as expected: not
terminated, not charged the update's cost before the end, closed outside
the time of the end notification, or refunded other than the unused part
(must be 0). Details go to stderr.

    python tools/bench/lifecycle.py [--leases 1000] [--rate N]
"""

import argparse
import datetime
import json
import os
import shutil
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

PROJECTS = 20
PHASE_TIMEOUT = 600


def _parse_args():
    from tools.bench import common
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--leases', type=common.positive, default=1000,
                        help='Leases to take through create, update and '
                             'end (default 1000).')
    parser.add_argument('--rate', type=common.positive, default=None,
                        help='Publish at most this many notifications a '
                             'second (default: as fast as possible, one '
                             'burst per step).')
    return parser.parse_args()


def _minute(value):
    return value.replace(second=0, microsecond=0)


def main():
    args = _parse_args()
    from oslo_log import log as logging

    from placement_quota.ledger import models
    from placement_quota.ledger import store
    from placement_quota.lifecycle import listener as listener_mod
    from placement_quota import services as services_mod
    from tests import builders
    from tests.fixtures import rabbitmq
    from tests.functional.lifecycle import base

    reason = rabbitmq.unavailable_reason()
    if reason:
        sys.exit('RabbitMQ is not installed: %s' % reason)
    tmp = tempfile.mkdtemp(prefix='pq-bench-lifecycle-')
    server = rabbitmq.RabbitMQServer().start()
    try:
        sys.stderr.write('RabbitMQ started in %.1fs\n'
                         % server.startup_seconds)
        conf = base.make_conf(tmp, server.transport_url)
        conf.set_override('lock_timeout', 30, 'ledger')
        logging.setup(conf, 'placement-quota-bench')
        import logging as std_logging
        std_logging.getLogger().setLevel(std_logging.WARNING)
        services = services_mod.Services(conf,
                                         placement=base.NoPlacement())
        ledger = services.ledger
        real_now = _minute(datetime.datetime.utcnow())
        ledger.clock = lambda: real_now - datetime.timedelta(days=2)
        from placement_quota.filters import credit
        credit_filter = credit.CreditFilter(conf, services=services)
        projects = ['bench-project-%02d' % p for p in range(PROJECTS)]
        for project in projects:
            with ledger.transaction() as txn:
                txn.add_allocation(project, store.to_micro(10 ** 9))

        start = real_now - datetime.timedelta(days=1)
        end = real_now + datetime.timedelta(days=1)
        new_end = end + datetime.timedelta(days=1)
        leases = []
        for i in range(args.leases):
            project = projects[i % PROJECTS]
            body = builders.lease(start, end, builders.hosts('h%d' % i),
                                  name='bench-%d' % i)
            credit_filter.check_create(
                builders.context(project, base.USER), body)
            leases.append((project, 'lease-%06d' % i, body))

        published = {}
        committed = {}
        done = threading.Condition()

        class TimedEndpoint(listener_mod.LeaseEndpoint):
            def info(self, ctxt, publisher_id, event_type, payload,
                     metadata):
                result = super().info(ctxt, publisher_id, event_type,
                                      payload, metadata)
                if result == listener_mod.oslo_messaging. \
                        NotificationResult.HANDLED:
                    with done:
                        committed[(event_type, payload['lease_id'])] = \
                            time.time()
                        done.notify_all()
                return result

        endpoint = TimedEndpoint(ledger)
        lifecycle = listener_mod.LifecycleListener(conf, ledger,
                                                   endpoint=endpoint)
        lifecycle.start()
        base.wait_for_queue(server.transport_url, conf.lifecycle.pool)
        notifier, transport = base.blazar_notifier(server.transport_url)

        def burst(event_type, payload_of):
            began = time.time()
            for n, (project, lease_id, body) in enumerate(leases):
                if args.rate:
                    pause = began + n / args.rate - time.time()
                    if pause > 0:
                        time.sleep(pause)
                payload = payload_of(project, lease_id, body)
                published[(event_type, lease_id)] = time.time()
                notifier.info({}, event_type, payload)
            sent = time.time()
            keys = [(event_type, lease_id) for _, lease_id, _ in leases]
            deadline = time.monotonic() + PHASE_TIMEOUT
            with done:
                while not all(k in committed for k in keys):
                    if time.monotonic() > deadline:
                        raise RuntimeError('%s: %d of %d handled in %ds' % (
                            event_type, sum(k in committed for k in keys),
                            len(keys), PHASE_TIMEOUT))
                    done.wait(1)
            finished = max(committed[k] for k in keys)
            sys.stderr.write('%s: %d published in %.2fs, all handled in '
                             '%.2fs\n' % (event_type, len(keys),
                                          sent - began, finished - began))
            return finished - began

        created_at = real_now - datetime.timedelta(days=2)
        elapsed = burst('lease.create', lambda p, lid, b: base.blazar_payload(
            b, lid, p, created_at=created_at, updated_at=None))

        def update_payload(project, lease_id, body):
            moved = dict(body, end_date=new_end)
            return base.blazar_payload(
                moved, lease_id, project, created_at=created_at,
                updated_at=real_now - datetime.timedelta(hours=1))

        elapsed += burst('lease.update', update_payload)
        with ledger.transaction() as txn:
            before_end = {row.lease_id: row for project in projects
                          for row in txn.leases(project)}
        end_sent_from = datetime.datetime.utcnow()

        def end_payload(project, lease_id, body):
            moved = dict(body, end_date=new_end)
            return base.blazar_payload(
                moved, lease_id, project, status='TERMINATED',
                created_at=created_at, updated_at=datetime.datetime.utcnow())

        elapsed += burst('lease.event.end_lease', end_payload)
        end_sent_until = datetime.datetime.utcnow()
        lifecycle.stop()
        lifecycle.wait()
        transport.cleanup()

        with ledger.transaction() as txn:
            final = {row.lease_id: row for project in projects
                     for row in txn.leases(project)}
        refund_errors = 0
        slack = datetime.timedelta(seconds=1)
        for _, lease_id, _ in leases:
            entry, prior = final.get(lease_id), before_end.get(lease_id)
            problem = None
            if entry is None or prior is None:
                problem = 'not bound'
            elif entry.state != models.TERMINATED:
                problem = 'state %s' % entry.state
            elif prior.charged != store.cost(prior.hourly_rate, start,
                                             new_end):
                problem = 'charged %d after the update' % prior.charged
            elif not (end_sent_from - slack <= entry.effective_end <=
                      end_sent_until + slack):
                problem = 'closed at %s' % entry.effective_end
            else:
                expected = prior.charged - store.cost(
                    entry.hourly_rate, start, entry.effective_end)
                refund = prior.charged - entry.charged
                if refund != expected or refund <= 0:
                    problem = 'refunded %d, expected %d' % (refund,
                                                            expected)
            if problem:
                refund_errors += 1
                if refund_errors <= 10:
                    sys.stderr.write('%s: %s\n' % (lease_id, problem))

        lags = sorted(committed[k] - published[k] for k in published)
        p99 = lags[min(len(lags) - 1, int(len(lags) * 0.99))]
        sys.stderr.write('outcomes: %s; lag p50 %.1f ms, max %.1f ms\n' % (
            endpoint.counts, lags[len(lags) // 2] * 1000, lags[-1] * 1000))
        if args.rate:
            sys.stderr.write('published at most %d a second\n' % args.rate)
        print(json.dumps({
            'leases': args.leases,
            'events': len(published),
            'events_per_s': round(len(published) / elapsed, 1),
            'lag_p99_ms': round(p99 * 1000, 1),
            'refund_errors': refund_errors,
        }), flush=True)
        services.close()
        return 1 if refund_errors else 0
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
