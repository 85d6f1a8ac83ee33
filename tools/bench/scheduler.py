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
"""Benchmark: one unreserved request in a cloud of N hosts, fenced in the
Placement query (our request filter) versus by a host filter afterwards
(blazar-nova's ``BlazarFilter``, and our ``ReservationHostFilter``
fallback).

A fresh real Placement (the embedded server, ``python -m
placement_quota.cmd.embedded_placement``, noauth2, SQLite) gets N compute
node providers (VCPU, MEMORY_MB, DISK_GB). 90 % of the hosts are Blazar's
(``--blazar-fraction``): a third of them unreserved in the free pool, the
rest in host reservation aggregates of 10 hosts each (AZ
``blazar_<id>``, ``blazar:owner``, as Blazar makes them); the others are
plain hosts. Each provider is in the Placement aggregates of its Nova
aggregates, as Nova's aggregate API mirrors them.

The Nova side runs in the Nova child process of the functional tests
(``tests/functional/scheduler/nova_process.py``: Nova cannot be imported
next to Blazar), with the aggregates in Nova's API database (SQLite):

* **ours**: the request filter registered by ``nova_filters`` runs on a
  RequestSpec built as nova-api builds it; the query is Nova's
  ``resources_from_request_spec(...).to_querystring()`` (``member_of=!in:``
  the Blazar aggregates); no host filter is needed for the fence;
* **blazar_filter**: the same query without ``member_of`` (what Nova sends
  when no request filter fences), then blazar-nova 10's own
  ``BlazarFilter`` (installed from PyPI) through Nova's
  ``HostFilterHandler`` on every candidate;
* **reservation_host_filter**: the same, with our ``ReservationHostFilter``.

Figures: candidates Placement returns, host filter checks, how many hosts
pass, and the median wall time of the Placement query (``--rounds``) and of
the host filter pass. Every path must end with the same hosts (the plain
ones); otherwise the command exits 1.

    python tools/bench/scheduler.py --hosts 1000

prints one JSON object per ``--hosts`` value on stdout and a summary on
stderr; about a minute for 1000 hosts on 2 cores.
"""

import argparse
import faulthandler
import json
import os
import statistics
import sys
import time
from urllib import parse
import uuid

import requests

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from placement_quota.placement import client as placement_client  # noqa: E402,E501
from placement_quota.placement import embedded  # noqa: E402
from tools.bench import common  # noqa: E402
from tests.functional.scheduler import nova_process  # noqa: E402

SERVER_START_TIMEOUT = 120
REQUEST_TIMEOUT = 300
WATCHDOG = 600
HOSTS_PER_RESERVATION = 10
OWNER = 'a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1'
FLAVOR = {'vcpus': 2, 'memory_mb': 2048, 'root_gb': 10,
          'extra_specs': {'hw:cpu_policy': 'shared'}}


class BenchError(Exception):
    """The benchmark could not run, or a path gave the wrong hosts."""


def build_cloud(hosts, blazar_fraction):
    """``(names, aggregates)``: host names and Nova aggregates."""
    names = ['cn-%05d' % i for i in range(hosts)]
    blazar = int(round(hosts * blazar_fraction))
    free = blazar // 3
    aggregates = [{'uuid': str(uuid.uuid4()), 'name': 'freepool',
                   'metadata': {}, 'hosts': names[:free]}]
    reserved = names[free:blazar]
    for i in range(0, len(reserved), HOSTS_PER_RESERVATION):
        rid = str(uuid.uuid4())
        aggregates.append({
            'uuid': str(uuid.uuid4()), 'name': rid,
            'metadata': {'availability_zone': 'blazar_' + rid,
                         'blazar:owner': OWNER},
            'hosts': reserved[i:i + HOSTS_PER_RESERVATION]})
    return names, aggregates, set(names[blazar:])


def fill_placement(client, names, aggregates):
    """Compute node providers in their aggregates; ``{uuid: name}``."""
    member = {name: [] for name in names}
    for agg in aggregates:
        for host in agg['hosts']:
            member[host].append(agg['uuid'])
    created = {}
    for name in names:
        rp = client.post('/resource_providers', json={'name': name}).json()
        resp = client.put('/resource_providers/%s/aggregates' % rp['uuid'],
                          json={'resource_provider_generation':
                                rp['generation'],
                                'aggregates': member[name]}).json()
        created[name] = (rp['uuid'], resp['resource_provider_generation'])
    client.post('/reshaper', json={'inventories': {
        rp: {'resource_provider_generation': generation,
             'inventories': {'VCPU': {'total': 64},
                             'MEMORY_MB': {'total': 262144},
                             'DISK_GB': {'total': 2000}}}
        for rp, generation in created.values()}, 'allocations': {}})
    return {rp: name for name, (rp, _) in created.items()}


def candidates(session, endpoint, query, microversion, rounds):
    """``(hosts, median seconds)`` of ``GET /allocation_candidates``."""
    times = []
    body = None
    for _ in range(rounds):
        started = time.perf_counter()
        resp = session.get(
            '%s/allocation_candidates?%s' % (endpoint, query),
            headers={'OpenStack-API-Version': 'placement %s' % microversion},
            timeout=REQUEST_TIMEOUT)
        times.append(time.perf_counter() - started)
        if resp.status_code != 200:
            raise BenchError('Placement answered %s: %s'
                             % (resp.status_code, resp.text[:500]))
        body = resp.json()
    roots = {rp: s['root_provider_uuid']
             for rp, s in body['provider_summaries'].items()}
    hosts = {roots[rp] for request in body['allocation_requests']
             for rp in request['allocations']}
    return hosts, statistics.median(times)


def without_member_of(query):
    return parse.urlencode([(k, v) for k, v in parse.parse_qsl(query)
                            if k != 'member_of'])


def run_once(hosts, blazar_fraction, rounds, nova):
    names, aggregates, plain = build_cloud(hosts, blazar_fraction)
    try:
        server = embedded.ServerProcess(SERVER_START_TIMEOUT)
    except RuntimeError as exc:
        raise BenchError(str(exc))
    try:
        client = placement_client.PlacementClient.from_endpoint(
            server.url, embedded.NOAUTH_HEADERS, timeout=REQUEST_TIMEOUT)
        setup_started = time.monotonic()
        name_of = fill_placement(client, names, aggregates)
        started = time.perf_counter()
        answer = nova.run_filters(FLAVOR, project_id=OWNER,
                                  aggregates=aggregates, hosts=names,
                                  blazar_filter=True)
        nova_s = time.perf_counter() - started
        if answer['refused']:
            raise BenchError('the request filter refused: %s'
                             % answer['refused'])
        setup_s = time.monotonic() - setup_started
        session = requests.Session()
        session.headers.update(embedded.NOAUTH_HEADERS)
        ours, ours_s = candidates(session, server.url, answer['query'],
                                  answer['microversion'], rounds)
        unfenced, unfenced_s = candidates(
            session, server.url, without_member_of(answer['query']),
            answer['microversion'], rounds)
    finally:
        server.stop()
    ours = {name_of[rp] for rp in ours}
    unfenced = {name_of[rp] for rp in unfenced}
    blazar_pass = {h for h, ok in answer['blazar_passes'].items()
                   if ok and h in unfenced}
    host_filter_pass = {h for h, ok in answer['host_passes'].items()
                        if ok and h in unfenced}
    for who, got in (('request filter', ours), ('BlazarFilter', blazar_pass),
                     ('ReservationHostFilter', host_filter_pass)):
        if got != plain:
            raise BenchError('%s: %d hosts instead of the %d plain ones'
                             % (who, len(got), len(plain)))
    return {
        'hosts': hosts,
        'blazar_hosts': hosts - len(plain),
        'blazar_aggregates': len(aggregates),
        'ours': {
            'placement_candidates': len(ours),
            'host_filter_checks': 0,
            'hosts_passing': len(ours),
            'placement_query_s': round(ours_s, 4),
            'member_of_aggregates': len(parse.parse_qs(
                answer['query'])['member_of'][0].split(',')),
        },
        'blazar_filter': {
            'placement_candidates': len(unfenced),
            'host_filter_checks': answer['blazar_checks'],
            'hosts_passing': len(blazar_pass),
            'placement_query_s': round(unfenced_s, 4),
        },
        'reservation_host_filter': {
            'placement_candidates': len(unfenced),
            'host_filter_checks': answer['host_filter_checks'],
            'decisions': answer['host_filter_decisions'],
            'hosts_passing': len(host_filter_pass),
            'placement_query_s': round(unfenced_s, 4),
        },
        'nova_child_s': round(nova_s, 2),
        'setup_s': round(setup_s, 2),
    }


def summary(result):
    o, b = result['ours'], result['blazar_filter']
    return ('hosts=%d (%d Blazar): request filter %d candidates, 0 host '
            'checks, query %.3f s; BlazarFilter %d candidates, %d host '
            'checks, query %.3f s; both keep %d hosts' % (
                result['hosts'], result['blazar_hosts'],
                o['placement_candidates'], o['placement_query_s'],
                b['placement_candidates'], b['host_filter_checks'],
                b['placement_query_s'], o['hosts_passing']))


def fraction(text):
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError('must be in [0, 1], not %s' % text)
    return value


def main(argv=None, watchdog=False):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--hosts', type=common.positive, nargs='+',
                        default=[1000],
                        help='numbers of compute nodes, one run (and one '
                        'JSON line) each (default: 1000)')
    parser.add_argument('--blazar-fraction', type=fraction, default=0.9,
                        help='share of the hosts in Blazar aggregates '
                        '(default: 0.9)')
    parser.add_argument('--rounds', type=common.positive, default=3,
                        help='Placement queries timed per path (median; '
                        'default: 3)')
    parser.add_argument('--timeout', type=common.positive, default=WATCHDOG,
                        help='seconds after which the command gives up, '
                        'printing where it was (default: %d)' % WATCHDOG)
    args = parser.parse_args(argv)
    if watchdog:
        faulthandler.dump_traceback_later(args.timeout, exit=True)
    started = time.monotonic()
    nova = nova_process.NovaProcess()
    try:
        nova.setUp()
        for hosts in args.hosts:
            result = run_once(hosts, args.blazar_fraction, args.rounds, nova)
            print(json.dumps(result), flush=True)
            print(summary(result), file=sys.stderr, flush=True)
    except (BenchError, placement_client.PlacementError,
            nova_process.NovaProcessError) as exc:
        print('scheduler bench: %s' % exc, file=sys.stderr)
        return 1
    finally:
        nova.cleanUp()
        if watchdog:
            faulthandler.cancel_dump_traceback_later()
    print('total %.1f s' % (time.monotonic() - started), file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main(watchdog=True))
