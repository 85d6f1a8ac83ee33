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
"""Apply the ledger's fixes, each in its own locked ledger transaction.

The findings were read at one moment; Blazar's notifications, its on-end
call and the lifecycle listener keep writing the ledger. So every fix
takes the ledger lock of the entry's project, re-reads the entry under
it, re-checks the condition the finding saw (still bound to that lease,
still open, its dates unchanged...) and only then calls the entry's
transition (ledger/entry_states.py), which is idempotent: an entry closed
meanwhile by an on-end is closed again for nothing, so a refund happens
once whichever path closes it first. A condition that no longer holds is
reported as ``fixed already`` or ``skipped``, with why.
"""

from oslo_log import log as logging

from placement_quota.ledger import models
from placement_quota.ledger import store
from placement_quota.ledger import entry_states
from placement_quota.reconcile import model as m

LOG = logging.getLogger(__name__)

FIXED = 'fixed'
_CLOSED = (models.TERMINATED, models.DENIED)


def apply(ledger, action, now=None):
    """Apply one ledger ``action`` (an :class:`~.model.Action` whose op is
    in :data:`~.model.LEDGER_OPS`); return its outcome as text."""
    if ledger is None:
        return 'skipped: no ledger'
    with ledger.transaction(now=now) as txn:
        row = txn.entry(action.entry_id)
    if row is None:
        return 'fixed already (no such entry)'
    with ledger.transaction([row.project_id], now=now) as txn:
        entry = txn.entry(action.entry_id)
        if entry is None:
            return 'fixed already (no such entry)'
        if entry.project_id != row.project_id:
            return ('skipped: the entry moved to project %s meanwhile; run '
                    'reconcile again' % entry.project_id)
        return _OPS[action.op](txn, entry, action)


def _bound_elsewhere(entry, action):
    """Why the entry is no longer the one the finding saw bound to
    ``action.lease_id``, or None."""
    if entry.lease_id == action.lease_id:
        return None
    if entry.lease_id is None:
        return 'skipped: the entry is bound to no lease (not to %s)' % (
            action.lease_id)
    return 'skipped: the entry is bound to lease %s now, not %s' % (
        entry.lease_id, action.lease_id)


def close_entry(txn, entry, action):
    """Without Blazar: a pending entry without ID past its end, closed at
    its end (nothing unused to refund)."""
    if entry.state != models.PENDING or entry.lease_id:
        return 'fixed already (entry is %s%s)' % (
            entry.state, ', bound to %s' % entry.lease_id
            if entry.lease_id else '')
    refund = entry_states.close(txn, entry, action.at or entry.end_date)
    return FIXED if not refund else \
        'fixed: %d micro-credits refunded' % refund


def bind_entry(txn, entry, action):
    if entry.lease_id == action.lease_id:
        return 'fixed already (bound)'
    if entry.lease_id is not None:
        return 'skipped: bound to lease %s meanwhile' % entry.lease_id
    if entry.state not in store.MATCHABLE:
        return 'skipped: the entry is %s now' % entry.state
    holder = txn.lease_id_holder(action.lease_id)
    if holder is not None:
        return ('skipped: ledger entry %d holds lease %s already'
                % (holder.id, action.lease_id))
    entry_states.bind(txn, entry, action.lease_id)
    if entry.state == models.ABANDONED:
        charge = entry_states.reopen(txn, txn.entry(entry.id))
        return 'fixed: bound and reopened (%d micro-credits charged)' % \
            charge
    return FIXED


def set_entry_window(txn, entry, action):
    why = _bound_elsewhere(entry, action)
    if why:
        return why
    if entry.state in _CLOSED:
        return 'fixed already (entry is %s)' % entry.state
    if (entry.start_date, entry.end_date) == (action.start, action.end):
        return 'fixed already (same dates)'
    if action.seen and (entry.start_date, entry.end_date) != action.seen:
        return ('skipped: its dates changed since they were read (to %s - '
                '%s); run reconcile again' % (entry.start_date,
                                              entry.end_date))
    delta = entry_states.set_window(txn, entry, action.start, action.end)
    return 'fixed: %+d micro-credits' % delta if delta else FIXED


def start_entry(txn, entry, action):
    why = _bound_elsewhere(entry, action)
    if why:
        return why
    if entry.state != models.PENDING:
        return 'fixed already (entry is %s)' % entry.state
    entry_states.start(txn, entry)
    return FIXED


def end_entry(txn, entry, action):
    why = _bound_elsewhere(entry, action)
    if why:
        return why
    if entry.state in _CLOSED:
        return 'fixed already (entry is %s since %s; nothing refunded)' % (
            entry.state, entry.effective_end)
    if entry.state == models.ABANDONED:
        return 'skipped: the entry is abandoned; run reconcile again'
    refund = entry_states.close(txn, entry, action.at)
    return 'fixed: %d micro-credits refunded' % refund


def abandon_entry(txn, entry, action):
    if entry.lease_id is not None:
        return 'skipped: bound to lease %s meanwhile' % entry.lease_id
    if entry.state != models.PENDING:
        return 'fixed already (entry is %s)' % entry.state
    released = entry.charged
    entry_states.abandon(txn, entry)
    return 'fixed: %d micro-credits released' % released


_OPS = {m.CLOSE_ENTRY: close_entry, m.BIND_ENTRY: bind_entry,
        m.SET_WINDOW: set_entry_window, m.START_ENTRY: start_entry,
        m.END_ENTRY: end_entry, m.ABANDON_ENTRY: abandon_entry}
