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
"""The ``openstack`` client plugin: ``openstack reservation ...`` run by
the real ``openstack`` executable (python-openstackclient), compared with
what ``placement-quota`` prints for the same command."""

import argparse
from importlib import metadata
import json
import os
import subprocess
import sys

import testtools

from placement_quota import audit
from placement_quota.cmd import common
from placement_quota.cmd import main
from placement_quota import conf as pq_conf
from placement_quota.osc import plugin
from placement_quota.placement import client as placement_client
from tests.functional.cmd import test_cli
from tests.functional.cmd import test_cli_tree

OPENSTACK = os.path.join(os.path.dirname(sys.executable), 'openstack')
GROUP = 'openstack.%s.v%s' % (plugin.API_NAME, plugin.DEFAULT_API_VERSION)
#: The commands of a project's users (the project API's clients), not
#: of placement-quota's operators.
SELF_SERVICE = ('reservation_quota_show', 'reservation_quote',
                'reservation_lease_extension')


def _entry_points(group):
    return metadata.entry_points(group=group)


def _env(**extra):
    """The environment without the caller's OpenStack credentials."""
    env = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
    env.update(extra)
    return env


def openstack(*args, config=None, env=None):
    """Run ``openstack [--os-placement-quota-config-file F] ARGS``."""
    argv = [OPENSTACK]
    if config is not None:
        argv += ['--os-placement-quota-config-file', config]
    return subprocess.run(argv + list(args), capture_output=True, text=True,
                          timeout=test_cli.TIMEOUT, env=env or _env())


class TestPluginLoading(testtools.TestCase):

    def test_extension_entry_point_names_the_plugin_module(self):
        found = {ep.name: ep.value
                 for ep in _entry_points('openstack.cli.extension')}
        self.assertEqual('placement_quota.osc.plugin',
                         found.get(plugin.API_NAME))

    def test_plugin_has_the_attributes_openstackclient_reads(self):
        self.assertIsInstance(plugin.API_VERSIONS, tuple)
        self.assertIn(plugin.DEFAULT_API_VERSION, plugin.API_VERSIONS)
        self.assertTrue(plugin.API_VERSION_OPTION.startswith('os_'))
        self.assertTrue(callable(plugin.make_client))
        parser = plugin.build_option_parser(argparse.ArgumentParser())
        parsed = parser.parse_args(['--os-placement-quota-config-file', 'a',
                                    '--os-placement-quota-config-file', 'b'])
        self.assertEqual(['a', 'b'], parsed.os_placement_quota_config_file)

    def test_openstack_lists_the_reservation_commands(self):
        result = openstack('command', 'list', '--group', plugin.API_NAME,
                           '-f', 'json')
        self.assertEqual(0, result.returncode, result.stderr)
        commands = json.loads(result.stdout)[0]['Commands']
        self.assertIn('reservation tree check', commands)
        self.assertIn('reservation credits list', commands)
        self.assertNotIn('WARNING', result.stderr)

    def test_openstack_help_loads_every_installed_command(self):
        # python-blazarclient 4.6.0 names a class its code lacks
        # (reservation_host_unset): the shell then prints "Could not
        # load" before anything else; requirements.txt excludes it.
        result = openstack('--help')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertNotIn('Could not load', result.stderr)
        self.assertIn('reservation tree check', result.stdout)

    def test_every_command_is_named_reservation(self):
        for ep in _entry_points(GROUP):
            self.assertTrue(ep.name.startswith('reservation_'), ep.name)

    def test_every_operator_command_is_a_placement_quota_command_class(self):
        ours = {ep.value for ep in _entry_points('placement_quota.cli')}
        for ep in _entry_points(GROUP):
            if ep.name not in SELF_SERVICE:
                self.assertIn(ep.value, ours, ep.name)

    def test_self_service_commands_are_the_project_api_clients(self):
        self.assertEqual(
            {name: 'placement_quota.osc.selfservice' for name in
             SELF_SERVICE},
            {ep.name: ep.value.partition(':')[0]
             for ep in _entry_points(GROUP) if ep.name in SELF_SERVICE})

    def test_blazarclient_commands_are_installed_beside_ours(self):
        # python-blazarclient is a requirement: the clash test below sees
        # its real command names.
        blazar = {ep.name for ep in _entry_points('openstack.reservation.v1')}
        self.assertIn('reservation_allocation_list', blazar)
        self.assertIn('reservation_lease_list', blazar)

    def test_no_command_name_clashes_with_another_plugin(self):
        ours = {ep.name for ep in _entry_points(GROUP)}
        others = set()
        for group in metadata.entry_points().groups:
            if group.startswith('openstack.') and group != GROUP:
                others.update(ep.name for ep in _entry_points(group))
        self.assertEqual(set(), ours & others)

    def test_every_operator_command_runs_without_keystone(self):
        needing = [ep.value for ep in _entry_points(GROUP)
                   if ep.name not in SELF_SERVICE and
                   getattr(ep.load(), 'auth_required', True) is not False]
        self.assertEqual([], needing)

    def test_self_service_commands_run_with_the_users_credentials(self):
        self.assertEqual(
            dict.fromkeys(SELF_SERVICE, True),
            {ep.name: ep.load().auth_required
             for ep in _entry_points(GROUP) if ep.name in SELF_SERVICE})

    def test_quote_takes_the_options_of_blazarclients_lease_create(self):
        theirs = {ep.name: ep for ep in
                  _entry_points('openstack.reservation.v1')}[
                      'reservation_lease_create'].load()
        ours = {ep.name: ep for ep in _entry_points(GROUP)}[
            'reservation_quote'].load()

        def options(cls):
            parser = cls(None, None).get_parser('x')
            return {opt for action in parser._actions
                    for opt in action.option_strings} | {
                action.dest for action in parser._actions
                if not action.option_strings}

        self.assertEqual({'--project'}, options(ours) - options(theirs))
        self.assertEqual(set(), options(theirs) - options(ours))


class TestConfig(test_cli.CLITestCase):

    def test_placement_section_wins_over_the_shell_credentials(self):
        conf = pq_conf.new_config([], [])
        conf.set_override('endpoint_override', 'http://placement.test',
                          group='placement')
        found = placement_client.PlacementClient.from_conf(
            conf, fallback=self.fail)
        self.assertEqual('http://placement.test', found.description)

    def test_plugin_config_is_what_commands_read_under_openstack(self):
        manager = _FakeClientManager()
        manager._cli_options.config = {
            'placement_quota_config_file': [self.config('[DEFAULT]\n')]}
        client = plugin.make_client(manager)
        setattr(type(manager), plugin.API_NAME, client)
        command = _FakeCommand(_FakeShell(manager))
        self.assertIs(client.conf, main.config(command))

    def test_commands_under_openstack_share_the_shells_services(self):
        manager = _FakeClientManager()
        manager._cli_options.config = {
            'placement_quota_config_file': [self.config('[DEFAULT]\n')]}
        client = plugin.make_client(manager)
        setattr(type(manager), plugin.API_NAME, client)
        shell = _FakeShell(manager)
        found = common.services(_FakeCommand(shell))
        self.assertIs(client.conf, found.conf)
        self.assertIs(found, common.services(_FakeCommand(shell)))

    def test_changes_under_openstack_are_audited_as_the_command_lines(self):
        manager = _FakeClientManager()
        manager._cli_options.config = {
            'placement_quota_config_file': [self.config('[DEFAULT]\n')]}
        client = plugin.make_client(manager)
        with audit.acting(None):
            client.conf
            self.assertEqual(audit.cli_actor(), audit.actor())

    def test_the_api_name_is_the_one_commands_look_up(self):
        self.assertEqual(plugin.API_NAME, main.OSC_API_NAME)


class _FakeClientManager:
    def __init__(self):
        self._cli_options = argparse.Namespace(config={})


class _FakeShell:
    def __init__(self, client_manager):
        self.client_manager = client_manager


class _FakeCommand:
    def __init__(self, app):
        self.app = app


class OpenstackCLITestCase(test_cli.CLITestCase):

    def setUp(self):
        super().setUp()
        self.url = 'sqlite:///%s' % os.path.join(self.dir, 'ledger.sqlite')
        self.conf = self.config('[ledger]\nconnection = %s\n' % self.url)

    def assertSameOutput(self, *args):
        """``openstack reservation ARGS`` prints and exits as
        ``placement-quota ARGS`` does; return the parsed JSON."""
        ours = test_cli.command(*args, config=self.conf)
        theirs = openstack('reservation', *args, config=self.conf)
        self.assertEqual((ours.returncode, ours.stdout),
                         (theirs.returncode, theirs.stdout), theirs.stderr)
        return json.loads(theirs.stdout)

    def assertCleanFailure(self, result, *needles):
        self.assertEqual(2, result.returncode, result.stdout)
        for needle in needles:
            self.assertIn(needle, result.stderr)
        self.assertNotIn('Traceback', result.stderr)


class TestCommands(OpenstackCLITestCase):

    def test_tree_check_prints_what_placement_quota_prints(self):
        limits = self.write('limits.yaml', test_cli_tree.BROKEN)
        rows = self.assertSameOutput('tree', 'check', '--limits-file',
                                     limits, '-f', 'json')
        self.assertIn('child-limit', [row['Rule'] for row in rows])

    def test_credits_list_prints_what_placement_quota_prints(self):
        test_cli.command('credits', 'add', 'p1', '--amount', '250', '--end',
                         '2027-01-01 00:00', config=self.conf)
        rows = self.assertSameOutput('credits', 'list', 'p1', '-f', 'json')
        self.assertEqual([250.0], [row['Amount'] for row in rows])

    def test_usage_show_prints_what_placement_quota_prints(self):
        test_cli.command('credits', 'add', 'p1', '--amount', '100',
                         config=self.conf)
        shown = self.assertSameOutput('usage', 'show', 'p1', '--start',
                                      '2030-01-01 00:00', '--end',
                                      '2030-02-01 00:00', '-f', 'json')
        self.assertEqual(100.0, shown['credits']['balance'])

    def test_config_files_from_the_environment_split_on_semicolons(self):
        other = self.write('other.conf', '[DEFAULT]\n')
        test_cli.command('credits', 'add', 'p1', '--amount', '7',
                         config=self.conf)
        result = openstack('reservation', 'credits', 'list', 'p1', '-f',
                           'value', '-c', 'Amount', env=_env(
                               OS_PLACEMENT_QUOTA_CONFIG_FILE='%s;%s' % (
                                   other, self.conf)))
        self.assertEqual((0, '7.0\n'), (result.returncode, result.stdout),
                         result.stderr)

    def test_missing_config_file_is_a_clean_error(self):
        missing = os.path.join(self.dir, 'missing.conf')
        result = openstack('reservation', 'credits', 'list', 'p1',
                           config=missing)
        self.assertCleanFailure(result, 'configuration error', missing)

    def test_bad_input_is_a_clean_error(self):
        result = openstack('reservation', 'credits', 'add', 'p1',
                           '--amount', '-5', config=self.conf)
        self.assertCleanFailure(result, '--amount must be greater than 0')
