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
"""The SQLAlchemy engine of a ledger database, set up for its locking and
timeouts: SQLite's pragmas and ``BEGIN IMMEDIATE``; PostgreSQL's
connection options, a pre-ping with a deadline and the
:class:`~placement_quota.ledger.db.deadlines.Watchdog` around every
statement; MySQL and MariaDB through oslo.db's engine (its error
translation and pre-ping) with session variables and socket timeouts;
database errors that mean "unavailable" raised as such, deadlocks retried
(:func:`retry_deadlocks`).

Timeouts
--------

``[ledger] lock_timeout`` bounds each lock wait (SQLite: its busy timeout;
PostgreSQL: ``lock_timeout``). On PostgreSQL, ``connect_timeout`` bounds
connecting and the ping of a pooled connection at checkout, and
``statement_timeout`` bounds every statement on the server; a server that
does not answer at all (frozen) is given up by a client-side deadline of
``max(statement_timeout, lock_timeout) + 2`` seconds per statement (see
:mod:`~placement_quota.ledger.db.deadlines`). Each of these failures raises
:class:`~placement_quota.ledger.errors.LedgerUnavailable`
(:class:`~placement_quota.ledger.errors.LockTimeout` for a lock wait),
which the enforcement API answers with 503.

On MySQL and MariaDB, ``lock_timeout`` is each connection's
``innodb_lock_wait_timeout`` (error 1205 raises
:class:`~placement_quota.ledger.errors.LockTimeout`), ``statement_timeout``
MariaDB's ``max_statement_time`` (MySQL has no limit for every statement:
none is set there), ``connect_timeout`` PyMySQL's; PyMySQL's read and
write timeouts of ``max(statement_timeout, lock_timeout) + 2`` seconds give
a frozen server up (no watchdog is needed: the driver's socket has a
timeout). Transactions run at ``READ COMMITTED``, as on PostgreSQL.

Conflicts
---------

A transaction the server rolled back because a competing one wrote the
same rows raises :class:`~placement_quota.ledger.errors.LedgerConflict`
(a 503 if nobody runs it again): a deadlock (1213), which is also how a
Galera node reports a certification failure at COMMIT or a brute-force
abort at any statement, and error 1020 ("record has changed since last
read", raised under REPEATABLE READ by MariaDB's
``innodb_snapshot_isolation``). A conflict while a transaction takes its
locks is retried here (:func:`retry_deadlocks`); an admission that
conflicts later, commit included, is re-run whole by
:func:`placement_quota.filters.admit.run`.

Galera
------

Every new connection asks the server whether it is a Galera node
(``wsrep_on``) and says so in the connection's ``info``
(:data:`GALERA`): Galera does not replicate row locks, so the ledger's
locks write their rows there (:mod:`~placement_quota.ledger.db.locks`).
Unless ``[database] mysql_wsrep_sync_wait`` is set, such a connection
reads with ``wsrep_sync_wait = 1`` (:data:`GALERA_SYNC_WAIT`): a read sees
every transaction the cluster committed before it, on whichever node it
was written. A node that is not ready (not in the primary component, or
not synced; error 1047) is an outage: 503.
"""

import contextlib
import os
import random
import time

from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import engines as db_engines
from oslo_db.sqlalchemy import exc_filters as db_exc_filters
from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from placement_quota.ledger.db import checkpoints
from placement_quota.ledger.db import deadlines
from placement_quota.ledger.db import locks
from placement_quota.ledger import errors

LOG = logging.getLogger(__name__)

#: The database backends of the MySQL family (SQLAlchemy's names).
MYSQL = locks.MYSQL
#: MySQL error codes: a lock wait timed out, a deadlock, a statement ran
#: past MariaDB's max_statement_time (or MySQL's max_execution_time).
ER_LOCK_WAIT_TIMEOUT = 1205
ER_LOCK_DEADLOCK = 1213
#: "Record has changed since last read" (REPEATABLE READ with MariaDB's
#: innodb_snapshot_isolation): the same conflict as a deadlock.
ER_CHECKREAD = 1020
#: The conflicts: the server rolled the transaction back, a competing one
#: won (LedgerConflict).
ER_CONFLICTS = (ER_LOCK_DEADLOCK, ER_CHECKREAD)
#: What a Galera node that is not ready answers every statement with
#: ("WSREP has not yet prepared node for application use").
ER_UNKNOWN_COM_ERROR = 1047
#: The key of a connection's ``info`` that says it is to a Galera node.
GALERA = locks.GALERA
#: ``wsrep_sync_wait`` of a Galera connection when ``[database]
#: mysql_wsrep_sync_wait`` is not set: reads wait for what the cluster
#: committed before them.
GALERA_SYNC_WAIT = 1
ER_STATEMENT_TIMEOUT = (1969, 3024)
#: How often a transaction whose locking deadlocked is tried in all.
DEADLOCK_ATTEMPTS = 5
#: oslo.db's exceptions (MySQL/MariaDB): any.
DBError = db_exc.DBError

#: The execution option of a connection that only reads (no write lock
#: on SQLite).
READ_ONLY = 'placement_quota_read_only'

#: Seconds the client waits beyond the server's own timeouts before it
#: gives a database that does not answer up.
DEADLINE_GRACE = 2


#: SQLite's primary result codes that mean the ledger file cannot be
#: used now (not a bug in a statement): busy or locked, an I/O error, the
#: disk full, the file or its directory gone or unwritable (including
#: SQLITE_READONLY_DBMOVED: the file was removed while open).
SQLITE_OUTAGES = frozenset((
    3,    # SQLITE_PERM
    5,    # SQLITE_BUSY
    6,    # SQLITE_LOCKED
    8,    # SQLITE_READONLY
    10,   # SQLITE_IOERR
    13,   # SQLITE_FULL
    14,   # SQLITE_CANTOPEN
))
#: Of those, a lock waited on: the Ledger raises LockTimeout for it,
#: naming the locks (see store.Ledger.transaction).
SQLITE_LOCK_WAITS = frozenset((5, 6))


def _sqlite_code(error):
    """SQLite's primary result code of a SQLAlchemy error, or None
    (Python 3.11+ gives the extended code)."""
    code = getattr(getattr(error, 'orig', None), 'sqlite_errorcode', None)
    return None if code is None else code & 0xff


def database_outage(error, where):
    """The :class:`~placement_quota.ledger.errors.LedgerUnavailable` the
    SQLAlchemy error ``error`` means -- the connection lost, or a SQLite
    file that cannot be used now (:data:`SQLITE_OUTAGES`) --, or None (a
    bug in a statement, a constraint...). ``where`` names the database."""
    if not isinstance(error, sa_exc.DBAPIError):
        return None
    orig = error.orig
    if getattr(error, 'connection_invalidated', False):
        lines = str(orig).strip().splitlines() or [type(orig).__name__]
        return errors.LedgerUnavailable(
            'Lost the connection to the ledger database at %s: %s'
            % (where, lines[0]))
    if _sqlite_code(error) not in SQLITE_OUTAGES:
        return None
    return errors.LedgerUnavailable(
        'The ledger database at %s cannot be used: %s (%s)'
        % (where, orig, getattr(orig, 'sqlite_errorname',
                                orig.sqlite_errorcode)))


def _configure_sqlite(engine, lock_timeout, path=None, shown=None):
    """SQLite's pragmas; for a database file (``path``), its checkpoints
    in a thread of their own (:mod:`~placement_quota.ledger.
    checkpoints`)."""
    checkpointer = None
    if path:
        checkpointer = checkpoints.Checkpointer.attach(engine, path)

        @sa.event.listens_for(engine, 'commit')
        def _commit(connection):
            if not connection.get_execution_options().get(READ_ONLY):
                checkpointer.wrote()

        @sa.event.listens_for(engine, 'engine_disposed')
        def _disposed(engine):
            checkpointer.stop()

    @sa.event.listens_for(engine, 'connect')
    def _connect(dbapi_connection, record):
        # We issue BEGIN ourselves: IMMEDIATE takes the write lock at once.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute('PRAGMA busy_timeout = %d' % (lock_timeout * 1000))
        cursor.execute('PRAGMA foreign_keys = ON')
        # Write-ahead log: readers never wait for the writer, and a commit
        # is one append (synced at checkpoints) instead of two fsyncs; an
        # operating-system crash can lose the last commits, a process
        # crash cannot.
        cursor.execute('PRAGMA journal_mode = WAL')
        cursor.execute('PRAGMA synchronous = NORMAL')
        if checkpointer is not None:
            # A commit checkpoints only if the thread fell far behind.
            cursor.execute('PRAGMA wal_autocheckpoint = %d'
                           % checkpoints.SAFETY_PAGES)
        cursor.close()

    @sa.event.listens_for(engine, 'handle_error')
    def _handle_error(ctx):
        if ctx.is_pre_ping:
            return None   # the pool makes a new connection
        if _sqlite_code(ctx.sqlalchemy_exception) in SQLITE_LOCK_WAITS:
            # The Ledger names the locks it waited for (store.py).
            return errors.LockTimeout(
                'The ledger database at %s stayed locked past [ledger] '
                'lock_timeout: %s' % (shown, ctx.original_exception))
        return database_outage(ctx.sqlalchemy_exception, shown)

    @sa.event.listens_for(engine, 'begin')
    def _begin(connection):
        if connection.get_execution_options().get(READ_ONLY):
            # A reader (Ledger.reader): no write lock, never waits.
            connection.exec_driver_sql('BEGIN')
        else:
            connection.exec_driver_sql('BEGIN IMMEDIATE')


def _configure_postgresql(engine, watchdog, connect_timeout,
                          statement_deadline):
    """Deadlines on every call to a PostgreSQL server (see
    :mod:`~placement_quota.ledger.db.deadlines`)."""

    @sa.event.listens_for(engine, 'connect')
    def _connect(dbapi_connection, record):
        record.info['ledger_fresh'] = True

    @sa.event.listens_for(engine, 'checkout')
    def _checkout(dbapi_connection, record, proxy):
        # Our pre-ping: SQLAlchemy's has no deadline. A fresh connection
        # was just made; an old one must answer within connect_timeout.
        if record.info.pop('ledger_fresh', False):
            return
        with watchdog.guard(dbapi_connection, connect_timeout):
            try:
                cursor = dbapi_connection.cursor()
                try:
                    cursor.execute('SELECT 1')
                finally:
                    cursor.close()
            except Exception as exc:
                # The pool throws the connection away and makes a new one.
                raise sa_exc.DisconnectionError(
                    'the pooled ledger connection did not answer: %s' % exc)

    if statement_deadline:
        @sa.event.listens_for(engine, 'before_cursor_execute')
        def _before(connection, cursor, statement, parameters, context,
                    executemany):
            if not connection.get_execution_options().get(
                    'ledger_unbounded'):
                watchdog.arm(connection.connection.dbapi_connection,
                             statement_deadline)

        @sa.event.listens_for(engine, 'after_cursor_execute')
        def _after(connection, cursor, statement, parameters, context,
                   executemany):
            watchdog.disarm()


def _unavailable(ctx, url, watchdog, statement_timeout):
    """The :class:`~placement_quota.ledger.errors.LedgerUnavailable`
    a database error means, or None."""
    expired = watchdog.disarm()
    original = ctx.original_exception
    if expired is not None:
        ctx.is_disconnect = True
        return errors.LedgerUnavailable(
            'The ledger database at %s did not answer within %d seconds; '
            'the request was given up (try again later).' % (url, expired))
    if ctx.is_pre_ping:
        return None
    if getattr(original, 'pgcode', None) == '57014':  # query_canceled
        return errors.LedgerUnavailable(
            'A statement on the ledger database at %s ran longer than '
            '[ledger] statement_timeout (%d seconds) and was cancelled; '
            'try again later.' % (url, statement_timeout))
    if not isinstance(ctx.sqlalchemy_exception, sa_exc.OperationalError):
        # psycopg2's InterfaceError "connection already closed"...
        return _lost(ctx, url)
    if ctx.connection is None:
        return errors.LedgerUnavailable(
            'Cannot connect to the ledger database at %s: %s'
            % (url, _first_line(original)))
    if ctx.is_disconnect:
        return errors.LedgerUnavailable(
            'Lost the connection to the ledger database at %s: %s'
            % (url, _first_line(original)))
    return None


def _lost(ctx, url):
    """A connection lost under an error that is not an OperationalError,
    as LedgerUnavailable; else None."""
    if not ctx.is_disconnect:
        return None
    return errors.LedgerUnavailable(
        'Lost the connection to the ledger database at %s: %s'
        % (url, _first_line(ctx.original_exception)))


def _configure_mysql(engine, lock_timeout, statement_timeout,
                     sync_wait=None):
    """Session variables of every new MySQL/MariaDB connection, and
    whether it is to a Galera node (``record.info[GALERA]``);
    ``sync_wait``: ``[database] mysql_wsrep_sync_wait`` (oslo.db sets it
    when it is not None)."""

    @sa.event.listens_for(engine, 'connect')
    def _connect(dbapi_connection, record):
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute('SET SESSION innodb_lock_wait_timeout = %d'
                           % lock_timeout)
            cursor.execute('SET SESSION TRANSACTION ISOLATION LEVEL '
                           'READ COMMITTED')
            if statement_timeout and is_mariadb(dbapi_connection):
                cursor.execute('SET SESSION max_statement_time = %d'
                               % statement_timeout)
            galera = is_galera(cursor)
            record.info[GALERA] = galera
            if galera and sync_wait is None:
                cursor.execute('SET SESSION wsrep_sync_wait = %d'
                               % GALERA_SYNC_WAIT)
        finally:
            cursor.close()


def is_galera(cursor):
    """Whether the server of a DB-API ``cursor`` is a Galera node
    (``wsrep_on``: MySQL without Galera has no such variable)."""
    cursor.execute("SHOW VARIABLES LIKE 'wsrep_on'")
    row = cursor.fetchone()
    return row is not None and str(row[1]).upper() == 'ON'


def is_mariadb(dbapi_connection):
    """Whether a PyMySQL connection is to MariaDB (not MySQL)."""
    return 'mariadb' in dbapi_connection.get_server_info().lower()


def _mysql_code(exc):
    """The MySQL error code of a driver error, or None."""
    args = getattr(exc, 'args', None)
    if args and isinstance(args[0], int):
        return args[0]
    return None


def _unavailable_mysql(ctx, url, statement_timeout, deadline):
    """What a MySQL/MariaDB error raises instead of what oslo.db would
    make of it (or None: oslo.db's translation, which runs next)."""
    if ctx.is_pre_ping:
        return None
    original = ctx.original_exception
    code = _mysql_code(original)
    if code == ER_LOCK_WAIT_TIMEOUT:
        # oslo.db calls it a deadlock; it is a lock wait that took too
        # long: the Ledger raises LockTimeout for it, naming the locks.
        return ctx.sqlalchemy_exception
    if code in ER_CONFLICTS:
        return errors.LedgerConflict(
            'A competing transaction on the ledger database at %s changed '
            'the same rows and won (%s); nothing of this one was kept.'
            % (url, _first_line(original)))
    if code == ER_UNKNOWN_COM_ERROR and 'wsrep' in str(original).lower():
        return errors.LedgerUnavailable(
            'The Galera node of the ledger database at %s is not ready '
            '(not synced, or not in the primary component): %s'
            % (url, _first_line(original)))
    if code in ER_STATEMENT_TIMEOUT:
        return errors.LedgerUnavailable(
            'A statement on the ledger database at %s ran longer than '
            '[ledger] statement_timeout (%d seconds) and was cancelled; '
            'try again later.' % (url, statement_timeout))
    if not isinstance(ctx.sqlalchemy_exception, sa_exc.OperationalError):
        return _lost(ctx, url)
    if ctx.connection is None:
        return errors.LedgerUnavailable(
            'Cannot connect to the ledger database at %s: %s'
            % (url, _first_line(original)))
    if ctx.is_disconnect and deadline and 'timed out' in str(original):
        # PyMySQL's read or write timeout: the server did not answer.
        return errors.LedgerUnavailable(
            'The ledger database at %s did not answer within %d seconds; '
            'the request was given up (try again later).' % (url, deadline))
    if ctx.is_disconnect:
        return errors.LedgerUnavailable(
            'Lost the connection to the ledger database at %s: %s'
            % (url, _first_line(original)))
    return None


def _create_mysql_engine(parsed, lock_timeout, pool_size, connect_timeout,
                         statement_timeout, database):
    """oslo.db's engine for a MySQL/MariaDB URL: its error translation,
    pre-ping and ``sql_mode``; ``database`` holds ``[database]`` pool
    options (oslo.db's names)."""
    query = dict(parsed.query)
    args = {}
    if 'connect_timeout' not in query:
        args['connect_timeout'] = connect_timeout
    deadline = statement_deadline(statement_timeout, lock_timeout)
    if deadline:
        for name in ('read_timeout', 'write_timeout'):
            if name not in query:
                args[name] = deadline
    if 'charset' not in query:
        args['charset'] = 'utf8mb4'
    database = dict(database or {})
    return db_engines.create_engine(
        parsed.update_query_dict({k: str(v) for k, v in args.items()}),
        mysql_sql_mode=database.pop('mysql_sql_mode', 'TRADITIONAL'),
        max_pool_size=pool_size,
        # The Ledger connects (and says why it cannot) itself.
        max_retries=0, **database)


@contextlib.contextmanager
def unbounded(connection, statement_timeout):
    """No statement timeout on ``connection`` inside the block (a
    migration may take long): MariaDB's max_statement_time is lifted and
    set back. (PostgreSQL: ``SET LOCAL`` in the migration's
    transaction.)"""
    mariadb = (connection.dialect.name in MYSQL and statement_timeout and
               is_mariadb(connection.connection.dbapi_connection))
    if not mariadb:
        yield
        return
    connection.exec_driver_sql('SET SESSION max_statement_time = 0')
    try:
        yield
    finally:
        if not connection.invalidated:
            connection.exec_driver_sql(
                'SET SESSION max_statement_time = %d' % statement_timeout)


def conflict_pause(attempt):
    """Seconds to wait before attempt ``attempt + 1`` of a transaction
    that conflicted ``attempt`` times: random (competitors that collided
    do not collide again in step), and longer each time."""
    return random.uniform(0.01, 0.05) * attempt


def retry_deadlocks(begin, what='ledger transaction'):
    """``begin()``, tried again (at most :data:`DEADLOCK_ATTEMPTS` times,
    after a short random pause, logged) while it raises
    :class:`~placement_quota.ledger.errors.LedgerConflict`: MySQL/MariaDB
    chose it as the victim of a deadlock while it took its locks (two
    inserts of one new lock row can deadlock, whatever their order), or a
    Galera node aborted it. ``begin`` must leave nothing behind when it
    raises. The last conflict raises
    :class:`~placement_quota.ledger.errors.LedgerConflict` (503)."""
    for attempt in range(1, DEADLOCK_ATTEMPTS + 1):
        try:
            return begin()
        except errors.LedgerConflict as exc:
            if attempt == DEADLOCK_ATTEMPTS:
                raise errors.LedgerConflict(
                    'The %s deadlocked %d times in a row; try again later.'
                    % (what, attempt)) from exc
            pause = conflict_pause(attempt)
            LOG.warning('The %s deadlocked (attempt %d of %d); trying '
                        'again in %.2f s.', what, attempt, DEADLOCK_ATTEMPTS,
                        pause)
            time.sleep(pause)


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def create_engine(url, lock_timeout=30, pool_size=None, connect_timeout=10,
                  statement_timeout=30, watchdog=None, database=None):
    """An engine for ``url`` set up for the ledger's locking and
    timeouts; ``database``: oslo.db's ``[database]`` pool options
    (``max_overflow``, ``pool_timeout``, ``connection_recycle_time``,
    ``mysql_sql_mode``...), used for MySQL/MariaDB."""
    try:
        parsed = sa.engine.make_url(url)
    except sa_exc.ArgumentError as exc:
        raise errors.LedgerError(
            'The ledger connection %r is not a database URL: %s'
            % (url, exc))
    backend = parsed.get_backend_name()
    if backend in MYSQL:
        shown = parsed.render_as_string(hide_password=True)
        try:
            engine = _create_mysql_engine(
                parsed, lock_timeout, pool_size, connect_timeout,
                statement_timeout, database)
        except (ImportError, sa_exc.ArgumentError) as exc:
            raise errors.LedgerError(
                'The ledger connection %s cannot be used: %s' % (shown, exc))
        _configure_mysql(engine, lock_timeout, statement_timeout,
                         (database or {}).get('mysql_wsrep_sync_wait'))
        deadline = statement_deadline(statement_timeout, lock_timeout)

        # Ours first, then oslo.db's translation (which raises some errors
        # as they are, ending the chain of handlers before ours).
        sa.event.remove(engine, 'handle_error', db_exc_filters.handler)

        @sa.event.listens_for(engine, 'handle_error')
        def _handle_mysql_error(ctx):
            found = _unavailable_mysql(ctx, shown, statement_timeout,
                                       deadline)
            if found is not None:
                return found
            return db_exc_filters.handler(ctx)
        return engine
    kwargs = {'pool_pre_ping': True}
    path = None
    if backend == 'sqlite':
        database = parsed.database
        if database and database != ':memory:':
            directory = os.path.dirname(os.path.abspath(database))
            os.makedirs(directory, exist_ok=True)
            if not database.startswith('file:'):  # not a URI filename
                path = database
    elif pool_size:
        kwargs['pool_size'] = pool_size
    if backend == 'postgresql':
        # The pre-ping is ours, with a deadline (_configure_postgresql).
        kwargs['pool_pre_ping'] = False
        # Set in the URL's query, they would be replaced: add to them.
        connect_args = {}
        if 'connect_timeout' not in parsed.query:
            connect_args['connect_timeout'] = connect_timeout
        options = parsed.query.get('options') or ''
        if isinstance(options, tuple):
            options = ' '.join(options)
        # The lock wait bound of every transaction of the connection,
        # set once (not one SET LOCAL per admission).
        options += ' -c lock_timeout=%d' % (lock_timeout * 1000)
        if statement_timeout:
            options += ' -c statement_timeout=%d' % (statement_timeout * 1000)
        connect_args['options'] = options.strip()
        kwargs['connect_args'] = connect_args
    try:
        engine = sa.create_engine(parsed, **kwargs)
    except (ImportError, sa_exc.ArgumentError) as exc:
        raise errors.LedgerError(
            'The ledger connection %s cannot be used: %s'
            % (parsed.render_as_string(hide_password=True), exc))
    if backend == 'sqlite':
        _configure_sqlite(engine, lock_timeout, path,
                          parsed.render_as_string(hide_password=True))
    elif backend == 'postgresql':
        watchdog = watchdog or deadlines.Watchdog()
        _configure_postgresql(
            engine, watchdog, connect_timeout,
            statement_deadline(statement_timeout, lock_timeout))
        shown = parsed.render_as_string(hide_password=True)

        @sa.event.listens_for(engine, 'handle_error')
        def _handle_error(ctx):
            return _unavailable(ctx, shown, watchdog, statement_timeout)
    return engine


def statement_deadline(statement_timeout, lock_timeout):
    """Seconds the client gives one statement (0: no deadline): longer
    than the server's own limits, so that a server that answers reports
    them itself."""
    if not statement_timeout:
        return 0
    return max(statement_timeout, lock_timeout) + DEADLINE_GRACE
