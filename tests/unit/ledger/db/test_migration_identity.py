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
"""The lease-identity migration: entries an older ledger keyed on project
and name are found by their fingerprint and shape afterwards."""

import json
import os

import alembic.command
import fixtures
import sqlalchemy as sa
import testtools

from placement_quota.ledger import keys
from placement_quota.ledger import store
from tests.builders import at
from tests.builders import day
from tests.builders import hosts
from tests.builders import lease

BODY = lease(day(2), day(4), hosts('a'), name='old')


class TestIdentityMigration(testtools.TestCase):

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        url = 'sqlite:///' + os.path.join(tmp, 'ledger.sqlite')
        # A ledger of the previous schema, holding an entry keyed on its
        # project and name.
        old = sa.create_engine(url)
        with old.begin() as connection:
            alembic.command.upgrade(store._alembic_config(connection),
                                    '0002')
            connection.execute(sa.text(
                "INSERT INTO leases (project_id, lease_id, provisional_key, "
                "name, user_id, start_date, end_date, effective_end, "
                "duration_s, state, amounts, instance_vcpus, "
                "instance_memory_mb, instance_disk_gb, instance_hosts, "
                "lease, hourly_rate, charged, created_at) VALUES ('p', NULL, "
                "'name-key', 'old', 'u', :start, :end, :end, 172800, "
                "'pending', '{}', 0, 0, 0, '', :body, 0, 0, :start)"),
                {'start': at(2), 'end': at(4), 'body': json.dumps(BODY)})
        old.dispose()
        # Migrated on open (SQLite).
        self.ledger = store.Ledger(url)
        self.addCleanup(self.ledger.dispose)

    def test_an_unbound_entry_is_found_by_its_fingerprint(self):
        with self.ledger.transaction() as txn:
            entry = txn.find('p', None, keys.fingerprint('p', 'u', BODY))
        self.assertEqual('old', entry.name)

    def test_an_unbound_entry_is_found_by_its_shape(self):
        renamed = dict(BODY, name='new')
        with self.ledger.transaction() as txn:
            entry = txn.find('p', None, keys.fingerprint('p', 'u', renamed),
                             keys.shape('p', renamed))
        self.assertEqual('old', entry.name)
