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
"""Benchmark: moving an account's resources ("Multi-Tenant Accounting in
OpenStack") through the admin API, against the osc-placement way.

A fresh real Placement (the embedded server, ``python -m
placement_quota.cmd.embedded_placement``, noauth2, SQLite, on loopback)
gets ``--providers`` compute nodes and ``--consumers`` servers spread over
``--projects`` projects (1 VCPU each); a SQLite ledger gets ``--leases``
open leases of the source project. The admin API (our WSGI app on a
loopback port, in this process) moves everything of the source project to
another account:

* **ours**: ``GET /v1/{src}/action/move?dest=`` (the move action and its
  ETag), then ``POST`` with ``If-Match`` (which reads it all again to
  compare): every consumer in **one**
  ``POST /allocations`` carrying each consumer generation (all or
  nothing), the leases in one ledger transaction. With
  ``--consumers-from nova`` (the default) the source's servers are
  created in a real nova-api (:func:`tests.fixtures.nova.create_servers`,
  ``noauth2``, build requests that nothing builds) and their UUIDs carry
  the source's allocations: the GET lists them from Nova (one ``GET
  /servers?all_tenants=1&project_id=`` per 1,000 servers), reads
  ``/usages`` and each server's allocations, which add up to the usage;
  the POST reads ``/usages`` and those consumers again. The other
  projects' consumers exist only in Placement (Nova's listing is filtered
  by project: they would not change it). With ``--consumers-from scan``
  (no Nova, the behaviour before) finding them costs one call per provider
  and one per consumer in the cloud (``[accounts] placement_workers``
  concurrent reads), after one ``GET /usages`` of the account (nothing
  used: no consumer to look for).
* **naive**: what an operator does with osc-placement, given the source
  project's server UUIDs (from ``openstack server list --project``, not
  counted): ``resource provider allocation show`` then ``resource
  provider allocation set --project-id`` per server, one after the other:
  2 calls per consumer, each its own write (a failure half way leaves
  half the servers moved), no limit check, and the ledger's leases not
  moved at all.

Also timed: a one-consumer move (GET + POST), and the move-all of an
account with as many leases and no consumer. Every move is checked: the
destination's Placement usage must hold all that was moved.

    python tools/bench/accounts.py --providers 100 --consumers 2000
    python tools/bench/accounts.py --consumers-from scan   # before

prints one JSON object on stdout and a summary on stderr.
"""

import argparse
import concurrent.futures
import datetime
import faulthandler
import json
import os
import shutil
import sys
import tempfile
import time
from urllib import parse
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from oslo_utils import timeutils  # noqa: E402
import requests  # noqa: E402

from placement_quota.accounts import servers as nova_servers  # noqa: E402,E501
from placement_quota.accounts import service  # noqa: E402
from placement_quota.api.admin import app as admin  # noqa: E402
from placement_quota import conf as pq_conf  # noqa: E402
from placement_quota.ledger import models  # noqa: E402
from placement_quota.placement import usage_room  # noqa: E402
from placement_quota.placement import client as placement_client  # noqa: E402,E501
from placement_quota.placement import embedded  # noqa: E402
from placement_quota import services as services_mod  # noqa: E402
from placement_quota.httpserver import server as wsgi_server  # noqa: E402
from tests.fixtures import nova as nova_fixture  # noqa: E402
from tools.bench import common  # noqa: E402

SERVER_START_TIMEOUT = 120
REQUEST_TIMEOUT = 600
WATCHDOG = 1800
SEED_THREADS = 8
BATCH = 500
SOURCE = 'project-0'
#: An account with leases and no consumer in Placement.
LEASES_ONLY = 'leases-only'


class BenchError(Exception):
    """The benchmark could not run, or a move went wrong."""


def seed(client, ledger, providers, consumers, projects, leases, now,
         source_uuids=()):
    """Fill Placement and the ledger; return the source's consumers
    (``source_uuids`` first: the UUIDs of its servers in Nova)."""
    source_uuids = list(source_uuids)

    def provider(i):
        uuid_ = str(uuid.uuid4())
        client.post('/resource_providers', json={'name': 'cn-%05d' % i,
                                                 'uuid': uuid_})
        client.put('/resource_providers/%s/inventories' % uuid_, json={
            'resource_provider_generation': 0,
            'inventories': {'VCPU': {'total': consumers}}})
        return uuid_

    with concurrent.futures.ThreadPoolExecutor(SEED_THREADS) as pool:
        nodes = list(pool.map(provider, range(providers)))
    owned = []
    payload = {}
    for i in range(consumers):
        consumer = str(uuid.uuid4())
        project = 'project-%d' % (i % projects)
        if project == SOURCE:
            if len(owned) < len(source_uuids):
                consumer = source_uuids[len(owned)]
            owned.append(consumer)
        payload[consumer] = {
            'allocations': {nodes[i % providers]: {'resources': {'VCPU': 1}}},
            'project_id': project, 'user_id': 'u',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'}
        if len(payload) == BATCH:
            client.post('/allocations', json=payload)
            payload = {}
    if payload:
        client.post('/allocations', json=payload)
    with ledger.transaction([SOURCE, LEASES_ONLY]) as txn:
        for i in range(2 * leases):
            start = now + datetime.timedelta(hours=i)
            txn.insert(project_id=(SOURCE, LEASES_ONLY)[i % 2],
                       lease_id=str(uuid.uuid4()),
                       provisional_key=uuid.uuid4().hex, name='l%d' % i,
                       start_date=start,
                       end_date=start + datetime.timedelta(hours=2),
                       state=models.PENDING, amounts={},
                       lease={'reservations': []}, hourly_rate=0, charged=0)
    return owned


def vcpus(client, project):
    return usage_room.project_usages(client, project).resources.get('VCPU', 0)


class Admin:
    """The admin API of one ledger and Placement, on a loopback port."""

    def __init__(self, state_dir, placement_url, nova_url=None):
        conf = pq_conf.new_config([], config_files=[])
        conf.set_override('connection', 'sqlite:///%s/ledger.sqlite'
                          % state_dir, 'database')
        self.conf = conf
        self.client = placement_client.PlacementClient.from_endpoint(
            placement_url, embedded.NOAUTH_HEADERS, timeout=REQUEST_TIMEOUT)
        self.services = services_mod.Services(conf, placement=self.client)
        self.ledger = self.services.ledger
        self.nova = None
        if nova_url:
            self.nova = nova_servers.NovaServers.from_endpoint(
                nova_url, nova_fixture.token_headers(),
                timeout=REQUEST_TIMEOUT)
        self.accounts = service.Accounts(
            self.ledger, self.client, self.services.limits_source,
            workers=conf.accounts.placement_workers, servers=self.nova)
        self.server = wsgi_server.WSGIServer(admin.make_admin_app(
            conf, accounts=self.accounts), threads=4).start()
        self.url = self.server.url + '/v1/'

    def stop(self):
        self.server.stop()
        self.services.close()

    def account(self, account_id):
        response = requests.put(self.url + parse.quote(account_id, safe=''),
                                json={}, timeout=REQUEST_TIMEOUT)
        if response.status_code not in (201, 202):
            raise BenchError('PUT %s: %d %s' % (account_id,
                                                response.status_code,
                                                response.text))

    def nova_calls(self):
        return self.nova.calls if self.nova is not None else 0

    def timed(self, method, path, headers=None):
        """``(response, seconds, Placement calls, Nova calls)``."""
        before, nova_before = self.client.calls, self.nova_calls()
        started = time.perf_counter()
        response = requests.request(method, self.url + path,
                                    headers=headers or {},
                                    timeout=REQUEST_TIMEOUT,
                                    allow_redirects=False)
        return (response, time.perf_counter() - started,
                self.client.calls - before, self.nova_calls() - nova_before)


def move(api, src, dest, consumer=None):
    """GET the move action, POST it with its ETag; the figures."""
    path = parse.quote(src, safe='')
    if consumer:
        path += '/consumers/%s' % consumer
    path += '/action/move?dest=%s' % parse.quote(dest, safe='')
    shown, get_s, get_calls, get_nova = api.timed('GET', path)
    if shown.status_code != 200:
        raise BenchError('GET %s: %d %s'
                         % (path, shown.status_code, shown.text))
    moved, post_s, post_calls, post_nova = api.timed(
        'POST', path, {'If-Match': shown.headers['ETag']})
    if moved.status_code != 303:
        raise BenchError('POST %s: %d %s'
                         % (path, moved.status_code, moved.text))
    return {'get_s': round(get_s, 3), 'get_calls': get_calls + get_nova,
            'post_s': round(post_s, 3), 'post_calls': post_calls + post_nova,
            'total_s': round(get_s + post_s, 3),
            'placement_calls': get_calls + post_calls,
            'nova_calls': get_nova + post_nova,
            'total_calls': get_calls + post_calls + get_nova + post_nova}


def naive(client, consumers, dest):
    """osc-placement: allocation show + set --project-id per consumer."""
    before = client.calls
    started = time.perf_counter()
    for consumer in consumers:
        body = client.get('/allocations/%s' % consumer)
        client.put('/allocations/%s' % consumer, json={
            'allocations': {rp: {'resources': a['resources']}
                            for rp, a in body['allocations'].items()},
            'project_id': dest, 'user_id': body['user_id'],
            'consumer_generation': body['consumer_generation'],
            'consumer_type': body.get('consumer_type', 'INSTANCE')})
    return {'calls': client.calls - before,
            'seconds': round(time.perf_counter() - started, 3)}


def source_count(consumers, projects):
    """How many of ``consumers`` (round-robin) are the source's."""
    return len(range(0, consumers, projects))


def start_nova(count):
    """A ``noauth2`` nova-api with ``count`` servers of the source:
    ``(server, their UUIDs, seconds to create them)``."""
    try:
        nova = nova_fixture.get_noauth_server()
    except RuntimeError as exc:
        raise BenchError('nova-api: %s' % exc)
    started = time.monotonic()
    try:
        created = nova_fixture.create_servers(nova.url, SOURCE, count)
    except RuntimeError as exc:
        raise BenchError('creating the servers in Nova: %s' % exc)
    return nova, created, time.monotonic() - started


def run(providers, consumers, projects, leases, consumers_from='nova'):
    nova, source_uuids, nova_s = None, [], 0.0
    if consumers_from == 'nova':
        nova, source_uuids, nova_s = start_nova(
            source_count(consumers, projects))
    try:
        server = embedded.ServerProcess(SERVER_START_TIMEOUT)
    except RuntimeError as exc:
        raise BenchError(str(exc))
    state_dir = tempfile.mkdtemp(prefix='bench-accounts-')
    api = None
    try:
        api = Admin(state_dir, server.url, nova.url if nova else None)
        started = time.monotonic()
        owned = seed(api.client, api.ledger, providers, consumers, projects,
                     leases, timeutils.utcnow(), source_uuids)
        seed_s = time.monotonic() - started
        for account in (SOURCE, LEASES_ONLY, 'dest', 'naive-dest',
                        'one-dest'):
            api.account(account)
        leases_only = move(api, LEASES_ONLY, 'dest')
        ours = move(api, SOURCE, 'dest')
        if vcpus(api.client, 'dest') != len(owned):
            raise BenchError('dest holds %d VCPU after the move, not %d'
                             % (vcpus(api.client, 'dest'), len(owned)))
        one = move(api, 'dest', 'one-dest', owned[0])
        naive_figures = naive(api.client, owned[1:], 'naive-dest')
        if vcpus(api.client, 'naive-dest') != len(owned) - 1:
            raise BenchError('the naive moves lost consumers')
    finally:
        if api is not None:
            api.stop()
        server.stop()
        shutil.rmtree(state_dir, ignore_errors=True)
    moved = len(owned) - 1
    return {
        'providers': providers, 'consumers': consumers,
        'projects': projects, 'source_consumers': len(owned),
        'source_leases': leases, 'seed_s': round(seed_s, 1),
        'consumers_from': consumers_from,
        'nova_servers': len(source_uuids),
        'nova_start_s': round(nova.startup_seconds, 1) if nova else None,
        'nova_create_s': round(nova_s, 1),
        'ours_move_all': ours,
        'ours_move_one': one,
        'ours_move_leases_only': leases_only,
        'naive': dict(naive_figures, consumers=moved,
                      per_consumer_calls=round(
                          naive_figures['calls'] / max(1, moved), 2)),
    }


def summary(r):
    o, n = r['ours_move_all'], r['naive']
    return ('%d providers, %d consumers (%d of the source), %d leases, '
            'consumers from %s: ours move-all %d calls (%d Placement, %d '
            'Nova) in %.2f s (GET %d calls %.2f s, POST %d calls %.2f s); '
            'one consumer %d calls in %.3f s; leases only %d '
            'calls in %.3f s; naive %d calls in %.2f s for %d consumers (no '
            'leases, not atomic)' % (
                r['providers'], r['consumers'], r['source_consumers'],
                r['source_leases'], r['consumers_from'], o['total_calls'],
                o['placement_calls'], o['nova_calls'], o['total_s'],
                o['get_calls'], o['get_s'], o['post_calls'], o['post_s'],
                r['ours_move_one']['total_calls'],
                r['ours_move_one']['total_s'],
                r['ours_move_leases_only']['total_calls'],
                r['ours_move_leases_only']['total_s'], n['calls'],
                n['seconds'], n['consumers']))


def main(argv=None, watchdog=False):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--providers', type=common.positive, default=100,
                        help='compute nodes (default: 100)')
    parser.add_argument('--consumers', type=common.positive, default=2000,
                        help='servers in the cloud (default: 2000)')
    parser.add_argument('--projects', type=common.positive, default=10,
                        help='projects the servers belong to, round-robin '
                        '(default: 10); the source is one of them')
    parser.add_argument('--leases', type=int, default=100,
                        help='open leases of the source, and of an account '
                        'without consumers (default: 100)')
    parser.add_argument('--consumers-from', choices=('nova', 'scan'),
                        default='nova',
                        help='nova: the source\'s servers are created in a '
                        'real nova-api and moves list them there '
                        '([accounts] consumers_from = nova); scan: no Nova, '
                        'moves read every consumer of Placement (default: '
                        'nova)')
    parser.add_argument('--timeout', type=common.positive, default=WATCHDOG,
                        help='seconds after which the command gives up, '
                        'printing where it was (default: %d)' % WATCHDOG)
    args = parser.parse_args(argv)
    if args.leases < 0:
        parser.error('--leases must be 0 or more')
    if watchdog:
        faulthandler.dump_traceback_later(args.timeout, exit=True)
    try:
        result = run(args.providers, args.consumers, args.projects,
                     args.leases, args.consumers_from)
    except (BenchError, placement_client.PlacementError) as exc:
        print('accounts bench: %s' % exc, file=sys.stderr)
        return 1
    finally:
        if watchdog:
            faulthandler.cancel_dump_traceback_later()
    print(json.dumps(result), flush=True)
    print(summary(result), file=sys.stderr, flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main(watchdog=True))
