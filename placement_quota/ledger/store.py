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
"""The ledger database: its schema migrations, its transactions and the
queries and writes inside them, and the arithmetic of its entries.

A :class:`Ledger` makes its engine with
:func:`~placement_quota.ledger.db.engine.create_engine` (the timeouts are
described there) and takes the locks of a :class:`Transaction` in
:func:`~placement_quota.ledger.db.locks.lock_order` (the lock order is
described there); its exceptions are in
:mod:`~placement_quota.ledger.errors`.
"""

import contextlib
import datetime

import alembic.command
import alembic.config
import alembic.migration
import alembic.script
from oslo_log import log as logging
from oslo_utils import timeutils
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from placement_quota import audit
from placement_quota.conf import ledger as ledger_conf
from placement_quota.lease import amounts as accounting
from placement_quota.ledger.db import built
from placement_quota.ledger.db import deadlines
from placement_quota.ledger.db import engine
from placement_quota.ledger import errors
from placement_quota.ledger.db import locks
from placement_quota.ledger import models
from placement_quota.ledger import shares
from placement_quota.ledger import statements
from placement_quota.ledger import window

LOG = logging.getLogger(__name__)

MICRO = 1000000

#: The largest ``duration_s`` (the column is a 32-bit integer): a longer
#: lease is recorded with this one, which then bounds nothing.
MAX_DURATION = 2 ** 31 - 1


def to_micro(credits):
    """Credits (a number) -> integer micro-credits."""
    return int(round(float(credits) * MICRO))


def from_micro(micro):
    """Integer micro-credits -> credits (float)."""
    return micro / MICRO


def _alembic_config(connection):
    config = alembic.config.Config()
    config.set_main_option('script_location',
                           'placement_quota.ledger.db:migrations')
    config.attributes['connection'] = connection
    return config


class Ledger:
    """One ledger database."""

    def __init__(self, url, lock_timeout=30, pool_size=None,
                 migrate=None, connect_timeout=10, statement_timeout=30,
                 database=None, conflict_attempts=5):
        self.url = url
        self.lock_timeout = lock_timeout
        #: How many times an admission is run in all when it conflicts
        #: (``[ledger] conflict_attempts``; see filters/admit.py).
        self.conflict_attempts = conflict_attempts
        self.connect_timeout = connect_timeout
        self.statement_timeout = statement_timeout
        #: Where "now" comes from (naive UTC); tests set their own.
        self.clock = timeutils.utcnow
        self.watchdog = deadlines.Watchdog()
        self.engine = engine.create_engine(
            url, lock_timeout, pool_size, connect_timeout,
            statement_timeout, self.watchdog, database)
        self.dialect = self.engine.dialect.name
        self._deadline = (engine.statement_deadline(statement_timeout,
                                                    lock_timeout)
                          if self.dialect == 'postgresql' else 0)
        #: The schema revision :meth:`upgrade` found (None: no tables, or
        #: not upgraded).
        self.upgraded_from = None
        if migrate is None:
            migrate = self.dialect == 'sqlite'
        if migrate:
            self.upgrade()
        else:
            self.check_version()

    @classmethod
    def from_conf(cls, conf, migrate=None):
        """The ledger of ``[database]`` (or the deprecated ``[ledger]
        connection``, see :func:`placement_quota.conf.ledger.connection`)
        and ``[ledger]``; LedgerError for a SQLite file whose directory is
        missing (see
        :func:`placement_quota.conf.ledger.missing_directory`).
        ``migrate=False`` only checks the schema (never upgrades it)."""
        group = conf.ledger
        url, option = ledger_conf.connection(conf)
        missing = ledger_conf.missing_directory(
            url, option or '[database] connection')
        if missing:
            raise errors.LedgerError(missing)
        LOG.info('Ledger: %s', ledger_conf.describe(conf))
        return cls(url, lock_timeout=group.lock_timeout,
                   pool_size=group.pool_size,
                   migrate=(migrate if migrate is not None
                            else group.auto_migrate or None),
                   connect_timeout=group.connect_timeout,
                   statement_timeout=group.statement_timeout,
                   database=ledger_conf.database_options(conf),
                   conflict_attempts=group.conflict_attempts)

    def describe(self):
        return self.engine.url.render_as_string(hide_password=True)

    # --- migrations -----------------------------------------------------

    def upgrade(self, revision='head'):
        """Bring the schema to ``revision`` (alembic); :attr:`upgraded_from`
        is the revision it was at before (None: no tables)."""
        try:
            self.upgraded_from = self.current_revision()
            with self.engine.connect() as connection:
                # A migration may take long: no statement timeout.
                connection = connection.execution_options(
                    ledger_unbounded=True)
                with connection.begin():
                    if self.dialect == 'postgresql':
                        connection.exec_driver_sql(
                            'SET LOCAL statement_timeout = 0')
                        connection.exec_driver_sql(
                            'SET LOCAL lock_timeout = 0')
                    with engine.unbounded(connection,
                                          self.statement_timeout):
                        alembic.command.upgrade(
                            _alembic_config(connection), revision)
        except (sa_exc.OperationalError, errors.LedgerUnavailable,
                engine.DBError) as exc:
            raise self._failed('Cannot migrate', exc)

    def _failed(self, what, exc):
        """``what the ledger at URL: reason`` as a LedgerError (an
        OperationalError's reason is its driver error)."""
        return errors.LedgerError('%s the ledger at %s: %s' % (
            what, self.describe(), getattr(exc, 'orig', None) or exc))

    def current_revision(self):
        with self.engine.connect() as connection:
            context = alembic.migration.MigrationContext.configure(
                connection)
            return context.get_current_revision()

    def head_revision(self):
        with self.engine.connect() as connection:
            script = alembic.script.ScriptDirectory.from_config(
                _alembic_config(connection))
            return script.get_current_head()

    def check_version(self):
        try:
            current = self.current_revision()
        except (sa_exc.OperationalError, errors.LedgerUnavailable,
                engine.DBError) as exc:
            raise self._failed('Cannot reach', exc)
        head = self.head_revision()
        if current != head:
            raise errors.LedgerError(
                'The ledger at %s is at schema revision %s, this code needs '
                '%s: run "placement-quota db sync".'
                % (self.describe(), current or 'none (empty)', head))

    # --- transactions ---------------------------------------------------

    @contextlib.contextmanager
    def transaction(self, lock=(), now=None):
        """A :class:`Transaction` holding the locks of ``lock`` (project
        IDs, :data:`models.GLOBAL_LOCK`...), taken in
        :func:`~placement_quota.ledger.db.locks.lock_order`.

        Raises :class:`~placement_quota.ledger.errors.LedgerUnavailable`
        when the database does not answer in time
        (:class:`~placement_quota.ledger.errors.LockTimeout` for a lock),
        :class:`~placement_quota.ledger.errors.LedgerConflict` when a
        competing transaction won (at any statement, or at the commit on
        Galera): the block may be run again in a new transaction.
        """
        now = now or self.clock()
        order = locks.lock_order(lock)
        try:
            with self.engine.connect() as connection:
                outer, txn = engine.retry_deadlocks(
                    lambda: self._begin(connection, order, now))
                try:
                    yield txn
                except BaseException:
                    with self._guard(connection):
                        outer.rollback()
                    raise
                with self._guard(connection):
                    outer.commit()
        except errors.LockTimeout as exc:
            # SQLite's engine says "locked"; name the locks waited for.
            raise self._lock_timeout(order) from exc
        except sa_exc.DBAPIError as exc:
            if isinstance(exc, sa_exc.OperationalError) and \
                    _is_lock_timeout(exc):
                raise self._lock_timeout(order) from exc
            self._raise_outage(exc)
            raise

    @contextlib.contextmanager
    def reader(self):
        """A :class:`Transaction` that only reads, taking no lock (on
        SQLite not even the write lock): it sees what was committed."""
        try:
            with self.engine.connect() as connection:
                connection = connection.execution_options(
                    **{engine.READ_ONLY: True})
                with connection.begin():
                    yield Transaction(self, connection, self.clock())
        except sa_exc.DBAPIError as exc:
            self._raise_outage(exc)
            raise

    def _lock_timeout(self, order):
        return errors.LockTimeout(
            'Timed out after %d seconds waiting for the ledger lock of %s; '
            'another admission holds it.'
            % (self.lock_timeout, ', '.join(order)))

    def _raise_outage(self, exc):
        """Raise the LedgerUnavailable the database error ``exc`` means
        (engine.database_outage); return when it is none."""
        found = engine.database_outage(exc, self.describe())
        if found is not None:
            raise found from exc

    def _begin(self, connection, order, now):
        """``(transaction, Transaction)`` holding the locks of
        ``order``; rolled back when taking them fails.

        The locks are taken a statement for each run of one mode
        (:func:`~placement_quota.ledger.db.locks.take_rows`). When some
        of their rows do not exist yet (a project's first admission), the
        transaction is rolled back, the rows are inserted and committed
        on their own, and the locks taken again: inserting them inside the
        transaction, after locking the others, would take them out of
        the one lock order."""
        outer, txn, missing = self._locked(
            connection, now, lambda txn: txn.lock_at_start(order))
        if not missing:
            return outer, txn
        with self._guard(connection):
            outer.rollback()
        with connection.begin():
            locks.ensure_rows(connection, self.dialect, missing, now)
        # Row by row this time (each made sure of first), should one of
        # them have gone meanwhile.
        outer, txn, _ = self._locked(connection, now,
                                     lambda txn: txn.lock(order))
        return outer, txn

    def _locked(self, connection, now, take):
        """``(transaction, Transaction, what take returned)``: a new
        transaction on ``connection`` and ``take(Transaction)`` run in
        it; rolled back when ``take`` fails."""
        outer = connection.begin()
        try:
            txn = Transaction(self, connection, now)
            return outer, txn, take(txn)
        except BaseException:
            with self._guard(connection):
                outer.rollback()
            raise

    @contextlib.contextmanager
    def _guard(self, connection):
        """The statement deadline around a commit or a rollback (they
        are no cursor statements)."""
        if not self._deadline or connection.invalidated:
            yield
            return
        with self.watchdog.guard(connection.connection.dbapi_connection,
                                 self._deadline):
            yield

    def dispose(self):
        self.engine.dispose()
        self.watchdog.close()


#: The scalars :meth:`Transaction.read_ahead` reads in one statement.
READ_AHEAD = ('open_count', 'generation', 'longest_duration')

#: The states in which an entry bound to no lease ID can be matched to a
#: lease by fingerprint or shape.
MATCHABLE = (models.PENDING, models.ACTIVE, models.ABANDONED)


def _is_lock_timeout(exc):
    text = str(exc.orig).lower()
    return ('lock timeout' in text or 'database is locked' in text or
            'lock wait timeout' in text)


def _row_interval(row):
    return window.Interval(row.start_date, row.effective_end,
                           row.amounts or {})


class Transaction:
    """Queries and writes inside one locked ledger transaction."""

    def __init__(self, ledger, connection, now):
        self.ledger = ledger
        self.connection = connection
        self.now = now
        self.locked = []
        #: Scalars read ahead (:meth:`read_ahead`, :meth:`allocation`),
        #: by what they answer; forgotten when this transaction writes
        #: what they count (a charge moves its allocation's sum).
        self._known = {}

    def lock(self, keys):
        """Take the locks of ``keys`` in
        :func:`~placement_quota.ledger.db.locks.lock_order` (see that
        module's docstring); one that sorts before a lock already held is
        refused."""
        dialect = self.ledger.dialect
        wanted = [k for k in locks.lock_order(keys) if k not in self.locked]
        if wanted and self.locked and (
                locks.lock_key(wanted[0]) < locks.lock_key(self.locked[-1])):
            raise errors.LedgerError(
                'Ledger lock %s cannot be taken after %s: locks are taken '
                'in one order (ledger/db/locks.py), all at the start of a '
                'transaction.' % (wanted[0], self.locked[-1]))
        for key in wanted:
            self._lock_row(key, dialect)
            self.locked.append(key)

    def lock_at_start(self, keys):
        """Take the locks of ``keys`` as the transaction's first
        statements, a statement for each run of one mode where the
        database allows it (:func:`~placement_quota.ledger.db.locks.
        take_rows`); return the keys whose rows are missing (the caller
        rolls back), else ``[]``."""
        wanted = locks.lock_order(keys)
        missing = locks.take_rows(self.connection, self.ledger.dialect,
                                  wanted, self.now)
        if missing is None:
            self.lock(wanted)
            return []
        if not missing:
            self.locked.extend(wanted)
        return missing

    def _lock_row(self, key, dialect):
        """Lock the row of ``key`` (:func:`~placement_quota.ledger.db.locks.
        take_row`)."""
        locks.take_row(self.connection, dialect, key, self.now)

    def generation(self, project_id):
        """The project's generation (0 for a project never seen)."""
        return self._scalar('generation', project_id)

    def longest_duration(self):
        """:func:`longest_duration`, read ahead or not."""
        return self._scalar('longest_duration')

    @staticmethod
    def _ahead_key(name, project_id=None, exclude=None):
        """What the scalar ``name`` of :data:`READ_AHEAD` about
        ``project_id`` (``exclude`` left out) is known by in a
        transaction."""
        if name == 'open_count':
            return ('open_count', project_id, exclude)
        if name == 'generation':
            return ('generation', project_id)
        return ('longest_duration',)

    def _ahead_query(self, name, excluding):
        """The query of the scalar ``name`` of :data:`READ_AHEAD`, its
        values bound: ``project_id``, ``now`` (open leases end after it)
        and, when ``excluding``, ``exclude``."""
        if name == 'open_count':
            return self._open_count_query(
                sa.bindparam('project_id'),
                sa.bindparam('exclude') if excluding else None,
                now=sa.bindparam('now'))
        if name == 'generation':
            t = models.projects
            return sa.select(t.c.generation).where(
                t.c.project_id == sa.bindparam('project_id'))
        return statements.longest_duration()

    def _scalar(self, name, project_id=None, exclude=None):
        """The scalar ``name`` of :data:`READ_AHEAD` read ahead, else
        read now (0 for no row)."""
        known = self._known.get(self._ahead_key(name, project_id, exclude))
        if known is not None:
            return known
        excluding = exclude is not None
        query = built.built(('scalar', name, excluding),
                            lambda: self._ahead_query(name, excluding))
        return self.connection.execute(query, {
            'project_id': project_id, 'exclude': exclude,
            'now': self.now}).scalar() or 0

    def read_ahead(self, project_id, wanted, exclude=None):
        """Read the scalars of ``wanted`` (names of :data:`READ_AHEAD`)
        about ``project_id`` in one statement, so that the calls asking
        for them later (:meth:`open_count` of the project, its
        :meth:`generation`, :func:`longest_duration`) are answered
        without a statement -- until this transaction writes a lease or
        the generation. ``exclude``: the entry the open leases leave out
        (as the admission's :meth:`open_count` call will)."""
        names = tuple(name for name in READ_AHEAD if name in set(wanted))
        if len(names) < 2:
            return  # one statement either way
        excluding = exclude is not None

        def build():
            return sa.select(*(
                self._ahead_query(name, excluding).scalar_subquery()
                .label(name) for name in names))
        row = self.connection.execute(
            built.built(('read_ahead', names, excluding), build),
            {'project_id': project_id, 'exclude': exclude,
             'now': self.now}).one()
        for name in names:
            self._known[self._ahead_key(name, project_id, exclude)] = \
                getattr(row, name) or 0

    def _forget(self):
        """This transaction wrote what a read ahead counted."""
        self._known.clear()

    def bump_generation(self, project_id):
        """Move the project's generation: what Nova counts for it may
        have changed (every process's cached quota is read again)."""
        t = models.projects
        self._forget()
        locks.ensure_row(self.connection, self.ledger.dialect, project_id,
                         self.now)
        self.connection.execute(
            t.update().where(t.c.project_id == project_id)
            .values(generation=t.c.generation + 1))

    # --- leases ---------------------------------------------------------

    def find(self, project_id, lease_id, fingerprint=None, shape=None,
             any_project=False):
        """The entry of a lease of ``project_id`` (see ledger/keys.py): the
        one bound to ``lease_id``; else the oldest entry bound to no lease
        ID and not closed whose fingerprint, then whose shape, matches.
        Denied entries are never found. Another project's entry is never
        found, whatever ID a request carries, unless ``any_project`` (a
        trusted source: Blazar's notifications)."""
        t = models.leases
        if lease_id:
            query = sa.select(t).where(t.c.lease_id == lease_id,
                                       t.c.state != models.DENIED)
            if not any_project:
                query = query.where(t.c.project_id == project_id)
            row = self.connection.execute(query).first()
            if row is not None:
                return row
        for column, key in ((t.c.provisional_key, fingerprint),
                            (t.c.shape_key, shape)):
            if not key:
                continue
            rows = self.connection.execute(
                sa.select(t).where(
                    t.c.project_id == project_id, t.c.lease_id.is_(None),
                    t.c.state.in_(MATCHABLE), column == key)
                .order_by(t.c.id).limit(2)).all()
            if len(rows) > 1:
                LOG.info('Lease %s of project %s matches more than one '
                         'ledger entry by its %s (entries %d, %d...): '
                         'taking the oldest, %d.', lease_id or '(no ID)',
                         project_id, 'fingerprint'
                         if column is t.c.provisional_key else 'shape',
                         rows[0].id, rows[1].id, rows[0].id)
            if rows:
                return rows[0]
        return None

    def unbound_pending(self, created_before):
        """``[(id, project_id)]`` of the pending entries bound to no lease
        ID recorded before ``created_before``, oldest first."""
        t = models.leases
        return [tuple(row) for row in self.connection.execute(
            sa.select(t.c.id, t.c.project_id).where(
                t.c.state == models.PENDING, t.c.lease_id.is_(None),
                t.c.created_at < created_before).order_by(t.c.id))]

    def entry(self, row_id):
        """The entry of ledger row ``row_id``, or None."""
        t = models.leases
        return self.connection.execute(
            sa.select(t).where(t.c.id == row_id)).first()

    def lease_id_holder(self, lease_id):
        """The ``(id, project_id)`` of the entry holding ``lease_id``, of
        any project (the column is unique across the ledger), or None."""
        t = models.leases
        return self.connection.execute(
            sa.select(t.c.id, t.c.project_id)
            .where(t.c.lease_id == lease_id)).first()

    def intervals(self, start, end, project_ids=None, exclude=None,
                  with_lease=False, with_names=False, remember=False):
        """``[(window.Interval, row)]`` of every live entry overlapping
        ``[start, end)``: of ``project_ids``, or of every project. The row
        has ``id``, ``project_id``, ``user_id``, ``with_lease`` the stored
        lease and ``with_names`` the lease's ``lease_id`` and ``name``
        (how a message names it). ``remember``: the same call answers
        again without a statement until this transaction writes."""
        key = ('intervals', start, end, exclude, with_lease, with_names,
               None if project_ids is None else tuple(project_ids))
        if remember and key in self._known:
            return self._known[key]
        found = self._intervals(start, end, project_ids, exclude,
                                with_lease, with_names)
        if remember:
            self._known[key] = found
        return found

    def _intervals(self, start, end, project_ids, exclude, with_lease,
                   with_names):
        if project_ids is not None:
            project_ids = list(project_ids)
        some = None if project_ids is None else len(project_ids) > 1
        excluding = exclude is not None

        def build():
            t = models.leases
            columns = [t.c.id, t.c.project_id, t.c.user_id, t.c.start_date,
                       t.c.effective_end, t.c.amounts]
            if with_lease:
                columns.append(t.c.lease)
            if with_names:
                columns += [t.c.lease_id, t.c.name]
            query = sa.select(*columns).where(
                t.c.state.notin_(models.NOT_COUNTED),
                t.c.effective_end > sa.bindparam('start'),
                t.c.start_date < sa.bindparam('end'))
            if some is not None:
                query = query.where(
                    t.c.project_id.in_(sa.bindparam('projects',
                                                    expanding=True))
                    if some else t.c.project_id == sa.bindparam('project'))
            if excluding:
                query = query.where(t.c.id != sa.bindparam('exclude'))
            return query
        query = built.built(
            ('intervals', with_lease, with_names, some, excluding), build)
        return [(_row_interval(row), row) for row in self.connection.execute(
            query, {'start': start, 'end': end, 'exclude': exclude,
                    'projects': project_ids,
                    'project': project_ids[0] if project_ids else None})]

    def instance_intervals(self, start, end, exclude=None, hosts=None):
        """``[(window.Interval, row)]`` of every project's live entries
        with instances overlapping ``[start, end)``; the amounts are
        ``{'VCPU': n, 'MEMORY_MB': n, 'DISK_GB': n}``, and the row has
        ``instance_hosts``. With ``hosts`` (host keys), only the entries
        on one of them or on hosts Blazar has not named."""
        # Only leases starting less than the longest before the window can
        # overlap it: the index range on start_date is bounded both sides.
        earliest = earliest_start(start, self.longest_duration())
        hosts = None if hosts is None else sorted(hosts)
        shape = (earliest is not None, exclude is not None,
                 None if hosts is None else len(hosts))
        params = {'start': start, 'end': end, 'earliest': earliest,
                  'exclude': exclude}
        params.update(('host_%d' % i, statements.host_pattern(key))
                      for i, key in enumerate(hosts or ()))
        return [(window.Interval(row.start_date, row.effective_end, {
            'VCPU': row.instance_vcpus, 'MEMORY_MB': row.instance_memory_mb,
            'DISK_GB': row.instance_disk_gb}), row)
            for row in self.connection.execute(built.built(
                ('instance_intervals',) + shape,
                lambda: statements.instance_intervals(*shape)), params)]

    def open_count(self, project_id, exclude=None, user_id=None):
        """Pending and active leases of a project (of one of its users)
        now."""
        if user_id is None:
            return self._scalar('open_count', project_id, exclude)
        return self.connection.execute(self._open_count_query(
            project_id, exclude, user_id)).scalar_one()

    def _open_count_query(self, project_id, exclude=None, user_id=None,
                          now=None):
        t = models.leases
        query = sa.select(sa.func.count()).select_from(t).where(
            t.c.project_id == project_id,
            t.c.state.in_((models.PENDING, models.ACTIVE)),
            t.c.effective_end > (self.now if now is None else now))
        if user_id is not None:
            query = query.where(t.c.user_id == user_id)
        if exclude is not None:
            query = query.where(t.c.id != exclude)
        return query

    def insert(self, charge=None, **values):
        """Insert an entry of ``values``; its row ID. ``charge``: ``(
        allocation_id, amount, kind)`` of its first :meth:`charge`,
        written with it (on PostgreSQL in the same statement)."""
        self._forget()
        values.setdefault('created_at', self.now)
        values.setdefault('effective_end', values['end_date'])
        values['duration_s'] = duration(values)
        values.update(accounting.instance_columns(
            values['amounts'], values.get('lease')))
        values['resource_type'] = accounting.resource_type(
            values.get('lease'))
        if charge is not None and charge[1] and \
                self.ledger.dialect == 'postgresql':
            allocation_id, amount, kind = charge
            columns = tuple(sorted(values))
            return self.connection.execute(
                built.built(
                    ('charge_of_new', columns),
                    lambda: statements.charge_of_new(columns)),
                dict(values, charge_allocation_id=allocation_id,
                     charge_amount=amount, charge_kind=kind,
                     charge_at=self.now)).scalar_one()
        row = self.connection.execute(
            models.leases.insert(), values).inserted_primary_key[0]
        if charge is not None:
            self.charge(values['project_id'], row, *charge)
        return row

    def update(self, row_id, **values):
        values.setdefault('updated_at', self.now)
        if 'start_date' in values:
            values['duration_s'] = duration(values)
        if 'amounts' in values:
            values.update(accounting.instance_columns(
                values['amounts'], values.get('lease')))
        if 'lease' in values:
            values['resource_type'] = accounting.resource_type(
                values['lease'])
        self._forget()
        self.connection.execute(
            models.leases.update().where(models.leases.c.id == row_id)
            .values(**values))

    def leases(self, project_id):
        t = models.leases
        return list(self.connection.execute(
            sa.select(t).where(t.c.project_id == project_id)
            .order_by(t.c.start_date, t.c.id)))

    # --- credits --------------------------------------------------------

    def charges_by_lease(self, project_id):
        """``{lease row: (charged, refunded)}`` of a project, in
        micro-credits: the sums of its charges above and below 0 (credits
        only: the hours charged to pools of resource classes are not
        credits)."""
        t, a = models.charges, models.credit_allocations
        positive = sa.case((t.c.amount > 0, t.c.amount), else_=0)
        negative = sa.case((t.c.amount < 0, -t.c.amount), else_=0)
        rows = self.connection.execute(
            sa.select(t.c.lease_row, sa.func.sum(positive),
                      sa.func.sum(negative))
            .select_from(t.outerjoin(a, t.c.allocation_id == a.c.id))
            .where(t.c.project_id == project_id,
                   a.c.resource_class.is_(None))
            .group_by(t.c.lease_row))
        return {row[0]: (int(row[1] or 0), int(row[2] or 0))
                for row in rows}

    def allocation(self, project_id, at, resource_class=None, share_of=None):
        """The credit allocation of a project in force at ``at``: the one
        whose period holds it (open-ended sides hold everything), newest
        first; None when there is none. ``resource_class``: its pool of
        that class instead of its general allocation.

        The same statement reads what was :meth:`spent` of it and, with
        ``share_of`` (a user ID), that user's :meth:`share`: the calls
        asking for them next are answered without a statement."""
        general, with_share = resource_class is None, share_of is not None

        def build():
            t = models.credit_allocations
            project, at_ = sa.bindparam('project_id'), sa.bindparam('at')
            columns = [t, statements.spent(t.c.id).scalar_subquery()
                       .label('spent')]
            if with_share:
                columns.append(shares.share_query(
                    project, sa.bindparam('share_of'))
                    .scalar_subquery().label('user_share'))
            return sa.select(*columns).where(
                t.c.project_id == project,
                (t.c.resource_class.is_(None) if general
                 else t.c.resource_class == sa.bindparam('resource_class')),
                sa.or_(t.c.start_date.is_(None), t.c.start_date <= at_),
                sa.or_(t.c.end_date.is_(None), t.c.end_date > at_)
            ).order_by(t.c.id.desc())
        row = self.connection.execute(
            built.built(('allocation', general, with_share), build),
            {'project_id': project_id, 'at': at,
             'resource_class': resource_class,
             'share_of': share_of}).first()
        if row is not None:
            self._known[('spent', row.id)] = row.spent
            if share_of is not None:
                self._known[('share', project_id, share_of)] = row.user_share
        return row

    def spent(self, allocation_id):
        """Net micro-credits charged to an allocation."""
        known = self._known.get(('spent', allocation_id))
        if known is not None:
            return known
        return self.connection.execute(
            statements.spent(allocation_id)).scalar_one()

    def share(self, project_id, user_id):
        """The user's share of the project's credits in force
        (micro-credits), or None (:func:`placement_quota.ledger.shares.
        share`)."""
        key = ('share', project_id, user_id)
        if key in self._known:
            return self._known[key]
        return shares.share(self.connection, project_id, user_id)

    def charge(self, project_id, lease_row, allocation_id, amount, kind):
        if not amount:
            return
        self._forget()
        self.connection.execute(models.charges.insert().values(
            project_id=project_id, lease_row=lease_row,
            allocation_id=allocation_id, amount=amount, kind=kind,
            at=self.now))

    def add_allocation(self, project_id, amount, start_date=None,
                       end_date=None, resource_class=None):
        """Give a project an allocation of ``amount`` micro-credits, or,
        with ``resource_class``, a pool of ``amount`` micro
        resource-hours of that class; its ID."""
        result = self.connection.execute(
            models.credit_allocations.insert().values(
                project_id=project_id, amount=amount, start_date=start_date,
                end_date=end_date, created_at=self.now,
                resource_class=resource_class))
        allocation_id = result.inserted_primary_key[0]
        audit.record('credits-add', 'project=%s' % project_id, None,
                     '%s %s' % (from_micro(amount),
                                'credits' if resource_class is None
                                else '%s-hours' % resource_class),
                     allocation=allocation_id, start=start_date,
                     end=end_date)
        return allocation_id

    def allocations(self, project_id):
        t = models.credit_allocations
        return list(self.connection.execute(
            sa.select(t).where(t.c.project_id == project_id)
            .order_by(t.c.id)))


def duration(values):
    """Whole seconds from ``start_date`` to ``end_date`` (rounded up),
    within 0 and :data:`MAX_DURATION`."""
    seconds = (values['end_date'] - values['start_date']).total_seconds()
    return max(0, min(MAX_DURATION, int(-(-seconds // 1))))


def longest_duration(connection):
    """Seconds of the longest entry that counts (0 for none); denied
    and abandoned entries count toward nothing, not even this bound."""
    return connection.execute(statements.longest_duration()).scalar() or 0


def earliest_start(start, longest):
    """``start - longest`` seconds: the earliest start of a lease at most
    ``longest`` long that can reach ``start``; None when that bounds
    nothing (``longest`` is :data:`MAX_DURATION` or more, as a recorded
    lease of any length may be, or the date would fall before year 1)."""
    if longest >= MAX_DURATION:
        return None
    try:
        return start - datetime.timedelta(seconds=longest)
    except OverflowError:
        return None


def state_at(row, now):
    """The lease state of an entry at ``now``: recorded terminated or
    denied, else pending before its start, active inside it, terminated
    after its end."""
    if row.state in (models.TERMINATED,) + models.NOT_COUNTED:
        return row.state
    if now < row.start_date:
        return models.PENDING
    if now < row.effective_end:
        return models.ACTIVE
    return models.TERMINATED


def hours(start, end):
    """Hours from ``start`` to ``end`` (0 when ``end`` is not after)."""
    seconds = (end - start).total_seconds()
    return max(0.0, seconds / 3600.0)


def cost(hourly_rate, start, end):
    """Micro-credits of ``hourly_rate`` (micro-credits/hour) over
    ``[start, end)``."""
    return int(round(hourly_rate * hours(start, end)))


def utc(value):
    """A naive UTC datetime from an aware one (or the same)."""
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return value
