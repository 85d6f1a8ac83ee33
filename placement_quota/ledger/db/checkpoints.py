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
"""Checkpoints of a SQLite ledger's write-ahead log, off the request path.

In WAL mode SQLite copies the log back into the database file (a
*checkpoint*, with its fsync) whenever a commit finds the log longer than
``wal_autocheckpoint`` pages (1,000 by default): that commit -- an
admission's -- then waits for it. On a ledger of 100,000 leases an
admission writes enough pages for one commit in about twenty to pay
8-10 ms more for it.

:class:`Checkpointer` moves that work to a thread of its own, with a
connection of its own: after a write, within :data:`INTERVAL` seconds, it
runs ``PRAGMA wal_checkpoint(PASSIVE)``, which never waits for readers or
writers. The request connections keep an automatic checkpoint only as a
safety net, at :data:`SAFETY_PAGES` (the log never grows without bound if
the thread falls behind). The thread starts with the first write and ends
after :data:`IDLE` seconds without one (a ledger that is not written keeps
no thread), or when the engine is disposed.
"""

import sqlite3
import threading
import weakref

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

#: Seconds from a write to the checkpoint that follows it.
INTERVAL = 0.5
#: Seconds without a write after which the thread ends (the next write
#: starts it again).
IDLE = 30.0
#: The request connections' own automatic checkpoint, a safety net only
#: (pages of the log; 40 MB of 4 KiB pages).
SAFETY_PAGES = 10000

_OF_ENGINE = weakref.WeakKeyDictionary()


def of(engine):
    """The :class:`Checkpointer` of ``engine``, or None (not a SQLite
    file)."""
    return _OF_ENGINE.get(engine)


class Checkpointer:
    """Checkpoints the WAL of the SQLite database at ``path``.

    :ivar done: checkpoints run so far.
    :ivar last: the last checkpoint's ``(busy, log frames, checkpointed
        frames)``, as SQLite answers ``PRAGMA wal_checkpoint``.
    """

    def __init__(self, path, interval=INTERVAL, idle=IDLE, timeout=5.0):
        self.path = path
        self.interval = interval
        self.idle = idle
        self.timeout = timeout
        self.done = 0
        self.last = None
        self._lock = threading.Lock()
        self._written = threading.Event()
        self._stopping = threading.Event()
        self._thread = None

    @classmethod
    def attach(cls, engine, path, **kwargs):
        """A checkpointer for ``engine`` (a SQLite file at ``path``),
        ended when the engine is disposed or collected."""
        checkpointer = cls(path, **kwargs)
        _OF_ENGINE[engine] = checkpointer
        weakref.finalize(engine, checkpointer.stop, 0)
        return checkpointer

    @property
    def running(self):
        thread = self._thread
        return thread is not None and thread.is_alive()

    def wrote(self):
        """A transaction committed a write: checkpoint within
        :attr:`interval` seconds (starting the thread if needed)."""
        self._written.set()
        with self._lock:
            if self._thread is None:
                self._stopping.clear()
                self._thread = threading.Thread(
                    target=self._run, name='ledger-checkpoint', daemon=True)
                self._thread.start()

    def stop(self, timeout=5.0):
        """End the thread (a later write starts it again)."""
        with self._lock:
            thread = self._thread
            self._stopping.set()
            self._written.set()  # wake it up
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self):
        connection = None
        try:
            connection = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None,
                check_same_thread=False)
            while True:
                if not self._written.wait(self.idle):
                    with self._lock:
                        if not self._written.is_set():
                            # Idle: the next write starts a thread again.
                            self._thread = None
                            return
                    continue
                if self._stopping.wait(self.interval):
                    return
                self._written.clear()
                self.checkpoint(connection)
        except sqlite3.Error as exc:
            LOG.warning('Checkpoints of the ledger %s stopped (the commits '
                        'checkpoint it themselves meanwhile): %s',
                        self.path, exc)
        finally:
            if connection is not None:
                connection.close()
            with self._lock:
                if self._thread is threading.current_thread():
                    self._thread = None

    def checkpoint(self, connection):
        """One passive checkpoint on ``connection``."""
        self.last = connection.execute(
            'PRAGMA wal_checkpoint(PASSIVE)').fetchone()
        self.done += 1
