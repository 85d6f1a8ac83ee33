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
"""The ledger on each database (SQLite, a real PostgreSQL, a real
MariaDB): migrations, exact arithmetic, and two service processes
admitting concurrently never pass a limit together.

Each test case is written once for "a ledger database" and run on each
backend by the subclasses at the end (see
:mod:`tests.functional.ledger.databases`).
"""

import concurrent.futures
import datetime
import json
import os
import re
import subprocess
import sys
import uuid

import alembic.autogenerate
import alembic.migration
import fixtures
import requests
import sqlalchemy as sa

from placement_quota.ledger.db import locks
from placement_quota.ledger import errors as ledger_errors
from placement_quota.ledger import models
from placement_quota.ledger import shares
from placement_quota.ledger import store
from placement_quota.lifecycle import events
from tests.functional.ledger import base
from tests.functional.ledger import databases

#: Seconds a ``placement-quota serve`` process may take to listen.
START_TIMEOUT = 60
LISTENING = re.compile(r'listening on (http://\S+)/v1/')


class Migrations:
    """Written for any backend; run by the Test...On... cases below."""

    def migrated(self):
        ledger = store.Ledger(self.database.url, migrate=True)
        self.addCleanup(ledger.dispose)
        return ledger

    def test_sync_brings_an_empty_database_to_the_head_revision(self):
        ledger = self.migrated()
        self.assertEqual(ledger.head_revision(), ledger.current_revision())

    def test_migrated_schema_matches_the_models(self):
        ledger = self.migrated()
        with ledger.engine.connect() as connection:
            context = alembic.migration.MigrationContext.configure(
                connection, opts={'compare_type': True,
                                  'compare_server_default': True})
            self.assertEqual([], alembic.autogenerate.compare_metadata(
                context, models.metadata))

    def test_every_table_has_a_primary_key(self):
        # Galera replicates a table without one badly (each row change
        # scans the whole table on every other node) or refuses it
        # (innodb_force_primary_key); the alembic_version table included.
        ledger = self.migrated()
        inspector = sa.inspect(ledger.engine)
        tables = inspector.get_table_names()
        self.assertIn('alembic_version', tables)
        self.assertEqual([], [
            table for table in tables
            if not inspector.get_pk_constraint(table)['constrained_columns']])

    def test_unsynced_database_is_refused_naming_db_sync(self):
        error = self.assertRaises(ledger_errors.LedgerError, store.Ledger,
                                  self.database.url, migrate=False)
        self.assertIn('run "placement-quota db sync"', str(error))

    def test_times_keep_their_microseconds(self):
        ledger = self.migrated()
        moment = base.NOW.replace(microsecond=123456)
        with ledger.transaction(['p'], now=moment) as txn:
            row = txn.insert(project_id='p', provisional_key='k',
                             start_date=moment, end_date=moment,
                             state='pending', amounts={}, lease={},
                             hourly_rate=0, charged=0)
        with ledger.transaction() as txn:
            entry = txn.entry(row)
        self.assertEqual((moment, moment, moment),
                         (entry.start_date, entry.end_date,
                          entry.created_at))

    def test_lease_bodies_keep_non_ascii_text(self):
        ledger = self.migrated()
        body = {'name': 'r\u00e9servation \u2603 \U0001f600'}
        with ledger.transaction(['p']) as txn:
            row = txn.insert(project_id='p', provisional_key='k',
                             start_date=base.NOW, end_date=base.NOW,
                             state='pending', amounts={}, lease=body,
                             hourly_rate=0, charged=0, name=body['name'])
        with ledger.transaction() as txn:
            entry = txn.entry(row)
        self.assertEqual((body, body['name']), (entry.lease, entry.name))

    def test_instance_entries_are_read_by_their_hosts(self):
        ledger = self.migrated()
        for name in ('node 1', 'node_2', 'node%3'):
            body = {'reservations': [{
                'resource_type': 'virtual:instance',
                'allocations': [{'hypervisor_hostname': name}]}]}
            with ledger.transaction(['p']) as txn:
                txn.insert(project_id='p', provisional_key=name,
                           start_date=base.NOW, end_date=base.NOW +
                           datetime.timedelta(days=1), state='pending',
                           amounts={'instances': 1, 'class:VCPU': 2},
                           lease=body, hourly_rate=0, charged=0)
        with ledger.transaction() as txn:
            found = txn.instance_intervals(
                base.NOW, base.NOW + datetime.timedelta(hours=1),
                hosts={'node%201', 'node%3', 'node-2'})
        self.assertEqual(['node%201', 'node%3'],
                         sorted(row.instance_hosts for _, row in found))

    def test_credit_refund_is_exact(self):
        ledger = self.migrated()
        with ledger.transaction(['p']) as txn:
            allocation = txn.add_allocation('p', store.to_micro(10))
            row = txn.insert(project_id='p', provisional_key='k',
                             start_date=base.NOW, end_date=base.NOW,
                             state='pending', amounts={}, lease={},
                             hourly_rate=0, charged=store.to_micro(3.5))
            txn.charge('p', row, allocation, store.to_micro(3.5), 'create')
            txn.charge('p', row, allocation, -store.to_micro(1.25), 'end')
        with ledger.transaction() as txn:
            self.assertEqual(store.to_micro(2.25), txn.spent(allocation))

    def test_an_entry_and_its_first_charge_are_written_together(self):
        ledger = self.migrated()
        with ledger.transaction(['p']) as txn:
            allocation = txn.add_allocation('p', store.to_micro(10))
            row = txn.insert(
                charge=(allocation, store.to_micro(2), 'create'),
                project_id='p', provisional_key='k', start_date=base.NOW,
                end_date=base.NOW, state='pending', amounts={}, lease={},
                hourly_rate=0, charged=store.to_micro(2))
        with ledger.transaction() as txn:
            charged = [(c.lease_row, c.amount, c.kind)
                       for c in txn.connection.execute(
                           models.charges.select())]
            entry = txn.entry(row)
        self.assertEqual(([(row, store.to_micro(2), 'create')], 'k'),
                         (charged, entry.provisional_key))

    def test_first_locks_make_their_rows_and_are_held_in_lock_order(self):
        ledger = self.migrated()
        wanted = [locks.shared(models.GLOBAL_LOCK),
                  locks.host_pool_lock('cn-1'), 'new-project']
        with ledger.transaction(wanted) as txn:
            held = list(txn.locked)
        with ledger.transaction() as txn:
            rows = {r.project_id for r in txn.connection.execute(
                models.projects.select())}
        self.assertEqual(locks.lock_order(wanted), held)
        self.assertTrue({'new-project', '*pool:host:cn-1', '*'} <= rows)


class ServiceProcess:
    """``placement-quota serve`` in a subprocess on a free port."""

    def __init__(self, config):
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'placement_quota.cmd.main',
             '--config-file', config, 'serve', '--port', '0'],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        found = LISTENING.search(line)
        if not found:
            self.stop()
            raise AssertionError('serve did not start: %r %s'
                                 % (line, self.process.stderr.read()))
        self.url = found.group(1)

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class ServiceProcesses:
    """Two ``placement-quota serve`` processes on one ledger database."""

    def start_services(self, filters, extra='',
                       limits_file='registered_limits: {hosts: 10}\n'):
        directory = self.useFixture(fixtures.TempDir()).path
        config = os.path.join(directory, 'placement-quota.conf')
        limits = os.path.join(directory, 'limits.yaml')
        with open(limits, 'w') as f:
            f.write(limits_file)
        with open(config, 'w') as f:
            f.write('[database]\nconnection = %s\n'
                    '[ledger]\ncount_host_resources = '
                    'false\nlock_timeout = 60\n'
                    '[limits]\nlimits_file = %s\n'
                    '[enforcement]\nenabled_filters = %s\n%s'
                    '[api]\nthreads = 8\n'
                    % (self.database.url, limits, ','.join(filters),
                       extra))
        store.Ledger(self.database.url, migrate=True).dispose()
        services = []
        for _ in range(2):
            service = ServiceProcess(config)
            self.addCleanup(service.stop)
            services.append(service)
        return services


class TwoServiceProcesses(ServiceProcesses):
    """Two service processes, 16 threads, one project at its limit."""

    requests_sent = 40

    def hammer(self, services, project, user=None, reservation=None):
        """Send :attr:`requests_sent` check-creates of one-day leases,
        each of ``reservation(i)`` (default: host ``h-i``)."""
        def one(i):
            context = {'project_id': project}
            if user is not None:
                context['user_id'] = user
            body = {'context': context,
                    'lease': base.lease(base.day(2), base.day(3),
                                        reservation(i) if reservation
                                        else base.hosts('h-%d' % i),
                                        name='lease-%d' % i)}
            url = services[i % 2].url + '/v1/check-create'
            return requests.post(url, data=json.dumps(body),
                                 timeout=120).status_code
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            return list(pool.map(one, range(self.requests_sent)))

    def assertAdmitted(self, allowed, statuses):
        """Exactly ``allowed`` of the requests got 204, the others 403."""
        self.assertEqual({204: allowed, 403: len(statuses) - allowed},
                         {s: statuses.count(s) for s in set(statuses)})

    def live_entries(self, project):
        ledger = store.Ledger(self.database.url)
        self.addCleanup(ledger.dispose)
        with ledger.transaction() as txn:
            return [row for row in txn.leases(project)
                    if row.state != 'denied']

    def test_tree_limit_admits_exactly_the_limit(self):
        services = self.start_services(['ProjectTreeLimitFilter'])
        project = 'p-%s' % uuid.uuid4().hex[:8]
        statuses = self.hammer(services, project)
        self.assertAdmitted(10, statuses)
        self.assertEqual(10, len(self.live_entries(project)))

    def test_user_limit_admits_exactly_the_limit(self):
        # Each lease: one host over the same day; 10 hosts per user.
        services = self.start_services(['UserLimitFilter'],
                                       'max_hosts_per_user = 10\n')
        project = 'p-%s' % uuid.uuid4().hex[:8]
        statuses = self.hammer(services, project, user='alice')
        self.assertAdmitted(10, statuses)
        self.assertEqual(10, len(self.live_entries(project)))

    def test_rolling_cap_admits_exactly_the_cap(self):
        # Each lease: one host for a day, 24 host-hours; 240 in any week.
        services = self.start_services(
            ['RollingCapFilter'], 'rolling_cap_resources = hosts\n',
            limits_file='registered_limits: {"hours:hosts": 240}\n')
        project = 'p-%s' % uuid.uuid4().hex[:8]
        statuses = self.hammer(services, project)
        self.assertAdmitted(10, statuses)
        self.assertEqual(10, len(self.live_entries(project)))

    def credit_services(self):
        """``(services, project, ledger)``: the service processes running
        CreditFilter at 0.5 credits a host-hour (12 credits a lease of
        :meth:`hammer`), a new project, the ledger on the database."""
        services = self.start_services(
            ['CreditFilter'], 'credit_host_rate = 0.5\n')
        ledger = store.Ledger(self.database.url)
        self.addCleanup(ledger.dispose)
        return services, 'p-%s' % uuid.uuid4().hex[:8], ledger

    def test_a_users_credit_share_admits_exactly_what_it_pays(self):
        services, project, ledger = self.credit_services()
        with ledger.transaction([project]) as txn:
            txn.add_allocation(project, store.to_micro(1000))
            # 12 credits a lease: alice's share of 120 pays for 10.
            shares.set_share(txn.connection, project, 'alice',
                             store.to_micro(120), txn.now)
        statuses = self.hammer(services, project, user='alice')
        self.assertAdmitted(10, statuses)
        self.assertEqual(store.to_micro(120), sum(
            row.charged for row in self.live_entries(project)))

    def test_credits_admit_exactly_what_the_allocation_pays(self):
        services, project, ledger = self.credit_services()
        with ledger.transaction([project]) as txn:
            allocation = txn.add_allocation(project, store.to_micro(120))
        statuses = self.hammer(services, project)
        # Each lease: 24 hours x 0.5 credits = 12 credits; 120 pay for 10.
        self.assertAdmitted(10, statuses)
        with ledger.transaction() as txn:
            self.assertEqual(store.to_micro(120), txn.spent(allocation))

    def test_a_pool_admits_exactly_what_it_holds(self):
        # Each lease: one instance of 2 VCPUs for 24 hours, 48 VCPU-hours
        # of the project's VCPU pool (nothing in credits); 480 pay for 10.
        services = self.start_services(
            ['CreditFilter'], 'credit_pool_classes = VCPU\n')
        ledger = store.Ledger(self.database.url)
        self.addCleanup(ledger.dispose)
        project = 'p-%s' % uuid.uuid4().hex[:8]
        with ledger.transaction([project]) as txn:
            pool = txn.add_allocation(project, store.to_micro(480),
                                      resource_class='VCPU')
        statuses = self.hammer(services, project, reservation=lambda i:
                               base.instances(1, vcpus=2))
        self.assertAdmitted(10, statuses)
        with ledger.transaction() as txn:
            self.assertEqual(store.to_micro(480), txn.spent(pool))


class OnEndRacingTheDeleteNotification(ServiceProcesses):
    """Blazar deletes 20 leases: each on-end call (to one of two service
    processes) races its ``lease.delete`` notification (applied as the
    listener does, from a third connection): every lease is refunded
    exactly once."""

    leases = 20

    def test_each_lease_is_refunded_exactly_once(self):
        services = self.start_services(
            ['CreditFilter'], 'credit_host_rate = 1.0\n')
        project = 'p-%s' % uuid.uuid4().hex[:8]
        ledger = store.Ledger(self.database.url)
        self.addCleanup(ledger.dispose)
        with ledger.transaction([project]) as txn:
            allocation = txn.add_allocation(project, store.to_micro(10000))
        # Future leases: deleted now, each is refunded its whole charge;
        # a second refund would leave the allocation below zero.
        tomorrow = datetime.datetime.utcnow().replace(
            second=0, microsecond=0) + datetime.timedelta(days=1)
        bodies = []
        for i in range(self.leases):
            start = tomorrow + datetime.timedelta(hours=i)
            body = base.lease(start.strftime('%Y-%m-%d %H:%M'),
                              (start + datetime.timedelta(hours=2))
                              .strftime('%Y-%m-%d %H:%M'),
                              base.hosts('h-%d' % i), name='same-name')
            self.post(services[i % 2], 'check-create', project, body)
            bodies.append(body)
        with ledger.transaction() as txn:
            self.assertEqual(store.to_micro(2 * self.leases),
                             txn.spent(allocation))

        def by_call(i):
            return self.post(services[i % 2], 'on-end', project,
                             dict(bodies[i], id='lease-%d' % i))

        def by_notification(i):
            payload = dict(bodies[i], lease_id='lease-%d' % i,
                           project_id=project)
            return events.handle(ledger, events.DELETE, payload,
                                 datetime.datetime.utcnow())
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            pairs = [(pool.submit(by_call, i), pool.submit(by_notification,
                                                           i))
                     for i in range(self.leases)]
            statuses = [call.result() for call, note in pairs]
            outcomes = [note.result() for call, note in pairs]
        # Each path came first at least once: they really raced.
        self.assertIn('closed; 0 micro-credits refunded', outcomes)
        self.assertTrue(any(o != 'closed; 0 micro-credits refunded'
                            for o in outcomes), outcomes)
        self.assertEqual([204] * self.leases, statuses)
        with ledger.transaction() as txn:
            self.assertEqual(0, txn.spent(allocation))
            entries = txn.leases(project)
        self.assertEqual(
            sorted('lease-%d' % i for i in range(self.leases)),
            sorted(e.lease_id for e in entries))
        self.assertEqual({'terminated'}, {e.state for e in entries})

    def post(self, service, kind, project, lease):
        body = {'context': {'project_id': project}, 'lease': lease}
        return requests.post(service.url + '/v1/' + kind,
                             data=json.dumps(body), timeout=120).status_code


class TestMigrationsOnSQLite(
        databases.OnSQLite, Migrations, databases.DatabaseTestCase):
    pass


class TestMigrationsOnPostgreSQL(
        databases.OnPostgreSQL, Migrations, databases.DatabaseTestCase):
    pass


class TestMigrationsOnMariaDB(
        databases.OnMariaDB, Migrations, databases.DatabaseTestCase):
    pass


class TestTwoServiceProcessesOnSQLite(
        databases.OnSQLite, TwoServiceProcesses, databases.DatabaseTestCase):
    pass


class TestTwoServiceProcessesOnPostgreSQL(
        databases.OnPostgreSQL, TwoServiceProcesses,
        databases.DatabaseTestCase):
    pass


class TestTwoServiceProcessesOnMariaDB(
        databases.OnMariaDB, TwoServiceProcesses, databases.DatabaseTestCase):
    pass


class TestOnEndRacingTheDeleteNotificationOnPostgreSQL(
        databases.OnPostgreSQL, OnEndRacingTheDeleteNotification,
        databases.DatabaseTestCase):
    pass


class TestOnEndRacingTheDeleteNotificationOnMariaDB(
        databases.OnMariaDB, OnEndRacingTheDeleteNotification,
        databases.DatabaseTestCase):
    pass
