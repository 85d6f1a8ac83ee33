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
"""``placement-quota check create|update|end`` is a dry run unless
``--record``: it decides as the service does and changes nothing -- no
ledger entry, no charge, no denial kept, no lock held after, no Placement
write, and the ExternalServiceFilter's service is not asked.

The chain is a real one: LeaseCountFilter (at most 1 lease), the real
Placement behind PlacementCapacityFilter, and CreditFilter charging 1
credit an hour per instance, on a SQLite ledger. The command is run as an
operator runs it where its output or its options matter; what the ledger
and Placement hold after a dry decision is checked on the same chain
in-process (``FilterChain(record=False)``, what ``check`` builds without
``--record``), a process start cheaper each.
"""

import datetime
import json
import os
import threading
import uuid

import requests

from placement_quota.filters import base
from placement_quota.filters import chain as chain_mod
from placement_quota.ledger import models
from placement_quota.ledger import store
from placement_quota.placement import embedded
from placement_quota import services as services_mod
from placement_quota import conf as pq_conf
from tests import builders
from tests.fixtures import placement as placement_fixtures
from tests.functional.cmd import test_cli

CHAIN = 'LeaseCountFilter, PlacementCapacityFilter, CreditFilter'


def _date(days):
    moment = datetime.datetime.utcnow() + datetime.timedelta(days=days)
    return moment.strftime('%Y-%m-%d %H:00')


class DryRunTestCase(test_cli.CLITestCase):

    def setUp(self):
        super().setUp()
        placement = self.useFixture(placement_fixtures.PlacementServer())
        self.placement = placement.endpoint
        self.headers = dict(embedded.NOAUTH_HEADERS, **{
            'OpenStack-API-Version': 'placement 1.20'})
        self.host = self.compute_node()
        self.project = 'project-%s' % uuid.uuid4().hex[:8]
        self.url = 'sqlite:///%s' % os.path.join(self.dir, 'ledger.sqlite')
        self.conf = self.config(
            '[ledger]\nconnection = %s\n'
            '[placement]\nauth_type = admin_token\nendpoint = %s\n'
            'token = admin\n'
            '[enforcement]\nenabled_filters = %s\n'
            'max_leases_per_project = 1\ncredit_instance_rate = 1.0\n'
            % (self.url, self.placement, CHAIN))
        self.ledger = store.Ledger(self.url)
        self.addCleanup(self.ledger.dispose)
        with self.ledger.transaction() as txn:
            txn.add_allocation(self.project, store.to_micro(1000))
        self.begin, self.end = _date(1), _date(2)
        self.create_body = self.write('create.json', {
            'context': builders.context(self.project),
            'lease': self.lease(self.end)})

    def compute_node(self):
        name = 'cn-%s' % uuid.uuid4().hex[:12]
        provider = requests.post(
            self.placement + '/resource_providers', json={'name': name},
            headers=self.headers, timeout=30)
        provider.raise_for_status()
        provider = provider.json()
        requests.put(
            self.placement + '/resource_providers/%s/inventories'
            % provider['uuid'], headers=self.headers, timeout=30, json={
                'resource_provider_generation': provider['generation'],
                'inventories': {'VCPU': {'total': 8},
                                'MEMORY_MB': {'total': 8192},
                                'DISK_GB': {'total': 100}}}
        ).raise_for_status()
        return name

    def generations(self):
        """``{provider UUID: generation}`` of every provider."""
        found = requests.get(self.placement + '/resource_providers',
                             headers=self.headers, timeout=30)
        found.raise_for_status()
        return {p['uuid']: p['generation']
                for p in found.json()['resource_providers']}

    def lease(self, end, lease_id=None):
        return builders.lease(self.begin, end,
                              builders.instances(2, hosts=[self.host]),
                              name='dry', lease_id=lease_id)

    def cli(self, *args):
        return test_cli.command(*args, config=self.conf)

    def check(self, kind, path, *extra):
        result = self.cli('check', kind, '-f', 'json', path, *extra)
        self.assertNotIn('Traceback', result.stderr)
        return result.returncode, json.loads(result.stdout)

    def entries(self):
        with self.ledger.reader() as txn:
            return txn.leases(self.project)

    def charged(self):
        return sum(row.charged for row in self.entries())

    def update_body(self, end):
        return self.write('update.json', {
            'context': builders.context(self.project),
            'current_lease': self.lease(self.end, builders.LEASE_ID),
            'lease': self.lease(end, builders.LEASE_ID)})

    def end_body(self):
        return self.write('end.json', {
            'context': builders.context(self.project),
            'lease': self.lease(self.end, builders.LEASE_ID)})

    def chain(self, record):
        """The chain ``check`` builds from the test's configuration:
        dry (``record=False``) or recording."""
        conf = pq_conf.new_config([], config_files=[self.conf])
        services = services_mod.Services(conf)
        self.addCleanup(services.close)
        return chain_mod.FilterChain(conf, services=services, record=record)

    def create(self, record=False):
        self.chain(record).check_create(builders.context(self.project),
                                        self.lease(self.end))

    def update(self, end, record=False):
        self.chain(record).check_update(
            builders.context(self.project),
            self.lease(self.end, builders.LEASE_ID),
            self.lease(end, builders.LEASE_ID))

    def end_lease(self, record=False):
        self.chain(record).on_end(builders.context(self.project),
                                  self.lease(self.end, builders.LEASE_ID))

    def record_the_lease(self):
        self.create(record=True)
        # Blazar gives the lease its ID: the update and the end name it.
        self.update(self.end, record=True)


class TestCheckCreateCommand(DryRunTestCase):

    def test_a_dry_create_is_decided_and_says_nothing_was_recorded(self):
        status, row = self.check('create', self.create_body)
        self.assertEqual((0, 'allowed', 'no (dry run; --record records)'),
                         (status, row['decision'], row['recorded']))

    def test_a_dry_create_leaves_no_ledger_entry(self):
        self.check('create', self.create_body)
        self.assertEqual([], self.entries())

    def test_record_keeps_a_pending_entry(self):
        status, row = self.check('create', self.create_body, '--record')
        self.assertEqual(('yes', [models.PENDING]),
                         (row['recorded'], [e.state for e in self.entries()]))

    def test_a_dry_create_past_the_limit_is_denied_by_the_filter(self):
        self.record_the_lease()
        status, row = self.check('create', self.create_body)
        self.assertEqual((1, 'LeaseCountFilter'), (status, row['filter']))


class TestDryCreate(DryRunTestCase):

    def test_charges_no_credit(self):
        self.create()
        self.assertEqual(0, self.charged())

    def test_two_under_a_limit_of_one_are_both_allowed(self):
        self.create()
        self.create()
        self.assertEqual([], self.entries())

    def test_writes_nothing_to_placement(self):
        before = self.generations()
        self.create()
        self.assertEqual(before, self.generations())

    def test_denied_keeps_no_denied_entry(self):
        self.record_the_lease()
        self.assertRaises(base.EnforcementDenied, self.create)
        self.assertEqual([models.PENDING],
                         [e.state for e in self.entries()])

    def test_leaves_the_projects_lock_free(self):
        self.create()
        # Another connection takes the project's lock at once: a dry
        # admission left no transaction open behind it.
        other = store.Ledger(self.url, lock_timeout=1)
        self.addCleanup(other.dispose)
        took = threading.Event()

        def lock():
            with other.transaction([self.project]):
                took.set()
        worker = threading.Thread(target=lock)
        worker.start()
        worker.join(10)
        self.assertTrue(took.is_set())


class TestRecordedCreate(DryRunTestCase):

    def test_charges_the_lease(self):
        self.create(record=True)
        # 2 instances x 1 credit an hour x 24 hours, in micro-credits.
        self.assertEqual(store.to_micro(48), self.charged())

    def test_writes_nothing_to_placement_either(self):
        before = self.generations()
        self.create(record=True)
        self.assertEqual(before, self.generations())


class TestDryUpdateAndEnd(DryRunTestCase):

    def test_a_dry_update_leaves_the_entry_as_it_was(self):
        self.record_the_lease()
        before = [(e.end_date, e.charged) for e in self.entries()]
        self.update(_date(3))
        self.assertEqual(before,
                         [(e.end_date, e.charged) for e in self.entries()])

    def test_a_recorded_update_moves_the_entry_and_its_charge(self):
        self.record_the_lease()
        self.update(_date(3), record=True)
        self.assertEqual([store.to_micro(96)],
                         [e.charged for e in self.entries()])

    def test_a_dry_end_leaves_the_entry_open(self):
        self.record_the_lease()
        self.end_lease()
        self.assertEqual([models.PENDING],
                         [e.state for e in self.entries()])

    def test_a_recorded_end_closes_the_entry(self):
        self.record_the_lease()
        self.end_lease(record=True)
        self.assertEqual([models.TERMINATED],
                         [e.state for e in self.entries()])

    def test_check_update_and_end_are_dry_by_default(self):
        self.record_the_lease()
        self.check('update', self.update_body(_date(3)))
        self.check('end', self.end_body())
        self.assertEqual([(models.PENDING, store.to_micro(48))],
                         [(e.state, e.charged) for e in self.entries()])


class TestExternalServiceIsNotAsked(DryRunTestCase,
                                    test_cli.ServeProcesses):
    """The ExternalServiceFilter's service is a real placement-quota
    service with a ledger of its own: asked, it records the lease."""

    def setUp(self):
        super().setUp()
        self.remote = 'sqlite:///%s' % os.path.join(self.dir, 'remote.sqlite')
        remote_conf = self.write('remote.conf', (
            '[ledger]\nconnection = %s\ncount_host_resources = false\n'
            '[enforcement]\nenabled_filters = LeaseCountFilter\n'
            'max_leases_per_project = 5\n' % self.remote))
        _, url = self.start(config=remote_conf)
        self.conf = self.config(
            '[ledger]\nconnection = %s\ncount_host_resources = false\n'
            '[enforcement]\nenabled_filters = ExternalServiceFilter\n'
            '[enforcement_external]\nendpoint_url = %s\n'
            % (self.url, url))

    def remote_entries(self):
        ledger = store.Ledger(self.remote)
        self.addCleanup(ledger.dispose)
        with ledger.reader() as txn:
            return txn.leases(self.project)

    def test_a_dry_create_lists_it_as_not_asked_and_does_not_call_it(self):
        status, row = self.check('create', self.create_body)
        self.assertEqual((0, 'ExternalServiceFilter', '', []),
                         (status, row['not asked'], row['filters run'],
                          self.remote_entries()))

    def test_record_asks_the_service(self):
        status, row = self.check('create', self.create_body, '--record')
        self.assertEqual((0, [models.PENDING]),
                         (status, [e.state for e in self.remote_entries()]),
                         row)
