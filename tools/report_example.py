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
"""Make the example chart of the reports guide.

A SQLite ledger in a temporary directory gets the example data: account
``physics`` (limits: 12 hosts, 40 instances; 16 hosts from June 15) and
its child ``optics``,
with leases of June 2026 (hosts and instances of a few days each, two
ended early, charged by CreditFilter's rates); then the real command
draws it::

    placement-quota report --start 2026-06-01 --end 2026-07-01 \\
        --account physics --by day --chart report-example.png

    python tools/report_example.py doc/source/_static/report-example.png
"""

import datetime
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from placement_quota.accounts import store as accounts_store  # noqa: E402
from placement_quota.lease import amounts as accounting  # noqa: E402
from placement_quota.ledger import models  # noqa: E402
from placement_quota.ledger import store  # noqa: E402


def seed(url):
    ledger = store.Ledger(url, migrate=True)
    rng = random.Random(7)
    created = datetime.datetime(2026, 5, 31)
    with ledger.transaction() as txn:
        accounts_store.insert(txn.connection, 'physics', None,
                              {'hosts': 12, 'instances': 40}, {}, created)
        accounts_store.insert(txn.connection, 'optics', 'physics', {}, {},
                              created)
    with ledger.transaction() as txn:
        # Raised in the middle of the month: the chart's limit steps.
        accounts_store.update(txn.connection, 'physics', None,
                              {'hosts': 16, 'instances': 40}, {},
                              datetime.datetime(2026, 6, 15))
    for i in range(30):
        project = ('physics', 'optics')[i % 2]
        start = datetime.datetime(2026, 6, 1) + datetime.timedelta(
            hours=rng.randrange(0, 27 * 24))
        end = start + datetime.timedelta(hours=rng.randint(12, 96))
        if i % 3:
            amounts = {accounting.HOSTS: rng.randint(1, 2)}
            rate = 1.0 * amounts[accounting.HOSTS]
        else:
            count = rng.randint(2, 6)
            amounts = {accounting.INSTANCES: count,
                       accounting.VCPU: 4 * count}
            rate = 0.1 * amounts[accounting.VCPU]
        hours = (end - start).total_seconds() / 3600
        # Charged when the lease was created, as CreditFilter does.
        ledger.clock = lambda: start
        with ledger.transaction([project]) as txn:
            allocation = txn.add_allocation(project, store.to_micro(10000))
            row = txn.insert(
                project_id=project, lease_id=None, provisional_key='e%d' % i,
                name='lease-%d' % i, user_id='user-%d' % (i % 4),
                start_date=start, end_date=end, state=models.PENDING,
                amounts=amounts, lease={'reservations': []},
                hourly_rate=store.to_micro(rate),
                charged=store.to_micro(rate * hours),
                allocation_id=allocation, created_at=start)
            txn.charge(project, row, allocation,
                       store.to_micro(rate * hours), models.CHARGE_CREATE)
    ledger.dispose()


def main(argv):
    output = os.path.abspath(argv[0] if argv else 'report-example.png')
    directory = tempfile.mkdtemp(prefix='pq-report-example-')
    url = 'sqlite:///%s' % os.path.join(directory, 'ledger.sqlite')
    seed(url)
    config = os.path.join(directory, 'placement-quota.conf')
    with open(config, 'w') as f:
        f.write('[database]\nconnection = %s\n' % url)
    return subprocess.call(
        [sys.executable, '-m', 'placement_quota.cmd.main', '--config-file',
         config, 'report', '--start', '2026-06-01', '--end', '2026-07-01',
         '--account', 'physics', '--by', 'day', '--chart', output,
         '-f', 'value', '-c', 'group', '-c', 'host_hours'])


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
