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
"""Benchmark: a full ``reconcile`` dry run on a cloud of N hosts, against
the naive way of reading the same state.

A fresh real Placement (the embedded server, ``python -m
placement_quota.cmd.embedded_placement``, noauth2, SQLite, on loopback) gets N
compute nodes, each with its reservation provider ``blazar_<host>`` (Blazar's
"Placement API support for instance reservation" spec). Every reservation
provider has held a reservation once (its generation is not 0, so none can be
skipped unread); 20 % of the hosts hold a running instance reservation (10
hosts each, 1 instance per host). Seeded drift: 1 % of the hosts keep the
inventory of an ended reservation, 5 reservation providers are orphans, 5
reserved hosts have no reservation provider. A SQLite ledger holds the leases.

* **ours**: ``runner.reconcile`` (a dry run; the Placement calls it makes
  are counted by the client);
* **naive**: what an operator does with osc-placement, host by host:
  ``resource provider list --name H`` and ``--name blazar_H``, ``resource
  provider show``, ``resource provider inventory list``, ``resource
  provider usage show`` and ``resource provider trait list`` of the
  compute node: 6 sequential calls per host, plus ``resource class
  list`` once. Timed on ``--naive-sample`` hosts and scaled to N (the
  calls are independent and the same for each host).

Seeding is concurrent (8 threads) for the providers and one ``POST
/reshaper`` for all inventories.

    python tools/bench/reconcile.py --hosts 10000

prints one JSON object per ``--hosts`` value on stdout and a summary on
stderr.
"""

import argparse
import concurrent.futures
import datetime
import faulthandler
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from oslo_utils import timeutils  # noqa: E402

from placement_quota.ledger import models  # noqa: E402
from placement_quota.ledger import store  # noqa: E402
from placement_quota.placement import client as placement_client  # noqa: E402,E501
from placement_quota.placement import embedded  # noqa: E402
from placement_quota.placement import reservations as rsv  # noqa: E402
from placement_quota.reconcile import runner  # noqa: E402
from tools.bench import common  # noqa: E402

SERVER_START_TIMEOUT = 120
REQUEST_TIMEOUT = 600
WATCHDOG = 1800
HOSTS_PER_RESERVATION = 10
ORPHANS = 5
UNPROVIDED = 5
SEED_THREADS = 8


class BenchError(Exception):
    """The benchmark could not run, or found the wrong drift."""


def _post_all(client, bodies):
    """POST each provider body concurrently; ``{name: (uuid, gen)}``."""
    def post(body):
        rp = client.post('/resource_providers', json=body).json()
        return body['name'], rp['uuid'], rp['generation']

    with concurrent.futures.ThreadPoolExecutor(SEED_THREADS) as pool:
        return {name: (rp, gen) for name, rp, gen in pool.map(post, bodies)}


def seed(client, ledger, hosts, now):
    """Fill Placement and the ledger; return the drift seeded, by kind."""
    names = ['cn-%05d' % i for i in range(hosts)]
    nodes = _post_all(client, [{'name': n} for n in names])
    unprovided = set(names[-UNPROVIDED:])
    children = _post_all(client, [
        {'name': rsv.provider_name(n), 'parent_provider_uuid': nodes[n][0]}
        for n in names if n not in unprovided])
    ghosts = _post_all(client, [{'name': rsv.provider_name('ghost-%d' % i)}
                                for i in range(ORPHANS)])
    # History: every reservation provider held an old reservation once.
    old = rsv.reservation_class(str(uuid.uuid4()))
    client.put('/resource_classes/%s' % old)
    final = {rp: {} for rp, _ in children.values()}
    reshape(client, {rp: (gen, {old: rsv.reservation_inventory(1)})
                     for rp, gen in children.values()})
    generations = {rp: gen + 2 for rp, gen in children.values()}
    # Running reservations: 20 % of the hosts, 10 each, the unprovided
    # hosts among them.
    reserved = names[-int(hosts * 0.2):] if hosts >= 50 else names[-10:]
    for i in range(0, len(reserved), HOSTS_PER_RESERVATION):
        group = reserved[i:i + HOSTS_PER_RESERVATION]
        rid = str(uuid.uuid4())
        name = rsv.reservation_class(rid)
        client.put('/resource_classes/%s' % name)
        record(ledger, rid, group, now - datetime.timedelta(hours=1),
               now + datetime.timedelta(days=1), 'running-%d' % i)
        for host in group:
            if rsv.provider_name(host) in children:
                final[children[rsv.provider_name(host)][0]][name] = \
                    rsv.reservation_inventory(1)
    # Ended reservations whose inventory was left behind: 1 % of hosts.
    left = names[:max(1, hosts // 100)]
    rid = str(uuid.uuid4())
    name = rsv.reservation_class(rid)
    client.put('/resource_classes/%s' % name)
    record(ledger, rid, left, now - datetime.timedelta(days=3),
           now - datetime.timedelta(days=1), 'ended',
           state=models.TERMINATED)
    for host in left:
        final[children[rsv.provider_name(host)][0]][name] = \
            rsv.reservation_inventory(1)
    reshape(client, {rp: (generations[rp], inv)
                     for rp, inv in final.items()})
    client.delete('/resource_classes/%s' % old)
    return {'missing_provider': len(unprovided),
            'inventory_mismatch': len(unprovided),
            'orphan_provider': len(ghosts),
            'ended_inventory': len(left),
            'orphan_class': 1}


def reshape(client, inventories):
    client.post('/reshaper', json={'inventories': {
        rp: {'resource_provider_generation': gen, 'inventories': inv}
        for rp, (gen, inv) in inventories.items()}, 'allocations': {}})


def record(ledger, rid, hosts, start, end, name, state=models.PENDING):
    body = {'name': name, 'start_date': start.isoformat(),
            'end_date': end.isoformat(), 'reservations': [{
                'resource_type': 'virtual:instance', 'id': rid,
                'amount': len(hosts), 'vcpus': 1, 'memory_mb': 512,
                'disk_gb': 1, 'allocations': [
                    {'id': str(i), 'hypervisor_hostname': h}
                    for i, h in enumerate(hosts)]}]}
    with ledger.transaction(['bench']) as txn:
        txn.insert(project_id='bench', lease_id=str(uuid.uuid4()),
                   provisional_key=uuid.uuid4().hex, name=name,
                   start_date=start, end_date=end, state=state, amounts={},
                   lease=body, hourly_rate=0, charged=0)


def naive(client, hosts):
    """The osc-placement way on ``hosts``; ``(calls, seconds)``."""
    before = client.calls
    started = time.perf_counter()
    client.get('/resource_classes')
    for host in hosts:
        node = client.get('/resource_providers?name=%s' % host)[
            'resource_providers']
        child = client.get('/resource_providers?name=%s'
                           % rsv.provider_name(host))['resource_providers']
        if child:
            uuid_ = child[0]['uuid']
            client.get('/resource_providers/%s' % uuid_)
            client.get('/resource_providers/%s/inventories' % uuid_)
            client.get('/resource_providers/%s/usages' % uuid_)
        if node:
            client.get('/resource_providers/%s/traits' % node[0]['uuid'])
    return client.calls - before, time.perf_counter() - started


def run_once(hosts, rounds, naive_sample, concurrency):
    try:
        server = embedded.ServerProcess(SERVER_START_TIMEOUT)
    except RuntimeError as exc:
        raise BenchError(str(exc))
    state_dir = tempfile.mkdtemp(prefix='bench-reconcile-')
    ledger = store.Ledger('sqlite:///%s/ledger.sqlite' % state_dir)
    try:
        client = placement_client.PlacementClient.from_endpoint(
            server.url, embedded.NOAUTH_HEADERS, timeout=REQUEST_TIMEOUT)
        now = timeutils.utcnow()
        started = time.monotonic()
        seeded = seed(client, ledger, hosts, now)
        seed_s = time.monotonic() - started
        times, calls, found = [], None, None
        for _ in range(rounds):
            reader = placement_client.PlacementClient.from_endpoint(
                server.url, embedded.NOAUTH_HEADERS, timeout=REQUEST_TIMEOUT)
            report = runner.reconcile(reader, ledger, now=now,
                                      max_concurrency=concurrency,
                                      show_progress=False)
            times.append(report.seconds)
            calls = report.read_calls
            found = {}
            for finding in report.findings:
                found[finding.kind] = found.get(finding.kind, 0) + 1
        if found != seeded:
            raise BenchError('found %s, seeded %s' % (found, seeded))
        sample = ['cn-%05d' % i for i in range(hosts)]
        if naive_sample and naive_sample < hosts:
            step = hosts / naive_sample
            sample = [sample[int(i * step)] for i in range(naive_sample)]
        reader = placement_client.PlacementClient.from_endpoint(
            server.url, embedded.NOAUTH_HEADERS, timeout=REQUEST_TIMEOUT)
        naive_calls, naive_s = naive(reader, sample)
        scale = hosts / len(sample)
    finally:
        ledger.dispose()
        server.stop()
        shutil.rmtree(state_dir, ignore_errors=True)
    ours_s = statistics.median(times)
    naive_total_s = naive_s * scale
    return {
        'hosts': hosts,
        'seed_s': round(seed_s, 1),
        'findings': found,
        'ours': {'calls': calls, 'seconds': round(ours_s, 2),
                 'rounds': rounds, 'max_concurrency': concurrency},
        'naive': {'calls': int(round(1 + (naive_calls - 1) * scale)),
                  'seconds': round(naive_total_s, 2),
                  'sampled_hosts': len(sample),
                  'sample_calls': naive_calls,
                  'sample_seconds': round(naive_s, 2),
                  'extrapolated': len(sample) < hosts},
        'calls_ratio': round((1 + (naive_calls - 1) * scale) / calls, 1),
        'speedup': round(naive_total_s / ours_s, 1),
    }


def summary(result):
    o, n = result['ours'], result['naive']
    return ('hosts=%d: ours %d calls in %.2f s; naive %d calls in %.2f s%s '
            '(%.1fx the calls, %.1fx the time); seeding %.1f s' % (
                result['hosts'], o['calls'], o['seconds'], n['calls'],
                n['seconds'], ' (extrapolated from %d hosts)'
                % n['sampled_hosts'] if n['extrapolated'] else '',
                result['calls_ratio'], result['speedup'], result['seed_s']))


def main(argv=None, watchdog=False):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--hosts', type=common.positive, nargs='+',
                        default=[1000],
                        help='numbers of compute nodes, one run (and one '
                        'JSON line) each (default: 1000)')
    parser.add_argument('--rounds', type=common.positive, default=3,
                        help='dry runs timed (median; default: 3)')
    parser.add_argument('--naive-sample', type=int, default=1000,
                        help='hosts the naive way is timed on, scaled to '
                        'all (0: every host; default: 1000)')
    parser.add_argument('--max-concurrency', type=common.positive, default=8,
                        help='our concurrent reads (default: 8)')
    parser.add_argument('--timeout', type=common.positive, default=WATCHDOG,
                        help='seconds after which the command gives up, '
                        'printing where it was (default: %d)' % WATCHDOG)
    args = parser.parse_args(argv)
    if watchdog:
        faulthandler.dump_traceback_later(args.timeout, exit=True)
    started = time.monotonic()
    try:
        for hosts in args.hosts:
            result = run_once(hosts, args.rounds, args.naive_sample,
                              args.max_concurrency)
            print(json.dumps(result), flush=True)
            print(summary(result), file=sys.stderr, flush=True)
    except (BenchError, placement_client.PlacementError) as exc:
        print('reconcile bench: %s' % exc, file=sys.stderr)
        return 1
    finally:
        if watchdog:
            faulthandler.cancel_dump_traceback_later()
    print('total %.1f s' % (time.monotonic() - started), file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main(watchdog=True))
