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
"""The life of a ledger entry after its admission, inside a locked
transaction: bound to Blazar's lease ID, started, its window corrected,
closed with the refund of its unused part, abandoned and reopened.

Starting and closing an entry move its project's generation
(:meth:`~placement_quota.ledger.store.Transaction.bump_generation`): the
instances Nova counts for the project may change then, and every process
reads the project's quota and usage again before its next decision.

Every function reads the entry's current state from the row it is given
(read in the same transaction, under the project's lock) and is
idempotent: closing a closed entry refunds nothing, binding a bound entry
changes nothing. That is what makes every refund happen exactly once,
whichever of the paths that close an entry (the on-end call, Blazar's
``lease.delete`` or ``lease.event.end_lease`` notification, reconcile's
fix) comes first. The parts of an entry charged to credit pools
(``pool_charges``, see filters/credit.py) move with its general charge,
in the same update: each pool is refunded or charged its own difference,
as exactly once.

States::

    pending --start--> active --close--> terminated
       |                                     ^
       +-------------close-------------------+
       |
       +--abandon--> abandoned --reopen--> pending
"""

from oslo_log import log as logging

from placement_quota.ledger import models
from placement_quota.ledger import store

LOG = logging.getLogger(__name__)


def pools_of(entry):
    """``{resource class: {'allocation_id', 'hourly', 'charged'}}``: what
    ``entry`` was charged to credit pools (micro-units; see
    filters/credit.py); {} for none (or no entry)."""
    if entry is None:
        return {}
    # The whole row (a partial one would lose the pools: an error).
    return dict(entry.pool_charges or {})


def repriced(entry, charged_of):
    """The entry's pool charges with each pool's ``charged`` made
    ``charged_of(pool)``."""
    return {rc: dict(pool, charged=charged_of(pool))
            for rc, pool in pools_of(entry).items()}


def charge_pools(txn, project_id, row, old, new, kind):
    """Charge the pools the difference from ``old`` to ``new`` pool
    charges of ledger row ``row`` (:func:`pools_of`'s form): a pool kept
    is charged its difference; a pool left is refunded what it was
    charged, a new one charged in full. Returns the micro-units charged
    (negative: refunded), summed over the pools."""
    total = 0
    for rc in sorted(set(old) | set(new)):
        before, after = old.get(rc), new.get(rc)
        if before is not None and after is not None and (
                before['allocation_id'] == after['allocation_id']):
            moves = [(after['allocation_id'],
                      after['charged'] - before['charged'])]
        else:
            moves = []
            if before is not None:
                moves.append((before['allocation_id'], -before['charged']))
            if after is not None:
                moves.append((after['allocation_id'], after['charged']))
        for allocation_id, amount in moves:
            txn.charge(project_id, row, allocation_id, amount, kind)
            total += amount
    return total


def _pool_values(entry, new):
    """The ``pool_charges`` value to write for ``new`` ({} when the entry
    had none and has none)."""
    if not new and not pools_of(entry):
        return {}
    return {'pool_charges': new or None}


def describe(entry):
    """How a log line names an entry."""
    return 'ledger entry %d (lease %s of project %s)' % (
        entry.id, entry.lease_id or entry.name or 'without ID',
        entry.project_id)


def bind(txn, entry, lease_id):
    """Bind ``entry`` to Blazar's ``lease_id``; False when it is bound to
    another ID or another entry holds that one (nothing changes then)."""
    if not lease_id or entry.lease_id == lease_id:
        return bool(lease_id)
    if entry.lease_id is not None:
        LOG.warning('%s is bound to another lease ID; not binding %s.',
                    describe(entry), lease_id)
        return False
    holder = txn.lease_id_holder(lease_id)
    if holder is not None:
        LOG.warning('Lease ID %s is bound to ledger entry %d already; not '
                    'binding it to entry %d too.', lease_id, holder.id,
                    entry.id)
        return False
    txn.update(entry.id, lease_id=lease_id)
    LOG.info('%s bound to lease %s.', describe(entry), lease_id)
    return True


def close(txn, entry, at, lease_id=None):
    """Close ``entry`` at ``at`` (the lease's actual end, kept within its
    dates) and refund the unused part of its charge. Returns the
    micro-credits refunded; 0 and no change when it is closed already.

    An abandoned entry that is closed did exist in Blazar after all: it is
    charged what it used.
    """
    if entry.state in (models.TERMINATED, models.DENIED):
        LOG.info('%s is closed already (at %s); nothing more to refund.',
                 describe(entry), entry.effective_end)
        return 0
    actual_end = min(max(at, entry.start_date), entry.end_date)
    used = store.cost(entry.hourly_rate, entry.start_date, actual_end)
    if entry.state == models.ABANDONED:
        charged = used
        kind = models.CHARGE_REOPEN
    else:
        charged = min(entry.charged, used)
        kind = models.REFUND_END
    abandoned = entry.state == models.ABANDONED

    def pool_used(pool):
        used = store.cost(pool['hourly'], entry.start_date, actual_end)
        return used if abandoned else min(pool['charged'], used)

    pools = repriced(entry, pool_used)
    if lease_id and entry.lease_id is None:
        bind(txn, entry, lease_id)
    txn.update(entry.id, state=models.TERMINATED, effective_end=actual_end,
               ended_at=txn.now, charged=charged,
               **_pool_values(entry, pools))
    txn.bump_generation(entry.project_id)
    txn.charge(entry.project_id, entry.id, entry.allocation_id,
               charged - entry.charged, kind)
    charge_pools(txn, entry.project_id, entry.id, pools_of(entry), pools,
                 kind)
    refund = entry.charged - charged
    LOG.info('%s closed at %s; %d micro-credits refunded.', describe(entry),
             actual_end, max(0, refund))
    return max(0, refund)


def start(txn, entry):
    """Record that Blazar started the lease; False when the entry is
    closed (a late start changes nothing)."""
    if entry.state == models.ABANDONED:
        reopen(txn, entry)
    elif entry.state != models.PENDING:
        return entry.state == models.ACTIVE
    txn.update(entry.id, state=models.ACTIVE)
    txn.bump_generation(entry.project_id)
    return True


def set_window(txn, entry, start_date, end_date):
    """Move ``entry`` to Blazar's dates, priced at its hourly rate (the
    difference charged or refunded). Returns the micro-credits charged
    (negative: refunded); 0 when the dates are the same or it is
    closed."""
    if entry.state in (models.TERMINATED, models.DENIED) or (
            entry.start_date == start_date and entry.end_date == end_date):
        return 0
    if end_date <= start_date:
        raise ValueError('end_date %s is not after start_date %s'
                         % (end_date, start_date))
    delta = 0
    pools = pools_of(entry)
    if entry.state != models.ABANDONED:
        if entry.hourly_rate:
            delta = store.cost(entry.hourly_rate, start_date, end_date) - \
                entry.charged
        pools = repriced(entry, lambda pool: store.cost(
            pool['hourly'], start_date, end_date))
    txn.update(entry.id, start_date=start_date, end_date=end_date,
               effective_end=end_date, charged=entry.charged + delta,
               **_pool_values(entry, pools))
    txn.charge(entry.project_id, entry.id, entry.allocation_id, delta,
               models.CHARGE_UPDATE)
    charge_pools(txn, entry.project_id, entry.id, pools_of(entry), pools,
                 models.CHARGE_UPDATE)
    LOG.info('%s moved to %s - %s; %d micro-credits charged.',
             describe(entry), start_date, end_date, delta)
    return delta


def abandon(txn, entry):
    """Release the charge of a pending entry whose lease Blazar never
    created; it then counts toward nothing. Returns whether it was
    abandoned: only a pending entry bound to no lease is."""
    if entry.state != models.PENDING or entry.lease_id is not None:
        return False
    pools = repriced(entry, lambda pool: 0)
    txn.update(entry.id, state=models.ABANDONED, charged=0,
               **_pool_values(entry, pools))
    txn.charge(entry.project_id, entry.id, entry.allocation_id,
               -entry.charged, models.REFUND_ABANDON)
    charge_pools(txn, entry.project_id, entry.id, pools_of(entry), pools,
                 models.REFUND_ABANDON)
    LOG.warning('%s abandoned: Blazar sent no lease.create for it; %d '
                'micro-credits released.', describe(entry), entry.charged)
    return True


def reopen(txn, entry):
    """An abandoned entry whose lease Blazar did create after all: pending
    again, charged its window at its hourly rate. Returns the
    micro-credits charged."""
    if entry.state != models.ABANDONED:
        return 0
    charge = store.cost(entry.hourly_rate, entry.start_date, entry.end_date)
    pools = repriced(entry, lambda pool: store.cost(
        pool['hourly'], entry.start_date, entry.end_date))
    txn.update(entry.id, state=models.PENDING, charged=charge,
               **_pool_values(entry, pools))
    txn.charge(entry.project_id, entry.id, entry.allocation_id, charge,
               models.CHARGE_REOPEN)
    charge_pools(txn, entry.project_id, entry.id, pools_of(entry), pools,
                 models.CHARGE_REOPEN)
    LOG.info('%s reopened: Blazar did create its lease; %d micro-credits '
             'charged again.', describe(entry), charge)
    return charge
