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
"""tests/fixtures/command_server.py: a command forked from the fork server
is what ``python -m placement_quota.cmd.main`` would be, a process of its
own."""

import json
import os
import signal
import subprocess
import sys

import testtools

from tests.fixtures import command_server
from tests import spec_examples as spec

TIMEOUT = 60


class TestCommandServer(testtools.TestCase):

    def serve(self):
        process = command_server.popen(
            ['serve', '--port', '0'], stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.addCleanup(process.stdout.close)
        self.addCleanup(process.wait, TIMEOUT)
        self.addCleanup(process.kill)
        self.assertIn('listening on', process.stdout.readline())
        return process

    def test_a_command_answers_what_a_subprocess_answers(self):
        document = spec.check_create()
        document['lease']['start_date'] = 'tomorrow'
        stdin = json.dumps(document)
        argv = ['check', 'create', '-']
        forked = command_server.run(argv, stdin=stdin, timeout=TIMEOUT)
        plain = subprocess.run(
            [sys.executable, '-m', 'placement_quota.cmd.main'] + argv,
            input=stdin, capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(
            (2, plain.stdout, plain.stderr),
            (forked.returncode, forked.stdout, forked.stderr))
        self.assertIn('lease.start_date', forked.stderr)

    def test_a_command_is_a_process_of_its_own(self):
        process = self.serve()
        self.assertNotEqual(os.getpid(), process.pid)
        self.assertTrue(os.path.exists('/proc/%d' % process.pid))
        process.send_signal(signal.SIGTERM)
        self.assertEqual(0, process.wait(TIMEOUT))

    def test_a_command_killed_by_a_signal_exits_minus_the_signal(self):
        process = self.serve()
        process.kill()
        self.assertEqual(-signal.SIGKILL, process.wait(TIMEOUT))

    def test_a_command_past_its_timeout_is_killed(self):
        self.assertRaises(subprocess.TimeoutExpired, command_server.run,
                          ['serve', '--port', '0'], timeout=3)
