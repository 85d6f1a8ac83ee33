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
"""The files of the "Running it in a real cloud" guide
(``doc/source/real-cloud.rst``, files in ``doc/examples/real-cloud/``),
used as they are against real services on loopback.

Once for the class: the guide's ``keystone-setup.sh`` runs with ``sh``
and its ``openstack`` commands, as the shell expanded them, with the real
openstackclient against this process's Keystone (a ``service`` project
and a Blazar user are created first, as a cloud has them); a Placement
checking Keystone tokens starts; the guide's ``placement-quota.conf`` is
rendered with its ``@NAME@`` placeholders replaced by those services, a
fresh database on the suite's PostgreSQL and a vhost of the suite's
RabbitMQ; ``placement-quota --strict-config db sync`` runs on it, then
``placement-quota serve`` and ``listen`` start on it. The only option the
test adds is ``[placement] endpoint_override`` (in a second file): the shared
Keystone's catalog belongs to other tests too, so no Placement is
registered in it.

Not exercised: Nova (the ``reader`` role for flavors, ``admin`` for
legacy quota sets), uWSGI running the guide's ini files (only the entry
points they name are checked), and a Blazar calling the service with the
guide's blazar.conf (its options are checked against stock Blazar's
definitions).
"""

import configparser
import importlib
import importlib.metadata
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time

import fixtures
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
import requests
import testtools

from placement_quota.cmd import status
from placement_quota import conf as pq_conf
from placement_quota.identity import projects
from placement_quota.placement import embedded
from tests import builders
from tests.fixtures import keystone
from tests.fixtures import postgresql
from tests.fixtures import process as processes
from tests.fixtures import rabbitmq

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
GUIDE = os.path.join(REPO, 'doc', 'source', 'real-cloud.rst')
FILES = os.path.join(REPO, 'doc', 'examples', 'real-cloud')
CONF_FILE = os.path.join(FILES, 'placement-quota.conf')
BLAZAR_SNIPPET = os.path.join(FILES, 'blazar.conf')
KEYSTONE_SCRIPT = os.path.join(FILES, 'keystone-setup.sh')

#: The names the guide gives the service project and our user.
SERVICE_PROJECT = 'service'
OUR_USER = 'placement-quota'
#: The option namespaces of stock Blazar's configuration
#: (its oslo-config-generator file) that the snippet's sections use.
BLAZAR_NAMESPACES = ('blazar', 'oslo.messaging',
                     'keystonemiddleware.auth_token')
#: Seconds to wait for a command's listening line.
START_TIMEOUT = 60
PLACEHOLDER = re.compile(r'@[A-Z_]+@')

_PLACEMENT_CONF = '[api]\nauth_strategy = keystone\n\n{authtoken}'

#: A shell function standing for the ``openstack`` client: it appends
#: its arguments, each followed by a NUL, and a newline to $RECORDED.
_RECORD_OPENSTACK = (
    'openstack() { for a in "$@"; do printf "%s\\0" "$a"; done '
    '>> "$RECORDED"; printf "\\n" >> "$RECORDED"; }; ')
#: Runs the recorded commands (a JSON list of argument lists, the file
#: of argv[1]) with openstackclient's shell; stops at the first failure,
#: printing it.
_RUN_OPENSTACK = '''import json, sys
from openstackclient import shell
for argv in json.load(open(sys.argv[1])):
    if shell.main(argv):
        print(' '.join(argv))
        sys.exit(1)
'''


def render(path, values, out_dir):
    """``path`` with each ``@NAME@`` replaced by ``values[NAME]``, written
    to ``out_dir``; a placeholder without a value is an error."""
    with open(path) as f:
        text = f.read()
    for name, value in values.items():
        text = text.replace('@%s@' % name, value)
    left = PLACEHOLDER.findall(text)
    if left:
        raise AssertionError('%s: no value for %s' % (path, ', '.join(left)))
    target = os.path.join(out_dir, os.path.basename(path))
    with open(target, 'w') as f:
        f.write(text)
    return target


def blazar_options():
    """``{(section, option)}`` of stock Blazar's configuration: what its
    oslo-config-generator namespaces define (deprecated names too)."""
    known = set()
    entry_points = importlib.metadata.entry_points(group='oslo.config.opts')
    found = {ep.name: ep for ep in entry_points
             if ep.name in BLAZAR_NAMESPACES}
    missing = set(BLAZAR_NAMESPACES) - set(found)
    if missing:
        raise AssertionError('no oslo.config.opts entry point %s'
                             % sorted(missing))
    for ep in found.values():
        for group, opts in ep.load()():
            section = getattr(group, 'name', group) or 'DEFAULT'
            for opt in opts:
                known.add((section, opt.dest))
                known.add((section, opt.name.replace('-', '_')))
                for old in opt.deprecated_opts:
                    known.add((old.group or section,
                               (old.name or opt.name).replace('-', '_')))
    return known


def unknown_blazar_options(path):
    """The ``[section] option`` entries of the file ``path`` that stock
    Blazar does not define."""
    parser = configparser.ConfigParser(default_section='no default',
                                       interpolation=None)
    parser.read(path)
    known = blazar_options()
    return ['[%s] %s' % (section, option)
            for section in parser.sections()
            for option in parser.options(section)
            if (section, option) not in known]


def read_line(process, contains, timeout=START_TIMEOUT):
    """The first line of ``process``'s stdout containing ``contains``.

    A daemon thread reads the lines (and keeps the pipe drained after)."""
    lines = queue.Queue()

    def drain():
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=drain, daemon=True).start()
    deadline = time.monotonic() + timeout
    seen = []
    while True:
        try:
            line = lines.get(timeout=max(0, deadline - time.monotonic()))
        except queue.Empty:
            line = None
        if line is None:
            raise AssertionError('no line with %r within %ss (exit status '
                                 '%s); stdout: %s' % (
                                     contains, timeout, process.poll(),
                                     ''.join(seen)))
        seen.append(line)
        if contains in line:
            return line


def placement_quota(*args):
    """The ``placement-quota`` command line of this interpreter."""
    return [sys.executable, '-m', 'placement_quota.cmd.main'] + list(args)


class CloudOfTheGuide(fixtures.Fixture):
    """The Keystone setup, the services and the rendered files (see the
    module's documentation)."""

    def _setUp(self):
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.keystone = ks = self.useFixture(keystone.KeystoneFixture())
        identity = ks.admin_conn.identity
        project = identity.find_project(SERVICE_PROJECT)
        if project is None:
            project = ks.create_project(name=SERVICE_PROJECT)
        self.service_project = project
        # Blazar's service user exists before the script, without roles.
        self.blazar = ks.create_user(project.id, roles=())
        self.password = keystone.unique_name('pw')
        self.addCleanup(self._delete_our_user)
        # The Keystone commands run while the rest starts: nothing below
        # needs their user before the first request to the service.
        keystone_commands = self._start_keystone_script()

        conf = os.path.join(self.dir, 'placement.conf')
        with open(conf, 'w') as f:
            f.write(_PLACEMENT_CONF.format(
                authtoken=ks.server.authtoken_section()))
        placement = embedded.ServerProcess(config_files=[conf])
        self.addCleanup(placement.stop)
        self.placement_url = placement.url

        self.database = self.useFixture(postgresql.PostgreSQLDatabase())
        self.rabbit = self.useFixture(rabbitmq.RabbitMQFixture())
        self.conf_file = render(CONF_FILE, {
            'KEYSTONE_URL': ks.auth_url,
            'PLACEMENT_QUOTA_PASSWORD': self.password,
            'REGION': ks.region_name,
            'DATABASE_URL': self.database.url,
            'TRANSPORT_URL': self.rabbit.transport_url}, self.dir)
        self.overrides = os.path.join(self.dir, 'test-overrides.conf')
        with open(self.overrides, 'w') as f:
            f.write('[placement]\nendpoint_override = %s\n'
                    % self.placement_url)
        self.config_args = ['--config-file', self.conf_file,
                            '--config-file', self.overrides]
        # The guide's checks before a start: no unknown option, the schema.
        self.db_sync = subprocess.run(
            placement_quota('--strict-config', *self.config_args, 'db',
                            'sync'),
            capture_output=True, text=True, timeout=START_TIMEOUT)
        if self.db_sync.returncode:
            raise RuntimeError('db sync failed: %s' % self.db_sync.stderr)
        # Started together: each spends seconds importing.
        serve = self._start('serve', 'serve', '--host', '127.0.0.1',
                            '--port', '0')
        listen = self._start('listen', 'listen')
        if keystone_commands.wait(timeout=300):
            out, err = (open(path).read()
                        for path in keystone_commands.output_files)
            raise RuntimeError('openstack %s failed (%d): %s' % (
                out.strip(), keystone_commands.returncode, err))
        line = self._wait(serve, 'listening on')
        self.url = re.search(r'(http://127\.0\.0\.1:\d+)', line).group(1)
        self.listen_line = self._wait(listen, 'listening to Blazar')

    def _start_keystone_script(self):
        """Run the guide's script with ``sh``, its ``openstack`` commands
        recorded by a shell function (the shell expands them), then start
        a process that runs them in order with the real openstackclient:
        one import of the client instead of one per command (6 s each on
        a busy CI machine). Returns that process (output to temp files:
        its pipes are never full)."""
        ks = self.keystone
        recorded = os.path.join(self.dir, 'openstack-commands')
        env = dict(
            os.environ,
            OS_AUTH_URL=ks.auth_url, OS_IDENTITY_API_VERSION='3',
            OS_USERNAME=ks.admin_username, OS_PASSWORD=ks.admin_password,
            OS_PROJECT_NAME=ks.admin_project_name,
            OS_USER_DOMAIN_NAME=ks.user_domain_name,
            OS_PROJECT_DOMAIN_NAME=ks.project_domain_name,
            OS_REGION_NAME=ks.region_name,
            PLACEMENT_QUOTA_PASSWORD=self.password,
            SERVICE_PROJECT=SERVICE_PROJECT, BLAZAR_USER=self.blazar.name,
            RECORDED=recorded)
        env.pop('OS_CLOUD', None)
        result = subprocess.run(
            ['sh', '-c', _RECORD_OPENSTACK + '. "$0"', KEYSTONE_SCRIPT],
            env=env, capture_output=True, text=True, timeout=START_TIMEOUT)
        if result.returncode:
            raise RuntimeError('%s failed (%d): %s' % (
                KEYSTONE_SCRIPT, result.returncode, result.stderr))
        with open(recorded) as f:
            commands = [line.split('\0') for line in
                        f.read().split('\0\n') if line]
        with open(recorded + '.json', 'w') as f:
            json.dump(commands, f)
        self.keystone_commands = commands
        with open(recorded + '.out', 'w') as out, \
                open(recorded + '.err', 'w') as err:
            process = subprocess.Popen(
                [sys.executable, '-c', _RUN_OPENSTACK, recorded + '.json'],
                env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        self.addCleanup(processes.stop, process)
        process.output_files = (recorded + '.out', recorded + '.err')
        return process

    def _delete_our_user(self):
        identity = self.keystone.admin_conn.identity
        user = identity.find_user(OUR_USER, domain_id='default')
        if user is not None:
            identity.delete_user(user.id)

    def _start(self, name, *args):
        """``placement-quota ARGS`` on the rendered files, its stderr in
        ``name.log``; stopped at cleanup."""
        log = open(os.path.join(self.dir, name + '.log'), 'w')
        self.addCleanup(log.close)
        process = subprocess.Popen(
            placement_quota(*self.config_args, *args),
            stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL,
            text=True)
        self.addCleanup(processes.stop, process)
        process.log = log
        return process

    @staticmethod
    def _wait(process, contains):
        try:
            return read_line(process, contains)
        except AssertionError as exc:
            process.log.flush()
            raise RuntimeError('%s\n%s' % (exc, processes.log_tail(
                process.log.name, ' '.join(process.args[3:])))) from None

    def blazar_token(self):
        return self.keystone.issue_token(
            self.blazar.name, self.blazar.password, self.service_project.id)

    def config(self):
        """placement-quota's configuration object of the rendered files."""
        return pq_conf.new_config([], [self.conf_file, self.overrides])


class TestRealCloudGuide(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.cloud = CloudOfTheGuide()
        cls.cloud.setUp()

    @classmethod
    def tearDownClass(cls):
        cls.cloud.cleanUp()
        super().tearDownClass()

    def check_create(self, headers):
        project = self.cloud.keystone.admin_conn.session.get_project_id()
        body = {'context': builders.context(project, 'u'),
                'lease': builders.lease(
                    '2030-01-01T00:00:00', '2030-01-01T01:00:00',
                    builders.instances(1))}
        return requests.post(self.cloud.url + '/v1/check-create', json=body,
                             headers=headers, timeout=30)

    def test_check_create_with_the_blazar_users_token_is_allowed(self):
        response = self.check_create(
            {'X-Auth-Token': self.cloud.blazar_token()})
        self.assertEqual(204, response.status_code, response.text)

    def test_check_create_without_a_token_is_refused_with_401(self):
        response = self.check_create({})
        self.assertEqual(401, response.status_code, response.text)

    def test_upgrade_check_passes_on_the_guide_configuration(self):
        stdout = self.useFixture(fixtures.StringStream('stdout'))
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', stdout.stream))
        code = status.main(self.cloud.config_args + ['upgrade', 'check'])
        output = stdout.getDetails()['stdout'].as_text()
        self.assertEqual(0, code, output)
        self.assertIn('Placement API', output)

    def test_the_guide_configuration_has_no_unknown_option(self):
        # db sync ran with --strict-config, which exits 2 on one.
        self.assertEqual(0, self.cloud.db_sync.returncode)
        self.assertNotIn('not a known', self.cloud.db_sync.stderr)

    def test_the_ledger_is_the_database_connection_without_a_warning(self):
        self.assertIn('postgresql', self.cloud.db_sync.stderr +
                      self.cloud.db_sync.stdout)
        self.assertNotIn('deprecated', self.cloud.db_sync.stderr)

    def test_the_guide_user_reads_placement_providers_and_usages(self):
        conf = self.cloud.config()
        auth = ks_loading.load_auth_from_conf_options(conf, 'placement')
        session = ks_loading.load_session_from_conf_options(
            conf, 'placement', auth=auth)
        adapter = ks_loading.load_adapter_from_conf_options(
            conf, 'placement', session=session, auth=auth)
        headers = {'OpenStack-API-Version': 'placement 1.29'}
        providers = adapter.get('/resource_providers', headers=headers,
                                raise_exc=False)
        self.assertEqual(200, providers.status_code, providers.text)
        usages = adapter.get(
            '/usages?project_id=%s' % self.cloud.service_project.id,
            headers=headers, raise_exc=False)
        self.assertEqual(200, usages.status_code, usages.text)

    def test_the_guide_user_lists_keystone_projects_and_services(self):
        conn = projects.connection(self.cloud.config())
        self.addCleanup(conn.close)
        names = {p.name for p in conn.identity.projects()}
        self.assertIn(SERVICE_PROJECT, names)
        self.assertIn('identity', {s.type for s in conn.identity.services()})

    def test_the_guide_user_reads_keystone_limits(self):
        conn = projects.connection(self.cloud.config())
        self.addCleanup(conn.close)
        response = conn.identity.get('/registered_limits')
        self.assertEqual(200, response.status_code, response.text)

    def test_listen_on_the_guide_configuration_listens_on_its_vhost(self):
        self.assertIn(self.cloud.rabbit.vhost, self.cloud.listen_line)


class TestBlazarSnippet(testtools.TestCase):

    def test_every_option_of_the_blazar_snippet_is_one_stock_blazar_has(self):
        self.assertEqual([], unknown_blazar_options(BLAZAR_SNIPPET))

    def test_a_misspelt_option_in_a_blazar_snippet_is_reported(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'blazar.conf')
        with open(BLAZAR_SNIPPET) as f:
            text = f.read()
        with open(path, 'w') as f:
            f.write(text.replace('external_service_base_endpoint',
                                 'external_service_base_endpiont'))
        self.assertEqual(['[enforcement] external_service_base_endpiont'],
                         unknown_blazar_options(path))

    def test_stock_blazar_parses_the_snippets_values(self):
        conf = cfg.ConfigOpts()
        for ep in importlib.metadata.entry_points(group='oslo.config.opts'):
            if ep.name in BLAZAR_NAMESPACES:
                for group, opts in ep.load()():
                    conf.register_opts(opts, group=group)
        conf(['--config-file', BLAZAR_SNIPPET], project='blazar',
             default_config_files=[])
        self.assertEqual(['ExternalServiceFilter'],
                         conf.enforcement.enabled_filters)
        self.assertEqual(['messagingv2'],
                         conf.oslo_messaging_notifications.driver)


class TestUWSGIFiles(testtools.TestCase):

    def uwsgi_module(self, name):
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(os.path.join(FILES, name))
        return parser['uwsgi']['module']

    def assertNamesAnApplication(self, module):
        path, _, attribute = module.partition(':')
        # Imported without building the app (no configuration here).
        self.useFixture(fixtures.EnvironmentVariable(
            'PLACEMENT_QUOTA_WSGI_NO_INIT', '1'))
        self.assertTrue(hasattr(importlib.import_module(path), attribute),
                        module)

    def test_the_enforcement_uwsgi_file_names_its_wsgi_entry_point(self):
        module = self.uwsgi_module('enforcement-uwsgi.ini')
        self.assertEqual('placement_quota.api.enforcement.wsgi:application',
                         module)
        self.assertNamesAnApplication(module)

    def test_the_admin_uwsgi_file_names_its_wsgi_entry_point(self):
        module = self.uwsgi_module('admin-uwsgi.ini')
        self.assertEqual('placement_quota.api.admin.wsgi:application',
                         module)
        self.assertNamesAnApplication(module)


class TestGuideShowsItsFiles(testtools.TestCase):

    def test_the_guide_explains_every_placeholder_of_the_conf(self):
        with open(GUIDE) as f:
            guide = f.read()
        with open(CONF_FILE) as f:
            placeholders = set(PLACEHOLDER.findall(f.read()))
        self.assertNotEqual(set(), placeholders)
        self.assertEqual(set(), {p for p in placeholders
                                 if '``%s``\n' % p not in guide})

    def test_the_guide_includes_every_file_of_its_directory(self):
        with open(GUIDE) as f:
            guide = f.read()
        included = set(re.findall(
            r'literalinclude:: \.\./examples/real-cloud/(\S+)', guide))
        self.assertEqual(set(os.listdir(FILES)), included)
