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
"""A multi-threaded WSGI server (cheroot) for our apps and test services.

One small class serves three purposes: ``placement-quota serve``, the
loopback servers that functional tests and benchmarks start, and the
embedded Placement run as a subprocess.
"""

import threading

from cheroot import wsgi
from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class WSGIServer:
    """Serve a WSGI application on ``host:port`` with a pool of threads.

    ``port=0`` asks the kernel for a free port; :attr:`port` tells which one
    was bound once :meth:`start` (or :meth:`serve_forever`) has run.
    """

    def __init__(self, app, host='127.0.0.1', port=0, threads=16,
                 request_queue_size=128, timeout=30, server_name=None):
        self._server = wsgi.Server(
            (host, port), app, numthreads=threads,
            request_queue_size=request_queue_size, timeout=timeout,
            server_name=server_name or 'placement-quota')
        self._thread = None
        self.host = host

    @property
    def port(self):
        return self._server.bind_addr[1]

    @property
    def url(self):
        host = self.host if ':' not in self.host else '[%s]' % self.host
        return 'http://%s:%d' % (host, self.port)

    def start(self):
        """Bind and serve from a background thread; return when listening.

        The worker threads are started from that (daemon) thread, so they
        are daemons too and never keep the process from exiting.
        """
        ready = threading.Event()
        failure = []

        def run():
            try:
                self._server.prepare()
            except BaseException as exc:
                failure.append(exc)
                return
            finally:
                ready.set()
            self._server.serve()

        self._thread = threading.Thread(target=run, name='wsgi-server',
                                        daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise failure[0]
        LOG.debug('WSGI server listening on %s', self.url)
        return self

    def serve_forever(self, on_ready=None):
        """Bind and serve in this thread until interrupted or stopped."""
        self._server.prepare()
        if on_ready is not None:
            on_ready(self)
        try:
            self._server.serve()
        finally:
            self._server.stop()

    def stop(self):
        self._server.stop()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
