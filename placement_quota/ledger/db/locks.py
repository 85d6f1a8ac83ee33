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
"""The ledger's locks: their names and the one order of every writer.

Every writer takes ledger locks: an admission locks its project (and what
its policies ask for: the project's tree root, the cloud-wide row ``*``),
an account move locks both accounts, a change of the account hierarchy
locks ``*accounts``. PostgreSQL and MySQL lock rows of ``projects``
(``SELECT ... FOR UPDATE``); SQLite takes its database write lock at
``BEGIN IMMEDIATE`` (one lock: it cannot deadlock). Either way, two service
processes sharing one database never admit past a limit together.

**MySQL and MariaDB write what they lock.** There, an exclusive lock is
taken by writing its row (``UPDATE projects SET lock_serial = lock_serial
+ 1``, :func:`write_row`), not by ``SELECT ... FOR UPDATE``: one statement
either way, and the one form a Galera cluster sees. Galera does not
replicate row locks; it certifies each transaction's writes against those
committed meanwhile on other nodes, and rolls the later one back at COMMIT
when they touch the same row (a conflict, re-run by the admission). So
two admissions of one project on two nodes cannot both commit, whatever
else they write. On a Galera node (:func:`galera`) a shared lock is a
write too, so taken exclusively: Galera has no shared writes, and a
shared lock nobody writes would not make an admission that counts every
host conflict with the pool admissions. PostgreSQL keeps ``SELECT ...
FOR UPDATE`` / ``FOR SHARE``.

On a database that locks rows, two transactions that take two locks in
opposite orders deadlock. :func:`lock_order` is therefore the one order of
every writer, applied by
:meth:`~placement_quota.ledger.store.Transaction.lock` whatever order a
caller names its locks in:

1. projects (the own project and the tree root alike: a root is itself a
   project, the own project of its admissions and a side of moves, so
   "own project before root" would not be one order), by ID;
2. ``*accounts`` (:data:`models.ACCOUNTS_LOCK`), the account hierarchy;
3. capacity pools (``*pool:<name>``, :func:`pool_lock`), by name;
4. ``*`` (:data:`models.GLOBAL_LOCK`), the whole cloud.

A transaction takes all its locks at its start; taking one that sorts
before a lock it already holds is refused
(:class:`~placement_quota.ledger.errors.LedgerError`).

**Capacity pools.** An instance admission whose hosts are known (Blazar's
allocations) locks one pool per host (:func:`host_pool_lock`) and the
cloud row in *shared* mode (:func:`shared`; ``SELECT ... FOR SHARE``):
admissions on disjoint hosts never wait for each other, those sharing a
host do. An instance admission whose hosts are not known counts the
instances of every host, so it locks the cloud row exclusively: it waits
for every pool admission and they wait for it. A shared lock is never
upgraded: a transaction asking for both modes of the cloud row takes the
exclusive one only. On SQLite every transaction holds the database's one
write lock, so all of this is one lock there.
"""

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from placement_quota.ledger.db import built
from placement_quota.ledger import models

#: The database backends of the MySQL family (SQLAlchemy's dialect names).
MYSQL = ('mysql', 'mariadb')
#: The key of a connection's ``info`` that says it is to a Galera node
#: (set by ledger/db/engine.py when it connects).
GALERA = 'placement_quota_galera'

#: The prefix of the lock of a capacity pool (see :func:`pool_lock`).
POOL_PREFIX = '*pool:'
#: The suffix of the name of a lock taken in shared mode (:func:`shared`).
SHARED_SUFFIX = ' (shared)'

# Lock kinds, in the order of :func:`lock_order`.
_PROJECT, _ACCOUNTS, _POOL, _CLOUD = range(4)


def pool_lock(name):
    """The lock name of the capacity pool ``name``."""
    return POOL_PREFIX + name


def host_pool_lock(host_name):
    """The lock of the capacity pool of one host (its instances)."""
    return pool_lock('host:' + host_name)


def shared(key):
    """The lock ``key`` taken in shared mode: transactions holding it
    shared do not wait for each other; one taking it exclusively waits
    for them all (and they for it)."""
    return key + SHARED_SUFFIX


def lock_row(key):
    """``(row, is_shared)``: the lock row a lock name takes, and in
    which mode."""
    if key.endswith(SHARED_SUFFIX):
        return key[:-len(SHARED_SUFFIX)], True
    return key, False


def lock_kind(key):
    """The rank of a lock's kind in :func:`lock_order`."""
    key = lock_row(key)[0]
    if key == models.GLOBAL_LOCK:
        return _CLOUD
    if key.startswith(POOL_PREFIX):
        return _POOL
    if key == models.ACCOUNTS_LOCK:
        return _ACCOUNTS
    return _PROJECT


def lock_key(key):
    """The place of a lock in :func:`lock_order`: its kind, then its
    row's name (both modes of one row sort together)."""
    return (lock_kind(key), lock_row(key)[0])


def lock_order(keys):
    """``keys`` (lock names) in the one order every writer takes them:
    projects, ``*accounts``, capacity pools, ``*``; by name within a
    kind; each row once (exclusively when it is named in both modes)."""
    keys = set(keys)
    keys = {key for key in keys
            if not (lock_row(key)[1] and lock_row(key)[0] in keys)}
    return sorted(keys, key=lock_key)


def take_row(connection, dialect, key, now):
    """Lock the row of the lock ``key`` in its mode, inserting it first
    when it is missing (the lock rows live in ``projects``)."""
    project_id, is_shared = lock_row(key)
    if dialect == 'sqlite':
        # BEGIN IMMEDIATE holds the one write lock already.
        ensure_row(connection, dialect, project_id, now)
        return
    if dialect in MYSQL and (not is_shared or galera(connection)):
        write_row(connection, dialect, project_id, now)
        return
    select = (sa.select(models.projects.c.project_id)
              .where(models.projects.c.project_id == project_id)
              .with_for_update(read=is_shared))
    # An existing row is locked at once, one statement (the server's
    # lock_timeout, a connection option, bounds the wait). Only a missing
    # one is inserted, then locked: on MySQL, INSERT IGNORE of a row that
    # exists takes a shared lock, which two transactions would then both
    # upgrade (a deadlock); on PostgreSQL, an insert of a row another
    # transaction is inserting waits for it as for a lock.
    if connection.execute(select).first() is None:
        ensure_row(connection, dialect, project_id, now)
        connection.execute(select)


def take_rows(connection, dialect, keys, now):
    """Take the locks of ``keys`` (in :func:`lock_order`) with one
    statement for each run of keys of one mode, at the start of a
    transaction; return the keys whose rows are missing (then the
    transaction must be rolled back: it may hold some of the others), or
    None when this database takes its locks one row at a time
    (:func:`take_row`).

    * SQLite: ``BEGIN IMMEDIATE`` holds its one lock; the rows are made
      sure of with one insert.
    * PostgreSQL: ``SELECT ... WHERE project_id IN (...) ORDER BY <the
      lock order> FOR UPDATE`` (``FOR SHARE``): PostgreSQL sorts the rows
      before it locks them, so they are locked in :func:`lock_order`,
      as one statement a row would.
    * MySQL and MariaDB lock the rows a statement reads in their index's
      order (its collation's, not :func:`lock_order`'s): one row at a
      time, as before.
    """
    if not keys:
        return []
    if dialect == 'sqlite':
        ensure_rows(connection, dialect, keys, now)
        return []
    if dialect != 'postgresql':
        return None
    for is_shared, run in _runs(keys):
        rows = [lock_row(key)[0] for key in run]
        found = {row.project_id for row in connection.execute(
            _locking(len(rows), is_shared),
            {'row_%d' % i: row for i, row in enumerate(rows)})}
        missing = [key for key in run if lock_row(key)[0] not in found]
        if missing:
            return missing
    return []


def _locking(count, is_shared):
    """``SELECT ... FOR UPDATE`` (``FOR SHARE``) of ``count`` rows bound
    as ``row_0``, ``row_1``..., sorted in that order before they are
    locked; built once for each count and mode."""
    def build():
        t = models.projects
        rows = [sa.bindparam('row_%d' % i) for i in range(count)]
        position = sa.case(*((t.c.project_id == row, i)
                             for i, row in enumerate(rows)))
        return sa.select(t.c.project_id).where(
            t.c.project_id.in_(rows)).order_by(position).with_for_update(
                read=is_shared)
    return built.built(('locking', count, is_shared), build)


def _runs(keys):
    """``[(is_shared, [key])]``: ``keys`` cut into runs of one mode,
    their order kept."""
    runs = []
    for key in keys:
        is_shared = lock_row(key)[1]
        if runs and runs[-1][0] == is_shared:
            runs[-1][1].append(key)
        else:
            runs.append((is_shared, [key]))
    return runs


def ensure_rows(connection, dialect, keys, now):
    """Insert the missing lock rows of ``keys`` (one statement)."""
    connection.execute(
        insert_ignoring_duplicates(dialect, models.projects),
        [{'project_id': row, 'created_at': now}
         for row in sorted({lock_row(key)[0] for key in keys})])


def insert_ignoring_duplicates(dialect, table):
    """An insert into ``table`` whose rows that would repeat a unique key
    are left out, not refused: ``ON CONFLICT DO NOTHING`` on PostgreSQL and
    SQLite, ``INSERT IGNORE`` on MariaDB/MySQL (the duplicate a warning)."""
    if dialect == 'postgresql':
        return postgresql.insert(table).on_conflict_do_nothing()
    if dialect == 'sqlite':
        return sqlite.insert(table).on_conflict_do_nothing()
    return table.insert().prefix_with('IGNORE')


def ensure_row(connection, dialect, project_id, now):
    """Insert the ``projects`` row of ``project_id`` unless it exists."""
    ensure_rows(connection, dialect, [project_id], now)


def galera(connection):
    """Whether ``connection`` is to a Galera node (its engine found out
    when it connected: ledger/db/engine.py)."""
    return bool(connection.info.get(GALERA))


def write_row(connection, dialect, project_id, now):
    """Lock the row of ``project_id`` by writing it (its ``lock_serial``
    moves), inserting it first when it is missing: one statement for an
    existing row, as ``SELECT ... FOR UPDATE`` is."""
    table = models.projects
    move = (table.update().where(table.c.project_id == project_id)
            .values(lock_serial=table.c.lock_serial + 1))
    if connection.execute(move).rowcount:
        return
    ensure_row(connection, dialect, project_id, now)
    connection.execute(move)
