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
"""The embedded Placement: the real ``openstack-placement`` WSGI app.

It is what the Placement client (``PlacementClient.from_conf``) uses when
no cloud Placement is configured, and what the test fixtures run. It is
built from Placement's own code (``placement.deploy.loadapp``) with:

* its own ``ConfigOpts`` (never the global ``CONF``);
* a SQLite database, migrated on start-up (``sync_on_startup``);
* ``[api] auth_strategy = noauth2``: no Keystone. A request is
  authenticated by the ``X-Auth-Token`` header alone (``user[:project]``),
  and carries the roles in ``X-Roles`` (without it, token ``admin`` gets
  role ``admin`` only);
* Placement's *production* policy defaults: ``[oslo_policy]
  enforce_new_defaults`` left True (Placement's own test fixture turns it
  off, which lets ``admin`` reshape). So most APIs want role ``admin`` or
  ``service`` but ``POST /reshaper`` wants role ``service``: send
  :data:`NOAUTH_HEADERS` to be allowed everything. Tokens are project
  scoped (project = token's user part), as the policies' scope wants.

Placement keeps its database context manager and its policy enforcer in
module globals, so there is one embedded Placement per process:
:func:`get_app` is a thread-safe process singleton. (``placement`` is
imported only when it is first needed: that takes about a second.)

A SQLite file is put in WAL mode and the transactions of requests that
may write (every method but ``GET``, ``HEAD`` and ``OPTIONS``) made ``BEGIN
IMMEDIATE`` so that concurrent writes through a threaded server queue
instead of failing with "database is locked"; reads keep a plain
``BEGIN`` and run beside each other and beside a writer (WAL), where
taking the write lock made two parallel reads slower than the same two
in turn. In-memory SQLite
(``sqlite://``) works but is one connection shared by all threads.

Run it as a server (used by the ``PlacementServer`` test fixture)::

    python -m placement_quota.cmd.embedded_placement --port 0 \\
        --connection sqlite:////path/to/placement.sqlite

which prints one line ``LISTENING http://127.0.0.1:PORT`` on stdout once
bound.
"""

import atexit
import contextlib
import contextvars
import os
import queue
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

from oslo_config import cfg
from oslo_log import log as logging
import sqlalchemy.engine
import sqlalchemy.event

from placement_quota.httpserver import server as wsgi_server

LOG = logging.getLogger(__name__)

#: The noauth2 token: user ``admin``, project ``admin``.
NOAUTH_TOKEN = 'admin'
#: Roles that pass every default Placement policy: ``admin`` for most APIs,
#: ``service`` for ``placement:reshaper:reshape`` (``role:service`` only).
NOAUTH_ROLES = 'admin,service'
#: Headers that a request to the embedded Placement needs to be allowed all.
NOAUTH_HEADERS = {'X-Auth-Token': NOAUTH_TOKEN, 'X-Roles': NOAUTH_ROLES}
#: The first line the ``__main__`` server prints, followed by its URL.
LISTENING = 'LISTENING'
#: Database file name used by :func:`sqlite_connection`.
DB_FILENAME = 'placement.sqlite'
#: Seconds a SQLite transaction waits for another to release the database.
SQLITE_BUSY_TIMEOUT = 30

_lock = threading.Lock()
_app = None
_connection = None
_failure = None  # why building the app failed: it cannot be retried


def sqlite_connection(state_dir, filename=DB_FILENAME):
    """Return the SQLAlchemy URL of a SQLite file in ``state_dir``."""
    path = os.path.abspath(os.path.join(state_dir, filename))
    return 'sqlite:///' + path


def _is_sqlite_file(connection):
    url = sqlalchemy.engine.make_url(connection)
    return url.get_backend_name() == 'sqlite' and url.database not in (
        None, '', ':memory:')


def _shown(connection):
    """The URL for messages, without its password."""
    return sqlalchemy.engine.make_url(connection).render_as_string(
        hide_password=True)


def make_conf(connection, config_files=()):
    """Return a fresh, parsed ``ConfigOpts`` for an embedded Placement.

    ``config_files``: Placement configuration files read on top, e.g.
    ``[api] auth_strategy = keystone`` and ``[keystone_authtoken]`` for a
    Placement that checks tokens with a real Keystone (the database options
    set here win over theirs).
    """
    # openstack-placement is imported when the embedded default first
    # starts, not with this module: it takes about a second.
    from placement import conf as placement_conf

    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    conf.set_override('connection', connection, group='placement_database')
    conf.set_override('sync_on_startup', True, group='placement_database')
    if _is_sqlite_file(connection):
        # pysqlite's busy timeout: how long a writer waits for another.
        conf.set_override('connection_parameters',
                          'timeout=%d' % SQLITE_BUSY_TIMEOUT,
                          group='placement_database')
    conf.set_default('auth_strategy', 'noauth2', group='api')
    conf([], default_config_files=list(config_files),
         default_config_dirs=[])
    return conf


def _prepare_sqlite_file(connection):
    """Put a SQLite file in WAL mode: readers then don't block the writer.

    WAL is a property of the file, so setting it once, before Placement
    opens it, holds for all of Placement's connections.
    """
    if _is_sqlite_file(connection):
        path = sqlalchemy.engine.make_url(connection).database
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with contextlib.closing(sqlite3.connect(path)) as db:
            db.execute('PRAGMA journal_mode=WAL')


#: True while this thread serves a request that does not write
#: (:func:`_reads_only`).
_READING = contextvars.ContextVar('placement_embedded_reading',
                                  default=False)
#: The HTTP methods whose Placement handlers never write.
READ_METHODS = frozenset(['GET', 'HEAD', 'OPTIONS'])


def _begin_immediate(engine):
    """Make the SQLite transactions of writing requests take the write
    lock when they begin.

    oslo.db disables pysqlite's own transaction handling and emits a plain
    (deferred) ``BEGIN``. A transaction that reads and then writes (most
    Placement writes do) then fails at once with "database is locked" when
    another one wrote meanwhile, whatever the busy timeout. Rewriting that
    ``BEGIN`` as ``BEGIN IMMEDIATE`` makes transactions queue instead.
    Those of a read-only request (:func:`_reads_only`) are left deferred:
    in WAL mode they never wait for a writer nor for each other.
    """
    def before_cursor_execute(conn, cursor, statement, parameters, context,
                              executemany):
        if statement == 'BEGIN' and not _READING.get():
            statement = 'BEGIN IMMEDIATE'
        return statement, parameters

    sqlalchemy.event.listen(engine, 'before_cursor_execute',
                            before_cursor_execute, retval=True)


def _reads_only(app):
    """``app`` marking the requests of :data:`READ_METHODS` as reading
    only while they are served (in the serving thread)."""
    def wrapped(environ, start_response):
        if environ.get('REQUEST_METHOD') not in READ_METHODS:
            return app(environ, start_response)
        token = _READING.set(True)
        try:
            # Read whole while marked (Placement's answers are lists of
            # bytes made in the call), then closed as PEP 3333 asks.
            result = app(environ, start_response)
            try:
                return list(result)
            finally:
                if hasattr(result, 'close'):
                    result.close()
        finally:
            _READING.reset(token)
    return wrapped


def get_app(connection, config_files=()):
    """Return this process's Placement WSGI app, building it on first call.

    :param connection: SQLAlchemy URL of its database, e.g. from
        :func:`sqlite_connection`; it is created and migrated if needed.
    :param config_files: see :func:`make_conf` (first call only).
    :raises RuntimeError: if this process already has an embedded
        Placement on another database, or if Placement's database layer
        was configured by someone else (e.g. Placement's own fixtures).
    """
    global _app, _connection, _failure
    with _lock:
        if _failure is not None:
            raise RuntimeError(
                'The embedded Placement failed to start earlier in this '
                'process and cannot be retried: %s' % _failure)
        if _app is not None:
            if connection != _connection:
                raise RuntimeError(
                    'This process already runs an embedded Placement on %s; '
                    'Placement keeps its database in process globals, so it '
                    'cannot also run one on %s.'
                    % (_shown(_connection), _shown(connection)))
            return _app

        # openstack-placement: see make_conf.
        from placement import db_api
        from placement import deploy

        if db_api.configure.called:
            raise RuntimeError(
                "Placement's database layer was already configured in this "
                "process (not by placement_quota.placement.embedded); cannot "
                "start an embedded Placement on %s." % _shown(connection))
        try:
            conf = make_conf(connection, config_files)
            _prepare_sqlite_file(connection)
            db_api.configure(conf)
            if _is_sqlite_file(connection):
                _begin_immediate(db_api.get_placement_engine())
            app = deploy.loadapp(conf)
            if _is_sqlite_file(connection):
                app = _reads_only(app)
        except Exception as e:
            _failure = '%s on %s: %s' % (
                type(e).__name__, _shown(connection), e)
            raise
        _app, _connection = app, connection
        LOG.info('Embedded Placement ready on %s', _shown(connection))
        return _app


def close_connections():
    """Close the pooled database connections of this process's embedded
    Placement (:func:`get_app` made them): before forking processes that
    serve it, so that none shares one; each opens its own."""
    if _app is None:
        return
    from placement import db_api  # see make_conf

    db_api.get_placement_engine().dispose()


_server = None


def serve_in_thread(connection, host='127.0.0.1'):
    """Serve this process's embedded Placement on a loopback port from a
    background thread (once per process); return its endpoint URL.

    This is how the Placement client reaches the embedded default: over
    real HTTP, exactly as it reaches a cloud's Placement.
    """
    global _server
    app = get_app(connection)
    with _lock:
        if _server is None:
            _server = wsgi_server.WSGIServer(
                app, host=host, server_name='placement-embedded').start()
            atexit.register(_server.stop)
        return _server.url


class ServerProcess:
    """The embedded Placement as a child process on a loopback port.

    ``python -m placement_quota.cmd.embedded_placement`` on a fresh SQLite
    database in ``state_dir`` (a new temporary directory, removed by
    :meth:`stop`, when not given). The child exits when our end of its
    stdin closes, so it never outlives this process. Used by the test
    fixtures and the benchmarks.

    ``config_files``: Placement configuration files read on top of the
    embedded defaults (see :func:`make_conf`). ``connection``: the
    SQLAlchemy URL of another database (e.g. PostgreSQL, as a real
    deployment has) instead of the SQLite file. ``workers``: processes
    serving its port (``--workers``), as a deployment runs several.

    :raises RuntimeError: if it does not print ``LISTENING <url>`` within
        ``timeout`` seconds, with the tail of its stderr.
    """

    def __init__(self, timeout=60, state_dir=None, config_files=(),
                 connection=None, workers=1):
        started = time.monotonic()
        self._own_dir = state_dir is None
        self.state_dir = state_dir or tempfile.mkdtemp(
            prefix='placement-server-')
        self._stderr = open(os.path.join(self.state_dir, 'stderr.log'),
                            'w+b')
        root = os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__))))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            p for p in (root, os.environ.get('PYTHONPATH')) if p))
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'placement_quota.cmd.embedded_placement',
             '--host', '127.0.0.1', '--port', '0', '--exit-on-stdin-eof',
             '--connection',
             connection or sqlite_connection(self.state_dir),
             '--workers', str(workers)] +
            ['--config-file=%s' % path for path in config_files],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr, env=env, cwd=root, text=True)
        try:
            self.url = self._wait_listening(timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started

    def _wait_listening(self, timeout):
        lines = queue.Queue()

        def read_stdout():  # also keeps the pipe drained afterwards
            for line in self.process.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=read_stdout, daemon=True,
                         name='placement-server-stdout').start()
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = lines.get(
                    timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self._fail('did not print %s within %g s'
                           % (LISTENING, timeout))
            if line is None:
                self._fail('exited with status %s before listening'
                           % self.process.wait())
            if line.startswith(LISTENING + ' '):
                return line.split()[1]

    def _fail(self, why):
        self._stderr.seek(0)
        tail = self._stderr.read()[-4000:].decode('utf-8', 'replace')
        raise RuntimeError('Placement server subprocess %s (%s).\n'
                           '--- stderr tail ---\n%s'
                           % (why, ' '.join(self.process.args), tail))

    def stop(self):
        """Stop the child and remove its temporary directory (idempotent)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdin:
            self.process.stdin.close()
        self._stderr.close()
        if self._own_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)


def loaded_connection():
    """Return the database URL of this process's Placement, or None."""
    return _connection
