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
"""Benchmark: admissions of disjoint projects and pools across processes.

Two ``placement-quota serve`` processes share one PostgreSQL ledger (a
private cluster, as the tests start one) and a real Placement (the
embedded server, a subprocess on loopback), with all seven policy filters.
The cloud has two capacity pools of ``--hosts`` hosts each (8 VCPU a
host); pool A's projects (trees of their own) send their check-creates to
the first process, pool B's to the second, ``--threads`` clients a pool
at once. Every lease is one instance of 2 VCPU on one host of its pool,
over the same day: each host holds exactly 4, so each pool admits exactly
``4 x --hosts`` leases and denies the rest.

What it measures is lock waits, not throughput (the machine has 2 cores
for the database, both services, Placement and the load), from two
sources:

- ``lock_wait_*``: the time admissions were blocked on a lock another
  transaction held, as PostgreSQL itself accounts it: the run turns on
  ``log_lock_waits`` with ``deadlock_timeout = 1ms``, so the server logs
  every wait that lasts 1 ms or more and, when it ends, how long it
  lasted. Admissions with no logged wait waited under 1 ms; when the 99th
  percentile falls among them, ``lock_wait_p99_ms`` is the string
  ``"<1"``. Each logged wait counts as the wait of one admission (an
  admission waiting on two locks counts twice: the figure errs high).
- ``lock_acquire_*``: each service's
  ``placement_quota_ledger_lock_wait_seconds`` histogram, summed over
  both processes: the time from opening an admission's transaction to
  holding its locks -- the connection's check, BEGIN and the lock
  statements' round trips as well as any wait.

``exact`` is true when every host got exactly 4 leases and no more, and
the 204s match.

``--capacity-hosts all`` makes every capacity check count every host, so
every admission locks the cloud-wide row exclusively: the way every
instance admission was locked before capacity pools, for comparison.

    python tools/bench/admission_scale.py [--hosts 10] [--threads 1]
        [--capacity-hosts allocations|all]

prints one JSON object on stdout (``processes``, ``admissions``,
``lock_wait_p99_ms``, ``lock_waits_logged``, ``lock_acquire_p99_ms``,
``exact``...) and a summary on stderr. With ``--connection`` (a server
the bench did not start) PostgreSQL's log is not read and the
``lock_wait_*`` figures are null.
"""

import argparse
import concurrent.futures
import datetime
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from prometheus_client import parser as prom_parser  # noqa: E402
import requests  # noqa: E402

from placement_quota.ledger import store  # noqa: E402
from placement_quota.placement import client as placement_client  # noqa
from placement_quota.placement import embedded  # noqa: E402
from tests.fixtures import postgresql  # noqa: E402
from tools.bench import common  # noqa: E402
from tools.bench import policies  # noqa: E402

GOAL_P99_MS = 1.0
VCPUS_PER_HOST = 8
VCPUS_PER_LEASE = 2
PER_HOST = VCPUS_PER_HOST // VCPUS_PER_LEASE
START = datetime.datetime(2030, 1, 1)
LISTENING = re.compile(r'listening on (http://\S+)/v1/')
LOCK_WAIT = 'placement_quota_ledger_lock_wait_seconds'
# PostgreSQL's log_lock_waits lines, e.g. "process 4242 still waiting for
# ShareLock on transaction 731 after 1.034 ms", then "process 4242 acquired
# ShareLock on transaction 731 after 5.210 ms".
LOGGED_WAIT = re.compile(
    r'process (\d+) (still waiting for|acquired) (.+?) after ([\d.]+) ms')


def seed_hosts(client, pool, count):
    hosts = []
    for i in range(count):
        name = 'scale-%s-%d-%s' % (pool, i, uuid.uuid4().hex[:6])
        rp = client.post('/resource_providers', json={'name': name}).json()
        client.put('/resource_providers/%s/inventories' % rp['uuid'], json={
            'resource_provider_generation': rp['generation'],
            'inventories': {'VCPU': {'total': VCPUS_PER_HOST},
                            'MEMORY_MB': {'total': 65536},
                            'DISK_GB': {'total': 1000}}})
        hosts.append((name, rp['uuid']))
    return hosts


def pool_projects(pool, count):
    """Trees of one root and nine children, named after the pool."""
    return {('%s-%s' % (pool, pid)): (None if parent is None
                                      else '%s-%s' % (pool, parent))
            for pid, parent in policies.project_ids(count).items()}


def write_config(directory, url, endpoint, projects, capacity_hosts):
    paths = policies.write_files(directory, projects)
    path = os.path.join(directory, 'placement-quota.conf')
    with open(path, 'w') as f:
        f.write(
            '[database]\nconnection = %s\n'
            '[ledger]\nlock_timeout = 60\n'
            '[placement]\nauth_type = admin_token\nendpoint = %s\n'
            'token = admin\n'
            '[limits]\nlimits_file = %s\n'
            '[enforcement]\nenabled_filters = %s\n'
            'reservation_max_length = 604800\n'
            'max_hosts_per_reservation = 10\n'
            'max_leases_per_project = 100000\n'
            'nova_quota_source = file\nnova_quota_limits_file = %s\n'
            'credit_class_rates = VCPU:0.1\n'
            'capacity_hosts = %s\n'
            '[api]\nthreads = 8\nmetrics = true\n'
            % (url, endpoint, paths['tree.yaml'],
               ','.join(policies.FILTERS), paths['nova.yaml'],
               capacity_hosts))
    return path


def start_service(config):
    process = subprocess.Popen(
        [sys.executable, '-m', 'placement_quota.cmd.main', '--config-file',
         config, 'serve', '--port', '0'],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    found = LISTENING.search(process.stdout.readline())
    if not found:
        process.kill()
        raise SystemExit('placement-quota serve did not start')
    return process, found.group(1)


def stop(process):
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def lease(i, host):
    name, uuid_ = host
    end = START + datetime.timedelta(days=1)
    return {'start_date': START.isoformat(), 'end_date': end.isoformat(),
            'name': 'scale-%d' % i,
            'reservations': [{
                'resource_type': 'virtual:instance', 'amount': 1,
                'vcpus': VCPUS_PER_LEASE, 'memory_mb': 512, 'disk_gb': 1,
                'allocations': [{'id': uuid_,
                                 'hypervisor_hostname': name}]}]}


def run_pool(url, projects, hosts, requests_sent, threads, seed):
    """``{host name: (asked, allowed)}`` and the statuses of
    ``requests_sent`` check-creates of one pool."""
    rng = random.Random(seed)
    names = sorted(projects)
    plan = [(i, rng.choice(names), rng.choice(hosts))
            for i in range(requests_sent)]
    session = requests.Session()

    def one(item):
        i, project, host = item
        body = json.dumps({'context': {'project_id': project,
                                       'user_id': 'u'},
                           'lease': lease(i, host)})
        response = session.post(url + '/v1/check-create', data=body,
                                timeout=120)
        return host[0], response.status_code

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        results = list(pool.map(one, plan))
    counts = {name: [0, 0] for name, _ in hosts}
    statuses = {}
    for name, status in results:
        statuses[status] = statuses.get(status, 0) + 1
        counts[name][0] += 1
        if status == 204:
            counts[name][1] += 1
    return counts, statuses


def lock_waits(url):
    """``[(upper bound in seconds, cumulative count)]`` of one service's
    lock wait histogram."""
    text = requests.get(url + '/metrics', timeout=30).text
    for family in prom_parser.text_string_to_metric_families(text):
        if family.name == LOCK_WAIT:
            return [(float(sample.labels['le']), sample.value)
                    for sample in family.samples
                    if sample.name.endswith('_bucket')]
    return []


def log_lock_waits(database):
    """Make ``database`` log each lock wait of 1 ms or more; the offset of
    its log from which the waits of the run are read."""
    conn = database.connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute('ALTER SYSTEM SET log_lock_waits = on')
            cursor.execute("ALTER SYSTEM SET deadlock_timeout = '1ms'")
            cursor.execute('SELECT pg_reload_conf()')
        # The reload is asynchronous; a new session sees it once done.
        for _ in range(100):
            check = database.connect()
            try:
                with check.cursor() as cursor:
                    cursor.execute('SHOW deadlock_timeout')
                    if cursor.fetchone()[0] == '1ms':
                        break
            finally:
                check.close()
            time.sleep(0.05)
        else:
            raise SystemExit('PostgreSQL did not take deadlock_timeout')
    finally:
        conn.close()
    return os.path.getsize(database.log_file)


def logged_waits(path, offset):
    """The waits (ms) PostgreSQL logged in ``path`` after ``offset``: one
    per lock waited for; a wait still on at the end counts as long as it
    was when last logged."""
    with open(path, errors='replace') as f:
        f.seek(offset)
        text = f.read()
    open_waits, waits = {}, []
    for pid, what, lock, ms in LOGGED_WAIT.findall(text):
        if what == 'acquired':
            open_waits.pop((pid, lock), None)
            waits.append(float(ms))
        else:
            open_waits[(pid, lock)] = float(ms)
    return sorted(waits + list(open_waits.values()))


def wait_quantile(waits, admissions, fraction):
    """The ``fraction`` quantile (nearest rank) of the lock waits of
    ``admissions`` admissions of which ``waits`` (ms, sorted) were logged
    and the others lasted under 1 ms: a number of ms, or ``"<1"``."""
    if not admissions:
        return None
    rank = max(1, int(math.ceil(fraction * admissions - 1e-9)))
    unlogged = max(0, admissions - len(waits))
    if rank <= unlogged:
        return '<1'
    return round(waits[min(len(waits) - 1, rank - unlogged - 1)], 3)


def quantile(buckets, fraction):
    """The ``fraction`` quantile of a cumulative histogram, interpolated
    inside its bucket as Prometheus' histogram_quantile does (ms)."""
    total = buckets[-1][1]
    if not total:
        return 0.0
    rank = fraction * total
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float('inf'):
                return lower * 1000
            inside = count - below
            share = (rank - below) / inside if inside else 1.0
            return (lower + (bound - lower) * share) * 1000
        lower, below = bound, count
    return lower * 1000


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=common.positive, default=10,
                        help='Hosts of each of the two pools.')
    parser.add_argument('--projects', type=common.positive, default=50,
                        help='Projects of each pool, in trees of ten.')
    parser.add_argument('--requests', type=common.positive, default=None,
                        help='check-creates a pool (default: twice what '
                             'its hosts hold).')
    parser.add_argument('--threads', type=common.positive, default=1,
                        help='Clients of each pool at once.')
    parser.add_argument('--capacity-hosts', default='allocations',
                        choices=['allocations', 'all'])
    parser.add_argument('--connection', default=None,
                        help='A PostgreSQL ledger URL (default: a private '
                             'cluster started for the run).')
    args = parser.parse_args(argv)
    requests_sent = args.requests or 2 * PER_HOST * args.hosts
    directory = tempfile.mkdtemp(prefix='pq-bench-scale-')
    database = None
    log_offset = waits = None
    placement = embedded.ServerProcess()
    services = []
    try:
        url = args.connection
        if url is None:
            database = postgresql.PostgreSQLServer()
            database.start()
            database.create_database('scale')
            url = database.url('scale')
            log_offset = log_lock_waits(database)
        client = placement_client.PlacementClient.from_endpoint(
            placement.url, embedded.NOAUTH_HEADERS)
        pools = {pool: (seed_hosts(client, pool, args.hosts),
                        pool_projects(pool, args.projects))
                 for pool in ('a', 'b')}
        projects = dict(pools['a'][1], **pools['b'][1])
        ledger = store.Ledger(url, migrate=True)
        with ledger.transaction() as txn:
            for project in projects:
                txn.add_allocation(project, store.to_micro(10 ** 9))
        ledger.dispose()
        config = write_config(directory, url, placement.url, projects,
                              args.capacity_hosts)
        services = [start_service(config) for _ in pools]
        before = [lock_waits(service_url) for _, service_url in services]
        began = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(2) as runner:
            futures = [runner.submit(run_pool, service_url, pools[pool][1],
                                     pools[pool][0], requests_sent,
                                     args.threads, seed)
                       for seed, (pool, (_, service_url)) in enumerate(
                           zip(sorted(pools), services))]
            outcome = [future.result() for future in futures]
        elapsed = time.perf_counter() - began
        after = [lock_waits(service_url) for _, service_url in services]
        if database is not None:
            waits = logged_waits(database.log_file, log_offset)
    finally:
        for process, _ in services:
            stop(process)
        placement.stop()
        if database is not None:
            database.stop()
    merged = [(bound, sum(a[i][1] - b[i][1] for a, b in zip(after, before)
                          if a))
              for i, (bound, _) in enumerate(after[0])]
    admissions = int(merged[-1][1]) if merged else 0
    under_1ms = next((count for bound, count in merged if bound == 0.001),
                     0)
    # A host asked for fewer leases than it holds admits them all.
    counts = [(asked, allowed) for host_counts, _ in outcome
              for asked, allowed in host_counts.values()]
    statuses = {}
    for _, pool_statuses in outcome:
        for status, count in pool_statuses.items():
            statuses[status] = statuses.get(status, 0) + count
    if args.capacity_hosts == 'all':
        # A lease may take room anywhere in the cloud: only the total is
        # fixed.
        expected = min(2 * requests_sent, PER_HOST * len(counts))
        per_host = True
    else:
        expected = sum(min(asked, PER_HOST) for asked, _ in counts)
        per_host = all(allowed == min(asked, PER_HOST)
                       for asked, allowed in counts)
    exact = (per_host and statuses.get(204, 0) == expected and
             set(statuses) <= {204, 403})
    result = {
        'processes': 2, 'ledger': 'postgresql', 'filters': policies.FILTERS,
        'hosts_per_pool': args.hosts, 'threads_per_pool': args.threads,
        'capacity_hosts': args.capacity_hosts,
        'admissions': admissions,
        'lock_wait_p99_ms': (None if waits is None else
                             wait_quantile(waits, admissions, 0.99)),
        'lock_waits_logged': None if waits is None else len(waits),
        'lock_wait_max_ms': (None if waits is None else
                             max(waits, default=0.0)),
        'lock_acquire_p50_ms': round(quantile(merged, 0.5), 3),
        'lock_acquire_p99_ms': round(quantile(merged, 0.99), 3),
        'lock_acquired_under_1ms': round(under_1ms / admissions, 4)
        if admissions else None,
        'goal_p99_ms': GOAL_P99_MS,
        'statuses': {str(k): v for k, v in sorted(statuses.items())},
        'seconds': round(elapsed, 2),
        'exact': exact,
    }
    print(json.dumps(result))
    sys.stderr.write(
        '%d admissions in 2 processes, %s pools, %d client(s) a pool: lock '
        'wait p99 %s ms (goal < %.0f ms; %s waits of 1 ms or more, longest '
        '%s ms, by PostgreSQL\'s log); locks taken in p50 %.3f ms, p99 '
        '%.3f ms (%.1f %% under 1 ms); exact: %s\n'
        % (admissions, 'disjoint' if args.capacity_hosts == 'allocations'
           else 'every host in one (capacity_hosts = all)', args.threads,
           result['lock_wait_p99_ms'], GOAL_P99_MS,
           result['lock_waits_logged'], result['lock_wait_max_ms'],
           result['lock_acquire_p50_ms'], result['lock_acquire_p99_ms'],
           100.0 * (result['lock_acquired_under_1ms'] or 0), exact))
    return 0


if __name__ == '__main__':
    sys.exit(main())
