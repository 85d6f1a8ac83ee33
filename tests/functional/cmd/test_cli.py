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
"""The ``placement-quota`` command, run as an operator runs it."""

import json
import os
import signal
import subprocess
import tempfile

import fixtures
import requests
import testtools

from tests.fixtures import command_server
from tests.fixtures import process as processes
from tests import spec_examples as spec

TIMEOUT = 60


def command(*args, stdin=None, config=None):
    """Run ``placement-quota [--config-file F] ARGS`` in a process of its
    own (forked from a process that has made its imports already:
    :mod:`tests.fixtures.command_server`); return the result."""
    argv = []
    if config is not None:
        argv += ['--config-file', config]
    return command_server.run(argv + list(args), stdin=stdin,
                              timeout=TIMEOUT)


class CLITestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(_TempDir()).path

    def write(self, name, content):
        path = os.path.join(self.dir, name)
        with open(path, 'w') as f:
            f.write(content if isinstance(content, str)
                    else json.dumps(content))
        return path

    def config(self, text):
        return self.write('placement-quota.conf', text)


class _TempDir:
    """A temporary directory as a fixture (removed at cleanup)."""

    def setUp(self):
        self._dir = tempfile.TemporaryDirectory()
        self.path = self._dir.name

    def cleanUp(self):
        self._dir.cleanup()

    def getDetails(self):
        return {}


class TestCheck(CLITestCase):

    def test_allowed_payload_exits_zero_and_says_allowed(self):
        result = command('check', 'create', '-f', 'json',
                         self.write('lease.json', spec.check_create()))
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual('allowed', json.loads(result.stdout)['decision'])

    def test_denied_payload_exits_one_with_the_filters_message(self):
        config = self.config('[enforcement]\nreservation_max_length = 86400\n')
        result = command('check', 'create', '-f', 'json',
                         self.write('lease.json', spec.check_create()),
                         config=config)
        self.assertEqual(1, result.returncode, result.stderr)
        output = json.loads(result.stdout)
        self.assertEqual('denied', output['decision'])
        self.assertEqual('MaximumReservationLengthFilter', output['filter'])
        self.assertIn('exceeds the maximum of 1 day', output['message'])

    def test_update_payload_from_stdin(self):
        config = self.config('[enforcement]\nreservation_max_length = 86400\n')
        result = command('check', 'update', '-f', 'value', '-c', 'decision',
                         '-', stdin=json.dumps(spec.check_update()),
                         config=config)
        self.assertEqual(1, result.returncode, result.stderr)
        self.assertEqual('denied', result.stdout.strip())

    def test_on_end_is_never_denied(self):
        config = self.config('[enforcement]\nreservation_max_length = 60\n')
        result = command('check', 'end', '-f', 'value', '-c', 'decision',
                         self.write('lease.json', spec.on_end()),
                         config=config)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual('allowed', result.stdout.strip())

    def test_bad_payload_exits_two_naming_the_field(self):
        document = spec.check_create()
        document['lease']['start_date'] = 'tomorrow'
        result = command('check', 'create',
                         self.write('lease.json', document))
        self.assertEqual(2, result.returncode)
        self.assertIn('lease.start_date', result.stderr)
        self.assertIn('"tomorrow"', result.stderr)
        self.assertNotIn('Traceback', result.stderr)

    def test_check_does_not_need_the_apis_auth_settings(self):
        config = self.config('[api]\nauth_strategy = keystone\n')
        result = command('check', 'create', '-f', 'value', '-c', 'decision',
                         self.write('lease.json', spec.check_create()),
                         config=config)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual('allowed', result.stdout.strip())

    def test_missing_file_exits_two_without_traceback(self):
        result = command('check', 'create',
                         os.path.join(self.dir, 'missing.json'))
        self.assertEqual(2, result.returncode)
        self.assertIn('cannot read', result.stderr)
        self.assertNotIn('Traceback', result.stderr)

    def test_unknown_filter_in_config_exits_two_naming_it(self):
        config = self.config('[enforcement]\nenabled_filters = NoSuch\n')
        result = command('check', 'create',
                         self.write('lease.json', spec.check_create()),
                         config=config)
        self.assertEqual(2, result.returncode)
        self.assertIn("'NoSuch'", result.stderr)
        self.assertIn('placement_quota.filters.all_filters', result.stderr)

    def test_bad_option_value_exits_two_naming_the_option(self):
        config = self.config('[enforcement]\nreservation_max_length = -3\n')
        result = command('check', 'create',
                         self.write('lease.json', spec.check_create()),
                         config=config)
        self.assertEqual(2, result.returncode)
        self.assertIn('reservation_max_length', result.stderr)

    def test_missing_config_file_exits_two(self):
        result = command('filter', 'list',
                         config=os.path.join(self.dir, 'nope.conf'))
        self.assertEqual(2, result.returncode)
        self.assertIn('configuration error', result.stderr)


class TestFilterList(CLITestCase):

    def test_lists_shipped_filters_with_their_enabled_position(self):
        config = self.config('[enforcement]\nenabled_filters = '
                             'ExternalServiceFilter,'
                             'MaximumReservationLengthFilter\n')
        result = command('filter', 'list', '-f', 'json', config=config)
        self.assertEqual(0, result.returncode, result.stderr)
        rows = {r['Name']: r['Enabled position']
                for r in json.loads(result.stdout)}
        self.assertEqual({'ExternalServiceFilter': 1,
                          'MaximumReservationLengthFilter': 2,
                          'MaxLeaseDurationFilter': '',
                          'ReservationSizeFilter': '',
                          'LeaseCountFilter': '',
                          'NovaQuotaFilter': '',
                          'PlacementCapacityFilter': '',
                          'CreditFilter': '',
                          'ProjectTreeLimitFilter': '',
                          'UserLimitFilter': '',
                          'ExtensionWindowFilter': '',
                          'NoStackingFilter': ''}, rows)

    def test_describes_each_filter_by_its_docstrings_first_line(self):
        result = command('filter', 'list', '-f', 'json', '-c', 'Name',
                         '-c', 'Description')
        self.assertEqual(0, result.returncode, result.stderr)
        rows = {r['Name']: r['Description']
                for r in json.loads(result.stdout)}
        self.assertEqual('Deny a new lease when the project already holds '
                         'the maximum.', rows['LeaseCountFilter'])


class ServeProcesses:
    """Starts ``placement-quota serve`` processes (forked by
    :mod:`tests.fixtures.command_server`; stopped at cleanup);
    :attr:`banner` is the first line of the last one."""

    def start(self, *args, config=None):
        argv = []
        if config:
            argv += ['--config-file', config]
        process = command_server.popen(
            argv + ['serve', '--port', '0'] + list(args),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(self._stop, process)
        line = process.stdout.readline()
        self.assertIn('listening on http://127.0.0.1:', line,
                      process.stderr.read() if not line else line)
        self.banner = line
        return process, line.split('listening on ')[1].split()[0]

    @staticmethod
    def _stop(process):
        # SIGTERM first: serve --workers stops its workers then.
        processes.stop(process, TIMEOUT)
        process.stdout.close()
        process.stderr.close()


class TestServe(ServeProcesses, CLITestCase):

    def test_serve_says_where_it_listens_and_answers(self):
        config = self.config('[enforcement]\nreservation_max_length = 86400\n')
        _, url = self.start(config=config)
        response = requests.post(url + 'check-create',
                                 json=spec.check_create(), timeout=10)
        self.assertEqual(403, response.status_code)
        self.assertIn('exceeds the maximum of 1 day',
                      response.json()['message'])

    def logged_denial(self, options):
        """The log of a service that denied one check-create, with
        ``options`` in its [DEFAULT] section."""
        log_file = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                'serve.log')
        config = self.config('[DEFAULT]\nlog_file = %s\n%s\n'
                             '[enforcement]\nreservation_max_length = 86400\n'
                             % (log_file, options))
        process, url = self.start(config=config)
        requests.post(url + 'check-create', json=spec.check_create(),
                      timeout=10)
        process.send_signal(signal.SIGTERM)
        process.wait(TIMEOUT)
        with open(log_file) as f:
            return f.read()

    def test_serve_logs_each_denial_at_info(self):
        log = self.logged_denial('')
        self.assertRegex(log, r'INFO .* MaximumReservationLengthFilter '
                              r'denied')
        self.assertNotIn(' DEBUG ', log)

    def test_serve_with_debug_in_its_configuration_logs_debug_too(self):
        log = self.logged_denial('debug = true')
        self.assertRegex(log, r'INFO .* MaximumReservationLengthFilter '
                              r'denied')
        self.assertIn(' DEBUG ', log)

    def test_serve_with_use_json_logs_one_json_object_a_line(self):
        log = self.logged_denial('use_json = true')
        records = [json.loads(line) for line in log.splitlines() if line]
        denials = [r for r in records
                   if 'MaximumReservationLengthFilter denied' in r['message']]
        self.assertEqual(1, len(denials), records)
        self.assertEqual('INFO', denials[0]['levelname'])
        self.assertEqual('placement_quota.filters.chain', denials[0]['name'])

    def test_serve_routes_its_loggers_with_log_config_append(self):
        directory = self.useFixture(fixtures.TempDir()).path
        routed = os.path.join(directory, 'decisions.log')
        ini = os.path.join(directory, 'logging.ini')
        with open(ini, 'w') as f:
            f.write('[loggers]\nkeys = root, chain\n'
                    '[handlers]\nkeys = null, decisions\n'
                    '[formatters]\nkeys = plain\n'
                    '[logger_root]\nlevel = WARNING\nhandlers = null\n'
                    '[logger_chain]\nlevel = INFO\nhandlers = decisions\n'
                    'qualname = placement_quota.filters.chain\n'
                    'propagate = 0\n'
                    '[handler_null]\nclass = logging.NullHandler\n'
                    'args = ()\n'
                    '[handler_decisions]\nclass = FileHandler\n'
                    'args = (%r,)\nformatter = plain\n'
                    '[formatter_plain]\nformat = %%(levelname)s '
                    '%%(name)s %%(message)s\n' % routed)
        config = self.config('[DEFAULT]\nlog_config_append = %s\n'
                             '[enforcement]\nreservation_max_length = '
                             '86400\n' % ini)
        process, url = self.start(config=config)
        requests.post(url + 'check-create', json=spec.check_create(),
                      timeout=10)
        process.send_signal(signal.SIGTERM)
        process.wait(TIMEOUT)
        with open(routed) as f:
            lines = f.read().splitlines()
        self.assertEqual(1, len(lines), lines)
        self.assertTrue(lines[0].startswith(
            'INFO placement_quota.filters.chain '
            'MaximumReservationLengthFilter denied'), lines)

    def test_serve_stops_cleanly_on_sigterm(self):
        process, _ = self.start()
        process.send_signal(signal.SIGTERM)
        self.assertEqual(0, process.wait(TIMEOUT))

    def test_serve_stops_on_sigterm_while_clients_are_connected(self):
        process, url = self.start()
        requests.post(url + 'check-create', json=spec.check_create(),
                      timeout=10)
        process.send_signal(signal.SIGTERM)
        self.assertEqual(0, process.wait(TIMEOUT))

    def _refused(self, config_text):
        result = command('serve', '--port', '0',
                         config=self.config(config_text))
        self.assertEqual(2, result.returncode, result.stderr)
        self.assertNotIn('Traceback', result.stderr)
        return result.stderr

    def test_serve_refuses_keystone_auth_without_keystone_authtoken(self):
        stderr = self._refused('[api]\nauth_strategy = keystone\n')
        self.assertIn('[keystone_authtoken] www_authenticate_uri and '
                      'auth_type are not set', stderr)

    def test_serve_refuses_an_unknown_keystoneauth_plugin(self):
        stderr = self._refused('[enforcement_external]\n'
                               'endpoint_url = http://127.0.0.1:9/v1\n'
                               'auth_type = no-such-plugin\n')
        self.assertIn('ExternalServiceFilter cannot start', stderr)
        self.assertIn('no-such-plugin', stderr)

    def test_serve_refuses_an_exempted_project_without_domain(self):
        stderr = self._refused('[enforcement]\nexempted_projects = demo@\n')
        self.assertIn("'demo@'", stderr)

    def test_serve_refuses_to_start_with_an_unknown_filter(self):
        config = self.config('[enforcement]\nenabled_filters = NoSuch\n')
        result = command('serve', '--port', '0', config=config)
        self.assertEqual(2, result.returncode)
        self.assertIn("Unknown enforcement filter 'NoSuch'", result.stderr)
        self.assertNotIn('Traceback', result.stderr)


class TestSampleConfig(testtools.TestCase):
    """etc/placement-quota/placement-quota.conf.sample documents every
    option of ours (regenerate with ``tox -e genconfig``)."""

    def test_every_option_is_in_the_sample(self):
        from placement_quota.conf import opts
        from placement_quota.filters import opts as filter_opts
        root = os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.abspath(__file__)))))
        with open(os.path.join(root, 'etc', 'placement-quota',
                               'placement-quota.conf.sample')) as f:
            sample = f.read()
        sections = {}
        current = None
        for line in sample.splitlines():
            if line.startswith('[') and line.endswith(']'):
                current = sections.setdefault(line[1:-1], [])
            elif current is not None:
                current.append(line)
        missing = []
        for group, group_opts in opts.list_opts() + filter_opts.list_opts():
            lines = sections.get(group.name, [])
            for opt in group_opts:
                if not any(line.startswith('#%s =' % opt.dest)
                           for line in lines):
                    missing.append('[%s] %s' % (group.name, opt.dest))
        self.assertEqual([], missing)
