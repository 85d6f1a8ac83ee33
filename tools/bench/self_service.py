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
"""Benchmark: a project's own view and a quote, beside a check-create.

Against a real Placement (the embedded server, a subprocess on loopback,
``--hosts`` compute nodes) and a real ledger of ``--leases`` leases
(default 100000, over ``--projects`` projects in trees of 10, over a
year), with every policy filter enabled and the caches of production
(``capacity_max_age`` and ``nova_quota_max_age`` 5 s), through our HTTP
service (the project API of ``placement-quota serve``, noauth):

1. ``GET /v1/projects/{id}/limits`` of random projects: p50 and p99
   (goal: p99 < 50 ms at 1,000 hosts and 100,000 leases);
2. ``POST /v1/projects/{id}/quote`` of random leases of random projects,
   then ``POST /v1/check-create`` of others (each on projects the other
   did not warm): the quote's p99 within 1.2 x the check-create's;
3. ``side_effects``: ledger rows (entries, charges) and Placement
   provider generations changed by the run of quotes (must be 0);
4. agreement: a quote, then the create of the same lease, 100 times:
   how often the create answered as the quote said.

No existing service answers these questions for a project member (an
operator answers them by hand), so there is no baseline beyond the
check-create itself.

    python tools/bench/self_service.py [--hosts 1000] [--leases 100000]
        [--requests 400] [--connection URL]

Prints one JSON object on stdout -- ``{"hosts", "leases", "view_p50_ms",
"view_p99_ms", "quote_p99_ms", "check_create_p99_ms", "side_effects"}``
and the details -- and a summary on stderr.
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

import requests
import sqlalchemy as sa

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

GOAL_VIEW_P99_MS = 50.0
GOAL_QUOTE_RATIO = 1.2
MAX_AGE = 5


def lease_body(rng, hosts, index):
    """A random lease of the policies bench's shapes, in Blazar's create
    body (a year of 2030)."""
    start = policies.START + datetime.timedelta(
        hours=rng.randrange(0, 24 * 365))
    end = start + datetime.timedelta(hours=rng.randint(1, 72))
    reservation = (policies.instance_reservation(rng, hosts) if index % 2
                   else policies.host_reservation(rng, hosts))
    return {'name': 'bench-%d' % index, 'start_date': start.isoformat(),
            'end_date': end.isoformat(), 'reservations': [reservation],
            'events': []}


def headers(project_id):
    """What keystonemiddleware would set for a reader of the project
    (the service runs with noauth here)."""
    return {'X-Project-Id': project_id, 'X-User-Id': 'u',
            'X-Roles': 'reader,member', 'Content-Type': 'application/json'}


def timed(session, method, url, **kwargs):
    began = time.perf_counter()
    response = session.request(method, url, timeout=60, **kwargs)
    elapsed = (time.perf_counter() - began) * 1000
    if response.status_code >= 300 and response.status_code != 403:
        raise RuntimeError('%s %s answered %d: %s' % (
            method, url, response.status_code, response.text[:500]))
    return elapsed, response


def measure_views(url, names, count, rng):
    session = requests.Session()
    return [timed(session, 'GET', '%s/v1/projects/%s/limits' % (url, pid),
                  headers=headers(pid))[0]
            for pid in (rng.choice(names) for _ in range(count))]


def measure_quotes(url, names, hosts, count, rng):
    """Latencies (ms) of quotes of random leases of random projects."""
    session = requests.Session()
    timings = []
    for index in range(count):
        pid = rng.choice(names)
        timings.append(timed(
            session, 'POST', '%s/v1/projects/%s/quote' % (url, pid),
            headers=headers(pid),
            data=json.dumps(lease_body(rng, hosts, index)))[0])
    return timings


def create_body(pid, body):
    return json.dumps({'context': {'project_id': pid, 'user_id': 'u'},
                       'lease': body})


def measure_creates(url, names, hosts, count, rng):
    """Latencies (ms) of check-creates of random leases of random
    projects (recorded when allowed, as the service does)."""
    session = requests.Session()
    timings = []
    for index in range(count):
        pid = rng.choice(names)
        timings.append(timed(
            session, 'POST', url + '/v1/check-create',
            headers={'Content-Type': 'application/json'},
            data=create_body(pid, lease_body(rng, hosts, index)))[0])
    return timings


def agreements(url, names, hosts, count, rng):
    """How many of ``count`` quotes the create of the same lease, right
    after, answered alike (allowed or denied)."""
    session = requests.Session()
    agree = 0
    for index in range(count):
        pid = rng.choice(names)
        body = lease_body(rng, hosts, index)
        _, answer = timed(session, 'POST', '%s/v1/projects/%s/quote'
                          % (url, pid), headers=headers(pid),
                          data=json.dumps(body))
        _, created = timed(session, 'POST', url + '/v1/check-create',
                           headers={'Content-Type': 'application/json'},
                           data=create_body(pid, body))
        agree += answer.json()['allowed'] == (created.status_code == 204)
    return agree


def state(ledger, client):
    """Ledger rows (entries, charges) and provider generations."""
    with ledger.reader() as txn:
        rows = {t.name: txn.connection.execute(
            sa.select(sa.func.count()).select_from(t)).scalar()
            for t in (models.leases, models.charges)}
    generations = {p['uuid']: p['generation'] for p in client.get(
        '/resource_providers')['resource_providers']}
    return rows, generations


def changed(before, after):
    """How many row counts and generations differ."""
    rows = sum(before[0][t] != after[0][t] for t in before[0])
    generations = sum(before[1].get(u) != g for u, g in after[1].items())
    return rows + generations


def measure_side_effects(url, ledger, client, names, hosts, count, rng):
    """``(changes, quote latencies)``: ledger rows and provider
    generations changed by ``count`` quotes alone, and their timings."""
    before = state(ledger, client)
    timings = measure_quotes(url, names, hosts, count, rng)
    return changed(before, state(ledger, client)), timings


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--leases', type=int, default=100000)
    parser.add_argument('--projects', type=int, default=1000)
    parser.add_argument('--hosts', type=int, default=1000)
    parser.add_argument('--requests', type=common.positive, default=400)
    parser.add_argument('--connection',
                        help='Ledger URL (default: a SQLite file in a '
                             'temporary directory).')
    parser.add_argument('--seed', type=int, default=42)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    directory = tempfile.mkdtemp(prefix='pq-bench-self-service-')
    connection = args.connection or 'sqlite:///%s' % os.path.join(
        directory, 'ledger.sqlite')
    server = embedded.ServerProcess()
    try:
        client = placement_client.PlacementClient.from_endpoint(
            server.url, embedded.NOAUTH_HEADERS)
        hosts = policies.seed_placement(client, args.hosts)
        projects = policies.project_ids(args.projects)
        names = sorted(projects)
        ledger = store.Ledger(connection, migrate=True)
        began = time.perf_counter()
        policies.seed_ledger(ledger, projects, args.leases, hosts, rng)
        seeded = time.perf_counter() - began
        conf = policies.configure(directory, server.url, connection,
                                  policies.write_files(directory, projects))
        conf.set_override('capacity_max_age', MAX_AGE, 'enforcement')
        conf.set_override('nova_quota_max_age', MAX_AGE, 'enforcement')
        services = services_mod.Services(conf)
        chain = chain_mod.FilterChain(conf, services=services)
        app = api_app.make_app(conf, chain)
        wsgi_server.freeze_heap()
        service = wsgi_server.WSGIServer(app, threads=4).start()
        try:
            # Warm-up: connections, caches, the capacity view's first read.
            agreements(service.url, names, hosts, 20, random.Random(1))
            policies.wait_for_view(chain)
            measure_views(service.url, names, 20, random.Random(2))
            views = measure_views(service.url, names, args.requests, rng)
            # Quotes alone (nothing changes: their side effects are
            # counted), then check-creates alone, of other random leases
            # of random projects: neither warms the other's project.
            side_effects, quotes = measure_side_effects(
                service.url, ledger, client, names, hosts, args.requests,
                rng)
            creates = measure_creates(service.url, names, hosts,
                                      args.requests, rng)
            agree = agreements(service.url, names, hosts,
                               min(args.requests, 100), rng)
        finally:
            service.stop()
            for filter_ in chain.filters:
                if hasattr(filter_, 'close'):
                    filter_.close()
            services.close()
            ledger.dispose()
    finally:
        server.stop()
    quote_p99 = common.percentile(quotes, 0.99)
    create_p99 = common.percentile(creates, 0.99)
    view_p99 = common.percentile(views, 0.99)
    result = {
        'hosts': args.hosts, 'leases': args.leases,
        'view_p50_ms': round(statistics.median(views), 2),
        'view_p99_ms': round(view_p99, 2),
        'quote_p99_ms': round(quote_p99, 2),
        'check_create_p99_ms': round(create_p99, 2),
        'side_effects': side_effects,
        'quote_p50_ms': round(statistics.median(quotes), 2),
        'check_create_p50_ms': round(statistics.median(creates), 2),
        'quote_to_check_create_p99': round(quote_p99 / create_p99, 2),
        'quotes_agreeing_with_the_create': '%d/%d' % (
            agree, min(args.requests, 100)),
        'ledger': connection.split(':')[0], 'projects': args.projects,
        'requests': args.requests, 'seed_seconds': round(seeded, 1),
        'goal_view_p99_ms': GOAL_VIEW_P99_MS,
        'goal_quote_ratio': GOAL_QUOTE_RATIO,
        'goals_met': (view_p99 < GOAL_VIEW_P99_MS and
                      quote_p99 <= GOAL_QUOTE_RATIO * create_p99 and
                      side_effects == 0),
    }
    print(json.dumps(result))
    sys.stderr.write(
        'self-service, %d hosts, %d leases (%s): view p50 %.1f ms, p99 '
        '%.1f ms (goal < %.0f); quote p99 %.1f ms vs check-create p99 '
        '%.1f ms (%.2fx, goal <= %.1fx); %s quotes agreed with the create; '
        'side effects %d (goal 0)\n'
        % (args.hosts, args.leases, result['ledger'],
           result['view_p50_ms'], view_p99, GOAL_VIEW_P99_MS, quote_p99,
           create_p99, result['quote_to_check_create_p99'],
           GOAL_QUOTE_RATIO, result['quotes_agreeing_with_the_create'],
           side_effects))
    return 0


if __name__ == '__main__':
    sys.exit(main())
