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
"""Benchmark: what the fairness rules add to a check-create.

The environment of ``tools/bench/policies.py`` (a real Placement, the
embedded server on loopback, with ``--hosts`` compute nodes; a real ledger
of ``--leases`` leases over ``--projects`` projects in trees of 10, over a
year; the caches of production, ``capacity_max_age`` and
``nova_quota_max_age`` 5 s), and two chains on it, served side by side by
our HTTP service:

* **without**: the policies bench's seven filters, with its
  configuration (single-currency credits);
* **with**: the same, then the fairness rules -- ExtensionWindowFilter,
  NoStackingFilter (hosts and instances, per user, 1 hour gap),
  RollingCapFilter (host-hours and VCPU-hours per project in any 7 days,
  from the limits file) -- and CreditFilter charging VCPU to a pool of
  its own (``credit_pool_classes = VCPU``; every project holds a pool).

Each chain is served by its own service (its own caches, warmed before
the run) on the one ledger and Placement. The requests go to the two in
alternating blocks (``--block``), so that both see the same ledger and
machine load: back to back.
Each request is a new lease of a random project (half instances, half
hosts), recorded when allowed, as in the policies bench. The goal: the
p99 with the rules within 1.2 x the p99 without. No existing service
enforces these rules (operators run scripts after the fact), so there is
no other baseline.

    python tools/bench/fairness.py [--hosts 1000] [--leases 100000]
        [--requests 400] [--block 20] [--connection URL]

Prints one JSON object on stdout -- ``{"hosts", "leases",
"p99_ms_without", "p99_ms_with", "ratio"}`` and the details -- and a
summary on stderr.
"""

import argparse
import datetime
import json
import os
import random
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from placement_quota.api.enforcement import app as api_app  # noqa: E402
from placement_quota.filters import chain as chain_mod  # noqa: E402
from placement_quota.httpserver import server as wsgi_server  # noqa: E402
from placement_quota.ledger import models  # noqa: E402
from placement_quota.ledger import store  # noqa: E402
from placement_quota.placement import client as placement_client  # noqa
from placement_quota.placement import embedded  # noqa: E402
from placement_quota import services as services_mod  # noqa: E402
from tools.bench import common  # noqa: E402
from tools.bench import policies  # noqa: E402

GOAL_RATIO = 1.2
MAX_AGE = 5
FAIRNESS_FILTERS = ['ExtensionWindowFilter', 'NoStackingFilter',
                    'RollingCapFilter']
#: The fairness rules' options (``[enforcement]``).
FAIRNESS_OPTIONS = {
    'extension_window': 2 * 86400,
    'max_extension': 86400,
    'stacking_resources': ['hosts', 'instances'],
    'stacking_scope': 'user',
    'stacking_gap': 3600,
    'rolling_cap_resources': ['hosts', 'class:VCPU'],
    'rolling_cap_period': 7 * 86400,
    'credit_pool_classes': ['VCPU'],
}
#: Rolling caps of every project (the limits file's registered limits):
#: high enough that most leases are admitted and recorded.
ROLLING_CAPS = {'hours:hosts': 10 ** 7, 'hours:class:VCPU': 10 ** 8}
#: VCPU-hours in every project's pool.
POOL = 10 ** 9


def seed_pools(ledger, projects):
    """A VCPU pool for every project, beside its credits."""
    table = models.credit_allocations
    with ledger.engine.begin() as connection:
        connection.execute(table.insert(), [
            dict(project_id=pid, amount=store.to_micro(POOL),
                 resource_class='VCPU',
                 created_at=datetime.datetime.utcnow())
            for pid in sorted(projects)])


def add_caps(paths):
    """The rolling caps, as registered limits of the tree's limits
    file (a limit of the file's first line)."""
    path = paths['tree.yaml']
    with open(path) as f:
        lines = f.read().splitlines()
    limits = ', '.join('%s: %d' % item for item in sorted(
        ROLLING_CAPS.items()))
    lines[0] = lines[0].rstrip('}') + ', ' + limits + '}'
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')


def alternate(urls, projects, hosts, count, block, rng):
    """``{name: (latencies, statuses)}``: ``count`` check-creates to each
    of ``urls`` (``{name: url}``), ``block`` at a time, in turn."""
    found = {name: ([], {}) for name in urls}
    done = 0
    while done < count:
        size = min(block, count - done)
        for name, url in urls.items():
            timings, statuses = policies.measure_latency(
                url, projects, hosts, size, rng)
            found[name][0].extend(timings)
            for status, n in statuses.items():
                found[name][1][status] = found[name][1].get(status, 0) + n
        done += size
    return found


def judge(without, with_rules):
    """The bench's JSON figures from the two phases' latencies."""
    p99_without = common.percentile(without, 0.99)
    p99_with = common.percentile(with_rules, 0.99)
    ratio = p99_with / p99_without if p99_without else float('inf')
    return {'p99_ms_without': round(p99_without, 2),
            'p99_ms_with': round(p99_with, 2),
            'ratio': round(ratio, 3),
            'goal_ratio': GOAL_RATIO,
            'goal_met': ratio <= GOAL_RATIO}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--leases', type=int, default=100000)
    parser.add_argument('--projects', type=int, default=1000)
    parser.add_argument('--hosts', type=common.positive, default=1000)
    parser.add_argument('--requests', type=common.positive, default=400,
                        help='Check-creates to each chain.')
    parser.add_argument('--block', type=common.positive, default=20,
                        help='Check-creates to one chain before the other '
                             'takes its turn.')
    parser.add_argument('--connection',
                        help='Ledger URL (default: a SQLite file in a '
                             'temporary directory).')
    parser.add_argument('--seed', type=int, default=42)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    directory = tempfile.mkdtemp(prefix='pq-bench-fairness-')
    connection = args.connection or 'sqlite:///%s' % os.path.join(
        directory, 'ledger.sqlite')

    server = embedded.ServerProcess()
    servers = []
    services, chains = {}, {}
    try:
        client = placement_client.PlacementClient.from_endpoint(
            server.url, embedded.NOAUTH_HEADERS)
        began = time.perf_counter()
        hosts = policies.seed_placement(client, args.hosts)
        projects = policies.project_ids(args.projects)
        ledger = store.Ledger(connection, migrate=True)
        policies.seed_ledger(ledger, projects, args.leases, hosts, rng)
        seed_pools(ledger, projects)
        policies.analyze(ledger.engine)
        seeded = time.perf_counter() - began
        ledger.dispose()
        paths = policies.write_files(directory, projects)
        add_caps(paths)
        confs = {'without': policies.configure(directory, server.url,
                                               connection, paths),
                 'with': policies.configure(directory, server.url,
                                            connection, paths)}
        confs['with'].set_override(
            'enabled_filters', policies.FILTERS + FAIRNESS_FILTERS,
            'enforcement')
        for name, value in FAIRNESS_OPTIONS.items():
            confs['with'].set_override(name, value, 'enforcement')
        urls = {}
        for name, conf in confs.items():
            conf.set_override('capacity_max_age', MAX_AGE, 'enforcement')
            conf.set_override('nova_quota_max_age', MAX_AGE, 'enforcement')
            services[name] = services_mod.Services(conf)
            chains[name] = chain_mod.FilterChain(conf,
                                                 services=services[name])
            service = wsgi_server.WSGIServer(
                api_app.make_app(conf, chains[name]), threads=4).start()
            servers.append(service)
            urls[name] = service.url
        wsgi_server.freeze_heap()
        # Warm-up: connections, the limits read, the capacity view's first
        # (whole) read.
        alternate(urls, projects, hosts, 30, 10, random.Random(1))
        for chain in chains.values():
            policies.wait_for_view(chain)
        phases = alternate(urls, projects, hosts, args.requests, args.block,
                           rng)
    finally:
        for service in servers:
            service.stop()
        for chain in chains.values():
            for filter_ in chain.filters:
                if hasattr(filter_, 'capacity_view'):
                    filter_.close()
        for each in services.values():
            each.close()
        server.stop()
    with_rules, without = phases['with'], phases['without']
    result = {'hosts': args.hosts, 'leases': args.leases}
    result.update(judge(without[0], with_rules[0]))
    result.update({
        'ledger': connection.split(':')[0], 'projects': args.projects,
        'requests': args.requests, 'block': args.block,
        'seed_seconds': round(seeded, 1),
        'filters_without': policies.FILTERS,
        'filters_with': policies.FILTERS + FAIRNESS_FILTERS,
        'options': FAIRNESS_OPTIONS,
        'phases': {name: {
            'p50_ms': round(statistics.median(timings), 2),
            'p99_ms': round(common.percentile(timings, 0.99), 2),
            'max_ms': round(max(timings), 2),
            'statuses': {str(k): v for k, v in sorted(statuses.items())}}
            for name, (timings, statuses) in phases.items()},
    })
    print(json.dumps(result))
    sys.stderr.write(
        'check-create, %d leases (%s), %d hosts, caches %d s: p99 %.1f ms '
        'without the fairness rules, %.1f ms with them: %.2f x (goal <= '
        '%.1f x)\n' % (args.leases, result['ledger'], args.hosts, MAX_AGE,
                       result['p99_ms_without'], result['p99_ms_with'],
                       result['ratio'], GOAL_RATIO))
    return 0


if __name__ == '__main__':
    sys.exit(main())
