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
"""Pre-forked worker processes for ``placement-quota serve --workers N``.

The enforcement service keeps no state of its own between requests (the
ledger, Placement and the quota sources hold it; its caches are bounded by
age and the ledger's generations), so N processes can serve one port.
Each worker is forked from this process before it opens anything (no
database connection, thread or socket is shared), makes its own services
and binds the port with ``SO_REUSEPORT``: the kernel spreads the
connections over the workers' listening sockets.

The parent holds the port (bound, never listening) until every worker
listens, reports once, forwards SIGTERM and SIGINT to the workers and
waits for them; a worker that dies on its own is started again (at most
once a second). Linux only (``SO_REUSEPORT`` balancing).
"""

import ctypes
import ctypes.util
import os
import select
import signal
import socket
import time

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

#: Seconds a worker may take to listen.
START_TIMEOUT = 60
#: Seconds between two restarts of a worker.
RESTART_PAUSE = 1.0
#: prctl(2): the signal sent when the parent dies.
PR_SET_PDEATHSIG = 1


def reserve_port(host, port):
    """A socket bound (not listening) to ``host:port`` with SO_REUSEPORT:
    it holds the port (a free one for ``port=0``) for the workers."""
    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


class Workers:
    """``count`` processes each running ``work(ready)``: ``work`` serves
    until SIGTERM, calling ``ready()`` once it listens, and returns its
    exit status."""

    def __init__(self, count, work):
        self.count = count
        self.work = work
        self.pids = {}
        self.stopping = False
        #: In a worker, its index (0 is the first); None in the parent.
        self.index = None

    def _spawn(self, index):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            _end_with_parent()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            self.index = index
            status = 1
            try:
                status = self.work(lambda: _say(write_end)) or 0
            except SystemExit as exc:
                status = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                LOG.exception('Worker %d failed.', index)
            finally:
                os._exit(status)
        os.close(write_end)
        self.pids[pid] = index
        return read_end

    def start(self):
        """Fork the workers and wait until each listens; False (the
        started ones stopped) when one does not."""
        pipes = [self._spawn(i) for i in range(self.count)]
        deadline = time.monotonic() + START_TIMEOUT
        waiting = set(pipes)
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            readable, _, _ = select.select(list(waiting), [], [], left)
            for fd in readable:
                if not os.read(fd, 1):
                    # Closed without a word: the worker failed to start.
                    self.stop()
                    return False
                waiting.discard(fd)
        for fd in pipes:
            os.close(fd)
        if waiting:
            self.stop()
            return False
        return True

    def supervise(self):
        """Until :meth:`stop`: start again a worker that exits."""
        while self.pids:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                return
            except InterruptedError:
                continue
            index = self.pids.pop(pid, None)
            if index is None or self.stopping:
                continue
            LOG.error('Worker %d (pid %d) exited (status %d); starting it '
                      'again.', index, pid, os.waitstatus_to_exitcode(status))
            time.sleep(RESTART_PAUSE)
            if not self.stopping:
                os.close(self._spawn(index))

    def stop(self, signum=signal.SIGTERM):
        """Ask every worker to stop and wait for them."""
        self.stopping = True
        for pid in list(self.pids):
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                self.pids.pop(pid, None)
        deadline = time.monotonic() + 20
        while self.pids and time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid:
                self.pids.pop(pid, None)
            else:
                time.sleep(0.05)
        for pid in list(self.pids):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            self.pids.pop(pid, None)


def _end_with_parent():
    """Have the kernel send this worker SIGTERM when its parent dies
    (prctl PR_SET_PDEATHSIG): a killed parent leaves no worker serving."""
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(ctypes.util.find_library('c'), use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        LOG.warning('Cannot ask to be stopped with the parent process.')
    if os.getppid() != parent:
        os._exit(0)    # the parent died before the request took effect


def _say(fd):
    """Tell the parent this worker listens (a restarted worker's parent
    no longer listens: nothing to tell)."""
    try:
        os.write(fd, b'1')
    except BrokenPipeError:
        pass
    finally:
        os.close(fd)
