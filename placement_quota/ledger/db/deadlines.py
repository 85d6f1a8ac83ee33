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
"""Client-side deadlines on database calls: a database that does not
answer is given up.

PostgreSQL's ``statement_timeout`` and ``lock_timeout`` are enforced by
the server: a server that is frozen (stopped with SIGSTOP, a host that
hangs, a network that drops every packet) enforces nothing, and its
operating system keeps acknowledging our packets, so TCP keepalives and
``tcp_user_timeout`` never fire either. A :class:`Watchdog` keeps a
deadline for each call in progress (armed and disarmed by the thread that
makes the call); when one passes, it shuts the call's socket down, the
blocked driver call returns with "server closed the connection
unexpectedly", and SQLAlchemy throws the connection away. The thread that
made the call learns that it was this watchdog (:meth:`Watchdog.disarm`),
to say so.
"""

import contextlib
import itertools
import os
import socket
import threading
import time

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def cut(dbapi_connection):
    """Shut the socket of a DB-API connection down (both directions), so
    that a call blocked on it returns at once. The connection is unusable
    afterwards."""
    try:
        fd = dbapi_connection.fileno()
        sock = socket.socket(fileno=os.dup(fd))
    except (AttributeError, OSError, ValueError) as exc:
        LOG.warning('Cannot cut the ledger database connection: %s', exc)
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed
    finally:
        sock.close()


class Watchdog:
    """One thread watching the deadlines of the calls in progress."""

    def __init__(self, name='ledger-watchdog'):
        self.name = name
        self._cond = threading.Condition()
        self._local = threading.local()
        self._tokens = itertools.count(1)
        # token -> (deadline, dbapi connection, seconds)
        self._armed = {}
        # tokens whose deadline passed -> seconds
        self._expired = {}
        self._thread = None
        self._closed = False
        # When the thread wakes up next (None: when told); a deadline
        # later than that needs no wake-up (most: they are all "now + the
        # same seconds").
        self._wake_at = None

    def arm(self, dbapi_connection, seconds):
        """Give the call this thread is about to make on
        ``dbapi_connection`` ``seconds``; the previous one of the thread
        is disarmed."""
        self.disarm()
        with self._cond:
            token = next(self._tokens)
            deadline = time.monotonic() + seconds
            self._armed[token] = (deadline, dbapi_connection, seconds)
            self._closed = False  # used again after close()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name=self.name, daemon=True)
                self._thread.start()
            elif self._wake_at is None or deadline < self._wake_at:
                self._cond.notify()
        self._local.token = token

    def disarm(self):
        """The call of this thread is over: the seconds it was given when
        the watchdog cut it, else None."""
        token = getattr(self._local, 'token', None)
        if token is None:
            return None
        self._local.token = None
        with self._cond:
            self._armed.pop(token, None)
            return self._expired.pop(token, None)

    @contextlib.contextmanager
    def guard(self, dbapi_connection, seconds):
        """Arm around a block; yields nothing."""
        self.arm(dbapi_connection, seconds)
        try:
            yield
        finally:
            self.disarm()

    def close(self):
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self):
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                soonest = None
                for token, (deadline, connection, seconds) in list(
                        self._armed.items()):
                    if deadline <= now:
                        del self._armed[token]
                        self._expired[token] = seconds
                        LOG.warning('The ledger database did not answer in '
                                    '%d seconds; closing that connection.',
                                    seconds)
                        cut(connection)
                    elif soonest is None or deadline < soonest:
                        soonest = deadline
                self._wake_at = soonest
                self._cond.wait(None if soonest is None else soonest - now)
            # Under the lock: an arm() from now on starts a new thread.
            self._thread = None
