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
"""Usage reports on each database (SQLite, a real PostgreSQL, a real
MariaDB): the SQL that clips a lease to the period, reads its amounts
out of JSON and sums the hours is each database's own."""

import datetime

from placement_quota.lease import amounts as accounting
from placement_quota.ledger import models
from placement_quota.ledger import report
from placement_quota.ledger import store
from tests.functional.ledger import databases


def at(d, hour=0):
    return datetime.datetime(2026, 6, d, hour)


class Reports:

    def setUp(self):
        super().setUp()
        self.ledger = store.Ledger(self.database.url, migrate=True)
        self.addCleanup(self.ledger.dispose)

    def entry(self, project, user, start, end, amounts, charged=0,
              types=()):
        body = {'start_date': start.isoformat(), 'end_date': end.isoformat(),
                'reservations': [{'resource_type': t} for t in types]}
        with self.ledger.transaction([project]) as txn:
            allocation = txn.add_allocation(project, store.to_micro(1000))
            row = txn.insert(
                project_id=project, lease_id=None, provisional_key='k',
                name='n', user_id=user, start_date=start, end_date=end,
                state=models.PENDING, amounts=amounts, lease=body,
                hourly_rate=0, charged=store.to_micro(charged),
                allocation_id=allocation)
            if charged:
                txn.charge(project, row, allocation, store.to_micro(charged),
                           models.CHARGE_CREATE)

    def report(self, start, end, by='project', **kwargs):
        with self.ledger.reader() as txn:
            return {row.group: row.values for row in report.report(
                txn.connection, self.ledger.dialect, start, end, by,
                **kwargs)}

    def test_a_lease_crossing_the_edges_counts_its_part_inside(self):
        self.entry('p1', 'u', at(2, 12), at(5), {accounting.HOSTS: 2})
        found = self.report(at(3), at(4))
        self.assertEqual(48.0, found['p1']['host_hours'])

    def test_class_amounts_are_read_from_json(self):
        self.entry('p1', 'u', at(2), at(3), {accounting.INSTANCES: 2,
                                             accounting.VCPU: 8})
        found = self.report(at(1), at(10))['p1']
        self.assertEqual((48.0, 192.0), (found['instance_hours'],
                                         found['vcpu_hours']))

    def test_by_day_and_by_user(self):
        self.entry('p1', 'alice', at(2, 12), at(3, 12), {accounting.HOSTS: 1})
        self.entry('p1', 'bob', at(2), at(3), {accounting.HOSTS: 1})
        self.assertEqual({'2026-06-02': 36.0, '2026-06-03': 12.0}, {
            k: v['host_hours'] for k, v in self.report(
                at(2), at(4), by='day').items()})
        self.assertEqual({'alice': 24.0, 'bob': 24.0}, {
            k: v['host_hours'] for k, v in self.report(
                at(1), at(10), by='user').items()})

    def test_the_peak_and_its_moment(self):
        self.entry('p1', 'alice', at(2), at(5), {accounting.HOSTS: 1})
        self.entry('p1', 'bob', at(3, 6), at(4), {accounting.HOSTS: 2})
        self.entry('p1', 'bob', at(4), at(6), {accounting.HOSTS: 3})
        found = self.report(at(1), at(10))['p1']
        self.assertEqual((4.0, '2026-06-04T00:00:00'),
                         (found['peak_hosts'], found['peak_hosts_at']))
        total = self.report(at(1), at(10), by='total')['total']
        self.assertEqual(4.0, total['peak_hosts'])

    def test_credits_charged_in_the_period(self):
        self.entry('p1', 'u', at(2), at(3), {accounting.HOSTS: 1},
                   charged=24)
        found = self.report(datetime.datetime(2000, 1, 1),
                            datetime.datetime(2100, 1, 1))['p1']
        self.assertEqual((24.0, 24.0), (found['credits_charged'],
                                        found['credits_net']))

    def test_by_resource_type_with_its_credits(self):
        self.entry('p1', 'u', at(2), at(3), {accounting.HOSTS: 1},
                   charged=24, types=['physical:host'])
        self.entry('p1', 'u', at(2), at(3), {accounting.FLOATINGIPS: 2},
                   charged=5, types=['virtual:floatingip', 'physical:host'])
        # The charges are dated now: a period around now holds them.
        found = self.report(datetime.datetime(2000, 1, 1),
                            datetime.datetime(2100, 1, 1), by='resource-type')
        self.assertEqual(
            {'physical:host': (24.0, 0.0, 24.0),
             'physical:host+virtual:floatingip': (0.0, 48.0, 5.0)},
            {k: (v['host_hours'], v['floatingip_hours'],
                 v['credits_charged']) for k, v in found.items()})


class TestReportsOnSQLite(databases.OnSQLite, Reports,
                          databases.DatabaseTestCase):
    pass


class TestReportsOnPostgreSQL(databases.OnPostgreSQL, Reports,
                              databases.DatabaseTestCase):
    pass


class TestReportsOnMariaDB(databases.OnMariaDB, Reports,
                           databases.DatabaseTestCase):
    pass
