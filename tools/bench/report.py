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
"""Benchmark: a month's usage report on a ledger of a million leases.

Seeds ``--leases`` entries (default 1,000,000) over a year in
``--projects`` projects (hosts, instances with their classes, floating
IPs; a user each of five per project), bulk-inserted, then times
``placement_quota.ledger.report.report`` for one month:

* one project, grouped by user (``report_project_ms``);
* the whole cloud grouped by project (``report_cloud_ms``);
* the whole cloud grouped by day (``report_cloud_by_day_ms``).

On SQLite (a file) and, with ``--postgresql``, on a private PostgreSQL
cluster started as the tests start one. Median of ``--runs`` runs.

    python tools/bench/report.py [--leases 1000000] [--postgresql]

prints one JSON object a database on stdout; goals: one project's month
< 200 ms, the whole cloud by project < 5 s.
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

from placement_quota.lease import amounts as accounting  # noqa: E402
from placement_quota.ledger.db import backfill  # noqa: E402
from placement_quota.ledger import models  # noqa: E402
from placement_quota.ledger import report  # noqa: E402
from placement_quota.ledger import store  # noqa: E402
from tools.bench import common  # noqa: E402

START = datetime.datetime(2030, 1, 1)
MONTH = (datetime.datetime(2030, 6, 1), datetime.datetime(2030, 7, 1))
GOALS_MS = {'report_project_ms': 200, 'report_cloud_ms': 5000}


def seed(ledger, leases, projects, rng):
    now = datetime.datetime.utcnow()
    names = ['project-%d' % i for i in range(projects)]
    batch = []

    def flush():
        with ledger.engine.begin() as connection:
            connection.execute(models.leases.insert(), batch)
        batch.clear()

    for i in range(leases):
        start = START + datetime.timedelta(
            minutes=rng.randrange(0, 365 * 24 * 60))
        end = start + datetime.timedelta(hours=rng.randint(1, 96))
        kind = i % 3
        if kind == 0:
            amounts = {accounting.HOSTS: rng.randint(1, 4)}
            types = ['physical:host']
        elif kind == 1:
            types = ['virtual:instance']
            count = rng.randint(1, 8)
            amounts = {accounting.INSTANCES: count,
                       accounting.VCPU: 2 * count,
                       accounting.MEMORY_MB: 4096 * count,
                       accounting.DISK_GB: 20 * count}
        else:
            amounts = {accounting.FLOATINGIPS: rng.randint(1, 2)}
            types = ['virtual:floatingip']
        project = names[i % projects]
        batch.append(dict(
            project_id=project, lease_id=None, provisional_key='s%d' % i,
            name='seed-%d' % i, user_id='%s-user-%d' % (project, i % 5),
            start_date=start, end_date=end, effective_end=end,
            duration_s=int((end - start).total_seconds()),
            # resource_type left NULL: the upgrade's backfill fills it.
            state=models.PENDING, amounts=amounts, lease={
                'reservations': [{'resource_type': t} for t in types]},
            hourly_rate=0, charged=0, created_at=now,
            **accounting.instance_columns(amounts)))
        if len(batch) == 20000:
            flush()
    if batch:
        flush()


def timed(ledger, runs, **kwargs):
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        with ledger.reader() as txn:
            rows = report.report(txn.connection, ledger.dialect, *MONTH,
                                 **kwargs)
        times.append((time.perf_counter() - began) * 1000)
    return round(statistics.median(times), 1), len(rows)


def run(url, args, rng):
    ledger = store.Ledger(url, migrate=True)
    try:
        began = time.perf_counter()
        seed(ledger, args.leases, args.projects, rng)
        seeded = time.perf_counter() - began
        # What the upgrade to ledger revision 0011 does to these entries.
        began = time.perf_counter()
        with ledger.engine.begin() as connection:
            backfill.resource_types(connection)
        filled = time.perf_counter() - began
        type_ms, types = timed(ledger, args.runs, by='resource-type')
        project_ms, _ = timed(ledger, args.runs, by='user',
                              projects=['project-7'])
        cloud_ms, groups = timed(ledger, args.runs, by='project')
        day_ms, days = timed(ledger, args.runs, by='day')
    finally:
        ledger.dispose()
    result = {'ledger': ledger.dialect, 'leases': args.leases,
              'projects': args.projects, 'seed_seconds': round(seeded, 1),
              'report_project_ms': project_ms,
              'report_cloud_ms': cloud_ms, 'cloud_groups': groups,
              'report_cloud_by_day_ms': day_ms, 'days': days,
              'report_cloud_by_type_ms': type_ms, 'types': types,
              'backfill_resource_type_s': round(filled, 1),
              'goals_ms': GOALS_MS}
    result['goals_met'] = all(result[k] < v for k, v in GOALS_MS.items())
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--leases', type=common.positive, default=1000000)
    parser.add_argument('--projects', type=common.positive, default=1000)
    parser.add_argument('--runs', type=common.positive, default=3)
    parser.add_argument('--postgresql', action='store_true',
                        help='Also on a private PostgreSQL cluster.')
    parser.add_argument('--seed', type=int, default=42)
    args = parser.parse_args(argv)
    directory = tempfile.mkdtemp(prefix='pq-bench-report-')
    results = [run('sqlite:///%s' % os.path.join(directory, 'l.sqlite'),
                   args, random.Random(args.seed))]
    if args.postgresql:
        from tests.fixtures import postgresql
        server = postgresql.PostgreSQLServer()
        server.start()
        try:
            server.create_database('report')
            results.append(run(server.url('report'), args,
                               random.Random(args.seed)))
        finally:
            server.stop()
    for result in results:
        print(json.dumps(result))
        sys.stderr.write(
            '%s, %d leases: one project\'s month by user %.1f ms (goal < '
            '200), the cloud by project %.1f ms (goal < 5000), by day %.1f '
            'ms\n' % (result['ledger'], result['leases'],
                      result['report_project_ms'], result['report_cloud_ms'],
                      result['report_cloud_by_day_ms']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
