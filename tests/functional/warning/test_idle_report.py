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
"""``placement-quota report idle`` as an operator runs it: a SQLite ledger
and the real Placement on a socket."""

import datetime
import json
import os
import uuid

from oslo_utils import timeutils

from placement_quota.ledger import models
from placement_quota.ledger import store
from placement_quota.placement import client as placement_client
from placement_quota.placement import reservations as rsv
from tests.fixtures import placement as placement_fixtures
from tests.functional.cmd import test_cli

HOUR = datetime.timedelta(hours=1)


class TestReportIdle(test_cli.CLITestCase):
    """Two started leases of one instance each: ``quiet`` never launched
    it, ``busy`` did."""

    def setUp(self):
        super().setUp()
        server = self.useFixture(placement_fixtures.PlacementServer())
        self.placement = placement_client.PlacementClient.from_endpoint(
            server.endpoint, server.headers)
        self.url = 'sqlite:///%s' % os.path.join(self.dir, 'ledger.sqlite')
        self.ledger = store.Ledger(self.url, migrate=True)
        self.addCleanup(self.ledger.dispose)
        self.conf = self.config(
            '[placement]\nauth_type = admin_token\nendpoint = %s\n'
            'token = admin\n[database]\nconnection = %s\n'
            % (server.endpoint, self.url))
        self.quiet_host = self.lease('quiet', charged=10, hourly=1)
        busy_host = self.lease('busy')
        self.launch(busy_host, self.rid)

    def lease(self, name, charged=0, hourly=0):
        """A lease started an hour ago, reserving one instance on a new
        host, the inventory Blazar writes in place; the host."""
        host = 'cn-%s' % uuid.uuid4().hex[:12]
        node = self.placement.post('/resource_providers',
                                   json={'name': host}).json()
        rp = self.placement.post('/resource_providers', json={
            'name': rsv.provider_name(host),
            'parent_provider_uuid': node['uuid']}).json()
        self.rid = str(uuid.uuid4())
        name_of_class = rsv.reservation_class(self.rid)
        self.placement.put('/resource_classes/%s' % name_of_class)
        inventory = rsv.reservation_inventory(1)
        self.placement.put('/resource_providers/%s/inventories' % rp['uuid'],
                           json={'resource_provider_generation':
                                 rp['generation'],
                                 'inventories': {name_of_class: inventory}})
        now = timeutils.utcnow()
        with self.ledger.transaction(['p1']) as txn:
            txn.insert(project_id='p1', user_id='u1', provisional_key='k',
                       lease_id='lease-%s' % name, name=name,
                       start_date=now - HOUR, end_date=now + 9 * HOUR,
                       state=models.ACTIVE, amounts={}, lease={
                           'name': name, 'reservations': [{
                               'resource_type': 'virtual:instance',
                               'id': self.rid, 'amount': 1}]},
                       hourly_rate=store.to_micro(hourly),
                       charged=store.to_micro(charged))
        return host

    def launch(self, host, rid):
        rp = self.placement.get('/resource_providers?name=%s'
                                % rsv.provider_name(host))[
                                    'resource_providers'][0]
        self.placement.put('/allocations/%s' % uuid.uuid4(), json={
            'allocations': {rp['uuid']: {'resources': {
                rsv.reservation_class(rid): 1}}},
            'project_id': 'p1', 'user_id': 'u1',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})

    def report(self, *args, config=None):
        return test_cli.command('report', 'idle', *args,
                                config=config or self.conf)

    def test_the_idle_lease_is_listed_with_its_hosts_and_credits_at_stake(self):  # noqa: E501
        result = self.report('-f', 'json')
        self.assertEqual(0, result.returncode, result.stderr)
        [row] = json.loads(result.stdout)
        self.assertEqual(
            ('p1', 'lease-quiet', 'quiet', self.quiet_host),
            (row['Project'], row['Lease'], row['Name'], row['Hosts']))
        self.assertAlmostEqual(9.0, row['Credits at stake'], places=2)
        self.assertTrue(row['Idle since'].endswith('Z'))

    def test_leases_idle_for_less_than_asked_are_left_out(self):
        result = self.report('--idle-for', '1h', '-f', 'json')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual([], json.loads(result.stdout))

    def test_an_unreachable_placement_exits_two_naming_it(self):
        config = self.write('unreachable.conf', (
            '[placement]\nauth_type = admin_token\nendpoint = '
            'http://127.0.0.1:9\ntoken = admin\n[database]\nconnection = '
            '%s\n' % self.url))
        result = self.report(config=config)
        self.assertEqual(2, result.returncode, result.stderr)
        self.assertIn('Cannot connect to Placement', result.stderr)
        self.assertIn('127.0.0.1:9', result.stderr)
        self.assertNotIn('Traceback', result.stderr)


class TestReportIdleInput(test_cli.CLITestCase):

    def test_a_bad_duration_is_a_clear_error(self):
        result = test_cli.command('report', 'idle', '--idle-for', 'soon',
                                  config=self.config(''))
        self.assertEqual(2, result.returncode, result.stderr)
        self.assertIn("--idle-for: 'soon' is not a duration", result.stderr)
