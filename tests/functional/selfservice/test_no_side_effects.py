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
"""A quote and an extension query change nothing, on a real Placement:
no ledger row (entry, charge, denied entry), no lock held after the
answer, no Placement write (every provider's generation unchanged). And
the capacity policy, which the end-to-end tests through Blazar cannot
reach (their Blazar has no hosts in Placement): a quote denied by
PlacementCapacityFilter is a create denied by it with the same message.
"""

import datetime
import os
import uuid

import fixtures
import requests
import sqlalchemy as sa
import testtools

from placement_quota.filters import base
from placement_quota.filters import chain as chain_mod
from placement_quota.lease import model as lease_model
from placement_quota.ledger import models
from placement_quota.ledger import store
from placement_quota.placement import client as placement_client
from placement_quota.placement import embedded
from placement_quota.selfservice import service
from placement_quota import services as services_mod
from tests import builders
from tests.fixtures import enforcement as enforcement_fixture
from tests.fixtures import placement as placement_fixtures

CHAIN = ['LeaseCountFilter', 'PlacementCapacityFilter', 'CreditFilter']


def _date(days):
    moment = datetime.datetime.utcnow() + datetime.timedelta(days=days)
    return moment.strftime('%Y-%m-%d %H:00')


class SideEffectsTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        placement = self.useFixture(placement_fixtures.PlacementServer())
        self.placement = placement.endpoint
        self.headers = dict(embedded.NOAUTH_HEADERS, **{
            'OpenStack-API-Version': 'placement 1.20'})
        self.host = self.compute_node()
        self.project = 'project-%s' % uuid.uuid4().hex[:8]
        tmp = self.useFixture(fixtures.TempDir()).path
        self.url = 'sqlite:///%s' % os.path.join(tmp, 'ledger.sqlite')
        conf = enforcement_fixture.config(
            connection=('ledger', self.url),
            count_host_resources=('ledger', False),
            lock_timeout=('ledger', 2),
            enabled_filters=('enforcement', CHAIN),
            max_leases_per_project=('enforcement', 2),
            credit_instance_rate=('enforcement', 1.0))
        client = placement_client.PlacementClient.from_endpoint(
            self.placement, placement.headers)
        self.services = services_mod.Services(conf, placement=client)
        self.addCleanup(self.services.close)
        self.chain = chain_mod.FilterChain(conf, services=self.services)
        self.selfservice = service.SelfService(self.chain)
        self.ledger = self.services.ledger
        with self.ledger.transaction() as txn:
            self.allocation = txn.add_allocation(self.project,
                                                 store.to_micro(1000))
        self.context = lease_model.Context(self.project, 'u')
        self.begin, self.end = _date(1), _date(2)

    def compute_node(self, vcpus=8):
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
                'inventories': {'VCPU': {'total': vcpus},
                                'MEMORY_MB': {'total': 8192},
                                'DISK_GB': {'total': 100}}}
        ).raise_for_status()
        return name

    def generations(self):
        found = requests.get(self.placement + '/resource_providers',
                             headers=self.headers, timeout=30)
        found.raise_for_status()
        return {p['uuid']: p['generation']
                for p in found.json()['resource_providers']}

    def rows(self):
        """Rows of every ledger table that a decision writes."""
        with self.ledger.reader() as txn:
            return {table.name: txn.connection.execute(
                sa.select(sa.func.count()).select_from(table)).scalar()
                for table in (models.leases, models.charges)}

    def body(self, amount=2, vcpus=1, lease_id=None, end=None):
        return builders.lease(
            self.begin, end or self.end,
            builders.instances(amount, vcpus=vcpus, hosts=[self.host]),
            name='quoted', lease_id=lease_id)

    def assertLockFree(self):
        with self.ledger.transaction([self.project]):
            pass


class TestQuoteChangesNothing(SideEffectsTestCase):

    def test_allowed_quote_writes_no_row_and_no_placement_generation(self):
        rows, generations = self.rows(), self.generations()
        found = self.selfservice.quote(self.context, self.body())
        self.assertTrue(found['allowed'], found['filters'])
        self.assertEqual(rows, self.rows())
        self.assertEqual(generations, self.generations())
        self.assertLockFree()

    def test_denied_quote_keeps_no_denied_entry(self):
        rows = self.rows()
        found = self.selfservice.quote(self.context, self.body(amount=100))
        self.assertFalse(found['allowed'])
        self.assertEqual(rows, self.rows())
        self.assertLockFree()

    def test_two_quotes_under_a_limit_of_one_more_are_both_allowed(self):
        self.chain.check_create(self.context, self.body())
        first = self.selfservice.quote(self.context, self.body())
        second = self.selfservice.quote(self.context, self.body())
        self.assertEqual((True, True), (first['allowed'], second['allowed']))

    def test_extension_query_changes_nothing(self):
        self.chain.check_create(self.context,
                                self.body(lease_id=builders.LEASE_ID))
        rows, generations = self.rows(), self.generations()
        found = self.selfservice.extension(self.context, builders.LEASE_ID)
        self.assertIsNotNone(found['latest_end_date'])
        self.assertEqual(rows, self.rows())
        self.assertEqual(generations, self.generations())
        self.assertLockFree()


class TestExtensionReadsPlacementOnce(SideEffectsTestCase):

    def test_the_search_reads_placement_as_one_update_check_does(self):
        body = self.body(lease_id=builders.LEASE_ID)
        self.chain.check_create(self.context, body)
        client = self.services.placement
        before = client.calls
        self.chain.evaluate('check-update', self.context,
                            dict(body, end_date=_date(3)),
                            current_lease=body)
        one_check = client.calls - before
        before = client.calls
        self.selfservice.extension(self.context, builders.LEASE_ID)
        self.assertGreater(one_check, 0)
        self.assertEqual(one_check, client.calls - before)


class TestCapacityQuoteAgreesWithCreate(SideEffectsTestCase):

    def test_quote_denied_by_capacity_is_a_create_denied_by_it(self):
        body = self.body(amount=3, vcpus=4)     # 12 VCPUs on a host of 8
        found = self.selfservice.quote(self.context, body)
        self.assertEqual('PlacementCapacityFilter', found['denied_by'])
        denial = self.assertRaises(base.EnforcementDenied,
                                   self.chain.check_create, self.context,
                                   body)
        self.assertEqual((found['denied_by'], found['message']),
                         (denial.filter_name, str(denial)))

    def test_quote_allowed_by_capacity_is_a_create_allowed_and_charged(
            self):
        body = self.body(amount=2, vcpus=4)     # 8 VCPUs on a host of 8
        found = self.selfservice.quote(self.context, body)
        self.assertTrue(found['allowed'], found['filters'])
        self.chain.check_create(self.context, body)
        with self.ledger.reader() as txn:
            spent = store.from_micro(txn.spent(self.allocation))
        self.assertEqual(found['credits']['cost'], spent)
