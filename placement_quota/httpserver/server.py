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

On top of cheroot it defends its threads against slow clients:

* **The request head waits outside the threads.** A connection goes to a
  worker thread only once its request line and headers have arrived (and
  its body too, when ``Content-Length`` announces at most
  :data:`PREFETCH_BODY_SIZE` bytes). Until then the one thread that
  accepts connections reads what arrives without waiting, so clients that
  drip their headers (slowloris) hold no thread.
* **A whole-request read deadline** (``request_read_timeout``): a request
  whose head and body have not all arrived that many seconds after its
  first byte (after the connection was accepted, for a new connection) is
  answered ``408`` and its connection closed, whether it waits for a
  thread or a thread reads its body. ``timeout`` stays the longest wait
  for any one read, and for an idle keep-alive connection.
* **A bounded accept queue**: ``request_queue_size`` is the listen backlog
  and the number of complete requests that may wait for a thread; beyond
  it a request is answered ``503`` at once rather than queued.
* **Unambiguous framing** (RFC 9112, section 6.3): a request carrying both
  ``Transfer-Encoding`` and ``Content-Length``, ``Content-Length`` twice,
  or a ``Content-Length`` that is not digits is answered ``400`` and its
  connection closed: otherwise the bytes after the body the server reads
  could be taken for a second request (request smuggling).
* Errors the server answers itself (``400``, ``408``, ``413``, ``431``...)
  have a JSON body with a ``message``, as the applications' do.
"""

import _pyio
import gc
import json
import socket
import threading
import time

from cheroot import errors as cheroot_errors
from cheroot import makefile as cheroot_makefile
from cheroot import server as cheroot_server
from cheroot import wsgi
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

#: Largest request head (request line and headers) accepted, in bytes; a
#: larger one is answered 431.
MAX_HEAD_SIZE = 65536
#: A body announced by ``Content-Length`` up to this size is read before
#: the request goes to a thread; a larger or chunked one is read by the
#: thread, under the same deadline.
PREFETCH_BODY_SIZE = 65536

_CRLF2 = b'\r\n\r\n'
_READ_SIZE = 65536


def _json_error(status, message, **extra):
    """The bytes of an error answer the server writes itself."""
    body = json.dumps(dict(extra, message=message)).encode('utf-8')
    return b''.join((
        ('HTTP/1.1 %s\r\n' % status).encode('latin-1'),
        b'Content-Type: application/json\r\n',
        b'Content-Length: %d\r\n' % len(body),
        b'Connection: close\r\n\r\n', body))


class _Message(str):
    """An error message that carries the JSON fields of its answer
    (cheroot passes only ``args[0]`` of a header error on)."""

    def __new__(cls, text, **extra):
        message = super().__new__(cls, text)
        message.extra = extra
        return message


def _framing_error(text, **extra):
    return ValueError(_Message(text, **extra))


class _RecordingLines:
    """Hands cheroot's header reader the lines of ``rfile``, keeping the
    name of each header field (repeated ones are merged in the dict)."""

    def __init__(self, rfile):
        self.rfile = rfile
        self.names = []

    def readline(self, *args):
        line = self.rfile.readline(*args)
        if line[:1] not in (b' ', b'\t') and b':' in line:
            self.names.append(line.split(b':', 1)[0].strip().lower())
        return line


class _FramingHeaderReader(cheroot_server.HeaderReader):
    """cheroot's header reader, refusing a request whose body length is
    ambiguous (RFC 9112, section 6.3)."""

    def __call__(self, rfile, hdict=None):
        lines = _RecordingLines(rfile)
        hdict = super().__call__(lines, hdict)
        lengths = lines.names.count(b'content-length')
        if lengths and b'transfer-encoding' in lines.names:
            raise _framing_error(
                'A request must not carry both Transfer-Encoding and '
                'Content-Length (RFC 9112, section 6.3): the length of its '
                'body would be ambiguous.', field='Transfer-Encoding',
                value=hdict[b'Transfer-Encoding'].decode('latin-1'))
        if lengths > 1:
            raise _framing_error(
                'Content-Length is given %d times; send it once.' % lengths,
                field='Content-Length')
        if lengths:
            value = hdict[b'Content-Length']
            if not value.isdigit() or len(value) > 18:
                raise _framing_error(
                    'Content-Length must be a number of bytes (digits '
                    'only), not %r.' % value.decode('latin-1'),
                    field='Content-Length', value=value.decode('latin-1'))
        return hdict


class _Request(cheroot_server.HTTPRequest):
    """cheroot's request with strict framing and JSON error answers."""

    header_reader = _FramingHeaderReader()

    def read_request_headers(self):
        if not super().read_request_headers():
            return False
        if (self.request_protocol == b'HTTP/1.0' and
                b'Transfer-Encoding' in self.inheaders):
            # RFC 9112, section 6.1: HTTP/1.0 has no transfer codings.
            self.simple_response('400 Bad Request', _Message(
                'HTTP/1.0 requests cannot use Transfer-Encoding.',
                field='Transfer-Encoding'))
            return False
        return True

    def simple_response(self, status, msg=''):
        """Answer an error (or ``100 Continue``) the server finds itself,
        in JSON like the applications' errors, and close the connection
        after an error."""
        status = str(status)
        if not status.startswith('4') and not status.startswith('5'):
            return super().simple_response(status, msg)
        self.close_connection = True
        if isinstance(msg, bytes):
            msg = msg.decode('latin-1')
        extra = getattr(msg, 'extra', {})
        if not msg and status.startswith('408'):
            msg = _timeout_message(self.server)
        try:
            self.conn.wfile.write(_json_error(status, str(msg) or status[4:],
                                              **extra))
        except OSError as exc:
            if exc.args[0] not in cheroot_errors.socket_errors_to_ignore:
                raise


def _timeout_message(server):
    return ('The request (its headers and body) did not arrive within the '
            '%g s the server allows (its request read timeout); the '
            'connection is closed.' % server.request_read_timeout)


class _DeadlineSocketIO(socket.SocketIO):
    """The raw reads of one connection: first what the accepting thread
    already read (:attr:`pending`), then the socket, never past the
    connection's deadline."""

    def __init__(self, sock, conn):
        super().__init__(sock, 'rb')
        self.socket = sock
        self.conn = conn
        self.pending = bytearray()

    def readinto(self, buffer):
        if self.pending:
            size = min(len(buffer), len(self.pending))
            buffer[:size] = self.pending[:size]
            del self.pending[:size]
            return size
        deadline = self.conn.deadline
        if deadline is None:
            return super().readinto(buffer)
        timeout = self.conn.server.timeout
        # Past the deadline, only what has already arrived is read.
        wait = max(0.0, min(deadline - time.monotonic(), timeout))
        self.socket.settimeout(wait)
        try:
            read = super().readinto(buffer)
        except socket.timeout:
            self.conn.read_timed_out = True
            raise
        finally:
            self.socket.settimeout(timeout)
        if read is None:       # nothing there past the deadline
            self.conn.read_timed_out = True
            raise socket.timeout('timed out')
        return read

    def prefetch(self, limit):
        """Read what the client has sent, without waiting, up to ``limit``
        bytes pending; False when it closed or the socket failed."""
        self.socket.settimeout(0)
        try:
            while len(self.pending) < limit:
                data = self.socket.recv(_READ_SIZE)
                if not data:
                    return False
                self.pending += data
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            return False
        finally:
            self.socket.settimeout(self.conn.server.timeout)
        return True


class _Reader(cheroot_makefile.StreamReader):
    """cheroot's buffered reader over a :class:`_DeadlineSocketIO`."""

    def __init__(self, raw, conn, bufsize):
        _pyio.BufferedReader.__init__(self, raw, bufsize)
        self.bytes_read = 0
        self.conn = conn

    def buffered(self):
        """The bytes read from the socket and not consumed yet."""
        return bytes(self._read_buf[self._read_pos:]) + bytes(
            self.raw.pending)

    def has_data(self):
        """cheroot asks this of a keep-alive connection: True when its
        next request can go to a thread without waiting for the client."""
        return self.conn.request_ready()


def _prefetch_length(head):
    """The body length to read before the request goes to a thread: its
    ``Content-Length`` when plain and small, else 0 (chunked, expecting
    ``100-continue``, ambiguous: a thread reads it, or refuses it)."""
    length = None
    for line in head.split(b'\r\n')[1:]:
        name, colon, value = line.partition(b':')
        if not colon:
            continue
        name = name.strip().lower()
        if name in (b'transfer-encoding', b'expect'):
            return 0
        if name == b'content-length':
            value = value.strip()
            if length is not None or not value.isdigit() or len(value) > 18:
                return 0
            length = int(value)
    if length is None or length > PREFETCH_BODY_SIZE:
        return 0
    return length


class _Connection(cheroot_server.HTTPConnection):
    """A connection whose reads keep the server's request deadline."""

    RequestHandlerClass = _Request

    def __init__(self, server, sock, makefile=cheroot_makefile.MakeFile):
        self.raw = _DeadlineSocketIO(sock, self)

        def files(sock, mode, bufsize):
            if 'r' in mode:
                return _Reader(self.raw, self, bufsize)
            return makefile(sock, mode, bufsize)

        super().__init__(server, sock, files)
        #: monotonic time by which the current request must have arrived
        self.deadline = None
        self.read_timed_out = False
        #: True while the request is read by the accepting thread
        self.awaiting = True
        self.served = 0
        self._ready = False

    def start_clock(self):
        if self.deadline is None and \
                self.server.request_read_timeout is not None:
            self.deadline = (time.monotonic() +
                             self.server.request_read_timeout)

    def request_ready(self):
        """True once the request head (and a small body) has arrived."""
        if self._ready:
            return True
        data = self.rfile.buffered()
        # One CRLF may precede a request (it ends a chunked body): it
        # does not start the next request's clock.
        if data.lstrip(b'\r\n'):
            self.start_clock()
        end = data.find(_CRLF2, 1 if data.startswith(b'\r\n') else 0)
        if end < 0:
            return False
        if len(data) - end - 4 < _prefetch_length(data[:end]):
            return False
        self._ready = True
        return True

    def head_too_large(self):
        return not self._ready and len(self.raw.pending) > MAX_HEAD_SIZE

    def expired(self):
        return self.deadline is not None and time.monotonic() >= self.deadline

    def communicate(self):
        self.awaiting = False
        self.start_clock()
        try:
            keep = super().communicate()
        finally:
            self.served += 1
        if self.read_timed_out:
            LOG.info('Closed the connection from %s:%s: its request did not '
                     'arrive within %g seconds', self.remote_addr,
                     self.remote_port, self.server.request_read_timeout)
            return False
        if keep:
            # Between requests: the next one's clock starts at its first
            # byte; an idle connection is the selector's (``timeout``).
            self.deadline = None
            self.awaiting = True
            self._ready = False
        return keep

    def refuse(self, status, message, **extra):
        """Answer an error without waiting (best effort) and close."""
        self.awaiting = False
        try:
            self.socket.settimeout(0)
            self.socket.send(_json_error(status, message, **extra))
        except OSError:
            pass
        self.close()

    def close(self):
        if self.awaiting and (self.served == 0 or
                              self.rfile.buffered().strip()):
            # Closed by the accepting thread (deadline, idle timeout or
            # shutdown) while a request was arriving.
            if self.expired():
                LOG.info('Closed the connection from %s:%s: its request did '
                         'not arrive within %g seconds', self.remote_addr,
                         self.remote_port, self.server.request_read_timeout)
            self.refuse('408 Request Timeout',
                        _timeout_message(self.server))
            return
        super().close()


class _Server(wsgi.Server):
    """cheroot's WSGI server handing a thread only complete requests."""

    ConnectionClass = _Connection

    def __init__(self, *args, request_read_timeout=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.request_read_timeout = request_read_timeout

    def process_conn(self, conn):
        """Called by the accepting thread for a new connection and for one
        with bytes to read: read them, and pass the connection to a thread
        once its request has arrived."""
        if self.request_read_timeout is None or conn.request_ready():
            conn.awaiting = False
            return super().process_conn(conn)
        if conn.served == 0:
            conn.start_clock()         # a new connection: from its accept
        if not conn.raw.prefetch(MAX_HEAD_SIZE + PREFETCH_BODY_SIZE + 1):
            conn.awaiting = False
            conn.close()
            return
        if conn.request_ready():
            conn.awaiting = False
            return super().process_conn(conn)
        if conn.head_too_large():
            conn.refuse('431 Request Header Fields Too Large',
                        'The request line and headers exceed %d bytes.'
                        % MAX_HEAD_SIZE)
            return
        if conn.expired():
            conn.close()               # answers 408
            return
        self._connections.put(conn)
        if conn.deadline is not None:
            # The selector closes a connection unused since ``timeout``
            # ago: make that happen at the deadline too.
            at_deadline = time.time() + (
                conn.deadline - time.monotonic()) - self.timeout
            conn.last_used = min(conn.last_used, at_deadline)


class WSGIServer:
    """Serve a WSGI application on ``host:port`` with a pool of threads.

    ``port=0`` asks the kernel for a free port; :attr:`port` tells which one
    was bound once :meth:`start` (or :meth:`serve_forever`) has run.

    ``timeout``: the longest wait for one read or write, and for an idle
    keep-alive connection. ``request_read_timeout``: seconds within which
    a request's head and body must have arrived, counted from its first
    byte (from the accept for a new connection); None: no such deadline
    (and threads read request heads themselves, as cheroot does).
    ``request_queue_size``: the listen backlog, and how many complete
    requests may wait for a thread (beyond: ``503``). ``reuse_port``:
    bind with ``SO_REUSEPORT``, beside the other workers of ``serve
    --workers`` (:mod:`placement_quota.httpserver.prefork`).
    """

    def __init__(self, app, host='127.0.0.1', port=0, threads=16,
                 request_queue_size=128, timeout=30, server_name=None,
                 request_read_timeout=10, reuse_port=False):
        self._server = _Server(
            (host, port), app, numthreads=threads, reuse_port=reuse_port,
            request_queue_size=request_queue_size, timeout=timeout,
            server_name=server_name or 'placement-quota',
            accepted_queue_size=request_queue_size,
            accepted_queue_timeout=0,
            request_read_timeout=request_read_timeout)
        self._thread = None
        self.host = host

    @property
    def port(self):
        return self._server.bind_addr[1]

    @property
    def url(self):
        return url(self.host, self.port)

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


def url(host, port):
    """``http://host:port`` (an IPv6 host in brackets)."""
    shown = host if ':' not in host else '[%s]' % host
    return 'http://%s:%d' % (shown, port)


def freeze_heap():
    """Collect the garbage, then put every object alive now out of the
    garbage collector's reach (:func:`gc.freeze`): modules, configuration,
    filter chain and app live as long as the serving process. A collection
    of the whole heap of a service process (about 170,000 objects once
    imported) pauses every thread of it for some 60 ms on a small machine;
    after this, full collections walk only the objects made since. Call it
    once the app is built, before serving (in each worker)."""
    gc.collect()
    gc.freeze()
