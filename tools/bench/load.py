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
"""Benchmark: a burst of check-creates against ``serve --workers 2``.

A class or a conference deadline makes many users create leases in the
same minutes. ``--clients`` clients (default 50) send check-creates, the
call Blazar's ExternalServiceFilter makes, for ``--seconds`` seconds
(default 60) to ``placement-quota serve --workers 2`` run as an operator
runs it: a subprocess of its console command, reading a configuration file
with every policy filter of tools/bench/policies.py, on a private
PostgreSQL ledger (tests/fixtures) seeded with ``--leases`` leases and a
real Placement (the embedded server, a subprocess on loopback) seeded with
``--hosts`` compute nodes. Projects and lease shapes are random from
``--seed``; each lease has a name of its own.

The clients are threads of this process, each with one keep-alive
connection (``http.client``) on which it sends its next request as soon
as the last one is answered: no pause, and the request bodies are made
outside the timed part. Everything stops at ``--seconds`` or after
``--max-requests`` requests in all, whichever comes first (a request
still out then is waited for, up to ``--timeout``).

It measures:

- ``throughput_rps``, ``p50_ms``/``p99_ms``/``max_ms`` of the answers;
- ``errors`` (``errors_by_status``): every answer but a 2xx or a 403
  whose JSON carries its ``message``; a connection error or a timeout is
  an error too;
- the resident memory (VmRSS) of each worker process at the start, at
  the half and at the end of the run; ``rss_growth_pct`` is the growth of
  the worst worker over the last half (end against half);
- ``lost``: the leases answered 2xx that are not in the ledger's leases
  table exactly once afterwards (missing or duplicated).

and, to tell where the time went:

- ``cpu_ms_per_request``: the CPU time the service (its workers),
  PostgreSQL, Placement and the clients (this process) used during the
  run, divided by the requests: on 2 cores their sum bounds the
  throughput, and 50 clients wait ``clients / throughput`` seconds a
  request on average, whatever else is done;
- ``lock_waits_logged``, ``lock_wait_s``, ``lock_wait_max_ms``: the
  ledger's lock waits of 1 ms or more, as PostgreSQL logs them
  (``log_lock_waits`` with ``deadlock_timeout = 1ms``, as
  tools/bench/admission_scale.py does).

Goal on a 2-core machine: no error, p99 under 500 ms, RSS growth under
10 % and nothing lost (``goal_met``).

    python tools/bench/load.py [--clients 50] [--seconds 60]
        [--leases 10000] [--hosts 100] [--workers 2] [--seed 42]

``--capacity-max-age`` and ``--nova-quota-max-age`` (default 5 s, as
policies.py's cached phase; 0 reads Placement for every decision) and
``--threads`` (default: the service's ``[api] threads``) set the service.
The service's log is left in the run's temporary directory (its path is
in the summary). Prints one JSON object on stdout and a summary on stderr.
"""

import argparse
import collections
import http.client
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import sqlalchemy as sa  # noqa: E402

from placement_quota.ledger import models  # noqa: E402
from placement_quota.ledger import store  # noqa: E402
from placement_quota.placement import client as placement_client  # noqa
from placement_quota.placement import embedded  # noqa: E402
from tests.fixtures import postgresql  # noqa: E402
from tests.fixtures import process  # noqa: E402
from tools.bench import admission_scale  # noqa: E402
from tools.bench import common  # noqa: E402
from tools.bench import policies  # noqa: E402

GOAL_P99_MS = 500.0
GOAL_RSS_GROWTH_PCT = 10.0
HEADERS = {'Content-Type': 'application/json'}
#: Requests sent, and not counted, before the run: connections, caches,
#: the start of each worker's capacity view.
WARM_UP = 40
#: Seconds after them for the capacity views' first read.
WARM_UP_PAUSE = 5


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--clients', type=common.positive, default=50)
    parser.add_argument('--seconds', type=common.positive, default=60)
    parser.add_argument('--max-requests', type=common.positive,
                        default=1000000,
                        help='Requests in all at the most.')
    parser.add_argument('--leases', type=int, default=10000,
                        help='Leases in the ledger before the run.')
    parser.add_argument('--projects', type=common.positive, default=1000,
                        help='Projects, in trees of ten.')
    parser.add_argument('--hosts', type=common.positive, default=100)
    parser.add_argument('--workers', type=common.positive, default=2)
    parser.add_argument('--threads', type=common.positive, default=None,
                        help="The service's [api] threads (default: its "
                             'default).')
    parser.add_argument('--capacity-max-age', type=int, default=5)
    parser.add_argument('--nova-quota-max-age', type=int, default=5)
    parser.add_argument('--timeout', type=float, default=30.0,
                        help='Seconds a client waits for one answer.')
    parser.add_argument('--seed', type=int, default=42)
    args = parser.parse_args(argv)
    if args.leases < 0:
        parser.error('--leases must not be negative')
    return args


# The pure parts: what an answer is, the figures, the goal.

def is_admitted(status):
    """True when ``status`` (an HTTP status, or the name of the exception
    when there was no answer) allows the lease: a 2xx."""
    return isinstance(status, int) and 200 <= status < 300


def is_error(status, body):
    """True unless ``status`` is a 2xx, or a 403 whose JSON ``body``
    carries a ``message`` (a denial, as Blazar shows it); ``status`` is
    the name of the exception when there was no answer."""
    if is_admitted(status):
        return False
    if status != 403:
        return True
    try:
        message = json.loads(body).get('message')
    except (ValueError, AttributeError):
        return True
    return not (isinstance(message, str) and message)


def latency_figures(latencies_ms):
    """``{p50_ms, p99_ms, max_ms}`` of the answers (None when none)."""
    if not latencies_ms:
        return {'p50_ms': None, 'p99_ms': None, 'max_ms': None}
    return {'p50_ms': round(statistics.median(latencies_ms), 2),
            'p99_ms': round(common.percentile(latencies_ms, 0.99), 2),
            'max_ms': round(max(latencies_ms), 2)}


def vmrss_mb(status_text):
    """The VmRSS line of a /proc/PID/status text, in MB (MiB)."""
    for line in status_text.splitlines():
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024.0
    raise ValueError('no VmRSS line')


def rss_growth_pct(half_mb, end_mb):
    """The worst growth, in %, of a worker from ``half_mb`` to ``end_mb``
    (``{worker: MB}``) -- the last half of the run. A worker missing at
    either time (it died and was started again) is an infinite growth."""
    workers = set(half_mb) | set(end_mb)
    if not workers:
        return None
    growths = []
    for worker in workers:
        if worker not in half_mb or worker not in end_mb:
            return float('inf')
        growths.append(100.0 * (end_mb[worker] - half_mb[worker]) /
                       half_mb[worker])
    return max(growths)


def count_lost(admitted, found):
    """How many names of ``admitted`` (the leases answered 2xx) are not
    in ``found`` (``{name: rows in the ledger}``) exactly once."""
    return sum(1 for name in admitted if found.get(name, 0) != 1)


def goal_met(errors, p99_ms, growth_pct, lost):
    """Every goal of a run: no error, p99 under 500 ms, RSS growth under
    10 % and no lease lost."""
    return (errors == 0 and p99_ms is not None and p99_ms < GOAL_P99_MS and
            growth_pct is not None and growth_pct < GOAL_RSS_GROWTH_PCT and
            lost == 0)


# The run.

class Budget:
    """At most ``count`` requests in all, none after ``deadline``."""

    def __init__(self, count, deadline):
        self.left = count
        self.deadline = deadline
        self._lock = threading.Lock()

    def take(self):
        if time.monotonic() >= self.deadline:
            return False
        with self._lock:
            if self.left <= 0:
                return False
            self.left -= 1
            return True


class Client:
    """One client: one keep-alive connection, one request at a time;
    ``results`` holds ``(ms, status, error, lease name)`` of each."""

    def __init__(self, url, timeout):
        parsed = urllib.parse.urlsplit(url)
        self.host, self.port = parsed.hostname, parsed.port
        self.timeout = timeout
        self.connection = None
        self.results = []

    def send(self, payload, name):
        if self.connection is None:
            self.connection = http.client.HTTPConnection(
                self.host, self.port, timeout=self.timeout)
        began = time.perf_counter()
        try:
            self.connection.request('POST', '/v1/check-create', payload,
                                    HEADERS)
            response = self.connection.getresponse()
            body = response.read()
            status = response.status
            if response.will_close:
                self.close()
        except (OSError, http.client.HTTPException) as exc:
            status, body = type(exc).__name__, b''
            self.close()
        ms = (time.perf_counter() - began) * 1000
        self.results.append((ms, status, is_error(status, body), name))

    def close(self):
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def run_clients(url, args, names, hosts, prefix):
    """``[Client]`` after ``args.clients`` clients sent check-creates for
    ``args.seconds`` seconds (or ``args.max_requests`` in all); ``half``
    is called once, halfway."""
    clients = [Client(url, args.timeout) for _ in range(args.clients)]

    def work(index):
        rng = random.Random(args.seed * 1000003 + index)
        client = clients[index]
        n = 0
        while budget.take():
            name = '%s-%d-%d' % (prefix, index, n)
            payload = json.dumps(policies.check_create_body(
                rng, names, hosts, n, name=name))
            client.send(payload, name)
            n += 1
        client.close()

    budget = Budget(args.max_requests,
                    time.monotonic() + args.seconds)
    threads = [threading.Thread(target=work, args=(i,), daemon=True)
               for i in range(args.clients)]
    for thread in threads:
        thread.start()
    return clients, threads


def cpu_seconds(pids):
    """The CPU time (user and system, seconds) ``pids`` have used, those
    still alive."""
    total = 0
    for pid in pids:
        try:
            with open('/proc/%d/stat' % pid) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf('SC_CLK_TCK')


def used_cpu(processes):
    """``{name: CPU seconds}`` of each group of ``processes`` (``{name:
    [pid]}``, each pid with its children) and of this one
    (``clients``)."""
    used = {name: cpu_seconds(pids + [child for pid in pids
                                      for child in process.children(pid)])
            for name, pids in processes.items()}
    used['clients'] = time.process_time()
    return used


def sample_rss(pids):
    """``{pid: VmRSS MB}`` of ``pids`` (those still alive)."""
    sizes = {}
    for pid in pids:
        try:
            with open('/proc/%d/status' % pid) as f:
                sizes[pid] = vmrss_mb(f.read())
        except (OSError, ValueError):
            pass
    return sizes


def write_config(directory, url, endpoint, projects, args):
    """The service's configuration file: policies.py's options, on
    ``args``' caches, ``args.workers`` workers and a log file."""
    settings = dict(policies.options(policies.write_files(directory,
                                                          projects)))
    settings.update({
        ('DEFAULT', 'log_file'): os.path.join(directory, 'serve.log'),
        ('database', 'connection'): url,
        ('placement', 'auth_type'): 'admin_token',
        ('placement', 'endpoint'): endpoint,
        ('placement', 'token'): 'admin',
        ('api', 'workers'): args.workers,
        ('enforcement', 'capacity_max_age'): args.capacity_max_age,
        ('enforcement', 'nova_quota_max_age'): args.nova_quota_max_age,
    })
    if args.threads:
        settings[('api', 'threads')] = args.threads
    path = os.path.join(directory, 'placement-quota.conf')
    with open(path, 'w') as f:
        f.write(ini_text(settings))
    return path


def ini_text(settings):
    """``{(group, name): value}`` as an oslo.config file: lists joined
    with commas, dicts as ``key:value`` pairs."""
    groups = collections.defaultdict(list)
    for (group, name), value in settings.items():
        if isinstance(value, dict):
            value = ','.join('%s:%s' % item for item in value.items())
        elif isinstance(value, (list, tuple)):
            value = ','.join(str(item) for item in value)
        groups[group].append('%s = %s' % (name, value))
    return ''.join('[%s]\n%s\n' % (group, '\n'.join(lines))
                   for group, lines in groups.items())


def ledger_counts(url, prefix):
    """``{lease name: rows}`` of the leases named ``prefix-...``."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                sa.select(models.leases.c.name, sa.func.count())
                .where(models.leases.c.name.like(prefix + '-%'))
                .group_by(models.leases.c.name)).all()
    finally:
        engine.dispose()
    return dict(rows)


def warm_up(url, names, hosts, prefix, timeout):
    """:data:`WARM_UP` check-creates, not counted, one at a time, each on
    a connection of its own (the kernel spreads them over the workers),
    then :data:`WARM_UP_PAUSE` seconds for each worker's first whole read
    of the capacity view, in the background."""
    client = Client(url, timeout)
    rng = random.Random(0)
    for n in range(WARM_UP):
        name = '%s-warm-%d' % (prefix, n)
        client.send(json.dumps(policies.check_create_body(
            rng, names, hosts, n, name=name)), name)
        client.close()
    time.sleep(WARM_UP_PAUSE)


def measure(args):
    directory = tempfile.mkdtemp(prefix='pq-bench-load-')
    database = placement = service = None
    try:
        database = postgresql.PostgreSQLServer()
        database.start()
        database.create_database('load')
        url = database.url('load')
        log_offset = admission_scale.log_lock_waits(database)
        placement = embedded.ServerProcess()
        client = placement_client.PlacementClient.from_endpoint(
            placement.url, embedded.NOAUTH_HEADERS)
        rng = random.Random(args.seed)
        hosts = policies.seed_placement(client, args.hosts)
        projects = policies.project_ids(args.projects)
        ledger = store.Ledger(url, migrate=True)
        policies.seed_ledger(ledger, projects, args.leases, hosts, rng)
        ledger.dispose()
        config = write_config(directory, url, placement.url, projects, args)
        service, service_url = admission_scale.start_service(config)
        names = sorted(projects)
        prefix = 'load-%s' % uuid.uuid4().hex[:8]
        warm_up(service_url, names, hosts, prefix, args.timeout)
        pids = sorted(process.children(service.pid))
        rss = {'start': sample_rss(pids)}
        processes = {'service': [service.pid],
                     'postgresql': [database.process.pid],
                     'placement': [placement.process.pid]}
        cpu = used_cpu(processes)
        began = time.monotonic()
        clients, threads = run_clients(service_url, args, names, hosts,
                                       prefix)
        time.sleep(max(0.0, began + args.seconds / 2.0 - time.monotonic()))
        rss['half'] = sample_rss(pids)
        for thread in threads:
            thread.join(args.seconds + args.timeout + 60)
        elapsed = time.monotonic() - began
        rss['end'] = sample_rss(pids)
        cpu = {name: seconds - cpu[name]
               for name, seconds in used_cpu(processes).items()}
        restarted = sorted(process.children(service.pid)) != pids
        waits = admission_scale.logged_waits(database.log_file, log_offset)
        admission_scale.stop(service)
        service = None
        results = [result for client_ in clients
                   for result in client_.results]
        admitted = [name for _, status, _, name in results
                    if is_admitted(status)]
        lost = count_lost(admitted, ledger_counts(url, prefix))
    finally:
        if service is not None:
            admission_scale.stop(service)
        if placement is not None:
            placement.stop()
        if database is not None:
            database.stop()
    return report(args, results, elapsed, pids, rss, lost, restarted,
                  cpu, waits, directory)


def report(args, results, elapsed, pids, rss, lost, restarted, cpu, waits,
           directory):
    statuses = collections.Counter(str(status) for _, status, _, _ in results)
    errors = collections.Counter(str(status)
                                 for _, status, error, _ in results if error)
    growth = rss_growth_pct(rss['half'], rss['end'])
    figures = latency_figures([ms for ms, _, _, _ in results])
    result = dict(
        clients=args.clients, seconds=args.seconds, requests=len(results),
        elapsed_s=round(elapsed, 1),
        throughput_rps=round(len(results) / elapsed, 1) if elapsed else None,
        errors=sum(errors.values()),
        errors_by_status=dict(sorted(errors.items())),
        statuses=dict(sorted(statuses.items())),
        admitted=sum(1 for _, status, _, _ in results
                     if is_admitted(status)),
        **figures,
        rss_start_mb=round(max(rss['start'].values(), default=0), 1),
        rss_end_mb=round(max(rss['end'].values(), default=0), 1),
        rss_mb_by_worker=[{when: round(rss[when].get(pid, 0), 1)
                           for when in ('start', 'half', 'end')}
                          for pid in pids],
        rss_growth_pct=None if growth is None else round(growth, 2),
        workers=args.workers, worker_restarted=restarted,
        cpu_ms_per_request={
            name: round(1000 * seconds / len(results), 2) if results
            else None for name, seconds in sorted(cpu.items())},
        lock_waits_logged=len(waits),
        lock_wait_s=round(sum(waits) / 1000, 2),
        lock_wait_max_ms=max(waits, default=0.0),
        lost=lost, leases=args.leases, hosts=args.hosts,
        projects=args.projects, ledger='postgresql',
        capacity_max_age=args.capacity_max_age,
        nova_quota_max_age=args.nova_quota_max_age,
        filters=policies.FILTERS, seed=args.seed,
        goal_p99_ms=GOAL_P99_MS, goal_rss_growth_pct=GOAL_RSS_GROWTH_PCT)
    result['goal_met'] = goal_met(result['errors'], result['p99_ms'],
                                  growth, lost) and not restarted
    print(json.dumps(result))
    sys.stderr.write(
        '%d clients for %d s against serve --workers %d (%d filters, '
        'PostgreSQL ledger of %d leases, %d hosts): %d requests, %.1f a '
        'second; p50 %s ms, p99 %s ms (goal < %.0f), max %s ms; errors %d '
        '%s; RSS of the worst worker %.1f -> %.1f MB, %s %% over the last '
        'half (goal < %.0f); lost %d; goal met: %s\n  service log: %s\n'
        % (args.clients, args.seconds, args.workers, len(policies.FILTERS),
           args.leases, args.hosts, result['requests'],
           result['throughput_rps'] or 0, result['p50_ms'],
           result['p99_ms'], GOAL_P99_MS, result['max_ms'],
           result['errors'], result['errors_by_status'] or '',
           result['rss_start_mb'], result['rss_end_mb'],
           result['rss_growth_pct'], GOAL_RSS_GROWTH_PCT, lost,
           result['goal_met'], os.path.join(directory, 'serve.log')))
    return result


def main(argv=None):
    measure(parse_args(argv))
    return 0


if __name__ == '__main__':
    sys.exit(main())
