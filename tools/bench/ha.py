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
"""Benchmark: admissions on one MariaDB vs a three-node Galera cluster.

Two ``placement-quota serve`` processes (LeaseCountFilter and CreditFilter:
every admission locks its project, counts its leases and charges its
credits) share one ledger, in three topologies, all real servers on this
machine (the tests' fixtures):

- ``mariadb``: one MariaDB on a unix socket (tests/fixtures/mariadb.py),
  the anchor;
- ``galera-single-writer``: the Galera cluster (tests/fixtures/galera.py)
  through HAProxy, node 1 the one writer (tests/fixtures/haproxy.py);
- ``galera-multi-writer``: one service through node 1, the other through
  node 2 (their conflicts show at COMMIT and are run again).

In each, ``--threads`` clients send ``--requests`` check-creates of one
project whose lease count is ``--limit`` (its credits pay for more), in
``--rounds`` rounds (a new project each, the same two service processes;
on 2 shared cores one round's rate swings by a factor of several).
``admissions_per_s`` is the leases admitted over the time from the first
request to the last 204; ``p50_ms`` and ``p99_ms`` are the latencies of
every check-create (204 and 403); each is the median of the rounds.
``exact`` is true when in every round exactly the limit was admitted, no
answer was a 500 or no answer, and the ledger holds exactly the leases
answered 204.

Then the failover: the single-writer topology again, six threads sending
check-creates (a 50 ms pause each between two), node 1 killed with
SIGKILL once a third of the limit is admitted; it runs until the limit
is reached. ``gap_s`` is the time from the kill to the first 204 of a
request sent after it, ``answered_2xx`` the 204s, ``lost`` the 204s whose
lease is not in the ledger, ``exact`` as above. Node 1 rejoins at the
end.

    python tools/bench/ha.py [--limit 100] [--requests 130] [--threads 8]
        [--rounds 3]

prints one JSON object on stdout (``topologies``: one object each with
``name``, ``admissions_per_s``, ``p50_ms``, ``p99_ms``, ``admitted``,
``limit``, ``exact``; ``failover``: ``gap_s``, ``answered_2xx``, ``lost``,
``exact``) and the figures side by side with the anchor's on stderr.
Bounded: a fixed number of requests, and a watchdog (``--timeout``).
"""

import argparse
import faulthandler
import json
import os
import statistics
import sys
import time
import uuid
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from placement_quota.ledger import store  # noqa: E402
from tests.fixtures import galera  # noqa: E402
from tests.fixtures import haproxy  # noqa: E402
from tests.fixtures import ledger_services  # noqa: E402
from tests.fixtures import mariadb  # noqa: E402
from tools.bench import common  # noqa: E402

WATCHDOG = 600
FILTERS = ['LeaseCountFilter', 'CreditFilter']
#: Each lease: 24 host-hours at 0.5 credits an hour = 12 credits.
OPTIONS = 'max_leases_per_project = %d\ncredit_host_rate = 0.5\n'
LEASE_CREDITS = 12
#: The failover's limit (at least), and its threads and pause.
FAILOVER_LIMIT = 40
FAILOVER_THREADS = 6
FAILOVER_PAUSE = 0.05


class BenchError(Exception):
    pass


def _project(services, limit):
    """A :class:`~tests.fixtures.ledger_services.Client` of a new project
    whose credits pay for twice ``limit`` leases."""
    client = ledger_services.Client('bench-%s' % uuid.uuid4().hex[:8])
    with services.ledger.transaction([client.project]) as txn:
        txn.add_allocation(client.project,
                           store.to_micro(2 * limit * LEASE_CREDITS))
    return client


def _exact(services, client, answers, limit):
    names = sorted(row.name for row in ledger_services.live_entries(
        services.ledger, client.project))
    statuses = ledger_services.statuses(answers)
    return (statuses.get(204, 0) == limit and
            set(statuses) <= {204, 403, 503} and
            names == ledger_services.admitted_names(answers))


def run_topology(name, database, urls, limit, requests_sent, threads,
                 rounds):
    """One topology's figures (each the median of ``rounds`` rounds, a
    new project each, on the same two service processes), and its
    ``{status: count}`` summed over the rounds."""
    services = ledger_services.Services(database, urls, FILTERS,
                                        OPTIONS % limit)
    services.setUp()
    try:
        runs, statuses = [], {}
        for _ in range(rounds):
            client = _project(services, limit)
            began = time.monotonic()
            answers = ledger_services.burst(client, services.services,
                                            requests_sent, threads=threads)
            admitted = [a for a in answers if a.status == 204]
            span = (max(a.finished for a in admitted) - began
                    if admitted else None)
            latencies = [a.seconds * 1000 for a in answers]
            runs.append({
                'admissions_per_s': len(admitted) / span if span else 0.0,
                'p50_ms': common.percentile(latencies, 0.50),
                'p99_ms': common.percentile(latencies, 0.99),
                'admitted': len(admitted),
                'exact': _exact(services, client, answers, limit)})
            for status, count in ledger_services.statuses(answers).items():
                statuses[status] = statuses.get(status, 0) + count
    finally:
        services.cleanUp()

    def median(key):
        return round(statistics.median(r[key] for r in runs), 1)
    return {
        'name': name,
        'admissions_per_s': median('admissions_per_s'),
        'p50_ms': median('p50_ms'),
        'p99_ms': median('p99_ms'),
        # Each round's (the fewest, should they differ).
        'admitted': min(r['admitted'] for r in runs),
        'limit': limit,
        'exact': all(r['exact'] for r in runs),
    }, statuses


def run_failover(cluster, database, limit):
    """The failover's figures, its ``{status: count}`` and its slowest
    request's seconds; node 1 is back in the cluster after."""
    services = ledger_services.Services(database, [database.url] * 2,
                                        FILTERS, OPTIONS % limit)
    services.setUp()
    try:
        client = _project(services, limit)
        answers, killed_at = ledger_services.failover_burst(
            client, services.services, cluster.nodes[0].kill, limit,
            max(1, limit // 3), threads=FAILOVER_THREADS,
            pause=FAILOVER_PAUSE)
        if killed_at is None:
            raise BenchError('the limit was never a third reached: %s'
                             % ledger_services.statuses(answers))
        gap = ledger_services.failover_gap(answers, killed_at)
        in_ledger = set(row.name for row in ledger_services.live_entries(
            services.ledger, client.project))
        answered = ledger_services.admitted_names(answers)
        return {
            'gap_s': None if gap is None else round(gap, 2),
            'answered_2xx': len(answered),
            'lost': len([n for n in answered if n not in in_ledger]),
            'exact': _exact(services, client, answers, limit),
        }, ledger_services.statuses(answers), max(a.seconds for a in answers)
    finally:
        services.cleanUp()
        cluster.restore()
        database.haproxy.wait_for_active('node1', timeout=30)


def summary(result, statuses, slowest):
    """The figures side by side with the anchor's (one MariaDB);
    ``statuses``: each run's ``{status: count}``, by name."""
    topologies = result['topologies']
    anchor = topologies[0]
    lines = ['%-22s %10s %8s %8s %9s %6s' % (
        'topology', 'adm/s', 'p50 ms', 'p99 ms', 'admitted', 'exact')]
    for t in topologies:
        ratio = (' (%.2fx %s)' % (t['admissions_per_s'] /
                                  anchor['admissions_per_s'], anchor['name'])
                 if anchor['admissions_per_s'] and t is not anchor else '')
        lines.append('%-22s %10.1f %8.1f %8.1f %5d/%-3d %6s%s %s' % (
            t['name'], t['admissions_per_s'], t['p50_ms'], t['p99_ms'],
            t['admitted'], t['limit'], t['exact'], ratio,
            statuses[t['name']]))
    f = result['failover']
    lines.append('failover: first 204 through the new writer %s s after '
                 'the kill; %d answered 204, %d lost, exact %s; %s; '
                 'slowest request %.2f s'
                 % (f['gap_s'], f['answered_2xx'], f['lost'], f['exact'],
                    statuses['failover'], slowest))
    return '\n'.join(lines)


def main(argv=None, watchdog=False):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--limit', type=common.positive, default=100,
                        help='the project\'s lease count in each topology '
                        '(default: 100)')
    parser.add_argument('--requests', type=common.positive, default=None,
                        help='check-creates per topology (default: the '
                        'limit and 30%% more)')
    parser.add_argument('--threads', type=common.positive, default=8,
                        help='clients at once (default: 8)')
    parser.add_argument('--rounds', type=common.positive, default=3,
                        help='bursts per topology, a new project each; the '
                        'figures are their medians (default: 3)')
    parser.add_argument('--failover-limit', type=common.positive,
                        default=FAILOVER_LIMIT,
                        help='the lease count of the failover run '
                        '(default: %d)' % FAILOVER_LIMIT)
    parser.add_argument('--timeout', type=common.positive, default=WATCHDOG,
                        help='seconds after which the command gives up, '
                        'printing where it was (default: %d)' % WATCHDOG)
    args = parser.parse_args(argv)
    requests_sent = args.requests or args.limit + (3 * args.limit + 9) // 10
    for reason in (mariadb.unavailable_reason(), galera.unavailable_reason(),
                   haproxy.unavailable_reason()):
        if reason:
            print('ha: %s' % reason, file=sys.stderr)
            return 1
    if watchdog:
        faulthandler.dump_traceback_later(args.timeout, exit=True)
    warnings.simplefilter('ignore')
    started = time.monotonic()
    fixtures = []
    try:
        single = mariadb.MariaDBDatabase()
        single.setUp()
        fixtures.append(single)
        cluster = galera.get_cluster()
        print('Galera cluster up in %.1f s' % (cluster.startup_seconds or 0),
              file=sys.stderr, flush=True)
        clustered = galera.GaleraDatabase(haproxy=True)
        clustered.setUp()
        fixtures.append(clustered)
        runs = [('mariadb', single, [single.url] * 2),
                ('galera-single-writer', clustered, [clustered.url] * 2),
                ('galera-multi-writer', clustered, clustered.urls[:2])]
        topologies, statuses = [], {}
        for name, database, urls in runs:
            figures, statuses[name] = run_topology(
                name, database, urls, args.limit, requests_sent,
                args.threads, args.rounds)
            topologies.append(figures)
        failover, statuses['failover'], slowest = run_failover(
            cluster, clustered, args.failover_limit)
        result = {'topologies': topologies, 'failover': failover}
        print(json.dumps(result), flush=True)
        print(summary(result, statuses, slowest), file=sys.stderr,
              flush=True)
    except (BenchError, RuntimeError) as exc:
        print('ha: %s' % exc, file=sys.stderr)
        return 1
    finally:
        for fixture in reversed(fixtures):
            fixture.cleanUp()
        if watchdog:
            faulthandler.cancel_dump_traceback_later()
    print('total %.1f s' % (time.monotonic() - started), file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main(watchdog=True))
