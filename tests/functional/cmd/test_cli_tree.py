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
"""``placement-quota tree check`` and ``tree show``, run as an operator runs
them, on limits files in the notation of Keystone's "Strict Two-Level Limits
Enforcement Model"."""

import json
import os
import shutil
import uuid

from placement_quota.placement import client as placement_client
from placement_quota.placement import embedded
from tests.fixtures import placement as placement_fixtures
from tests.functional.cmd import test_cli

command = test_cli.command

#: Keystone's "Strict Two-Level Limits Enforcement Model": A (l=20, u=4) with B
#: (u=8) and C (u=8), default cores=10.
SPEC = """\
model: strict_two_level
registered_limits: {cores: 10}
projects:
  A: {limits: {cores: 20}}
  B: {parent: A}
  C: {parent: A}
usage:
  A: {cores: 4}
  B: {cores: 8}
  C: {cores: 8}
"""

#: A grandchild (D under C), a child limit above its parent's (B: 30 under
#: A: 20), C over its own limit and the tree over A's limit.
BROKEN = """\
registered_limits: {cores: 10}
projects:
  A: {name: production, limits: {cores: 20}}
  B: {parent: A, limits: {cores: 30}}
  C: {parent: A}
  D: {parent: C}
usage:
  A: {cores: 4}
  B: {cores: 8}
  C: {cores: 12}
"""

SPEC_TEXT = """\
cores (default l=10)
A (l=20, u=4)  tree u=20/20  <--
├── B (u=8)
└── C (u=8)
"""


class TreeTestCase(test_cli.CLITestCase):

    def limits(self, content, name='limits.yaml'):
        return self.write(name, content)

    def assertBadInput(self, result, *needles):
        self.assertEqual(2, result.returncode, result.stdout)
        for needle in needles:
            self.assertIn(needle, result.stderr)
        self.assertNotIn('Traceback', result.stderr)


class TestTreeCheck(TreeTestCase):

    def test_no_violation_exits_zero(self):
        config = self.config('[limits]\nlimits_file = %s\n'
                             % self.limits(SPEC))
        result = command('tree', 'check', config=config)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertIn('No violation found', result.stderr)
        self.assertEqual('', result.stdout.strip())

    def test_no_violation_as_json_is_an_empty_list(self):
        result = command('tree', 'check', '-f', 'json',
                         '--limits-file', self.limits(SPEC))
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual([], json.loads(result.stdout))

    def test_every_violation_is_listed_and_exits_one(self):
        result = command('tree', 'check', '-f', 'json',
                         '--limits-file', self.limits(BROKEN))
        self.assertEqual(1, result.returncode, result.stderr)
        rows = json.loads(result.stdout)
        self.assertEqual(
            [('depth', 'D', 'C', '', '', ''),
             ('child-limit', 'B', 'A', 'cores', 20, 30),
             ('usage', 'A', '', 'cores', 20, 24),
             ('usage', 'C', 'A', 'cores', 10, 12)],
            [(r['Rule'], r['Project'], r['Parent'], r['Resource'],
              r['Limit'], r['Value']) for r in rows])
        self.assertIn('depth of two at most', rows[0]['Message'])
        self.assertIn('usage of the tree of A', rows[2]['Message'])
        self.assertIn('4 violations found', result.stderr)

    def test_table_lists_every_violation(self):
        result = command('tree', 'check', '--limits-file',
                         self.limits(BROKEN))
        self.assertEqual(1, result.returncode, result.stderr)
        header = result.stdout.splitlines()[1]
        self.assertEqual(['Rule', 'Project', 'Parent', 'Resource', 'Limit',
                          'Value', 'Message'],
                         [cell.strip() for cell in header.split('|')[1:-1]])
        for rule in ('depth', 'child-limit', 'usage'):
            self.assertIn('| %s ' % rule, result.stdout)
        self.assertEqual(4, result.stdout.count('| usage ')
                         + result.stdout.count('| depth ')
                         + result.stdout.count('| child-limit '))

    def test_malformed_yaml_exits_two(self):
        result = command('tree', 'check', '--limits-file',
                         self.limits('projects: {A: [unclosed\n'))
        self.assertBadInput(result, 'not valid YAML')

    def test_limit_that_is_not_a_number_exits_two_naming_the_field(self):
        document = SPEC.replace('{cores: 20}', '{cores: ten}')
        result = command('tree', 'check', '--limits-file',
                         self.limits(document))
        self.assertBadInput(result, 'projects/A/limits/cores', "'ten'")

    def test_missing_limits_file_exits_two(self):
        missing = os.path.join(self.dir, 'missing.yaml')
        result = command('tree', 'check', '--limits-file', missing)
        self.assertBadInput(result, 'Cannot read limits file', missing)

    def test_bad_registered_limit_in_config_exits_two(self):
        config = self.config('[limits]\nregistered_limits = cores:ten\n')
        result = command('tree', 'check', config=config)
        self.assertBadInput(result, 'registered_limits', "'ten'")


class TestTreeShow(TreeTestCase):

    def test_shows_the_spec_notation(self):
        result = command('tree', 'show', 'A', '--limits-file',
                         self.limits(SPEC))
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual(SPEC_TEXT, result.stdout)

    def test_a_child_shows_its_whole_tree(self):
        config = self.config('[limits]\nlimits_file = %s\n'
                             % self.limits(SPEC))
        result = command('tree', 'show', 'C', '--resource', 'cores',
                         config=config)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual(SPEC_TEXT.replace('  <--', '')
                         .replace('C (u=8)', 'C (u=8)  <--'),
                         result.stdout)

    def test_violations_and_names(self):
        result = command('tree', 'show', 'production', '--limits-file',
                         self.limits(BROKEN))
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual(
            'cores (default l=10)\n'
            'production [A] (l=20, u=4)  tree u=24/20  '
            '! tree usage over limit 20  <--\n'
            '├── B (l=30, u=8)  ! limit above A\'s 20\n'
            '└── C (u=12)  ! usage over limit 10\n', result.stdout)

    def test_dot_to_stdout(self):
        result = command('tree', 'show', 'A', '--format-tree', 'dot',
                         '--limits-file', self.limits(SPEC))
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertTrue(result.stdout.startswith('digraph "A" {\n'))
        self.assertIn('"A" [label="A (l=20, u=4)\\ntree u=20/20"',
                      result.stdout)
        self.assertIn('"A" -> "B";', result.stdout)

    def test_output_dot_file(self):
        path = os.path.join(self.dir, 'tree.dot')
        result = command('tree', 'show', 'B', '--output', path,
                         '--limits-file', self.limits(BROKEN))
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual('', result.stdout)
        with open(path, encoding='utf-8') as f:
            dot_text = f.read()
        self.assertTrue(dot_text.startswith('digraph "A" {\n'))
        self.assertIn('"B" [label="B (l=30, u=8)", fontcolor="#FF0000"',
                      dot_text)
        self.assertIn('"C" [label="C (u=12)", fontcolor="#FF0000"',
                      dot_text)

    def test_output_png_file(self):
        if shutil.which('dot') is None:
            self.skipTest('Graphviz is not installed (tools/run-tests.sh '
                          'installs the Debian package graphviz)')
        path = os.path.join(self.dir, 'tree.png')
        result = command('tree', 'show', 'A', '--output', path,
                         '--limits-file', self.limits(SPEC))
        self.assertEqual(0, result.returncode, result.stderr)
        with open(path, 'rb') as f:
            self.assertEqual(b'\x89PNG\r\n\x1a\n', f.read(8))

    def test_png_needs_an_output(self):
        result = command('tree', 'show', 'A', '--format-tree', 'png',
                         '--limits-file', self.limits(SPEC))
        self.assertBadInput(result, '--output')

    def test_unknown_project_exits_two_naming_it(self):
        result = command('tree', 'show', 'no-such-project',
                         '--limits-file', self.limits(SPEC))
        self.assertBadInput(result, 'no-such-project')
        self.assertEqual('', result.stdout)

    def test_grandchild_exits_two_pointing_at_tree_check(self):
        result = command('tree', 'show', 'D', '--limits-file',
                         self.limits(BROKEN))
        self.assertBadInput(result, 'project D', 'tree check')

    def test_bad_limits_file_exits_two(self):
        result = command('tree', 'show', 'A', '--limits-file',
                         self.limits(SPEC.replace('{cores: 20}',
                                                  '{cores: ten}')))
        self.assertBadInput(result, 'projects/A/limits/cores')


class TestUsageFromPlacement(TreeTestCase):
    """``--usage-from placement``: u= read from a real Placement server
    (noauth2, reached with keystoneauth's admin_token plugin)."""

    def setUp(self):
        super().setUp()
        server = self.useFixture(placement_fixtures.PlacementServer())
        self.placement = placement_client.PlacementClient.from_endpoint(
            server.endpoint, embedded.NOAUTH_HEADERS)
        provider = self.placement.post('/resource_providers', json={
            'name': 'cn-%s' % uuid.uuid4().hex[:12]}).json()
        self.placement.put(
            '/resource_providers/%s/inventories' % provider['uuid'],
            json={'resource_provider_generation': provider['generation'],
                  'inventories': {'VCPU': {'total': 64}}})
        self.provider = provider['uuid']
        self.root = 'root-%s' % uuid.uuid4().hex[:8]
        self.child = 'child-%s' % uuid.uuid4().hex[:8]
        self.conf = self.config(
            '[placement]\nauth_type = admin_token\nendpoint = %s\n'
            'token = admin\n' % server.endpoint)
        self.file = self.limits(
            'registered_limits: {class:VCPU: 10}\n'
            'projects:\n  %s: {limits: {class:VCPU: 12}}\n'
            '  %s: {parent: %s}\n' % (self.root, self.child, self.root))

    def allocate(self, project_id, vcpus):
        self.placement.put('/allocations/%s' % uuid.uuid4(), json={
            'allocations': {self.provider: {'resources': {'VCPU': vcpus}}},
            'project_id': project_id, 'user_id': 'someone',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})

    def test_show_prints_the_usage_placement_holds(self):
        self.allocate(self.root, 3)
        self.allocate(self.child, 7)
        result = command('tree', 'show', self.child, '--limits-file',
                         self.file, '--usage-from', 'placement',
                         config=self.conf)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertIn('%s (l=12, u=3)  tree u=10/12' % self.root,
                      result.stdout)
        self.assertIn('%s (u=7)' % self.child, result.stdout)

    def test_check_finds_a_tree_over_its_limit_in_placement(self):
        self.allocate(self.root, 6)
        self.allocate(self.child, 9)
        result = command('tree', 'check', '-f', 'json', '--limits-file',
                         self.file, '--usage-from', 'placement',
                         config=self.conf)
        self.assertEqual(1, result.returncode, result.stderr)
        self.assertEqual([('usage', self.root, 12, 15)], [
            (r['Rule'], r['Project'], r['Limit'], r['Value'])
            for r in json.loads(result.stdout)])

    def test_an_unreachable_placement_exits_two_without_traceback(self):
        conf = self.config('[placement]\nauth_type = admin_token\n'
                           'endpoint = http://127.0.0.1:9\ntoken = admin\n')
        result = command('tree', 'show', self.root, '--limits-file',
                         self.file, '--usage-from', 'placement', config=conf)
        self.assertBadInput(result, 'Placement')
