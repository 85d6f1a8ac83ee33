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
"""The scan, the record-once and the claim on the server databases
production ledgers run on (PostgreSQL, MariaDB): their SUMs are decimals,
their duplicate inserts are ignored in their own dialects, their updates
say how many rows they changed in their own way."""

import threading

from placement_quota.ledger import models
from placement_quota.ledger import shares
from placement_quota.ledger import store
from placement_quota.warning import model
from placement_quota.warning import record
from placement_quota.warning import scan
from tests.functional.ledger import databases
from tests.unit.warning import base

HOUR, DAY = base.HOUR, base.DAY


class ScanOnServer:
    """Mixed with a backend of tests/functional/ledger/databases.py and
    the warning tests' ledger case."""

    def ledger_url(self):
        return self.useFixture(self.database_fixture()).url

    def setUp(self):
        super().setUp()
        allocation = self.allocation(100, end=self.now + 6 * DAY)
        with self.ledger.transaction(['p1'], now=self.now) as txn:
            shares.set_share(txn.connection, 'p1', 'u2',
                             store.to_micro(10), self.now)
        self.lease(self.now - DAY, self.now + HOUR / 2, name='ending',
                   charged=86, allocation=allocation)
        self.lease(self.now + DAY, self.now + 2 * DAY, user='u2',
                   name='future', charged=9, allocation=allocation)

    def test_a_scan_finds_every_kind_due_with_exact_numbers(self):
        found = {n.kind: n for n in scan.scan(self.ledger, self.conf,
                                              self.now)}
        self.assertEqual(
            ({model.LEASE_END, model.CREDITS, model.USER_CREDITS,
              model.ALLOCATION_END}, 95.0, 9.0, 90.0),
            (set(found), found[model.CREDITS].facts['used_pct'],
             found[model.CREDITS].facts['not_started'],
             found[model.USER_CREDITS].facts['used_pct']))

    def test_recording_twice_inserts_each_warning_once(self):
        found = scan.scan(self.ledger, self.conf, self.now)
        record.record(self.ledger, found, self.now)
        record.record(self.ledger, found, self.now)
        self.assertEqual(len(found), len(record.listing(self.ledger)))

    def test_a_warning_is_claimed_once(self):
        record.record(self.ledger, scan.scan(self.ledger, self.conf,
                                             self.now), self.now)
        first = record.claim(self.ledger, self.now, 300)
        self.assertEqual((4, []), (len(first), record.claim(
            self.ledger, self.now, 300)))

    def test_a_warning_recorded_is_not_found_again(self):
        record.record(self.ledger, scan.scan(self.ledger, self.conf,
                                             self.now), self.now)
        self.assertEqual([], scan.scan(self.ledger, self.conf, self.now))
        self.assertEqual({models.WARNING_PENDING: 4},
                         record.counts(self.ledger))


class ConcurrentOnServer:
    """Processes recording and claiming at the same moment (threads, each
    with its own connections)."""

    def ledger_url(self):
        return self.useFixture(self.database_fixture()).url

    def notices(self, count, prefix='k'):
        return [model.Notice(kind=model.CREDITS, key='%s%d' % (prefix, i),
                             project_id='p1') for i in range(count)]

    def at_once(self, calls):
        errors = []

        def run(call):
            try:
                call()
            except Exception as exc:   # the test reports it
                errors.append('%s: %s' % (type(exc).__name__, exc))
        threads = [threading.Thread(target=run, args=(c,)) for c in calls]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return errors

    def test_recordings_in_different_orders_at_once_all_succeed(self):
        found = self.notices(300)
        errors = self.at_once([
            lambda order=order: record.record(self.ledger, order, self.now)
            for order in (found, found[::-1], found[150:] + found[:150])])
        self.assertEqual(([], 300), (errors, len(record.listing(
            self.ledger, limit=1000))))

    def test_claims_at_once_hold_each_warning_once(self):
        record.record(self.ledger, self.notices(200), self.now)
        held = []

        def claim():
            for _ in range(10):
                held.extend(w.id for w in record.claim(
                    self.ledger, self.now, 300, limit=100))
        errors = self.at_once([claim] * 4)
        self.assertEqual(([], 200, 200), (errors, len(held), len(set(held))))


class TestScanOnPostgreSQL(databases.OnPostgreSQL, ScanOnServer,
                           base.WarningCase):
    pass


class TestScanOnMariaDB(databases.OnMariaDB, ScanOnServer,
                        base.WarningCase):
    pass


class TestConcurrentOnPostgreSQL(databases.OnPostgreSQL, ConcurrentOnServer,
                                 base.WarningCase):
    pass


class TestConcurrentOnMariaDB(databases.OnMariaDB, ConcurrentOnServer,
                              base.WarningCase):
    pass
