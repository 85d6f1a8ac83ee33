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
"""The resource-type migration (revision 0011): the entries an older
ledger holds get their reservation types from their lease, in batches."""

import json
import os

import alembic.command
import fixtures
import sqlalchemy as sa
import testtools

from placement_quota.ledger.db import backfill
from placement_quota.ledger import models
from placement_quota.ledger import store
from tests.builders import at
from tests.builders import day
from tests.builders import floatingips
from tests.builders import hosts
from tests.builders import instances
from tests.builders import lease

BODIES = [lease(day(2), day(4), hosts('a')),
          lease(day(2), day(4), instances(2)),
          lease(day(2), day(4), hosts('a'), floatingips(1)),
          {'reservations': []}]


class TestResourceTypeMigration(testtools.TestCase):

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        url = 'sqlite:///' + os.path.join(tmp, 'ledger.sqlite')
        # Small batches: the entries span several of them.
        self.useFixture(fixtures.MockPatchObject(backfill, 'BATCH', 3))
        old = sa.create_engine(url)
        with old.begin() as connection:
            alembic.command.upgrade(store._alembic_config(connection),
                                    '0010')
            for i in range(2):
                for body in BODIES:
                    connection.execute(sa.text(
                        "INSERT INTO leases (project_id, provisional_key, "
                        "start_date, end_date, effective_end, duration_s, "
                        "state, amounts, instance_vcpus, instance_memory_mb, "
                        "instance_disk_gb, instance_hosts, lease, "
                        "hourly_rate, charged, created_at) VALUES ('p', 'k', "
                        ":start, :end, :end, 172800, 'pending', '{}', 0, 0, "
                        "0, '', :body, 0, 0, :start)"),
                        {'start': at(2), 'end': at(4),
                         'body': json.dumps(body)})
        old.dispose()
        # Migrated on open (SQLite).
        self.ledger = store.Ledger(url)
        self.addCleanup(self.ledger.dispose)

    def test_every_entry_gets_the_types_of_its_lease(self):
        t = models.leases
        with self.ledger.reader() as txn:
            found = [row.resource_type for row in txn.connection.execute(
                sa.select(t.c.resource_type).order_by(t.c.id))]
        self.assertEqual(['physical:host', 'virtual:instance',
                          'physical:host+virtual:floatingip', None] * 2,
                         found)
