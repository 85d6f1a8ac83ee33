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
"""An account's consumers from Nova's server list ([accounts]
consumers_from), against a real nova-api and a real Placement.

The servers are created through nova-api's ``POST /servers``
(:func:`tests.fixtures.nova.create_servers`: build requests that nothing
builds, the message transport being ``fake://``); their allocations are
written in the real Placement under the servers' UUIDs, as nova-scheduler
would. The ledger is SQLite.
"""

import datetime
import logging
import os
import shutil
import tempfile
import uuid

import fixtures
from oslo_utils import timeutils
import testtools

from placement_quota.accounts import consumers
from placement_quota.accounts import servers
from placement_quota.accounts import service
from placement_quota.accounts import store
from placement_quota import conf as pq_conf
from placement_quota.ledger import models
from placement_quota.placement import client as placement_client
from placement_quota import services as services_mod
from tests.fixtures import nova
from tests.fixtures import placement as placement_fixtures
from tests.functional.api import test_admin_gabbi as seeds

#: A compute endpoint nothing listens on.
NO_NOVA = 'http://127.0.0.1:9/v2.1'


class RecordingClient(placement_client.PlacementClient):
    """The real client, remembering the paths it requested."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.paths = []

    def _send(self, method, url, json, version):
        self.paths.append((method, url.split('?')[0]))
        return super()._send(method, url, json, version)

    def scans(self):
        """How many times every provider was listed (a full scan)."""
        return self.paths.count(('GET', '/resource_providers'))


class ConsumersFromNovaTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.placement = self.useFixture(
            placement_fixtures.PlacementServer())
        self.nova = self.useFixture(nova.NovaAPIServer())
        self.dir = tempfile.mkdtemp(prefix='pq-nova-consumers-')
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.client = RecordingClient.from_endpoint(
            self.placement.endpoint, self.placement.headers)
        self.run_id = uuid.uuid4().hex[:8]
        self.source = 'src-%s' % self.run_id
        self.dest = 'dst-%s' % self.run_id
        self.node = seeds.seed_provider(
            self.client, 'cn-nova-%s' % self.run_id,
            {'VCPU': 64, 'MEMORY_MB': 131072})
        self.logger = self.useFixture(fixtures.FakeLogger(
            name='placement_quota.accounts', level=logging.INFO))

    def lister(self, **kwargs):
        return servers.NovaServers.from_endpoint(
            self.nova.endpoint, nova.token_headers(), **kwargs)

    def allocate(self, consumer, project_id, vcpu=1):
        self.client.put('/allocations/%s' % consumer, {
            'allocations': {self.node: {'resources': {'VCPU': vcpu,
                                                      'MEMORY_MB': 64}}},
            'project_id': project_id, 'user_id': 'u',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
        return consumer

    def servers(self, project_id, count):
        """``count`` Nova servers of ``project_id`` with allocations."""
        return [self.allocate(s, project_id)
                for s in self.nova.create_servers(project_id, count)]

    def find(self, lister=None, known=None, leases=()):
        candidates = []
        if lister is not None:
            candidates.append(("Nova's servers of the project",
                               lambda: lister.of_project(self.source)))
        found = consumers.lease_candidates(leases)
        if found:
            candidates.append(('its lease IDs', lambda: found))
        return consumers.of_account(self.client, self.source, 4, known,
                                    candidates)

    def counted(self, call):
        """``(result, Placement calls, full scans)`` of ``call()``."""
        before, scans = self.client.calls, self.client.scans()
        result = call()
        return (result, self.client.calls - before,
                self.client.scans() - scans)

    def config(self, text=''):
        path = os.path.join(self.dir, 'placement-quota.conf')
        with open(path, 'w') as f:
            f.write('[ledger]\nconnection = sqlite:///%s/ledger.sqlite\n%s'
                    % (self.dir, text))
        return pq_conf.new_config([], config_files=[path])

    def accounts(self, conf):
        services = services_mod.Services(conf, placement=self.client)
        self.addCleanup(services.close)
        accounts = service.Accounts.from_services(services)
        for account in (self.source, self.dest):
            accounts.put(account, {})
        return accounts

    def uuids(self, found):
        return [uuid_ for uuid_, _ in found]

    def lease(self, lease_id):
        """An open ledger lease of the source (a row)."""
        ledger = self.useFixture(fixtures.TempDir()).path
        conf = pq_conf.new_config([], config_files=[])
        conf.set_override('connection', 'sqlite:///%s/l.sqlite' % ledger,
                          'ledger')
        services = services_mod.Services(conf, placement=self.client)
        self.addCleanup(services.close)
        start = timeutils.utcnow() + datetime.timedelta(hours=1)
        with services.ledger.transaction([self.source]) as txn:
            txn.insert(project_id=self.source, lease_id=lease_id,
                       provisional_key=uuid.uuid4().hex, name='l',
                       start_date=start,
                       end_date=start + datetime.timedelta(hours=2),
                       state=models.PENDING, amounts={},
                       lease={'reservations': []}, hourly_rate=0,
                       charged=0)
        with services.ledger.transaction() as txn:
            return store.open_leases(txn.connection, [self.source],
                                     timeutils.utcnow())


class TestConsumersFromNova(ConsumersFromNovaTestCase):
    """of_account with Nova's servers as its first candidates."""

    def test_the_consumers_found_from_nova_are_those_the_scan_finds(self):
        mine = self.servers(self.source, 3)
        self.servers('other-%s' % self.run_id, 2)
        from_nova = self.find(self.lister())
        self.assertEqual(sorted(mine), self.uuids(from_nova))
        self.assertEqual(from_nova, self.find())

    def test_finding_from_nova_costs_one_usage_read_and_one_per_server(self):
        mine = self.servers(self.source, 4)
        lister = self.lister()
        found, calls, scans = self.counted(lambda: self.find(lister))
        self.assertEqual(sorted(mine), self.uuids(found))
        self.assertEqual((1 + 4, 0), (calls, scans))
        self.assertEqual(1, lister.calls)

    def test_nova_pages_are_followed_with_their_marker(self):
        mine = self.servers(self.source, 5)
        lister = self.lister(page_size=2)
        self.assertEqual(sorted(mine), lister.of_project(self.source))
        self.assertEqual(3, lister.calls)

    def test_a_consumer_nova_does_not_list_makes_it_scan(self):
        mine = self.servers(self.source, 2)
        hidden = self.allocate(str(uuid.uuid4()), self.source)
        found, _calls, scans = self.counted(
            lambda: self.find(self.lister()))
        self.assertEqual(sorted(mine + [hidden]), self.uuids(found))
        self.assertEqual(1, scans)

    def test_a_scan_after_nova_says_why_at_info(self):
        self.servers(self.source, 2)
        self.allocate(str(uuid.uuid4()), self.source, vcpu=3)
        self.find(self.lister())
        self.assertIn("Reading every consumer of Placement to find those "
                      "of account '%s': the 2 consumer(s) of the account "
                      "among Nova's servers of the project (2 UUIDs read) "
                      "carry MEMORY_MB=128, VCPU=2; it uses MEMORY_MB=192, "
                      "VCPU=5 in Placement" % self.source,
                      self.logger.output)

    def test_an_unreachable_nova_makes_it_scan_and_say_why(self):
        mine = self.servers(self.source, 2)
        lister = servers.NovaServers.from_endpoint(NO_NOVA, timeout=5)
        found, _calls, scans = self.counted(lambda: self.find(lister))
        self.assertEqual(sorted(mine), self.uuids(found))
        self.assertEqual(1, scans)
        self.assertIn("Nova's servers of the project cannot be read: "
                      "Cannot list the servers of project '%s': GET "
                      "%s/servers" % (self.source, NO_NOVA),
                      self.logger.output)

    def test_a_nova_refusing_the_listing_makes_it_scan(self):
        mine = self.servers(self.source, 1)
        # Not an admin: all_tenants is refused (403).
        lister = servers.NovaServers.from_endpoint(
            self.nova.endpoint, nova.token_headers('u', self.source))
        found, _calls, scans = self.counted(lambda: self.find(lister))
        self.assertEqual(mine, self.uuids(found))
        self.assertEqual(1, scans)
        self.assertIn('answered 403', self.logger.output)

    def test_a_lease_id_holding_allocations_spares_the_scan(self):
        mine = self.servers(self.source, 2)
        lease_id = self.allocate(str(uuid.uuid4()), self.source)
        found, calls, scans = self.counted(lambda: self.find(
            self.lister(), leases=self.lease(lease_id)))
        self.assertEqual(sorted(mine + [lease_id]), self.uuids(found))
        self.assertEqual((1 + 2 + 1, 0), (calls, scans))

    def test_an_account_without_usage_costs_one_call_and_no_nova(self):
        lister = self.lister()
        found, calls, _scans = self.counted(lambda: self.find(lister))
        self.assertEqual(([], 1, 0), (found, calls, lister.calls))


class TestMovesFromNova(ConsumersFromNovaTestCase):
    """Accounts.from_services and [accounts] consumers_from."""

    def nova_section(self, extra=''):
        return ('[nova]\nauth_type = admin_token\nendpoint = %s\n'
                'token = admin:admin\n%s' % (self.nova.endpoint, extra))

    def test_nova_configured_makes_a_move_all_read_no_scan(self):
        mine = self.servers(self.source, 3)
        accounts = self.accounts(self.config(self.nova_section()))
        action, calls, scans = self.counted(
            lambda: accounts.move_action(self.source, self.dest))
        self.assertEqual(sorted(mine), self.uuids(action.consumers))
        self.assertEqual((1 + 3, 0), (calls, scans))

    def test_without_nova_a_move_all_scans_placement(self):
        mine = self.servers(self.source, 2)
        accounts = self.accounts(self.config())
        action, _calls, scans = self.counted(
            lambda: accounts.move_action(self.source, self.dest))
        self.assertEqual(sorted(mine), self.uuids(action.consumers))
        self.assertEqual(1, scans)
        self.assertIn('[nova] names no Nova', self.logger.output)

    def test_consumers_from_scan_scans_although_nova_is_configured(self):
        self.servers(self.source, 2)
        accounts = self.accounts(self.config(
            self.nova_section() + '[accounts]\nconsumers_from = scan\n'))
        _action, _calls, scans = self.counted(
            lambda: accounts.move_action(self.source, self.dest))
        self.assertEqual(1, scans)

    def test_a_conditional_move_all_from_nova_reads_each_consumer_twice(
            self):
        mine = self.servers(self.source, 3)
        accounts = self.accounts(self.config(self.nova_section()))

        def move():
            action = accounts.move_action(self.source, self.dest)
            return accounts.move(self.source, self.dest,
                                 if_match=action.etag)

        moved, calls, scans = self.counted(move)
        self.assertEqual(sorted(mine), self.uuids(moved.consumers))
        # GET: /usages + 3 consumers; POST: the same again, then one
        # POST /allocations.
        self.assertEqual(((1 + 3) * 2 + 1, 0), (calls, scans))
        self.assertEqual({self.dest}, {
            self.client.get('/allocations/%s' % c)['project_id']
            for c in mine})
