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
"""Benchmark: Blazar's lease list of N leases through python-blazarclient,
and a whole ``reconcile`` (with ``[blazar]``) of a ledger of N entries.

The real Blazar API (``blazar`` from PyPI, ``tests/fixtures/blazar.py``:
its API and manager in one process, SQLite, tokens checked by the real
Keystone of ``tests/fixtures/keystone.py``) gets N leases written with
Blazar's own database API (``seed()``, in batches), each with one
``virtual:instance`` reservation, over 100 projects. A SQLite ledger gets
N entries, each bound to one of those leases with its dates, so that
nothing drifts; a fresh embedded Placement (noauth2) is empty.

* **list**: ``BlazarReader.leases()``, i.e. python-blazarclient's
  ``lease.list()`` (``GET /v1/leases``, every project, no paging), as an
  admin: wall time, median of ``--rounds``;
* **reconcile**: ``runner.reconcile`` with that reader (a dry run: read
  Placement, the ledger, Blazar, compare), wall time, median of
  ``--rounds``; it must find no drift.

    python tools/bench/reconcile_blazar.py --leases 10000

prints one JSON object per ``--leases`` value on stdout and a summary on
stderr.
"""

import argparse
import datetime
import faulthandler
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from oslo_utils import timeutils  # noqa: E402

from placement_quota import conf as pq_conf  # noqa: E402
from placement_quota.ledger import keys  # noqa: E402
from placement_quota.ledger import models  # noqa: E402
from placement_quota.ledger import store  # noqa: E402
from placement_quota.placement import client as placement_client  # noqa: E402,E501
from placement_quota.placement import embedded  # noqa: E402
from placement_quota.reconcile import readers  # noqa: E402
from placement_quota.reconcile import runner  # noqa: E402
from tests.fixtures import blazar as blazar_fixture  # noqa: E402
from tests.fixtures import keystone as keystone_fixture  # noqa: E402
from tools.bench import common  # noqa: E402

WATCHDOG = 3600
BATCH = 1000
PROJECTS = 100


class BenchError(Exception):
    """The benchmark could not run, or found drift where none was
    seeded."""


def leases(count, now):
    """``count`` leases as ``seed()`` takes them."""
    found = []
    for i in range(count):
        start = now + datetime.timedelta(days=1, minutes=i)
        found.append({
            'name': 'bench-%05d' % i, 'project_id': 'p%03d' % (i % PROJECTS),
            'user_id': 'u1', 'start_date': start,
            'end_date': start + datetime.timedelta(days=1),
            'status': 'PENDING', 'trust_id': 't', 'reservations': [{
                'id': str(uuid.uuid4()), 'resource_id': str(uuid.uuid4()),
                'resource_type': 'virtual:instance', 'status': 'pending'}]})
    return found


def seed_blazar(blazar, bodies):
    ids = []
    for i in range(0, len(bodies), BATCH):
        ids.extend(blazar.seed(bodies[i:i + BATCH]))
    return ids


def seed_ledger(ledger, bodies, ids):
    with ledger.transaction() as txn:
        for body, lease_id in zip(bodies, ids):
            project = body['project_id']
            lease = {'name': body['name'],
                     'start_date': body['start_date'].isoformat(),
                     'end_date': body['end_date'].isoformat(),
                     # No reservation ID: no class is expected in the
                     # (empty) Placement.
                     'reservations': [{'resource_type': 'virtual:instance',
                                       'allocations': []}]}
            txn.insert(project_id=project, lease_id=lease_id,
                       provisional_key=keys.fingerprint(project, 'u1', lease),
                       shape_key=keys.shape(project, lease),
                       name=body['name'], user_id='u1',
                       start_date=body['start_date'],
                       end_date=body['end_date'], state=models.PENDING,
                       amounts={}, lease=lease, hourly_rate=0, charged=0)


def run_once(count, rounds, keystone):
    now = timeutils.utcnow().replace(second=0, microsecond=0)
    blazar = blazar_fixture.BlazarServer(keystone).start()
    server = None
    state_dir = tempfile.mkdtemp(prefix='bench-reconcile-blazar-')
    ledger = store.Ledger('sqlite:///%s/ledger.sqlite' % state_dir)
    try:
        server = embedded.ServerProcess()
        client = placement_client.PlacementClient.from_endpoint(
            server.url, embedded.NOAUTH_HEADERS)
        bodies = leases(count, now)
        started = time.monotonic()
        ids = seed_blazar(blazar, bodies)
        seed_s = time.monotonic() - started
        seed_ledger(ledger, bodies, ids)
        conf = pq_conf.new_config([], config_files=[])
        keystone.set_admin_options(conf, 'blazar')
        conf.set_override('endpoint_override', blazar.endpoint,
                          group='blazar')
        reader = readers.BlazarReader.from_conf(conf)
        list_times = []
        for _ in range(rounds):
            began = time.perf_counter()
            listed = len(reader.leases())
            list_times.append(time.perf_counter() - began)
        if listed != count:
            raise BenchError('Blazar listed %d leases, %d seeded'
                             % (listed, count))
        reconcile_times, found = [], None
        for _ in range(rounds):
            report = runner.reconcile(client, ledger, blazar=reader,
                                      now=now, show_progress=False)
            reconcile_times.append(report.seconds)
            found = [f.kind for f in report.findings]
        if found:
            raise BenchError('found drift where none was seeded: %s'
                             % sorted(set(found)))
    finally:
        ledger.dispose()
        if server is not None:
            server.stop()
        blazar.stop()
        shutil.rmtree(state_dir, ignore_errors=True)
    return {'leases': count, 'ledger_entries': count, 'rounds': rounds,
            'seed_s': round(seed_s, 1),
            'list_s': round(statistics.median(list_times), 2),
            'list_s_all': [round(t, 2) for t in list_times],
            'reconcile_s': round(statistics.median(reconcile_times), 2),
            'reconcile_s_all': [round(t, 2) for t in reconcile_times],
            'findings': len(found)}


def summary(result):
    return ('leases=%d: lease list %.2f s, whole reconcile %.2f s '
            '(median of %d); seeding %.1f s' % (
                result['leases'], result['list_s'], result['reconcile_s'],
                result['rounds'], result['seed_s']))


def main(argv=None, watchdog=False):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--leases', type=common.positive, nargs='+',
                        default=[10000],
                        help='numbers of leases (and ledger entries), one '
                        'run (and one JSON line) each (default: 10000)')
    parser.add_argument('--rounds', type=common.positive, default=3,
                        help='timed runs (median; default: 3)')
    parser.add_argument('--timeout', type=common.positive, default=WATCHDOG,
                        help='seconds after which the command gives up, '
                        'printing where it was (default: %d)' % WATCHDOG)
    args = parser.parse_args(argv)
    if watchdog:
        faulthandler.dump_traceback_later(args.timeout, exit=True)
    started = time.monotonic()
    keystone = keystone_fixture.KeystoneFixture()
    keystone.setUp()
    try:
        for count in args.leases:
            result = run_once(count, args.rounds, keystone)
            print(json.dumps(result), flush=True)
            print(summary(result), file=sys.stderr, flush=True)
    except (BenchError, readers.BlazarError,
            placement_client.PlacementError) as exc:
        print('reconcile_blazar bench: %s' % exc, file=sys.stderr)
        return 1
    finally:
        keystone.cleanUp()
        if watchdog:
            faulthandler.cancel_dump_traceback_later()
    print('total %.1f s' % (time.monotonic() - started), file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main(watchdog=True))
