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
"""One exit status rule for every command that talks to a service.

0 done, 1 the answer is "no", 2 could not answer -- then one line
``placement-quota: ...`` on stderr and no traceback. Each command of the
``placement_quota.cli`` entry points that reads Placement is run against
a broken Placement three ways: an auth plugin keystoneauth cannot use
(``[placement] auth_type = noauth``), a wrong password against the real
Keystone, and a Placement on a closed port. The commands that read only
the ledger are run against a broken ledger (a PostgreSQL server on a
closed port, a SQLite file in a directory that does not exist), and
against the three broken Placements, which they must not need.

The table is :data:`PLACEMENT_COMMANDS` x :data:`PLACEMENT_FAILURES` and
:data:`LEDGER_COMMANDS` x (:data:`LEDGER_FAILURES` +
:data:`PLACEMENT_FAILURES`); each pair is its own test,
``test_<command>__<failure>``.
"""

import json
import os
import tempfile
import uuid

import testtools

from tests.fixtures import keystone as keystone_fixtures
from tests.fixtures import placement as placement_fixtures
from tests.fixtures import process as processes
from tests.functional.cmd import test_cli
from tests import spec_examples as spec

#: Commands that read Placement: name -> argv (``{limits}`` and
#: ``{lease}`` are files the test case writes, ``{deleted}`` an account
#: it deletes for the test).
PLACEMENT_COMMANDS = {
    'reconcile': ['reconcile', '--no-progress'],
    'account_show': ['account', 'show', 'source'],
    'account_set': ['account', 'set', 'source', '--property', 'k=v'],
    'account_move': ['account', 'move', 'source', '--dest', 'dest'],
    'account_recover': ['account', 'recover', '{deleted}'],
    'tree_check_usage_from_placement': [
        'tree', 'check', '--limits-file', '{limits}', '--usage-from',
        'placement'],
    'tree_show_usage_from_placement': [
        'tree', 'show', 'root', '--limits-file', '{limits}', '--usage-from',
        'placement'],
    'check_create_capacity': ['check', 'create', '{lease}'],
}

#: Commands that read only the ledger.
LEDGER_COMMANDS = {
    'allocations': ['allocations'],
    'usage_show': ['usage', 'show', 'project'],
    'credits_add': ['credits', 'add', 'project', '--amount', '5'],
    'credits_list': ['credits', 'list', 'project'],
    'account_list': ['account', 'list'],
    'db_purge': ['db', 'purge', '--before', '2026-01-01', '--dry-run'],
}

#: ``[placement]`` of each broken Placement, and what stderr must say.
PLACEMENT_FAILURES = {
    'bad_auth_plugin': ('[placement]\nauth_type = noauth\n',
                        '[placement] auth_type = noauth'),
    'wrong_password': (
        '[placement]\nauth_type = password\nauth_url = {auth_url}\n'
        'username = admin\npassword = not-the-password\n'
        'project_name = admin\nuser_domain_name = Default\n'
        'project_domain_name = Default\n', '401'),
    'unreachable_placement': (
        '[placement]\nauth_type = admin_token\n'
        'endpoint = http://127.0.0.1:{closed_port}\ntoken = admin\n',
        '127.0.0.1:{closed_port}'),
}

#: ``[database] connection`` of each broken ledger, and what stderr says.
LEDGER_FAILURES = {
    'unreachable_ledger': (
        'postgresql+psycopg2://pq:pq@127.0.0.1:{closed_port}/pq',
        '127.0.0.1'),
    'ledger_directory_missing': (
        'sqlite:///{dir}/no-such-dir/ledger.sqlite',
        '[database] connection'),
}


class ExitCodeTestCase(testtools.TestCase):
    """A ledger with accounts ``source``, ``dest`` and a deleted
    ``deleted``, made once through a working (real) Placement."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls._dir = tempfile.TemporaryDirectory(prefix='pq-exit-codes-')
        cls.dir = cls._dir.name
        cls.ledger = 'sqlite:///%s' % os.path.join(cls.dir, 'ledger.sqlite')
        cls.closed_port = processes.free_port('127.0.0.1')
        cls.limits = cls._write('limits.yaml', 'projects:\n  root: '
                                '{limits: {class:VCPU: 4}}\n')
        cls.lease = cls._write('lease.json', json.dumps(spec.check_create()))

    @classmethod
    def tearDownClass(cls):
        cls._dir.cleanup()
        super().tearDownClass()

    @classmethod
    def _write(cls, name, text):
        path = os.path.join(cls.dir, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    _seeded = False

    def setUp(self):
        super().setUp()
        keystone = self.useFixture(keystone_fixtures.KeystoneFixture())
        self.auth_url = keystone.auth_url
        placement = self.useFixture(placement_fixtures.PlacementServer())
        self.seed_config = self._write('seed.conf', (
            '[placement]\nauth_type = admin_token\nendpoint = %s\n'
            'token = admin\n[database]\nconnection = %s\n'
            % (placement.endpoint, self.ledger)))
        if not ExitCodeTestCase._seeded:
            self._seed(['account', 'set', 'source'],
                       ['account', 'set', 'dest'])
            ExitCodeTestCase._seeded = True
        # recover changes the ledger before it reads Placement: a deleted
        # account of its own for each test.
        self.deleted = 'deleted-%s' % uuid.uuid4().hex[:8]

    def _seed(self, *argvs):
        for argv in argvs:
            result = test_cli.command(*argv, config=self.seed_config)
            self.assertEqual(0, result.returncode, result.stderr)

    def delete_an_account(self):
        self._seed(['account', 'set', self.deleted],
                   ['account', 'delete', self.deleted])

    def _format(self, text):
        return text.format(auth_url=self.auth_url,
                           closed_port=self.closed_port, dir=self.dir,
                           deleted=self.deleted,
                           limits=self.limits, lease=self.lease)

    def run_with(self, argv, placement='', connection=None, extra=''):
        name = 'run-%s.conf' % uuid.uuid4().hex[:8]
        config = self._write(name, self._format(
            placement + '[database]\nconnection = %s\n'
            % (connection or self.ledger) + extra))
        return test_cli.command(*[self._format(a) for a in argv],
                                config=config)

    def assertCouldNotAnswer(self, result, needle):
        self.assertEqual(2, result.returncode, result.stderr)
        self.assertNotIn('Traceback', result.stderr)
        lines = [line for line in result.stderr.splitlines()
                 if line.startswith('placement-quota: ')]
        self.assertEqual(1, len(lines), result.stderr)
        self.assertIn(self._format(needle), lines[0])


#: The chain of ``check create``: a filter that reads Placement.
_CAPACITY = '[enforcement]\nenabled_filters = PlacementCapacityFilter\n'


def _placement_case(argv, failure):
    placement, needle = PLACEMENT_FAILURES[failure]

    def test(self):
        extra = _CAPACITY if argv[0] == 'check' else ''
        if '{deleted}' in argv:
            self.delete_an_account()
        self.assertCouldNotAnswer(
            self.run_with(argv, placement=placement, extra=extra), needle)
    return test


def _ledger_case(argv, failure):
    connection, needle = LEDGER_FAILURES[failure]

    def test(self):
        self.assertCouldNotAnswer(
            self.run_with(argv, connection=connection), needle)
    return test


def _placement_not_needed(argv, failure):
    placement, _ = PLACEMENT_FAILURES[failure]

    def test(self):
        result = self.run_with(argv, placement=placement)
        self.assertEqual(0, result.returncode, result.stderr)
    return test


for _command, _argv in PLACEMENT_COMMANDS.items():
    for _failure in PLACEMENT_FAILURES:
        setattr(ExitCodeTestCase, 'test_%s__%s__exits_2' % (
            _command, _failure), _placement_case(_argv, _failure))
for _command, _argv in LEDGER_COMMANDS.items():
    for _failure in LEDGER_FAILURES:
        setattr(ExitCodeTestCase, 'test_%s__%s__exits_2' % (
            _command, _failure), _ledger_case(_argv, _failure))
    for _failure in PLACEMENT_FAILURES:
        setattr(ExitCodeTestCase,
                'test_%s__%s__answers_without_placement' % (
                    _command, _failure),
                _placement_not_needed(_argv, _failure))
