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
"""The SQL of the accounts: table ``accounts`` and the leases they hold.

Every function takes the ``connection`` of a ledger transaction
(``txn.connection`` of
:meth:`placement_quota.ledger.store.Ledger.transaction`), so the caller
decides which statements run together and under which locks. Rows are
returned as the database gives them; :class:`~placement_quota.accounts.
model.Account` makes an account of one.
"""

import sqlalchemy as sa

from placement_quota.accounts import model
from placement_quota.ledger import limit_history
from placement_quota.ledger import models

#: The ledger lock every change of the account hierarchy takes, so that two
#: concurrent PUTs never build a tree of depth three together.
ACCOUNTS_LOCK = models.ACCOUNTS_LOCK

_ACCOUNTS = models.accounts
_LEASES = models.leases


# --- accounts ---------------------------------------------------------------

def row(connection, account_id):
    """The row of ``account_id``, deleted or not, or None."""
    t = _ACCOUNTS
    return connection.execute(
        sa.select(t).where(t.c.account_id == account_id)).first()


def live_rows(connection, ordered=True):
    """The rows of every account not deleted (by ID when ``ordered``)."""
    t = _ACCOUNTS
    query = sa.select(t).where(t.c.deleted_at.is_(None))
    if ordered:
        query = query.order_by(t.c.account_id)
    return list(connection.execute(query))


def children(connection, account_id):
    """The IDs of the live children of ``account_id``, sorted."""
    t = _ACCOUNTS
    return [r.account_id for r in connection.execute(
        sa.select(t.c.account_id).where(
            t.c.parent_id == account_id, t.c.deleted_at.is_(None))
        .order_by(t.c.account_id))]


def insert(connection, account_id, parent_id, limits, metadata, now):
    """Create the account at generation 1 (its limits in the limits'
    history)."""
    connection.execute(_ACCOUNTS.insert().values(
        account_id=account_id, parent_id=parent_id, limits=limits,
        properties=metadata, generation=1, created_at=now))
    limit_history.record(connection, account_id, {}, limits, now)


def update(connection, account_id, parent_id, limits, metadata, now):
    """Replace the parent, limits and metadata; next generation (the
    limits that changed in the limits' history)."""
    t = _ACCOUNTS
    found = row(connection, account_id)
    limit_history.record(connection, account_id,
                         found.limits if found is not None else {}, limits,
                         now)
    connection.execute(t.update().where(
        t.c.account_id == account_id).values(
            parent_id=parent_id, limits=limits, properties=metadata,
            generation=t.c.generation + 1, updated_at=now))


def mark_deleted(connection, account_id, now):
    """Mark deleted at ``now`` (recoverable); next generation."""
    t = _ACCOUNTS
    connection.execute(t.update().where(
        t.c.account_id == account_id).values(
            deleted_at=now, generation=t.c.generation + 1))


def undelete(connection, account_id, now):
    """Clear the deletion mark; next generation."""
    t = _ACCOUNTS
    connection.execute(t.update().where(
        t.c.account_id == account_id).values(
            deleted_at=None, generation=t.c.generation + 1,
            updated_at=now))


def purge(connection, account_id):
    """Remove the row for good."""
    t = _ACCOUNTS
    connection.execute(t.delete().where(t.c.account_id == account_id))


# --- leases of accounts -----------------------------------------------------

def open_leases(connection, project_ids, now):
    """The open (pending or active) leases of ``project_ids`` that end
    after ``now``, by start date."""
    t = _LEASES
    return list(connection.execute(
        sa.select(t).where(t.c.project_id.in_(list(project_ids)),
                           t.c.state.in_(model.OPEN_STATES),
                           t.c.effective_end > now)
        .order_by(t.c.start_date, t.c.id)))


def open_lease(connection, account_id, lease_id):
    """The open lease ``lease_id`` of ``account_id``, or None."""
    t = _LEASES
    return connection.execute(sa.select(t).where(
        t.c.lease_id == lease_id, t.c.project_id == account_id,
        t.c.state.in_(model.OPEN_STATES))).first()


def move_lease(connection, lease, source, dest, now):
    """Give the lease row ``lease`` of ``source`` to ``dest`` if it is
    unchanged since it was read (same state and ``updated_at``): True if
    it moved."""
    t = _LEASES
    result = connection.execute(t.update().where(
        t.c.id == lease.id, t.c.project_id == source,
        t.c.state == lease.state,
        _same_time(t.c.updated_at, lease.updated_at)).values(
            project_id=dest, updated_at=now))
    return result.rowcount == 1


def _same_time(column, value):
    return column.is_(None) if value is None else column == value
