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
"""``placement-quota serve --workers N``: N pre-forked processes on one
port, against the real Placement server of :mod:`tests.fixtures.placement`
and a SQLite ledger; started, answering, a killed worker started again,
all stopped by SIGTERM."""

import os
import signal
import time

import requests

from tests.fixtures import placement as placement_fixtures
from tests.fixtures import process as processes
from tests import spec_examples as spec
from tests.functional.cmd import test_cli

#: Seconds to wait for the workers to change.
WAIT = 30


class TestServeWorkers(test_cli.ServeProcesses, test_cli.CLITestCase):

    def setUp(self):
        super().setUp()
        placement = self.useFixture(placement_fixtures.PlacementServer())
        self.conf = self.config(
            '[placement]\nauth_type = admin_token\nendpoint = %s\n'
            'token = admin\n[database]\nconnection = sqlite:///%s\n'
            '[enforcement]\nreservation_max_length = 86400\n'
            % (placement.endpoint, os.path.join(self.dir, 'ledger.sqlite')))

    def workers(self, process, count):
        """The worker PIDs of ``process`` once there are ``count``."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            found = processes.children(process.pid)
            if len(found) == count:
                return found
            time.sleep(0.1)
        self.fail('%d workers, not %d' % (len(found), count))

    def test_banner_names_the_workers(self):
        self.start('--workers', '2', config=self.conf)
        self.assertIn('2 workers x 16 threads', self.banner)

    def test_each_worker_is_a_process_of_its_own(self):
        process, _ = self.start('--workers', '3', config=self.conf)
        self.assertEqual(3, len(self.workers(process, 3)))

    def test_workers_answer_on_the_one_port(self):
        _, url = self.start('--workers', '2', config=self.conf)
        for _ in range(6):
            # A connection of its own each: the kernel picks a worker.
            response = requests.post(url + 'check-create',
                                     json=spec.check_create(), timeout=10,
                                     headers={'Connection': 'close'})
            self.assertEqual(403, response.status_code)
            self.assertIn('exceeds the maximum of 1 day',
                          response.json()['message'])

    def test_a_killed_worker_is_started_again(self):
        process, url = self.start('--workers', '2', config=self.conf)
        first = self.workers(process, 2)
        os.kill(first[0], signal.SIGKILL)
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            now = processes.children(process.pid)
            if len(now) == 2 and first[0] not in now:
                break
            time.sleep(0.1)
        else:
            self.fail('the killed worker was not started again')
        response = requests.post(url + 'check-create',
                                 json=spec.check_create(), timeout=10)
        self.assertEqual(403, response.status_code)

    def test_sigterm_stops_every_worker(self):
        process, _ = self.start('--workers', '2', config=self.conf)
        pids = self.workers(process, 2)
        process.send_signal(signal.SIGTERM)
        self.assertEqual(0, process.wait(WAIT))
        for pid in pids:
            self.assertFalse(os.path.exists('/proc/%d' % pid)
                             and _alive(pid))

    def test_workers_need_a_placement_of_their_own(self):
        result = test_cli.command('serve', '--port', '0', '--workers', '2',
                                  config=self.config('[DEFAULT]\n'))
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertIn('needs a Placement in [placement]', result.stderr)
        self.assertNotIn('Traceback', result.stderr)

    def test_zero_workers_is_a_clean_error(self):
        result = test_cli.command('serve', '--port', '0', '--workers', '0',
                                  config=self.conf)
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertIn('--workers must be at least 1', result.stderr)


def _alive(pid):
    """False for a zombie (exited, not reaped by its parent yet)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False
