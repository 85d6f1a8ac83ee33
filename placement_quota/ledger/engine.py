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
:class:`~placement_quota.ledger.deadlines.Watchdog` around every
statement; database errors that mean "unavailable" raised as such.

Timeouts
--------

``[ledger] lock_timeout`` bounds each lock wait (SQLite: its busy timeout;
PostgreSQL: ``lock_timeout``). On PostgreSQL, ``connect_timeout`` bounds
connecting and the ping of a pooled connection at checkout, and
``statement_timeout`` bounds every statement on the server; a server that
does not answer at all (frozen) is given up by a client-side deadline of
``max(statement_timeout, lock_timeout) + 2`` seconds per statement (see
:mod:`~placement_quota.ledger.deadlines`). Each of these failures raises
:class:`~placement_quota.ledger.errors.LedgerUnavailable`
(:class:`~placement_quota.ledger.errors.LockTimeout` for a lock wait),
which the enforcement API answers with 503.
"""

import os

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from placement_quota.ledger import deadlines
from placement_quota.ledger import errors

#: Seconds the client waits beyond the server's own timeouts before it
#: gives a database that does not answer up.
DEADLINE_GRACE = 2


def _configure_sqlite(engine, lock_timeout):
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
        cursor.close()

    @sa.event.listens_for(engine, 'begin')
    def _begin(connection):
        connection.exec_driver_sql('BEGIN IMMEDIATE')


def _configure_postgresql(engine, watchdog, connect_timeout,
                          statement_deadline):
    """Deadlines on every call to a PostgreSQL server (see
    :mod:`~placement_quota.ledger.deadlines`)."""

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
        return None
    if ctx.connection is None:
        return errors.LedgerUnavailable(
            'Cannot connect to the ledger database at %s: %s'
            % (url, _first_line(original)))
    if ctx.is_disconnect:
        return errors.LedgerUnavailable(
            'Lost the connection to the ledger database at %s: %s'
            % (url, _first_line(original)))
    return None


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def create_engine(url, lock_timeout=30, pool_size=None, connect_timeout=10,
                  statement_timeout=30, watchdog=None):
    """An engine for ``url`` set up for the ledger's locking and
    timeouts."""
    try:
        parsed = sa.engine.make_url(url)
    except sa_exc.ArgumentError as exc:
        raise errors.LedgerError(
            '[ledger] connection %r is not a database URL: %s' % (url, exc))
    backend = parsed.get_backend_name()
    kwargs = {'pool_pre_ping': True}
    if backend == 'sqlite':
        database = parsed.database
        if database and database != ':memory:':
            directory = os.path.dirname(os.path.abspath(database))
            os.makedirs(directory, exist_ok=True)
    elif pool_size:
        kwargs['pool_size'] = pool_size
    if backend == 'postgresql':
        # The pre-ping is ours, with a deadline (_configure_postgresql).
        kwargs['pool_pre_ping'] = False
        # Set in the URL's query, they would be replaced: add to them.
        connect_args = {}
        if 'connect_timeout' not in parsed.query:
            connect_args['connect_timeout'] = connect_timeout
        if statement_timeout:
            options = parsed.query.get('options') or ''
            if isinstance(options, tuple):
                options = ' '.join(options)
            connect_args['options'] = ('%s -c statement_timeout=%d' % (
                options, statement_timeout * 1000)).strip()
        kwargs['connect_args'] = connect_args
    try:
        engine = sa.create_engine(parsed, **kwargs)
    except (ImportError, sa_exc.ArgumentError) as exc:
        raise errors.LedgerError(
            '[ledger] connection %s cannot be used: %s'
            % (parsed.render_as_string(hide_password=True), exc))
    if backend == 'sqlite':
        _configure_sqlite(engine, lock_timeout)
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
