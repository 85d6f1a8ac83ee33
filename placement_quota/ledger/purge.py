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
"""Purging closed ledger entries (``placement-quota db purge``).

An entry is purged when its recorded state is final (terminated, denied,
abandoned: never pending or active) and everything about it is before the
cut-off: its end (``effective_end``), its close (``ended_at``) and its
last change (``updated_at``, else ``created_at``). An entry still
recorded active after its end (its on-end never came) is not final; it
stays for ``reconcile``.

Balances do not change. What is left of a credit allocation is its amount
less the sum of its charges (:meth:`~placement_quota.ledger.store.
Transaction.spent`); the charges of the purged entries are replaced by one
charge per project and allocation, of kind :data:`CHARGE_PURGED`, holding
their exact sum (integer micro-credits). Charges to no allocation count
toward nothing and go with their entries.

The work is done in batches of at most ``batch_size`` entries, each in its
own transaction holding the locks of the batch's projects (the lock every
writer of those entries takes), and re-checking the conditions under the
locks: an entry reopened meanwhile (a late ``lease.create`` of an abandoned
entry) is left alone.

On a Galera cluster a transaction's write set is bounded
(``wsrep_max_ws_rows``; a larger one is refused), so there a batch stops before
the rows it writes could pass that bound: each entry counts its own row,
its charges, and three more (its project's lock row, the charge that
keeps the sum, the row of ``idle_watch`` it may have) -- never fewer rows
than it writes (:func:`_within`).
"""

import collections

from oslo_log import log as logging
import sqlalchemy as sa

from placement_quota.ledger.db import galera
from placement_quota.ledger.db import locks
from placement_quota.ledger import models

LOG = logging.getLogger(__name__)

#: The states whose entries can be purged: the final ones.
FINAL = (models.TERMINATED, models.DENIED, models.ABANDONED)
#: The kind of the charge that holds the sum of purged entries' charges.
CHARGE_PURGED = 'purged'
#: Entries per transaction.
DEFAULT_BATCH = 500


def _purgeable(before, states):
    """The conditions on ``leases`` of an entry to purge."""
    t = models.leases
    return sa.and_(
        t.c.state.in_(states),
        t.c.effective_end < before,
        sa.func.coalesce(t.c.ended_at, t.c.created_at) < before,
        sa.func.coalesce(t.c.updated_at, t.c.created_at) < before)


def _counts(rows):
    counts = {state: 0 for state in FINAL}
    for state, number in rows:
        counts[state] = counts.get(state, 0) + number
    return counts


def count(ledger, before, states=FINAL):
    """``{state: entries}`` that :func:`purge` would delete now (every
    final state, 0 for those not chosen or with none)."""
    t = models.leases
    with ledger.transaction() as txn:
        return _counts(txn.connection.execute(
            sa.select(t.c.state, sa.func.count())
            .where(_purgeable(before, states)).group_by(t.c.state)))


def purge(ledger, before, states=FINAL, batch_size=DEFAULT_BATCH):
    """Delete the entries in ``states`` (a subset of :data:`FINAL`)
    closed before ``before`` (naive UTC), ``batch_size`` at a time.

    Returns ``(counts, batches)``: ``{state: entries deleted}`` and the
    number of transactions it took."""
    unknown = set(states) - set(FINAL)
    if unknown:
        raise ValueError('only final states can be purged, not %s'
                         % ', '.join(sorted(unknown)))
    t = models.leases
    totals = collections.Counter()
    batches = 0
    after = 0
    max_rows = None
    while True:
        # The candidates, read without locks; the batch's transaction
        # takes their projects' locks and checks them again.
        with ledger.transaction() as txn:
            found = txn.connection.execute(
                sa.select(t.c.id, t.c.project_id)
                .where(_purgeable(before, states), t.c.id > after)
                .order_by(t.c.id).limit(batch_size)).all()
            if max_rows is None:
                max_rows = _max_ws_rows(txn.connection)
            if found and max_rows:
                found = _within(txn.connection, found, max_rows)
        if not found:
            break
        after = found[-1].id
        with ledger.transaction(sorted({r.project_id for r in found})) \
                as txn:
            deleted = _purge_batch(txn, [r.id for r in found], before,
                                   states)
        totals.update(deleted)
        batches += 1
        LOG.info('Purged %d ledger entries (batch %d).',
                 sum(deleted.values()), batches)
    return _counts(totals.items()), batches


def _max_ws_rows(connection):
    """The most rows one transaction may write on the Galera cluster of
    ``connection`` (``wsrep_max_ws_rows``), 0 for no bound (or no
    Galera: the connection knows, see ledger/db/locks.py)."""
    if not locks.galera(connection):
        return 0
    node = galera.read(connection)
    return node.max_ws_rows if node is not None else 0


def _within(connection, found, max_rows):
    """The first of the candidate entries ``found`` whose purge writes at
    most ``max_rows`` rows (at least one entry; alone, it may be
    refused: the error says why)."""
    c = models.charges
    charges = dict(connection.execute(
        sa.select(c.c.lease_row, sa.func.count())
        .where(c.c.lease_row.in_([r.id for r in found]))
        .group_by(c.c.lease_row)).all())
    kept, rows = [], 0
    for row in found:
        # Its row, its charges, its project's lock row, the charge that
        # keeps the sum, and its idle_watch row if any.
        rows += 4 + charges.get(row.id, 0)
        if kept and rows > max_rows:
            break
        kept.append(row)
    if len(kept) < len(found):
        LOG.debug('A batch of %d entries, to stay within the cluster\'s '
                  'wsrep_max_ws_rows (%d).', len(kept), max_rows)
    return kept


def _purge_batch(txn, ids, before, states):
    """Delete those of the entries ``ids`` still purgeable, keeping their
    charges' sums; ``{state: deleted}``."""
    t = models.leases
    c = models.charges
    connection = txn.connection
    rows = connection.execute(
        sa.select(t.c.id, t.c.state).where(
            t.c.id.in_(ids), _purgeable(before, states))).all()
    if not rows:
        return {}
    ids = [r.id for r in rows]
    sums = connection.execute(
        sa.select(c.c.project_id, c.c.allocation_id,
                  sa.func.sum(c.c.amount))
        .where(c.c.lease_row.in_(ids), c.c.allocation_id.isnot(None))
        .group_by(c.c.project_id, c.c.allocation_id)).all()
    for project_id, allocation_id, amount in sums:
        if amount:
            connection.execute(c.insert().values(
                project_id=project_id, lease_row=None,
                allocation_id=allocation_id, amount=int(amount),
                kind=CHARGE_PURGED, at=txn.now))
    connection.execute(c.delete().where(c.c.lease_row.in_(ids)))
    connection.execute(models.idle_watch.delete().where(
        models.idle_watch.c.lease_row.in_(ids)))
    connection.execute(t.delete().where(t.c.id.in_(ids)))
    return collections.Counter(r.state for r in rows)
