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
"""The oslo.log options, proven on the real ``placement-quota`` run as a
subprocess with a configuration file in a temporary directory.

``log_file``, ``debug = true``, ``use_json = true``, a denial at INFO
without ``debug`` and ``log_config_append`` routing a logger of ``serve``
are proven in :mod:`tests.functional.cmd.test_cli` (TestServe); here: the
audit logger routed to a file of its own, and ``--debug`` on the command
line."""

import os
import signal
import subprocess

import fixtures
import requests
import testtools

from tests.fixtures import command_server
from tests import spec_examples as spec

TIMEOUT = 60


class LoggingTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def path(self, name):
        return os.path.join(self.dir, name)

    def config(self, text):
        config = self.path('placement-quota.conf')
        with open(config, 'w') as out:
            out.write(text)
        return config

    def read(self, name):
        with open(self.path(name)) as f:
            return f.read().splitlines()


class TestLogConfigAppend(LoggingTestCase):

    def test_the_audit_logger_is_routed_to_a_file_of_its_own(self):
        ini = self.path('logging.ini')
        with open(ini, 'w') as f:
            f.write('[loggers]\nkeys = root, audit\n'
                    '[handlers]\nkeys = main, audit\n'
                    '[formatters]\nkeys = plain\n'
                    '[logger_root]\nlevel = INFO\nhandlers = main\n'
                    '[logger_audit]\nlevel = INFO\nhandlers = audit\n'
                    'qualname = placement_quota.audit\npropagate = 0\n'
                    '[handler_main]\nclass = FileHandler\n'
                    'args = (%r,)\nformatter = plain\n'
                    '[handler_audit]\nclass = FileHandler\n'
                    'args = (%r,)\nformatter = plain\n'
                    '[formatter_plain]\nformat = %%(levelname)s '
                    '%%(name)s %%(message)s\n'
                    % (self.path('main.log'), self.path('audit.log')))
        config = self.config(
            '[DEFAULT]\nlog_config_append = %s\n[database]\nconnection = '
            'sqlite:///%s\n' % (ini, self.path('ledger.sqlite')))
        result = command_server.run(
            ['--config-file', config, 'credits', 'add', 'p1', '--amount',
             '100'], timeout=TIMEOUT)
        self.assertEqual(0, result.returncode, result.stderr)
        audited = self.read('audit.log')
        self.assertEqual(1, len(audited), audited)
        self.assertTrue(audited[0].startswith(
            'INFO placement_quota.audit credits-add project=p1 by cli '),
            audited)
        self.assertEqual(
            [], [line for line in self.read('main.log')
                 if 'placement_quota.audit' in line])


class TestDebugOption(LoggingTestCase):

    def test_debug_on_the_command_line_makes_serve_log_debug_lines(self):
        config = self.config('[DEFAULT]\nlog_file = %s\n'
                             % self.path('serve.log'))
        process = command_server.popen(
            ['--debug', '--config-file', config, 'serve', '--port', '0'],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.addCleanup(self._stop, process)
        line = process.stdout.readline()
        self.assertIn('listening on http://127.0.0.1:', line)
        url = line.split('listening on ')[1].split()[0]
        requests.post(url + 'check-create', json=spec.check_create(),
                      timeout=10)
        process.send_signal(signal.SIGTERM)
        self.assertEqual(0, process.wait(TIMEOUT))
        self.assertTrue(any(' DEBUG ' in line
                            for line in self.read('serve.log')))

    @staticmethod
    def _stop(process):
        if process.poll() is None:
            process.kill()
            process.wait(TIMEOUT)
        process.stdout.close()
