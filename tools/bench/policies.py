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
"""Benchmark: check-create with every policy filter on a large ledger.

Two measurements, against a real Placement (the embedded server, a
subprocess on loopback) and a real ledger database:

1. **check-create latency** through our HTTP service with the whole chain
   enabled (MaximumReservationLength, ReservationSize, LeaseCount, NovaQuota,
   PlacementCapacity, Credit, ProjectTreeLimit) on a ledger of ``--leases``
   leases (default 100000) spread over ``--projects`` projects in trees of 10
   and over a year. Each request is a new lease of a random project, half
   instance and half host reservations; it is recorded when allowed, so the
   ledger grows as the run goes. No existing service has these policies, so
   there is no baseline; the goals at 100000 leases and 1000 hosts are p99
   under 20 ms with the caches (``--capacity-max-age`` at most 5 s) and
   under 40 ms with Placement read live.
2. **Placement /usages reads to find how many instances fit a quota**:
   ours reads the project's usage once and divides
   (``nova_quota.instances_that_fit``); Nova's unified limits
   (``nova/limit/placement.py``, ``enforce_num_instances_and_resources``)
   retries the enforcement with max_count, max_count - 1, ... each round
   reading the usage again. Its loop is reproduced here on the same
   Placement, one ``/usages`` read per round, as its code does.

    python tools/bench/policies.py [--leases 100000] [--requests 400]
        [--hosts 20] [--capacity-max-age 5] [--nova-quota-max-age 5]
        [--ledger sqlite|postgresql|mariadb | --connection URL]

Check-create runs twice: with ``[enforcement] capacity_max_age = 0`` and
``nova_quota_max_age = 0`` (Placement read live for every decision) and
with ``--capacity-max-age`` (the local capacity view, at most that old)
and ``--nova-quota-max-age`` (each project's quota and usage reused that
long: the leases all start in the future). ``--hosts 1000`` makes the
cloud large enough for ``GET /allocation_candidates`` to show its cost.

``--ledger postgresql`` or ``mariadb`` starts a private server of that
kind for the run (tests/fixtures); ``--connection`` uses a database of
yours. Each phase also prints where its milliseconds went
(``split_ms``: Placement, ledger reads, locks, writes, commit; see
tools/bench/split.py).

prints one JSON object on stdout and a summary on stderr.
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
import uuid

import sqlalchemy as sa

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


from placement_quota.api.enforcement import app as api_app  # noqa: E402
from placement_quota import conf as pq_conf  # noqa: E402
from placement_quota import filters  # noqa: E402
from placement_quota.filters import chain as chain_mod  # noqa: E402
from placement_quota.filters import nova_quota  # noqa: E402
from placement_quota.ledger.db import locks  # noqa: E402
from placement_quota.ledger import models  # noqa: E402
from placement_quota.ledger import store  # noqa: E402
from placement_quota.placement import client as placement_client  # noqa
from placement_quota.placement import embedded  # noqa: E402
from placement_quota import services as services_mod  # noqa: E402
from placement_quota.placement import usage as placement_usage  # noqa
from placement_quota.httpserver import server as wsgi_server  # noqa: E402
from tests.fixtures import mariadb  # noqa: E402
from tests.fixtures import postgresql  # noqa: E402
from tools.bench import common  # noqa: E402
from tools.bench import split as split_mod  # noqa: E402

# p99 goals at 1,000 hosts and 100,000 leases, on every ledger: with the
# caches (capacity_max_age at most 5 s), and live.
GOAL_P99_MS = 15.0
GOAL_LIVE_P99_MS = 30.0
LEDGERS = ('sqlite', 'postgresql', 'mariadb')
FILTERS = ['MaximumReservationLengthFilter', 'ReservationSizeFilter',
           'LeaseCountFilter', 'NovaQuotaFilter', 'PlacementCapacityFilter',
           'CreditFilter', 'ProjectTreeLimitFilter']
START = datetime.datetime(2030, 1, 1)


def project_ids(count):
    """Trees of one root and nine children."""
    projects = {}
    for i in range(count):
        root = 'root-%d' % (i // 10)
        pid = root if i % 10 == 0 else 'child-%d' % i
        projects[pid] = None if pid == root else root
    return projects


def seed_placement(client, hosts):
    names = []
    for i in range(hosts):
        name = 'bench-cn-%d-%s' % (i, uuid.uuid4().hex[:6])
        rp = client.post('/resource_providers', json={'name': name}).json()
        client.put('/resource_providers/%s/inventories' % rp['uuid'], json={
            'resource_provider_generation': rp['generation'],
            'inventories': {'VCPU': {'total': 4096},
                            'MEMORY_MB': {'total': 4096 * 1024},
                            'DISK_GB': {'total': 100000}}})
        names.append((name, rp['uuid']))
    return names


def instance_reservation(rng, hosts):
    chosen = rng.sample(hosts, 2)
    return {'resource_type': 'virtual:instance', 'amount': rng.randint(1, 3),
            'vcpus': 2, 'memory_mb': 2048, 'disk_gb': 10,
            'allocations': [{'id': u, 'hypervisor_hostname': n}
                            for n, u in chosen]}


def host_reservation(rng, hosts):
    chosen = rng.sample(hosts, rng.randint(1, 2))
    return {'resource_type': 'physical:host', 'min': len(chosen),
            'max': len(chosen),
            'allocations': [{'id': u, 'hypervisor_hostname': n,
                             'extra': {'su_factor': 1.0}}
                            for n, u in chosen]}


def seed_ledger(ledger, projects, leases, hosts, rng):
    """``leases`` pending leases over a year, bulk-inserted."""
    from placement_quota.lease import amounts as accounting
    from placement_quota.lease import model as lease_model
    names = sorted(projects)
    rows = []
    now = datetime.datetime.utcnow()
    for i in range(leases):
        start = START + datetime.timedelta(hours=rng.randrange(0, 24 * 365))
        end = start + datetime.timedelta(hours=rng.randint(1, 72))
        reservation = (instance_reservation(rng, hosts) if i % 2
                       else host_reservation(rng, hosts))
        body = {'start_date': start.isoformat(), 'end_date': end.isoformat(),
                'name': 'seed-%d' % i, 'reservations': [reservation]}
        amounts = accounting.lease_amounts(lease_model.Lease.coerce(body))
        rows.append(dict(
            project_id=names[i % len(names)], lease_id=None,
            provisional_key='seed-%d' % i, name='seed-%d' % i,
            user_id='bench', start_date=start, end_date=end,
            effective_end=end, state=models.PENDING, amounts=amounts,
            duration_s=int((end - start).total_seconds()),
            lease=body, hourly_rate=0, charged=0, created_at=now,
            **accounting.instance_columns(amounts, body)))
    with ledger.engine.begin() as connection:
        for chunk in range(0, len(rows), 5000):
            connection.execute(models.leases.insert(),
                               rows[chunk:chunk + 5000])
        for pid in names:
            connection.execute(models.credit_allocations.insert().values(
                project_id=pid, amount=store.to_micro(10 ** 9),
                created_at=now))
        # The lock rows a ledger that grew to this size through
        # admissions has: every project's, every host's capacity pool and
        # the cloud's.
        connection.execute(locks.insert_ignoring_duplicates(
            ledger.engine.dialect.name, models.projects), [
            {'project_id': key, 'created_at': now} for key in
            names + [locks.host_pool_lock(name) for name, _ in hosts] +
            [models.GLOBAL_LOCK]])
    analyze(ledger.engine)


def analyze(engine):
    """Give a server database the planner statistics a ledger that grew
    to this size over months has: PostgreSQL's autovacuum and InnoDB's
    automatic statistics would long since have gathered them, but not in
    the seconds after a bulk insert. Without them PostgreSQL misjudges
    ``start_date < ...`` and reads ~58,000 index entries for a project
    tree's window (2.7 ms instead of 0.4 ms a decision). SQLite gathers
    no statistics by itself (and plans these queries the same without
    them): it is left as a deployment has it."""
    dialect = engine.dialect.name
    if dialect not in ('postgresql', 'mysql', 'mariadb'):
        return
    tables = ', '.join(models.metadata.tables)
    with engine.begin() as connection:
        connection.execute(sa.text(
            'ANALYZE %s' % tables if dialect == 'postgresql'
            else 'ANALYZE TABLE %s' % tables))


def start_ledger(kind, directory):
    """``(server or None, URL)`` of an empty ledger database of ``kind``
    (see :data:`LEDGERS`); the caller stops the server."""
    if kind == 'sqlite':
        return None, 'sqlite:///%s' % os.path.join(directory, 'ledger.sqlite')
    database = (postgresql.PostgreSQLServer() if kind == 'postgresql'
                else mariadb.MariaDBServer())
    database.start()
    try:
        database.create_database('bench')
    except BaseException:
        database.stop()
        raise
    return database, database.url('bench')


def write_files(directory, projects):
    tree = ['registered_limits: {hosts: 100000, instances: 100000}',
            'projects:']
    nova = ['model: flat',
            'registered_limits: {servers: 1000000, class:VCPU: 1000000}']
    for pid, parent in sorted(projects.items()):
        tree.append('  %s: {parent: %s}' % (pid, parent) if parent
                    else '  %s: {limits: {hosts: 1000000}}' % pid)
    paths = {}
    for name, lines in (('tree.yaml', tree), ('nova.yaml', nova)):
        paths[name] = os.path.join(directory, name)
        with open(paths[name], 'w') as f:
            f.write('\n'.join(lines) + '\n')
    return paths


def configure(directory, endpoint, connection, paths):
    path = os.path.join(directory, 'bench.conf')
    with open(path, 'w') as f:
        f.write('[database]\nconnection = %s\n'
                '[placement]\nauth_type = admin_token\nendpoint = %s\n'
                'token = admin\n' % (connection, endpoint))
    conf = pq_conf.new_config([], config_files=[path])
    chain_mod.register_filter_opts(conf, filters.all_filters)
    for (group, name), value in options(paths).items():
        conf.set_override(name, value, group)
    return conf


def options(paths):
    """``{(group, name): value}``: the policies' options, on the files of
    :func:`write_files`."""
    return {
        ('enforcement', 'enabled_filters'): FILTERS,
        ('enforcement', 'reservation_max_length'): 7 * 86400,
        ('enforcement', 'max_hosts_per_reservation'): 10,
        ('enforcement', 'max_leases_per_project'): 100000,
        ('enforcement', 'nova_quota_source'): 'file',
        ('enforcement', 'nova_quota_limits_file'): paths['nova.yaml'],
        ('enforcement', 'credit_class_rates'): {'VCPU': '0.1'},
        ('limits', 'limits_file'): paths['tree.yaml'],
    }


def check_create_body(rng, names, hosts, i, name=None):
    """The check-create of the ``i``-th request: a lease of a project of
    ``names`` over one to 72 hours of the year, one instance reservation
    (``i`` odd) or one of hosts (even), named ``name`` (``bench-<i>``)."""
    start = START + datetime.timedelta(hours=rng.randrange(0, 24 * 365))
    end = start + datetime.timedelta(hours=rng.randint(1, 72))
    reservation = (instance_reservation(rng, hosts) if i % 2
                   else host_reservation(rng, hosts))
    return {'context': {'project_id': rng.choice(names), 'user_id': 'u'},
            'lease': {'start_date': start.isoformat(),
                      'end_date': end.isoformat(),
                      'name': name or 'bench-%d' % i,
                      'reservations': [reservation]}}


def measure_latency(url, projects, hosts, count, rng):
    names = sorted(projects)
    return common.time_check_creates(
        url, (check_create_body(rng, names, hosts, i) for i in range(count)))


def wait_for_view(chain, timeout=600):
    """Wait for the first read of PlacementCapacityFilter's view."""
    deadline = time.monotonic() + timeout
    for filter_ in chain.filters:
        view = getattr(filter_, '_view', None)
        while view is not None and view.age() is None:
            if time.monotonic() > deadline:
                raise RuntimeError('the capacity view was not read in %d s'
                                   % timeout)
            time.sleep(0.1)


def usage_reads(client, max_count):
    """``(ours, nova)``: /usages reads to find how many instances of 2
    VCPU fit a 40 VCPU quota with 10 VCPU in use, asking for max_count."""
    project = 'fit-%s' % uuid.uuid4().hex[:8]
    rp = client.post('/resource_providers', json={
        'name': 'fit-cn-%s' % project}).json()
    client.put('/resource_providers/%s/inventories' % rp['uuid'], json={
        'resource_provider_generation': rp['generation'],
        'inventories': {'VCPU': {'total': 64}}})
    client.put('/allocations/%s' % uuid.uuid4(), json={
        'allocations': {rp['uuid']: {'resources': {'VCPU': 10}}},
        'project_id': project, 'user_id': 'u', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'})
    limits = {'class:VCPU': 40, 'servers': 100}
    per_instance = {'class:VCPU': 2, 'servers': 1}
    reader = placement_usage.PlacementUsage(client)

    before = client.calls
    in_use = reader.get_usage([project], list(limits))[project]
    ours = nova_quota.instances_that_fit(limits, in_use, {}, per_instance)
    ours_reads = client.calls - before

    before = client.calls
    count = max_count
    while count >= 0:
        in_use = reader.get_usage([project], list(limits))[project]
        if all(in_use.get(r, 0) + count * per_instance[r] <= limits[r]
               for r in limits):
            break
        count -= 1
    nova_reads = client.calls - before
    assert count == ours, (count, ours)
    return {'max_count': max_count, 'fit': ours, 'ours_reads': ours_reads,
            'nova_loop_reads': nova_reads}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--leases', type=int, default=100000)
    parser.add_argument('--projects', type=int, default=1000)
    parser.add_argument('--hosts', type=int, default=20)
    parser.add_argument('--requests', type=int, default=400)
    parser.add_argument('--max-count', type=int, default=50)
    parser.add_argument('--ledger', choices=LEDGERS, default='sqlite',
                        help='The ledger: a SQLite file in a temporary '
                             'directory, or a private PostgreSQL or MariaDB '
                             'server started for the run.')
    parser.add_argument('--connection',
                        help='A ledger URL of yours (instead of --ledger).')
    parser.add_argument('--capacity-max-age', '--capacity-cache-ttl',
                        dest='capacity_max_age', type=int, default=5,
                        help='[enforcement] capacity_max_age of the second '
                             'run (the first reads Placement every time); '
                             '--capacity-cache-ttl is its old name.')
    parser.add_argument('--nova-quota-max-age', type=int, default=5,
                        help='[enforcement] nova_quota_max_age of the second '
                             'run (0 in the first).')
    parser.add_argument('--seed', type=int, default=42)
    parser.add_argument('--no-accounts', action='store_true',
                        help='[limits] accounts = false: the tree limits '
                             'from the limits file alone, without the admin '
                             'API\'s accounts laid over it.')
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    directory = tempfile.mkdtemp(prefix='pq-bench-policies-')
    database = None
    connection = args.connection
    if connection is None:
        database, connection = start_ledger(args.ledger, directory)
    server = embedded.ServerProcess()
    try:
        client = placement_client.PlacementClient.from_endpoint(
            server.url, embedded.NOAUTH_HEADERS)
        hosts = seed_placement(client, args.hosts)
        projects = project_ids(args.projects)
        ledger = store.Ledger(connection, migrate=True)
        began = time.perf_counter()
        seed_ledger(ledger, projects, args.leases, hosts, rng)
        seeded = time.perf_counter() - began
        ledger.dispose()
        conf = configure(directory, server.url, connection,
                         write_files(directory, projects))
        conf.set_override('accounts', not args.no_accounts, 'limits')
        services = services_mod.Services(conf)
        split = split_mod.TimeSplit()
        split.watch_engine(services.ledger.engine)
        split.watch_placement(services.placement)
        chain = chain_mod.FilterChain(conf, services=services)
        app = api_app.make_app(conf, chain)
        # As placement-quota serve does once its app is built.
        wsgi_server.freeze_heap()
        service = wsgi_server.WSGIServer(app, threads=4).start()
        phases = {}
        calls = {}
        splits = {}
        # p99 of the host (even) and instance (odd) requests apart.
        by_kind = {}
        try:
            # Warm-up: connections, caches, the first limits read.
            measure_latency(service.url, projects, hosts, 60,
                            random.Random(1))
            for max_age in (0, args.capacity_max_age):
                conf.set_override('capacity_max_age', max_age,
                                  'enforcement')
                conf.set_override(
                    'nova_quota_max_age',
                    args.nova_quota_max_age if max_age else 0, 'enforcement')
                if max_age:
                    # Warm-up: the view's first (whole) read, in the
                    # background while the first decisions read live.
                    measure_latency(service.url, projects, hosts, 10,
                                    random.Random(2))
                    wait_for_view(chain)
                before = services.placement.calls
                timed = split.snapshot()
                phases[max_age] = measure_latency(
                    service.url, projects, hosts, args.requests, rng)
                calls[max_age] = services.placement.calls - before
                splits[max_age] = split.per_request(
                    timed, split.snapshot(), args.requests)
                by_kind[max_age] = {
                    kind: round(common.percentile(
                        phases[max_age][0][first::2], 0.99), 2)
                    for kind, first in (('host', 0), ('instance', 1))}
        finally:
            service.stop()
            view = None
            for filter_ in chain.filters:
                if hasattr(filter_, 'capacity_view'):
                    view = filter_._view
                    filter_.close()
            services.close()
        fit = usage_reads(client, args.max_count)
    finally:
        server.stop()
        if database is not None:
            database.stop()
    result = {
        'ledger': connection.split(':')[0].split('+')[0].replace(
            'mysql', 'mariadb'),
        'ledger_leases': args.leases, 'projects': args.projects,
        'hosts': args.hosts, 'filters': FILTERS,
        'seed_seconds': round(seeded, 1),
        'goal_p99_ms': GOAL_P99_MS,
        'check_create': [dict(summary(age, *phases[age]),
                              nova_quota_max_age=(
                                  args.nova_quota_max_age if age else 0),
                              placement_calls_per_request=round(
                                  calls[age] / args.requests, 2),
                              p99_ms_by_reservation=by_kind[age],
                              split_ms=splits[age])
                         for age in phases],
        'instances_that_fit': fit,
    }
    if view is not None:
        result['capacity_view'] = {'refreshes': view.refreshes,
                                   'providers_read': view.reads}
    print(json.dumps(result))
    for phase in result['check_create']:
        sys.stderr.write(
            'check-create, %d filters, %d leases (%s), %d hosts, capacity '
            'max age %d s: p50 %.1f ms, p95 %.1f ms, p99 %.1f ms (goal < '
            '%.0f ms)\n'
            % (len(FILTERS), args.leases, result['ledger'], args.hosts,
               phase['capacity_max_age'], phase['p50_ms'],
               phase['p95_ms'], phase['p99_ms'], phase['goal_p99_ms']))
        sys.stderr.write('  a request: %s\n' % ', '.join(
            '%s %.2f ms (%.1f)' % (part, figures['ms'], figures['statements'])
            for part, figures in phase['split_ms'].items()))
    sys.stderr.write(
        'instances that fit: ours %d /usages read, Nova\'s loop %d '
        '(max_count %d, %d fit)\n'
        % (fit['ours_reads'], fit['nova_loop_reads'], fit['max_count'],
           fit['fit']))
    return 0


def summary(max_age, timings, statuses):
    # capacity_cache_ttl: the key's name before capacity_max_age.
    return {'capacity_max_age': max_age, 'capacity_cache_ttl': max_age,
            'requests': len(timings),
            'statuses': {str(k): v for k, v in sorted(statuses.items())},
            'p50_ms': round(statistics.median(timings), 2),
            'p95_ms': round(common.percentile(timings, 0.95), 2),
            'p99_ms': round(common.percentile(timings, 0.99), 2),
            'max_ms': round(max(timings), 2),
            'goal_p99_ms': goal_p99_ms(max_age),
            'goal_met': common.percentile(timings, 0.99) < goal_p99_ms(
                max_age)}


def goal_p99_ms(max_age):
    """The p99 goal of a phase: live (0) or with the caches."""
    return GOAL_P99_MS if max_age else GOAL_LIVE_P99_MS


if __name__ == '__main__':
    sys.exit(main())
