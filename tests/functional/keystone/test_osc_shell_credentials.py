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
"""``openstack reservation ...`` with the shell's own credentials: the real
``openstack`` executable authenticates to the real Keystone, finds
Placement in Keystone's catalog, and reaches a real Placement that checks
every token with that Keystone (``[api] auth_strategy = keystone``). The
placement-quota configuration has no ``[placement]`` credentials."""

import json
import os
import shutil
import tempfile
import uuid

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
import testtools

from placement_quota.placement import client as placement_client
from placement_quota.placement import embedded
from placement_quota.reconcile import model as m
from tests.fixtures import keystone as keystone_fixture
from tests.functional.reconcile import base
from tests.functional.osc import test_plugin as osc

PLACEMENT_CONF = """\
[api]
auth_strategy = keystone

{authtoken}"""


class TestShellCredentials(testtools.TestCase):
    """Placement's usage and a reconcile run, through the shell's session.

    Placement holds compute node cn-1 (64 VCPU) with 25 VCPU used by a
    server of project A. The ledger holds a running instance reservation
    R of 2 instances on cn-1, which has neither a reservation provider,
    nor a class, nor an inventory in Placement.
    """

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.keystone = ks = keystone_fixture.KeystoneFixture()
        ks.setUp()
        cls.workdir = tempfile.mkdtemp(prefix='osc-shell-test-')
        conf_path = os.path.join(cls.workdir, 'placement.conf')
        with open(conf_path, 'w') as f:
            f.write(PLACEMENT_CONF.format(
                authtoken=ks.server.authtoken_section()))
        server = embedded.ServerProcess(config_files=[conf_path])
        identity = ks.admin_conn.identity
        cls.service = identity.create_service(type='placement',
                                              name='placement')
        identity.create_endpoint(service_id=cls.service.id,
                                 interface='public', url=server.url,
                                 region_id=ks.region_name)
        cls.cloud = c = base.Cloud(server=server, client=cls._admin_client())
        node = c.compute_node('cn-1', child=False)
        inventory = c.client.get('/resource_providers/%s/inventories' % node)
        c.client.put('/resource_providers/%s/inventories' % node, json={
            'resource_provider_generation':
                inventory['resource_provider_generation'],
            'inventories': {'VCPU': {'total': 64}}})
        c.client.put('/allocations/%s' % uuid.uuid4(), json={
            'allocations': {node: {'resources': {'VCPU': 25}}},
            'project_id': 'A', 'user_id': 'u', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'})
        cls.rid = str(uuid.uuid4())
        c.lease([base.instance(cls.rid, {'cn-1': 2})], c.now - base.DAY,
                c.now + base.DAY, lease_id='L1')
        cls.config = os.path.join(cls.workdir, 'placement-quota.conf')
        with open(cls.config, 'w') as f:
            f.write('[ledger]\nconnection = %s\n' % c.url)

    @classmethod
    def _admin_client(cls):
        ks = cls.keystone
        auth = ks_loading.get_plugin_loader('password').load_from_options(
            auth_url=ks.auth_url, username=ks.admin_username,
            password=ks.admin_password, project_name=ks.admin_project_name,
            user_domain_name=ks.user_domain_name,
            project_domain_name=ks.project_domain_name)
        return placement_client.PlacementClient(ks_adapter.Adapter(
            ks_session.Session(auth=auth), service_type='placement',
            region_name=ks.region_name, raise_exc=False), 'catalog')

    @classmethod
    def tearDownClass(cls):
        cls.keystone.admin_conn.identity.delete_service(cls.service.id)
        cls.cloud.close()
        cls.keystone.cleanUp()
        shutil.rmtree(cls.workdir, ignore_errors=True)
        super().tearDownClass()

    def env(self, password=None):
        ks = self.keystone
        return osc._env(
            OS_AUTH_TYPE='password', OS_AUTH_URL=ks.auth_url,
            OS_USERNAME=ks.admin_username,
            OS_PASSWORD=password or ks.admin_password,
            OS_PROJECT_NAME=ks.admin_project_name,
            OS_USER_DOMAIN_NAME=ks.user_domain_name,
            OS_PROJECT_DOMAIN_NAME=ks.project_domain_name,
            OS_REGION_NAME=ks.region_name)

    def openstack(self, *args, password=None):
        return osc.openstack('reservation', *args, config=self.config,
                             env=self.env(password))

    def test_placement_refuses_a_request_without_a_token(self):
        anonymous = placement_client.PlacementClient.from_endpoint(
            self.cloud.server.url)
        error = self.assertRaises(placement_client.PlacementError,
                                  anonymous.get, '/usages?project_id=A')
        self.assertEqual(401, error.status)

    def test_usage_is_read_from_placement_with_the_shells_token(self):
        limits = os.path.join(self.workdir, 'limits.yaml')
        with open(limits, 'w') as f:
            f.write('registered_limits: {VCPU: 10}\n'
                    'projects:\n  A: {limits: {VCPU: 20}}\n')
        result = self.openstack('tree', 'check', '--limits-file', limits,
                                '--usage-from', 'placement', '-f', 'json')
        self.assertEqual(1, result.returncode, result.stderr)
        self.assertEqual([('A', 25)], [(row['Project'], row['Value'])
                                       for row in json.loads(result.stdout)])

    def test_wrong_password_is_a_clean_error(self):
        limits = os.path.join(self.workdir, 'limits-2.yaml')
        with open(limits, 'w') as f:
            f.write('registered_limits: {VCPU: 10}\nprojects:\n  A: {}\n')
        result = self.openstack('tree', 'check', '--limits-file', limits,
                                '--usage-from', 'placement',
                                password='wrong')
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertIn('Cannot authenticate to reach Placement', result.stderr)
        self.assertIn('401', result.stderr)
        self.assertNotIn('Traceback', result.stderr)

    def test_reconcile_with_a_wrong_password_exits_two_not_one(self):
        # 1 would mean "drift found".
        result = self.openstack('reconcile', '--no-progress',
                                password='wrong')
        self.assertEqual((2, ''), (result.returncode, result.stdout))
        self.assertIn('Cannot authenticate to reach Placement', result.stderr)
        self.assertNotIn('Traceback', result.stderr)

    def test_reconcile_through_the_shell_finds_fixes_and_then_is_clean(self):
        dry = self.openstack('reconcile', '-f', 'json', '--no-progress')
        self.assertEqual(1, dry.returncode, dry.stderr)
        klass = 'CUSTOM_RESERVATION_' + self.rid.upper().replace('-', '_')
        self.assertEqual(
            [(m.MISSING_PROVIDER, 'provider blazar_cn-1'),
             (m.MISSING_CLASS, 'class ' + klass),
             (m.INVENTORY_MISMATCH, 'blazar_cn-1 / ' + klass)],
            [(row['Kind'], row['Subject'])
             for row in json.loads(dry.stdout)])
        fixed = self.openstack('reconcile', '--fix', '-f', 'json',
                               '--no-progress')
        self.assertEqual(0, fixed.returncode, fixed.stderr)
        self.assertEqual(['fixed'] * 3,
                         [row['Result'] for row in json.loads(fixed.stdout)])
        self.assertEqual({klass: 2}, {
            name: inventory['total'] for name, inventory in
            self.cloud.inventories('cn-1').items()})
        again = self.openstack('reconcile', '-f', 'json', '--no-progress')
        self.assertEqual((0, []), (again.returncode, json.loads(again.stdout)))

    def test_allocation_list_through_the_shell(self):
        result = self.openstack('ledger', 'allocation', 'list', '--host',
                                'cn-1', '-f', 'json')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual([('cn-1', self.rid, 'L1', 2, 'active')], [
            (row['Host'], row['Reservation'], row['Lease'],
             row['Allocations'], row['State'])
            for row in json.loads(result.stdout)])

    def test_account_show_reads_placement_usage_with_the_shells_token(self):
        created = self.openstack('account', 'set', 'A', '--limit',
                                 'class:VCPU=40')
        self.assertEqual(0, created.returncode, created.stderr)
        shown = self.openstack('account', 'show', 'A', '-f', 'json')
        self.assertEqual(0, shown.returncode, shown.stderr)
        document = json.loads(shown.stdout)
        self.assertEqual(({'class:VCPU': 40}, {'VCPU': 25}),
                         (document['limits'],
                          document['usage']['placement']['resources']))
