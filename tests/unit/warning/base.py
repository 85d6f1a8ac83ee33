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
"""A ledger and a configuration for the warning tests."""

import datetime
import os

import fixtures
import testtools

from placement_quota import conf as pq_conf
from placement_quota.ledger import models
from placement_quota.ledger import store

NOW = datetime.datetime(2026, 11, 28, 12, 0)
HOUR = datetime.timedelta(hours=1)
DAY = datetime.timedelta(days=1)


class WarningCase(testtools.TestCase):
    """A SQLite ledger whose clock is :data:`NOW`, and ``conf`` with the
    default ``[warnings]``; :meth:`lease` and :meth:`allocation` write
    to it."""

    def setUp(self):
        super().setUp()
        self.ledger = store.Ledger(self.ledger_url(), migrate=True)
        self.addCleanup(self.ledger.dispose)
        self.now = NOW
        self.ledger.clock = lambda: self.now
        self.conf = pq_conf.new_config([], config_files=[])

    def ledger_url(self):
        """The ledger database: a SQLite file of the test's own."""
        workdir = self.useFixture(fixtures.TempDir()).path
        return 'sqlite:///' + os.path.join(workdir, 'ledger.sqlite')

    def set(self, **options):
        for name, value in options.items():
            self.conf.set_override(name, value, group='warnings')

    def lease(self, start, end, project='p1', user='u1', state=None,
              name=None, charged=0, allocation=None):
        """A ledger entry over ``[start, end)``; its row ID."""
        if state is None:
            state = models.ACTIVE if start <= self.now else models.PENDING
        with self.ledger.transaction([project], now=self.now) as txn:
            row = txn.insert(
                project_id=project, user_id=user, provisional_key='k',
                lease_id='lease-%s' % (name or start.isoformat()),
                name=name or 'lease', start_date=start, end_date=end,
                state=state, amounts={}, lease={},
                hourly_rate=0, charged=store.to_micro(charged),
                allocation_id=allocation)
            if charged and allocation is not None:
                txn.charge(project, row, allocation, store.to_micro(charged),
                           models.CHARGE_CREATE)
        return row

    def allocation(self, amount, project='p1', start=None, end=None,
                   spent=0, resource_class=None):
        """A credit allocation with ``spent`` charged to it; its ID."""
        with self.ledger.transaction([project], now=self.now) as txn:
            allocation = txn.add_allocation(
                project, store.to_micro(amount), start, end,
                resource_class=resource_class)
            if spent:
                txn.charge(project, None, allocation, store.to_micro(spent),
                           models.CHARGE_CREATE)
        return allocation

    def charge(self, allocation, amount, project='p1'):
        with self.ledger.transaction([project], now=self.now) as txn:
            txn.charge(project, None, allocation, store.to_micro(amount),
                       models.CHARGE_CREATE)
