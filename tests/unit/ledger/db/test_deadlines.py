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
"""The watchdog that gives up a database that does not answer, on a
socket pair standing for a connection to a frozen server."""

import socket
import time

import testtools

from placement_quota.ledger.db import deadlines


class Connection:
    """A DB-API connection as the watchdog sees it: a socket's fileno."""

    def __init__(self, sock):
        self.sock = sock

    def fileno(self):
        return self.sock.fileno()


class TestWatchdog(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.ours, self.server = socket.socketpair()
        self.ours.settimeout(5)  # a watchdog that fails fails the test
        self.addCleanup(self.ours.close)
        self.addCleanup(self.server.close)
        self.watchdog = deadlines.Watchdog()
        self.addCleanup(self.watchdog.close)

    def test_call_past_its_deadline_is_cut(self):
        self.watchdog.arm(Connection(self.ours), 0.2)
        began = time.monotonic()
        self.assertEqual(b'', self.ours.recv(1))  # the server never wrote
        self.assertLess(time.monotonic() - began, 2)

    def test_cut_call_says_it_was_the_watchdog(self):
        self.watchdog.arm(Connection(self.ours), 0.1)
        self.ours.recv(1)
        self.assertEqual(0.1, self.watchdog.disarm())

    def test_call_that_answers_in_time_is_not_cut(self):
        self.watchdog.arm(Connection(self.ours), 0.2)
        self.server.sendall(b'x')
        self.assertEqual(b'x', self.ours.recv(1))
        self.assertIsNone(self.watchdog.disarm())
        time.sleep(0.4)
        self.server.sendall(b'y')
        self.assertEqual(b'y', self.ours.recv(1))

    def test_guard_disarms_when_the_block_ends(self):
        with self.watchdog.guard(Connection(self.ours), 0.2):
            pass
        time.sleep(0.4)
        self.server.sendall(b'y')
        self.assertEqual(b'y', self.ours.recv(1))

    def test_watchdog_used_again_after_close_still_cuts(self):
        with self.watchdog.guard(Connection(self.ours), 5):
            pass
        self.watchdog.close()
        self.watchdog.arm(Connection(self.ours), 0.1)
        self.assertEqual(b'', self.ours.recv(1))
