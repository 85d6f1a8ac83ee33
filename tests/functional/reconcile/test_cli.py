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
"""``placement-quota reconcile`` and ``allocations`` run as an operator
runs them (the real command, through cliff), on a real Placement reached
with keystoneauth's admin_token plugin (noauth2)."""

import json
import os

import yaml

from placement_quota.placement import reservations as rsv
from tests.functional.reconcile import base
from tests.functional.cmd import test_cli


class SafeDriftCloud(base.Cloud):
    """Only drift that --fix repairs: an ended reservation's inventory
    and class, an orphan provider; and one healthy running lease."""

    def __init__(self):
        super().__init__()
        now = self.now
        self.ended = 'e1e1e1e1-0000-4000-8000-000000000001'
        self.running = 'a1a1a1a1-0000-4000-8000-000000000002'
        self.compute_node('cn-1')
        self.compute_node('cn-2')
        self.reservation_provider('ghost')
        self.lease([base.instance(self.ended, {'cn-1': 1})],
                   now - 3 * base.DAY, now - base.DAY, lease_id='L-old',
                   name='old', state='terminated')
        self.inventory('cn-1', self.ended, 1)
        self.lease([base.instance(self.running, {'cn-1': 1, 'cn-2': 2}),
                    base.host(None, ['cn-2'])],
                   now - base.HOUR, now + base.DAY, lease_id='L-now',
                   name='now', project='p2')
        self.inventory('cn-1', self.running, 1)
        self.inventory('cn-2', self.running, 2)


class TestReconcileCommand(base.CloudTestCase):

    cloud_class = SafeDriftCloud

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.dir = cls.cloud.dir
        config = os.path.join(cls.dir, 'placement-quota.conf')
        with open(config, 'w') as f:
            f.write('[placement]\nauth_type = admin_token\nendpoint = %s\n'
                    'token = admin\n[ledger]\nconnection = %s\n'
                    % (cls.cloud.server.url, cls.cloud.url))
        cls.config = config
        run = cls.run_cli
        cls.dry_json = run('reconcile', '-f', 'json')
        cls.dry_yaml = run('reconcile', '-f', 'yaml')
        cls.fixed = run('reconcile', '--fix', '-f', 'json')
        cls.after = run('reconcile', '-f', 'json')

    @classmethod
    def run_cli(cls, *args, config=None):
        return test_cli.command(*args, config=config or cls.config)

    def test_drift_exits_one_with_the_findings_as_json(self):
        self.assertEqual(1, self.dry_json.returncode, self.dry_json.stderr)
        rows = json.loads(self.dry_json.stdout)
        self.assertEqual(['ended_inventory', 'orphan_class',
                          'orphan_provider'],
                         sorted(r['Kind'] for r in rows))
        self.assertEqual({'not applied (dry run)'},
                         {r['Result'] for r in rows})

    def test_yaml_output_holds_the_same_findings(self):
        self.assertEqual(1, self.dry_yaml.returncode, self.dry_yaml.stderr)
        self.assertEqual(json.loads(self.dry_json.stdout),
                         yaml.safe_load(self.dry_yaml.stdout))

    def test_fix_reports_what_it_did_and_exits_zero(self):
        self.assertEqual(0, self.fixed.returncode, self.fixed.stderr)
        rows = json.loads(self.fixed.stdout)
        self.assertEqual(3, len(rows))
        self.assertEqual({'fixed'}, {r['Result'] for r in rows})
        self.assertIsNone(self.cloud.provider('blazar_ghost'))
        self.assertNotIn(rsv.reservation_class(self.cloud.ended),
                         self.cloud.classes())

    def test_run_after_fix_finds_nothing_and_exits_zero(self):
        self.assertEqual(0, self.after.returncode, self.after.stderr)
        self.assertEqual([], json.loads(self.after.stdout))

    def test_unreachable_placement_exits_two_without_traceback(self):
        config = os.path.join(self.dir, 'unreachable.conf')
        with open(config, 'w') as f:
            f.write('[placement]\nauth_type = admin_token\nendpoint = '
                    'http://127.0.0.1:9\ntoken = admin\n[ledger]\n'
                    'connection = %s\n' % self.cloud.url)
        result = self.run_cli('reconcile', config=config)
        self.assertEqual(2, result.returncode, result.stderr)
        self.assertIn('127.0.0.1:9', result.stderr)
        self.assertNotIn('Traceback', result.stderr)

    def test_allocations_show_the_reservations_of_a_host(self):
        result = self.run_cli('allocations', '--host', 'cn-2', '-f', 'json')
        self.assertEqual(0, result.returncode, result.stderr)
        rows = json.loads(result.stdout)
        self.assertEqual([('cn-2', 'physical:host', 'L-now', 1),
                          ('cn-2', 'virtual:instance', 'L-now', 2)],
                         [(r['Host'], r['Type'], r['Lease'],
                           r['Allocations']) for r in rows])

    def test_allocations_of_a_lease_by_name_leave_ended_ones_out(self):
        result = self.run_cli('allocations', '--lease', 'old', '-f', 'json')
        self.assertEqual([], json.loads(result.stdout))
        result = self.run_cli('allocations', '--lease', 'old', '--all',
                              '-f', 'value', '-c', 'Host', '-c', 'State')
        self.assertEqual('cn-1 terminated', result.stdout.strip())

    def test_empty_host_is_bad_input(self):
        result = self.run_cli('allocations', '--host', ' ')
        self.assertEqual(2, result.returncode)
        self.assertIn('--host must not be empty', result.stderr)
