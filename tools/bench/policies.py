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
   there is no baseline; the goals at 100000 leases and 1000 hosts, on
   every ledger, are p99 under 15 ms with the caches
   (``--capacity-max-age`` at most 5 s) and under 30 ms with Placement
   read live.
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
kind for the run (tests/fixtures), its page cache sized like a production
server's (:data:`LEDGER_CACHE`); ``--connection`` uses a database of
yours. Each phase also prints where its milliseconds went
(``split_ms``: Placement, ledger reads, locks, writes, commit; see
tools/bench/split.py), and before the phases the run measures
Placement alone, nothing else running (``placement_floor``: the p50 and
p99 of the one ``GET /usages`` a cached decision of a cold project
makes, and a listing of every provider, a capacity view refresh's call):
a goal below them is out of reach whatever placement-quota does.

At ``--hosts 10000 --leases 1000000``: ``--placement postgresql`` runs
the same openstack-placement app on a private PostgreSQL database instead
of SQLite; Placement is seeded by concurrent requests while the ledger is
seeded in a child process (its rows never in the service's memory), each
timed (``placement_seed_seconds``, ``seed_seconds``). Each phase gives the
p99 of the parts of a decision that grow with the cloud
(``components_ms``: the capacity view's reads and refreshes, the provider
directory, the host resources reader, the capacity policy's Placement
step) and the service process's memory (``rss_mb``; the service runs in
this process). ``--reference`` names the JSON of a 1,000-host run: each
part must then stay within 1.5 times its p99 there (``scale``).

prints one JSON object on stdout and a summary on stderr.
"""

import argparse
import concurrent.futures
import datetime
import json
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import threading
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
from placement_quota.placement import usage_room  # noqa: E402
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
#: The page cache of the ledger server the bench starts (PostgreSQL's
#: shared_buffers, InnoDB's buffer pool). A production server holds its
#: working set in memory; 100,000 leases take about 100 MB in InnoDB, more
#: than the 32 MB buffer pool the test fixture gives MariaDB for speed.
LEDGER_CACHE = '512M'
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


def plan_hosts(hosts):
    """``[(name, uuid)]`` of the compute nodes to seed."""
    return [('bench-cn-%d-%s' % (i, uuid.uuid4().hex[:6]), str(uuid.uuid4()))
            for i in range(hosts)]


def seed_placement(client, hosts, workers=8):
    """Create the providers ``hosts`` (:func:`plan_hosts`, or how many)
    with their inventories, ``workers`` requests at a time; return
    ``[(name, uuid)]``."""
    if isinstance(hosts, int):
        hosts = plan_hosts(hosts)

    def seed(host):
        name, rp_uuid = host
        rp = client.post('/resource_providers',
                         json={'name': name, 'uuid': rp_uuid}).json()
        client.put('/resource_providers/%s/inventories' % rp_uuid, json={
            'resource_provider_generation': rp['generation'],
            'inventories': {'VCPU': {'total': 4096},
                            'MEMORY_MB': {'total': 4096 * 1024},
                            'DISK_GB': {'total': 100000}}})
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for _ in pool.map(seed, hosts):
            pass
    return hosts


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
        locks.ensure_rows(
            connection, ledger.engine.dialect.name,
            names + [locks.host_pool_lock(name) for name, _ in hosts] +
            [models.GLOBAL_LOCK], now)
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
    (see :data:`LEDGERS`), with :data:`LEDGER_CACHE` of memory for its
    pages; the caller stops the server."""
    if kind == 'sqlite':
        return None, 'sqlite:///%s' % os.path.join(directory, 'ledger.sqlite')
    database = (
        postgresql.PostgreSQLServer(
            settings={'shared_buffers': LEDGER_CACHE + 'B'})
        if kind == 'postgresql' else mariadb.MariaDBServer(
            settings=('--innodb-buffer-pool-size=' + LEDGER_CACHE,)))
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


def wait_for_view(chain, timeout=3600):
    """Wait for the first read of PlacementCapacityFilter's view (three
    calls a provider: minutes at 10,000 hosts)."""
    deadline = time.monotonic() + timeout
    for filter_ in chain.filters:
        view = getattr(filter_, '_view', None)
        while view is not None and view.age() is None:
            if time.monotonic() > deadline:
                raise RuntimeError('the capacity view was not read in %d s'
                                   % timeout)
            time.sleep(0.1)


#: Usage reads and listings of :func:`placement_floor`.
FLOOR_REQUESTS = 200
FLOOR_LISTINGS = 3
#: Seconds between the listings beside the floor's second usage reads: a
#: capacity view of 5 s refreshes every 2.5 s.
FLOOR_LISTING_EVERY = 2.5
#: Listings the usage reads beside them last for, at least.
FLOOR_LISTINGS_BESIDE = 4


class ListingLoop:
    """A thread listing every provider (``GET /resource_providers``) every
    ``every`` seconds, as a capacity view's refresh does, while the
    ``with`` block runs; :attr:`count` listings made."""

    def __init__(self, client, every):
        self.client = client
        self.every = every
        self.count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        # At least one listing, however short the block.
        while True:
            self.client.request('GET', '/resource_providers')
            self.count += 1
            if self._stop.wait(self.every):
                return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def placement_floor(client, project_ids, requests=FLOOR_REQUESTS,
                    listings=FLOOR_LISTINGS, clock=time.perf_counter,
                    listing_every=FLOOR_LISTING_EVERY):
    """What Placement alone takes on this machine, nothing else running:
    the p50 and p99 ms of ``requests`` reads of a random project's usage
    (:func:`usage_room.project_usages`, the call a cached decision of a
    cold project makes), the median ms of ``listings`` reads of ``GET
    /resource_providers`` (a capacity view refresh's call), and the p50
    and p99 of usage reads while a :class:`ListingLoop` lists every
    ``listing_every`` seconds (``beside_listing``: at least ``requests``
    reads, and on until :data:`FLOOR_LISTINGS_BESIDE` listings were made;
    ``listing_every`` None: not measured). A phase's goal below these is
    out of reach whatever placement-quota does."""
    project_ids = sorted(project_ids)
    rng = random.Random(0)

    def timed(read):
        began = clock()
        read()
        return (clock() - began) * 1000

    def usages(more=lambda: False):
        found = []
        while len(found) < requests or more():
            found.append(timed(lambda: usage_room.project_usages(
                client, rng.choice(project_ids))))
        return {'reads': len(found),
                'p50_ms': round(statistics.median(found), 2),
                'p99_ms': round(common.percentile(found, 0.99), 2)}
    listing = [timed(lambda: client.request('GET', '/resource_providers'))
               for _ in range(listings)]
    floor = {'listings': listings,
             'listing_ms': round(statistics.median(listing), 1)}
    try:
        floor['usages'] = usages()
        if listing_every is not None:
            with ListingLoop(client, listing_every) as loop:
                floor['beside_listing'] = usages(
                    lambda: loop.count < FLOOR_LISTINGS_BESIDE)
            floor['beside_listing'].update(every_s=listing_every,
                                           listings=loop.count)
    except placement_client.PlacementError as exc:
        # openstack-placement 16.0.0 on PostgreSQL (see usage_reads).
        floor['error'] = str(exc)[:300]
    return floor


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


# --- the large cloud: Placement's database, seeding, parts, memory -------

PLACEMENTS = ('embedded', 'postgresql')
#: A part of a decision at 10,000 hosts stays within this many times its
#: p99 at 1,000 hosts.
GOAL_SCALE_RATIO = 1.5
#: The service process's memory at 10,000 hosts and 1,000,000 leases.
GOAL_RSS_MB = 300.0


def start_placement(kind, workers=1):
    """``(ServerProcess, PostgreSQL server or None)``: the embedded
    Placement on SQLite, or the same app on a private PostgreSQL, served
    by ``workers`` processes."""
    if kind == 'embedded':
        return embedded.ServerProcess(workers=workers), None
    database = postgresql.PostgreSQLServer()
    database.start()
    try:
        database.create_database('placement')
        return (embedded.ServerProcess(
            connection=database.url('placement'), workers=workers),
            database)
    except BaseException:
        database.stop()
        raise


def _seed_ledger_child(pipe, connection, projects, leases, hosts, rng):
    began = time.perf_counter()
    ledger = store.Ledger(connection, migrate=True)
    seed_ledger(ledger, projects, leases, hosts, rng)
    ledger.dispose()
    pipe.send((time.perf_counter() - began, rng.getstate()))
    pipe.close()


class LedgerSeeding:
    """:func:`seed_ledger` in a child process, started now: the million
    rows it makes never enter this process (the service's), and Placement
    is seeded meanwhile. :meth:`wait` gives its seconds and leaves ``rng``
    as if it had seeded here."""

    def __init__(self, connection, projects, leases, hosts, rng):
        self.rng = rng
        context = multiprocessing.get_context('fork')
        self.pipe, child_end = context.Pipe(duplex=False)
        self.process = context.Process(
            target=_seed_ledger_child, name='seed-ledger',
            args=(child_end, connection, projects, leases, hosts, rng))
        self.process.start()
        child_end.close()

    def wait(self):
        try:
            seconds, state = self.pipe.recv()
        except EOFError:
            self.process.join()
            raise RuntimeError('seeding the ledger failed (exit status %s)'
                               % self.process.exitcode) from None
        self.process.join()
        self.rng.setstate(state)
        return seconds

    def stop(self):
        if self.process.is_alive():
            self.process.terminate()
            self.process.join()


def rss_mb():
    """``(now, peak)``: this process's resident memory, in MB."""
    found = {}
    with open('/proc/self/status') as status:
        for line in status:
            key, _, value = line.partition(':')
            if key in ('VmRSS', 'VmHWM'):
                found[key] = int(value.split()[0]) / 1024.0
    return found.get('VmRSS'), found.get('VmHWM')


class Parts:
    """Durations of the parts of a decision that grow with the cloud,
    by wrapping methods of the service's objects (in this process)."""

    def __init__(self):
        self.samples = {}

    def wrap(self, part, owner, name):
        method = getattr(owner, name)
        samples = self.samples.setdefault(part, [])

        def timed(*args, **kwargs):
            began = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                samples.append((time.perf_counter() - began) * 1000)
        setattr(owner, name, timed)

    def watch(self, services, chain):
        directory = services.provider_directory
        self.wrap('directory', directory, 'uuids')
        self.wrap('directory', directory, 'is_flat')
        self.wrap('host_resources', services.host_resources, 'prefetch')
        for filter_ in chain.filters:
            if hasattr(filter_, 'capacity_view'):
                self.wrap('capacity_prepare', filter_, 'prepare')
                self.capacity = filter_

    def watch_view(self, client):
        """Make the capacity view now and time its reads and refreshes."""
        view = self.capacity.capacity_view(client)
        self.wrap('view_room', view, 'room')
        self.wrap('view_refresh', view, '_refresh')

    def mark(self):
        return {part: len(samples) for part, samples in self.samples.items()}

    def since(self, mark):
        """``{part: {"p50", "p99", "max", "count"}}`` of the samples since
        ``mark``."""
        figures = {}
        for part, samples in sorted(self.samples.items()):
            taken = samples[mark.get(part, 0):]
            if taken:
                figures[part] = {
                    'count': len(taken),
                    'p50': round(statistics.median(taken), 3),
                    'p99': round(common.percentile(taken, 0.99), 3),
                    'max': round(max(taken), 3)}
        return figures


def scale_goals(result, reference):
    """Each part's p99 (and each phase's check-create p99) against the
    same at 1,000 hosts (``reference``, a result of this bench), and the
    memory goal."""
    def parts(doc):
        found = {}
        for phase in doc.get('check_create', []):
            kind = 'cached' if phase['capacity_max_age'] else 'live'
            found['decision_%s' % kind] = phase['p99_ms']
            for part, figures in phase.get('components_ms', {}).items():
                if part != 'view_refresh':  # in the background: see below
                    found['%s_%s' % (part, kind)] = figures['p99']
        return found
    goals = {}
    if reference is not None:
        before = parts(reference)
        for name, p99 in sorted(parts(result).items()):
            if before.get(name):
                ratio = p99 / before[name]
                goals[name] = {'p99_ms': p99,
                               'reference_p99_ms': before[name],
                               'ratio': round(ratio, 2),
                               'goal_ratio': GOAL_SCALE_RATIO,
                               'goal_met': ratio <= GOAL_SCALE_RATIO}
    rss = max(phase['rss_mb'] for phase in result['check_create'])
    goals['rss_mb'] = {'rss_mb': rss, 'goal_mb': GOAL_RSS_MB,
                       'goal_met': rss < GOAL_RSS_MB}
    return goals


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
    parser.add_argument('--placement', choices=PLACEMENTS,
                        default='embedded',
                        help='Placement\'s database: the embedded SQLite '
                             'file, or a private PostgreSQL server started '
                             'for the run (the same openstack-placement '
                             'app).')
    parser.add_argument('--placement-workers', type=common.positive,
                        default=1, metavar='N',
                        help='processes of the embedded Placement (as a '
                        'deployment runs it under uWSGI or mod_wsgi)')
    parser.add_argument('--reference', metavar='JSON',
                        help='The output of a run at 1,000 hosts: each part '
                             'of a decision is compared with it ("scale").')
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

    reference = None
    if args.reference:
        with open(args.reference) as f:
            reference = json.load(f)
    server, placement_db = start_placement(args.placement,
                                           args.placement_workers)
    try:
        client = placement_client.PlacementClient.from_endpoint(
            server.url, embedded.NOAUTH_HEADERS)
        hosts = plan_hosts(args.hosts)
        projects = project_ids(args.projects)
        # The ledger in a child process while Placement is seeded here.
        seeding = LedgerSeeding(connection, projects, args.leases, hosts,
                                rng)
        try:
            began = time.perf_counter()
            seed_placement(client, hosts)
            placement_seeded = time.perf_counter() - began
            seeded = seeding.wait()
        finally:
            seeding.stop()
        floor = placement_floor(client, projects)
        conf = configure(directory, server.url, connection,
                         write_files(directory, projects))
        conf.set_override('accounts', not args.no_accounts, 'limits')
        services = services_mod.Services(conf)
        split = split_mod.TimeSplit()
        split.watch_engine(services.ledger.engine)
        split.watch_placement(services.placement)
        chain = chain_mod.FilterChain(conf, services=services)
        parts = Parts()
        parts.watch(services, chain)
        components, rss = {}, {}
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
                    parts.watch_view(services.placement)
                    # Warm-up: the view's first (whole) read, in the
                    # background while the first decisions read live.
                    measure_latency(service.url, projects, hosts, 10,
                                    random.Random(2))
                    wait_for_view(chain)
                before = services.placement.calls
                timed = split.snapshot()
                marked = parts.mark()
                phases[max_age] = measure_latency(
                    service.url, projects, hosts, args.requests, rng)
                calls[max_age] = services.placement.calls - before
                splits[max_age] = split.per_request(
                    timed, split.snapshot(), args.requests)
                components[max_age] = parts.since(marked)
                rss[max_age] = rss_mb()
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
        try:
            fit = usage_reads(client, args.max_count)
        except placement_client.PlacementError as exc:
            # openstack-placement 16.0.0 on PostgreSQL: GET /usages from
            # microversion 1.38 answers 500 (a GROUP BY PostgreSQL
            # refuses, in placement/objects/usage.py).
            fit = {'error': str(exc)[:300]}
    finally:
        server.stop()
        if placement_db is not None:
            placement_db.stop()
        if database is not None:
            database.stop()
    result = {
        'ledger': connection.split(':')[0].split('+')[0].replace(
            'mysql', 'mariadb'),
        'ledger_leases': args.leases, 'projects': args.projects,
        'hosts': args.hosts, 'filters': FILTERS,
        'seed_seconds': round(seeded, 1),
        'goal_p99_ms': GOAL_P99_MS,
        'placement_floor': floor,
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
    add_scale_figures(result, args, placement_seeded, components, rss,
                      reference)
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
    write_floor(result['placement_floor'])
    write_scale_summary(result)
    if 'error' in fit:
        sys.stderr.write('instances that fit: %s\n' % fit['error'])
    else:
        sys.stderr.write(
            'instances that fit: ours %d /usages read, Nova\'s loop %d '
            '(max_count %d, %d fit)\n'
            % (fit['ours_reads'], fit['nova_loop_reads'], fit['max_count'],
               fit['fit']))
    return 0


def write_floor(floor):
    if 'error' in floor:
        usages = floor['error']
    else:
        usages = 'p50 %.1f ms, p99 %.1f ms (%d reads)' % (
            floor['usages']['p50_ms'], floor['usages']['p99_ms'],
            floor['usages']['reads'])
        beside = floor.get('beside_listing')
        if beside:
            usages += '; beside a listing every %.1f s: p50 %.1f, p99 %.1f' % (
                beside['every_s'], beside['p50_ms'], beside['p99_ms'])
    sys.stderr.write(
        'Placement alone: GET /usages %s; GET /resource_providers %.1f ms '
        '(median of %d)\n'
        % (usages, floor['listing_ms'], floor['listings']))


def add_scale_figures(result, args, placement_seeded, components, rss,
                      reference):
    """The figures of a large cloud: Placement's database and seeding
    time, each phase's parts and memory, the goals against
    ``reference``."""
    result['placement'] = args.placement
    result['placement_workers'] = args.placement_workers
    result['placement_seed_seconds'] = round(placement_seeded, 1)
    for phase in result['check_create']:
        age = phase['capacity_max_age']
        phase['components_ms'] = components[age]
        phase['rss_mb'], phase['peak_rss_mb'] = (
            round(value, 1) for value in rss[age])
    result['scale'] = scale_goals(result, reference)


def write_scale_summary(result):
    sys.stderr.write('seeded: Placement (%s) %d hosts in %.1f s, ledger %d '
                     'leases in %.1f s (at the same time)\n'
                     % (result['placement'], result['hosts'],
                        result['placement_seed_seconds'],
                        result['ledger_leases'], result['seed_seconds']))
    for phase in result['check_create']:
        sys.stderr.write('  capacity max age %d s: RSS %.0f MB (peak %.0f); '
                         'p99 %s\n' % (
                             phase['capacity_max_age'], phase['rss_mb'],
                             phase['peak_rss_mb'], ', '.join(
                                 '%s %.2f ms (%d)' % (part, f['p99'],
                                                      f['count'])
                                 for part, f in
                                 phase['components_ms'].items())))
    for name, goal in result['scale'].items():
        sys.stderr.write('  %s: %s\n' % (name, ', '.join(
            '%s %s' % item for item in goal.items())))


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
