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
"""Benchmark: Placement calls and wall time of an instance reservation's
host add, lease start and lease end on N hosts, ours vs Blazar's client.

For each ``--hosts`` value, a fresh real Placement (the embedded server,
``python -m placement_quota.cmd.embedded_placement``, noauth2) runs in a
subprocess on 127.0.0.1 with a new SQLite database in a temporary
directory. 2N compute node providers with VCPU inventory are created
(not timed); our code and stock Blazar's ``BlazarPlacementClient`` then
each work on their own N of them:

=========  ===============================  ================================
phase      ours                             Blazar (what its plugins call)
=========  ===============================  ================================
add        ``ReservationProviders.ensure``  ``create_reservation_provider``
                                            per host (host plugin, host add)
start      ``Transitions.start``            ``create_reservation_class``
                                            (done at reservation creation in
                                            Blazar; counted here since ours
                                            does it at start), then
                                            ``update_reservation_inventory``
                                            per host (instance plugin
                                            ``on_start``)
end        ``Transitions.end``              ``delete_reservation_inventory``
                                            per host, then
                                            ``delete_reservation_class``
                                            (``on_end``)
=========  ===============================  ================================

Blazar's client runs unmodified except for its credential: its
``_create_client`` still builds a new keystoneauth session and adapter for
every request, but is given the Placement URL as ``endpoint_override`` and
the noauth2 headers, and its session no auth plugin (so no Keystone token
request is made or counted: real Blazar would also fetch a token per
request).

Calls are real HTTP requests, counted where ``requests`` sends them
(``HTTPAdapter.send``) and cross-checked against keystoneauth's
``Session.request`` and, for ours, ``PlacementClient.calls``. After each
phase both results are verified in Placement (providers under their compute
nodes; inventories of total = instances after start; inventories and class
gone after end); any mismatch exits non-zero.

    python tools/bench/placement_roundtrips.py --hosts 10 100 1000

prints one JSON object per ``--hosts`` value on stdout, and a summary on
stderr. Bounded: every request and the server start have a timeout, and the
command gives up after ``--timeout`` seconds (default 1800), printing every
thread's stack. N=1000 takes about two minutes on 2 cores.
"""

import argparse
import concurrent.futures
import contextlib
import faulthandler
import json
import os
import sys
import threading
import time
import uuid
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from placement_quota.placement import client as placement_client  # noqa: E402,E501
from placement_quota.placement import embedded  # noqa: E402
from placement_quota.placement import reservations  # noqa: E402
from tools.bench import common  # noqa: E402

#: The goals.
GOAL_CALLS = 3          # per transition, whatever N
GOAL_SPEEDUP_AT = 100   # hosts
GOAL_SPEEDUP = 10.0     # Blazar's wall time / ours, start and end
SERVER_START_TIMEOUT = 120
REQUEST_TIMEOUT = 120
WATCHDOG = 1800         # seconds for the whole command line run
VCPUS = 64
CHECK_WORKERS = 4
PHASES = ('add', 'start', 'end')


class BenchError(Exception):
    """The benchmark could not run, or a client's result was wrong."""


# --- counting HTTP requests -------------------------------------------------

class RequestCounter:
    """Counts, process-wide while installed, the HTTP requests ``requests``
    sends (``HTTPAdapter.send``: one per request on the wire, whatever
    session or adapter object made it) and keystoneauth's
    ``Session.request`` calls."""

    def __init__(self):
        self.http = 0
        self.keystoneauth = 0
        self._lock = threading.RLock()

    def _counting(self, method, attribute):
        def wrapper(*args, **kwargs):
            with self._lock:
                setattr(self, attribute, getattr(self, attribute) + 1)
            return method(*args, **kwargs)
        return wrapper

    @contextlib.contextmanager
    def installed(self):
        from keystoneauth1 import session as ks_session
        from requests import adapters

        patches = ((adapters.HTTPAdapter, 'send', 'http'),
                   (ks_session.Session, 'request', 'keystoneauth'))
        originals = [(cls, name, cls.__dict__[name])
                     for cls, name, _ in patches]
        for cls, name, attribute in patches:
            setattr(cls, name, self._counting(cls.__dict__[name],
                                              attribute))
        try:
            yield self
        finally:
            for cls, name, original in originals:
                setattr(cls, name, original)

    def snapshot(self):
        with self._lock:
            return self.http, self.keystoneauth


# --- the two clients --------------------------------------------------------

def blazar_client_class(endpoint):
    """Stock ``BlazarPlacementClient``, talking noauth2 to ``endpoint``.

    Blazar's own ``_create_client`` runs for each request (reading its
    global CONF options and making a new session and adapter); it is only
    given the endpoint and headers, and its session's Keystone password
    plugin is dropped.
    """
    with warnings.catch_warnings():
        # blazar imports eventlet through futurist, which warns on import.
        warnings.simplefilter('ignore')
        import blazar.config  # noqa: F401 - registers os_*, cafile
        from blazar.utils.openstack import keystone  # noqa: F401 - region
        from blazar.utils.openstack import placement as blazar_placement

    headers = dict(embedded.NOAUTH_HEADERS, accept='application/json')

    class NoauthBlazarPlacementClient(
            blazar_placement.BlazarPlacementClient):

        def _create_client(self, **kwargs):
            kwargs.setdefault('endpoint_override', endpoint)
            kwargs.setdefault('additional_headers', dict(headers))
            client = super()._create_client(**kwargs)
            client.session.auth = None  # noauth2: no Keystone token
            client.session.timeout = REQUEST_TIMEOUT
            return client

    return NoauthBlazarPlacementClient


class Ours:
    name = 'ours'

    def __init__(self, endpoint):
        self.client = placement_client.PlacementClient.from_endpoint(
            endpoint, embedded.NOAUTH_HEADERS, timeout=REQUEST_TIMEOUT)
        self.providers = reservations.ReservationProviders(self.client)
        self.transitions = reservations.Transitions(self.client,
                                                    self.providers)

    def add(self, hosts):
        self.providers.ensure(hosts)

    def start(self, reservation_id, instances_by_host):
        self.transitions.start(reservation_id, instances_by_host)

    def end(self, reservation_id, hosts):
        self.transitions.end(reservation_id, hosts)

    def calls(self):
        return self.client.calls


class Blazar:
    name = 'blazar'

    def __init__(self, endpoint):
        self.client = blazar_client_class(endpoint)()

    def add(self, hosts):
        # blazar/plugins/oshosts/host_plugin.py create_computehost
        for host in hosts:
            self.client.create_reservation_provider(host)

    def start(self, reservation_id, instances_by_host):
        # blazar/plugins/instances/instance_plugin.py: _create_resources
        # (at reservation creation), then on_start.
        self.client.create_reservation_class(reservation_id)
        for host, instances in instances_by_host.items():
            self.client.update_reservation_inventory(host, reservation_id,
                                                     instances)

    def end(self, reservation_id, hosts):
        # instance_plugin.py on_end
        for host in hosts:
            self.client.delete_reservation_inventory(host, reservation_id)
        self.client.delete_reservation_class(reservation_id)

    def calls(self):
        return None


# --- setup and verification (not timed, not counted) ------------------------

def create_compute_nodes(checker, names):
    """Compute node providers with VCPU inventory; ``{name: uuid}``."""
    created = {}
    for name in names:
        rp = checker.post('/resource_providers', json={'name': name}).json()
        created[name] = rp
    checker.post('/reshaper', json={'inventories': {
        rp['uuid']: {'resource_provider_generation': rp['generation'],
                     'inventories': {'VCPU': {'total': VCPUS}}}
        for rp in created.values()}, 'allocations': {}})
    return {name: rp['uuid'] for name, rp in created.items()}


def _reservation_providers(checker, compute_nodes, who):
    """``{host: reservation provider uuid}``, checking each is a child of
    its compute node."""
    by_name = {rp['name']: rp for rp in
               checker.get('/resource_providers')['resource_providers']}
    found, wrong = {}, []
    for host, parent in compute_nodes.items():
        rp = by_name.get(reservations.provider_name(host))
        if rp is None or rp['parent_provider_uuid'] != parent:
            wrong.append(host)
        else:
            found[host] = rp['uuid']
    if wrong:
        raise BenchError('%s: after add, %d of %d hosts lack a reservation '
                         'provider under their compute node (e.g. %s)'
                         % (who, len(wrong), len(compute_nodes), wrong[0]))
    return found


def _inventories(checker, providers):
    def read(item):
        host, uuid_ = item
        return host, checker.get('/resource_providers/%s/inventories'
                                 % uuid_)['inventories']

    with concurrent.futures.ThreadPoolExecutor(CHECK_WORKERS) as pool:
        return dict(pool.map(read, providers.items()))


def verify_started(checker, providers, reservation_id, instances, who):
    rc = reservations.reservation_class(reservation_id)
    wrong = {host: inventories.get(rc, {}).get('total')
             for host, inventories in _inventories(checker,
                                                   providers).items()
             if inventories.get(rc, {}).get('total') != instances}
    if wrong:
        host = sorted(wrong)[0]
        raise BenchError('%s: after start, %d of %d hosts do not have an '
                         'inventory of %s with total %d (e.g. %s: %s)'
                         % (who, len(wrong), len(providers), rc, instances,
                            host, wrong[host]))


def verify_ended(checker, providers, reservation_id, who):
    rc = reservations.reservation_class(reservation_id)
    left = sorted(host for host, inventories in
                  _inventories(checker, providers).items()
                  if rc in inventories)
    if left:
        raise BenchError('%s: after end, %d of %d hosts still have an '
                         'inventory of %s (e.g. %s)'
                         % (who, len(left), len(providers), rc, left[0]))
    try:
        checker.get('/resource_classes/' + rc)
    except placement_client.NotFound:
        return
    raise BenchError('%s: after end, resource class %s still exists'
                     % (who, rc))


# --- the run ----------------------------------------------------------------

def timed(counter, runner, function, *args):
    """Run one phase; return ``(http calls, seconds)``, checking that every
    layer counted the same requests."""
    http, keystoneauth = counter.snapshot()
    ours = runner.calls()
    started = time.perf_counter()
    function(*args)
    elapsed = time.perf_counter() - started
    http_after, keystoneauth_after = counter.snapshot()
    calls = http_after - http
    counts = {'HTTP requests': calls,
              'keystoneauth requests': keystoneauth_after - keystoneauth}
    if ours is not None:
        counts['PlacementClient.calls'] = runner.calls() - ours
    if len(set(counts.values())) != 1:
        raise BenchError('%s %s: the request counts disagree: %s'
                         % (runner.name, function.__name__, counts))
    return calls, elapsed


def run_once(hosts, instances, counter):
    """Both clients on ``hosts`` hosts each, on a fresh Placement."""
    try:
        server = embedded.ServerProcess(SERVER_START_TIMEOUT)
    except RuntimeError as exc:
        raise BenchError(str(exc))
    try:
        checker = placement_client.PlacementClient.from_endpoint(
            server.url, embedded.NOAUTH_HEADERS, timeout=REQUEST_TIMEOUT)
        runners = (Ours(server.url), Blazar(server.url))
        names = {r.name: ['cn-%s-%05d' % (r.name, i) for i in range(hosts)]
                 for r in runners}
        nodes = create_compute_nodes(
            checker, names['ours'] + names['blazar'])
        compute_nodes = {r.name: {h: nodes[h] for h in names[r.name]}
                         for r in runners}
        reservation_ids = {r.name: str(uuid.uuid4()) for r in runners}
        result = {r.name: {} for r in runners}

        def phase(runner, key, function, *args):
            calls, seconds = timed(counter, runner, function, *args)
            result[runner.name][key + '_calls'] = calls
            result[runner.name][key + '_s'] = round(seconds, 4)

        providers = {}
        for runner in runners:
            phase(runner, 'add', runner.add, names[runner.name])
            providers[runner.name] = _reservation_providers(
                checker, compute_nodes[runner.name], runner.name)
        for runner in runners:
            wanted = dict.fromkeys(names[runner.name], instances)
            phase(runner, 'start', runner.start,
                  reservation_ids[runner.name], wanted)
            verify_started(checker, providers[runner.name],
                           reservation_ids[runner.name], instances,
                           runner.name)
        for runner in runners:
            phase(runner, 'end', runner.end, reservation_ids[runner.name],
                  names[runner.name])
            verify_ended(checker, providers[runner.name],
                         reservation_ids[runner.name], runner.name)
    finally:
        server.stop()
    order = [k + suffix for suffix in ('_calls', '_s') for k in PHASES]
    return {'hosts': hosts,
            'ours': {k: result['ours'][k] for k in order},
            'blazar': {k: result['blazar'][k] for k in order}}


def summary(result, seconds):
    ours, blazar = result['ours'], result['blazar']
    ratios = ', '.join(
        '%s %.1fx' % (p, blazar[p + '_s'] / ours[p + '_s'])
        if ours[p + '_s'] else '%s -' % p for p in PHASES)
    return ('hosts=%d: calls ours %s, blazar %s; blazar/ours wall time: %s '
            '(run %.1f s)' % (
                result['hosts'],
                '/'.join(str(ours[p + '_calls']) for p in PHASES),
                '/'.join(str(blazar[p + '_calls']) for p in PHASES),
                ratios, seconds))


def main(argv=None, watchdog=False):
    """Run the benchmark; return the exit status. ``watchdog`` (the
    command line) dumps every thread's stack and exits if the whole run
    takes more than ``--timeout`` seconds."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--hosts', type=common.positive, nargs='+',
                        default=[100],
                        help='numbers of hosts, one run (and one JSON line) '
                        'each (default: 100)')
    parser.add_argument('--instances', type=common.positive, default=2,
                        help='instances reserved per host (default: 2)')
    parser.add_argument('--timeout', type=common.positive, default=WATCHDOG,
                        help='seconds after which the command gives up, '
                        'printing where it was (default: %d)' % WATCHDOG)
    args = parser.parse_args(argv)
    if watchdog:
        faulthandler.dump_traceback_later(args.timeout, exit=True)

    counter = RequestCounter()
    started = time.monotonic()
    try:
        with counter.installed():
            for hosts in args.hosts:
                run_started = time.monotonic()
                result = run_once(hosts, args.instances, counter)
                print(json.dumps(result), flush=True)
                print(summary(result, time.monotonic() - run_started),
                      file=sys.stderr, flush=True)
    except (BenchError, placement_client.PlacementError) as exc:
        print('placement_roundtrips: %s' % exc, file=sys.stderr)
        return 1
    finally:
        if watchdog:
            faulthandler.cancel_dump_traceback_later()
    print('total %.1f s' % (time.monotonic() - started), file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main(watchdog=True))
