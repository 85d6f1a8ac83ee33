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
"""Two ``placement-quota warn`` processes on one ledger, one of them
killed (SIGKILL) between two charges and started again, or killed while
it held a warning in its send: each warning is mailed once and published
once. On SQLite; the restart on PostgreSQL too.

Everything is real: the processes, the ledger database they share, the
SMTP server receiving the mails (:class:`~tests.fixtures.smtp.SmtpSink`),
the RabbitMQ vhost the notifications go to (read by a listener of the
test), the Keystone the recipients' addresses come from. The project's
credits are charged in the ledger as the enforcement service charges
them (an allocation, a lease's row and its charge).
"""

import os
import signal
import subprocess
import sys
import time
import uuid

import fixtures
import testtools
import testtools.content

from placement_quota.ledger import models
from placement_quota.ledger import store
from placement_quota.warning import model
from placement_quota.warning import record
from tests.fixtures import keystone as keystone_fixture
from tests.fixtures import process as processes
from tests.fixtures import rabbitmq
from tests.fixtures import smtp
from tests.functional.blazar_e2e import base as e2e
from tests.functional.ledger import base as ledger_base
from tests.functional.ledger import databases

#: Seconds between two passes of each process.
SCAN_INTERVAL = 1
#: Seconds a process holds the warnings it claimed, and an SMTP command
#: may take ([warnings] wants claim_timeout >= 4 x smtp_timeout).
CLAIM_TIMEOUT = 8
SMTP_TIMEOUT = 2
#: Seconds a process may take to start (it prints READY once it runs).
START_TIMEOUT = 60
READY = 'placement-quota sending warnings every'
#: Seconds the test waits for something the processes do.
WAIT = 30
#: Passes the processes run after the last warning, before counting.
EXTRA_PASSES = 2
CREDITS_EVENT = model.EVENT_TYPE_PREFIX + model.CREDITS
ALLOCATION = 10.0


class WarnProcess:
    """``placement-quota warn`` on the configuration file ``config``, in
    a subprocess; its output in ``log_file``."""

    def __init__(self, config, log_file):
        self.log_file = log_file
        with open(log_file, 'wb') as log:
            self.process = subprocess.Popen(
                [sys.executable, '-m', 'placement_quota.cmd.main',
                 '--config-file', config, 'warn'],
                stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT)

    def output(self):
        with open(self.log_file, errors='replace') as f:
            return f.read()

    def wait_running(self):
        """Wait until it runs its passes."""
        def running():
            if self.process.poll() is not None:
                raise AssertionError(
                    'placement-quota warn exited with status %d:\n%s'
                    % (self.process.returncode, self.output()))
            return READY in self.output()
        processes.poll(running, START_TIMEOUT, 'placement-quota warn to '
                       'run (%s)' % self.log_file, interval=0.1)
        return self

    def kill(self):
        """SIGKILL: it stops wherever it is, nothing cleaned up."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self):
        processes.stop(self.process)


class WarnProcesses:
    """``warn`` processes on a ledger database of the mixed-in backend
    (:class:`~tests.functional.ledger.databases.DatabaseTestCase`), a
    project with an allocation of :data:`ALLOCATION` credits and a member
    with an e-mail address, an SMTP sink and a vhost."""

    def setUp(self):
        super().setUp()
        reason = rabbitmq.unavailable_reason()
        if reason is not None:
            self.skipTest('RabbitMQ is not installed: %s' % reason)
        self.useFixture(fixtures.Timeout(180, gentle=True))
        self.directory = self.useFixture(fixtures.TempDir()).path
        self.warners = []
        self.addOnException(self._process_logs)
        self.ledger = store.Ledger(self.database.url, migrate=True)
        self.addCleanup(self.ledger.dispose)
        keystone = self.useFixture(keystone_fixture.KeystoneFixture())
        self.keystone = keystone
        self.project = keystone.create_project().id
        user = keystone.create_user(self.project)
        self.address = '%s@example.org' % user.name
        keystone.admin_conn.identity.update_user(user.id,
                                                 email=self.address)
        self.sink = self.useFixture(smtp.SmtpSink())
        broker = self.useFixture(rabbitmq.RabbitMQFixture())
        self.tap = e2e.NotificationTap(broker.transport_url).start()
        self.addCleanup(self.tap.stop)
        self.transport_url = broker.transport_url
        self.config = self.write_config(self.sink.port, self.transport_url)
        with self.ledger.transaction([self.project]) as txn:
            self.allocation = txn.add_allocation(
                self.project, store.to_micro(ALLOCATION))

    def _process_logs(self, exc_info):
        for i, warner in enumerate(self.warners, 1):
            self.addDetail('warn-process-%d' % i,
                           testtools.content.text_content(processes.log_tail(
                               warner.log_file, 'placement-quota warn',
                               200)))

    def write_config(self, smtp_port, transport_url):
        path = os.path.join(self.directory, 'placement-quota-%s.conf'
                            % uuid.uuid4().hex[:8])
        with open(path, 'w') as f:
            f.write(
                '[ledger]\n'
                'connection = %s\n'
                '[warnings]\n'
                'channels = email, notification\n'
                'scan_interval = %d\n'
                'claim_timeout = %d\n'
                'credit_thresholds = 75, 90, 100\n'
                'include_extension = false\n'
                'smtp_host = 127.0.0.1\n'
                'smtp_port = %d\n'
                'smtp_timeout = %d\n'
                'retry_delay = 1\n'
                'mail_from = Cloud reservations <reservations@example.org>\n'
                '[oslo_messaging_notifications]\n'
                'driver = messagingv2\n'
                'transport_url = %s\n'
                % (self.database.url, SCAN_INTERVAL, CLAIM_TIMEOUT,
                   smtp_port, SMTP_TIMEOUT, transport_url) +
                self.keystone.admin_section('keystone'))
        return path

    def start(self, config=None):
        """A ``warn`` process on ``config`` (default the test's); stopped
        at cleanup."""
        warner = WarnProcess(config or self.config, os.path.join(
            self.directory, 'warn-%d.log' % (len(self.warners) + 1)))
        self.warners.append(warner)
        self.addCleanup(warner.stop)
        return warner

    def charge(self, credits):
        """Charge the project ``credits`` more, for a lease of its own
        (as the enforcement service does when it allows one)."""
        with self.ledger.transaction([self.project]) as txn:
            row = txn.insert(
                project_id=self.project,
                provisional_key=uuid.uuid4().hex,
                start_date=ledger_base.NOW, end_date=ledger_base.NOW,
                state=models.ACTIVE, amounts={}, lease={},
                hourly_rate=0, charged=store.to_micro(credits))
            txn.charge(self.project, row, self.allocation,
                       store.to_micro(credits), 'create')

    def key(self, threshold):
        return model.key(model.CREDITS, self.allocation, threshold)

    def warnings(self):
        return record.listing(self.ledger, project_id=self.project)

    def wait_sent(self, key):
        """Wait until the ledger says warning ``key`` was sent."""
        return processes.poll(
            lambda: [w for w in self.warnings()
                     if w.notice.key == key and
                     w.state == models.WARNING_SENT],
            WAIT, 'warning %s sent' % key)[0]

    def published(self):
        """The keys of the credits notifications about the project."""
        with self.tap._lock:
            return [n['payload']['key'] for n in self.tap.received
                    if n['event_type'] == CREDITS_EVENT and
                    n['payload'].get('project_id') == self.project]

    def assertEachOnce(self, *expected):
        """After :data:`EXTRA_PASSES` more passes, the warnings
        ``expected`` (keys) were each mailed and published once, and
        nothing else."""
        time.sleep(EXTRA_PASSES * SCAN_INTERVAL)
        processes.poll(lambda: len(self.published()) >= len(expected),
                       WAIT, 'the notifications of %s' % (expected,))
        self.assertEqual(sorted(expected), sorted(self.sink.keys()))
        self.assertEqual(sorted(expected), sorted(self.published()))
        for message in self.sink.messages:
            self.assertIn(self.address, str(message['To']))
        self.assertEqual({models.WARNING_SENT},
                         {w.state for w in self.warnings()})


class Restarted(WarnProcesses):

    def test_two_processes_and_a_restart_send_each_warning_once(self):
        first, second = self.start(), self.start()
        first.wait_running()
        second.wait_running()
        self.charge(9.2)   # 92 %
        self.wait_sent(self.key(90))

        first.kill()
        self.charge(0.8)   # 100 %, while one process is down
        self.start().wait_running()
        self.wait_sent(self.key(100))

        self.assertEachOnce(self.key(90), self.key(100))


class KilledWhileSending(WarnProcesses):

    def test_warning_held_by_a_killed_process_is_sent_once_by_the_other(
            self):
        self.charge(9.5)   # 95 %
        # The first process claims the warning and is killed in its send:
        # its SMTP server accepts the connection and never answers.
        hanging = self.useFixture(processes.HangingServer())
        stuck = self.start(self.write_config(
            int(hanging.url.rsplit(':', 1)[1]), self.transport_url))
        processes.poll(hanging.called.is_set, START_TIMEOUT,
                       'the first process to connect to its SMTP server')
        stuck.kill()
        [held] = self.warnings()
        self.assertIsNotNone(held.claimed_until)

        self.start()
        sent = self.wait_sent(self.key(90))

        # Sent once the dead process's claim ran out; no attempt failed.
        self.assertGreaterEqual(sent.sent_at, held.claimed_until)
        self.assertEqual(0, sent.attempts)
        self.assertEachOnce(self.key(90))


class TestRestartedOnSQLite(databases.OnSQLite, Restarted,
                            databases.DatabaseTestCase):
    pass


class TestRestartedOnPostgreSQL(databases.OnPostgreSQL, Restarted,
                                databases.DatabaseTestCase):
    """The database of most deployments: its own sums, inserts ignoring
    duplicates and conditional updates."""


class TestKilledWhileSendingOnSQLite(databases.OnSQLite, KilledWhileSending,
                                     databases.DatabaseTestCase):
    pass
