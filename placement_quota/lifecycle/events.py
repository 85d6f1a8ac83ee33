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
"""What each of Blazar's lease notifications does to the ledger.

Blazar's manager publishes one notification per step of a lease's life
(``_send_notification`` in ``blazar/manager/service.py``), each with the
whole lease as its payload (``format_lease_payload``: ``lease_id``,
``project_id``, ``user_id``, ``name``, ``start_date``, ``end_date``,
``status``, ``reservations``, ``events``, ``created_at``, ``updated_at``).
The entry of the lease is found by its ID, else by the fingerprint, else
by the shape of the payload (ledger/keys.py), and bound to the ID. Then:

==============================  =========================================
``lease.create``                binds the entry check-create recorded;
                                reopens it if it had been abandoned
``lease.update``                moves the entry to the lease's dates
                                (priced at its rate) when they differ
``lease.event.start_lease``     pending -> active
``lease.event.before_end_lease``  binds and refreshes the name only
``lease.event.end_lease``       closes the entry at the lease's end,
                                refunding the unused part
``lease.delete``                closes the entry at the time Blazar
                                deleted the lease, refunding the unused
                                part
==============================  =========================================

Every event also refreshes the entry's name (a rename reaches the ledger
with the next notification; Blazar notifies none for the rename itself),
and gives the reservations of the lease the entry holds the IDs Blazar
gave them (check-create is sent before they exist): an instance
reservation's Placement class is named after its ID.

Delivery is at least once, in any order: every step is idempotent
(ledger/entry_states.py), a closed entry stays closed, and dates from a
payload older (by Blazar's ``updated_at``) than the last one applied are
ignored. A refund happens once whichever path closes the entry first: this
one or the on-end call, both under the project's ledger lock.

:func:`settle` moves the pending entries Blazar never created (no
``lease.create`` for ``pending_timeout`` seconds while notifications kept
arriving) to ``abandoned``, releasing their charge.
"""

import datetime

from oslo_log import log as logging

from placement_quota.lease import model as lease_model
from placement_quota.ledger import keys
from placement_quota.ledger import models
from placement_quota.ledger import entry_states

LOG = logging.getLogger(__name__)

CREATE = 'lease.create'
UPDATE = 'lease.update'
DELETE = 'lease.delete'
START = 'lease.event.start_lease'
END = 'lease.event.end_lease'
BEFORE_END = 'lease.event.before_end_lease'
EVENT_TYPES = (CREATE, UPDATE, DELETE, START, END, BEFORE_END)

#: The longest ID or name the ledger keeps.
_MAX_TEXT = 255


class Malformed(ValueError):
    """A notification this module cannot apply; the message names the
    field and the value. The ledger is left unchanged."""

    def __init__(self, field, reason, value):
        self.field = field
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + '...'
        super().__init__('%s %s (got %s)' % (field, reason, shown))


class Notified:
    """The parts of a lease notification the ledger uses, checked."""

    def __init__(self, payload):
        if not isinstance(payload, dict):
            raise Malformed('payload', 'is not an object', payload)
        self.payload = payload
        self.lease_id = _text(payload, 'lease_id')
        self.project_id = _text(payload, 'project_id')
        self.user_id = _text(payload, 'user_id', required=False)
        self.name = _text(payload, 'name', required=False)
        self.start_date = _date(payload, 'start_date')
        self.end_date = _date(payload, 'end_date')
        if self.end_date <= self.start_date:
            raise Malformed('end_date', 'is not after start_date %s'
                            % self.start_date, payload['end_date'])
        self.updated_at = (_date(payload, 'updated_at', required=False) or
                           _date(payload, 'created_at', required=False))
        reservations = payload.get('reservations', [])
        if not isinstance(reservations, list) or not all(
                isinstance(r, dict) for r in reservations):
            raise Malformed('reservations', 'is not a list of objects',
                            reservations)
        self.fingerprint = keys.fingerprint(self.project_id, self.user_id,
                                            payload)
        self.shape = keys.shape(self.project_id, payload)


def _text(payload, field, required=True):
    value = payload.get(field)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise Malformed(field, 'is not a non-empty string', value)
    if len(value) > _MAX_TEXT:
        raise Malformed(field, 'is longer than %d characters' % _MAX_TEXT,
                        value)
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise Malformed(field, 'holds control characters', value)
    return value


def _date(payload, field, required=True):
    value = payload.get(field)
    if value is None and not required:
        return None
    try:
        return lease_model.parse_date(value, field, bounded=True)
    except lease_model.PayloadError as exc:
        raise Malformed(field, 'is not a date', value) from exc


def handle(ledger, event_type, payload, timestamp):
    """Apply one Blazar notification to the ledger; return a short text
    saying what it did. ``timestamp`` (naive UTC) is when Blazar sent it.

    Raises :class:`Malformed` for a payload it cannot apply, and
    :class:`~placement_quota.ledger.errors.LedgerUnavailable` when the
    ledger does not answer (the message should be delivered again).
    """
    action = _ACTIONS.get(event_type)
    if action is None:
        return 'ignored'
    notified = Notified(payload)
    locks = [notified.project_id]
    while True:
        with ledger.transaction(locks) as txn:
            entry = txn.find(notified.project_id, notified.lease_id,
                             notified.fingerprint, notified.shape,
                             any_project=True)
            if entry is not None and entry.project_id not in locks:
                # Moved to another project (accounts): lock that one too,
                # in the ledger's lock order, and look again.
                locks.append(entry.project_id)
                continue
            if entry is None:
                LOG.info('%s for lease %s of project %s, which the ledger '
                         'does not hold (created without placement-quota\'s '
                         'check, or before the ledger): nothing to do; '
                         'placement-quota reconcile reports it.', event_type,
                         notified.lease_id, notified.project_id)
                return 'not in the ledger'
            if not entry_states.bind(txn, entry, notified.lease_id):
                return 'not bound: another lease holds the entry'
            _refresh(txn, entry, notified)
            entry = txn.entry(entry.id)
            return action(txn, entry, notified, timestamp)


def _refresh(txn, entry, notified):
    values = {}
    if notified.name is not None and entry.name != notified.name:
        values['name'] = notified.name
    if entry.provisional_key != notified.fingerprint:
        values.update(provisional_key=notified.fingerprint,
                      shape_key=notified.shape)
    lease = with_reservation_ids(entry.lease,
                                 notified.payload.get('reservations'))
    if lease is not None:
        values['lease'] = lease
    if values:
        txn.update(entry.id, **values)


def with_reservation_ids(lease, reservations):
    """``lease`` (an entry's) with the IDs of Blazar's ``reservations``
    given to its reservations that have none, where that is unambiguous:
    one reservation without an ID of a type, and one ID of that type not
    in ``lease`` yet. None when nothing changes."""
    if not isinstance(lease, dict) or not isinstance(
            lease.get('reservations'), list):
        return None
    mine = lease['reservations']
    known = {r.get('id') for r in mine if isinstance(r, dict)}
    new_ids, without = {}, {}
    for r in reservations or ():
        rid = r.get('id')
        if isinstance(rid, str) and rid and rid not in known:
            new_ids.setdefault(r.get('resource_type'), []).append(rid)
    for index, r in enumerate(mine):
        if isinstance(r, dict) and not r.get('id'):
            without.setdefault(r.get('resource_type'), []).append(index)
    changed = list(mine)
    for rtype, indexes in without.items():
        ids = new_ids.get(rtype) or []
        if len(indexes) == 1 and len(ids) == 1:
            changed[indexes[0]] = dict(mine[indexes[0]], id=ids[0])
    if changed == mine:
        return None
    return dict(lease, reservations=changed)


def _newer(entry, notified):
    """Whether the payload is not older than the last one applied (then it
    is recorded as the last one)."""
    if notified.updated_at is None:
        return entry.notified_at is None
    if entry.notified_at is not None and \
            notified.updated_at < entry.notified_at:
        return False
    return True


def _follow_dates(txn, entry, notified):
    if not _newer(entry, notified):
        return 'older than the last notification applied: dates kept'
    if notified.updated_at is not None:
        txn.update(entry.id, notified_at=notified.updated_at)
    delta = entry_states.set_window(txn, entry, notified.start_date,
                                    notified.end_date)
    return 'dates followed (%+d micro-credits)' % delta if delta else \
        'dates unchanged'


def _created(txn, entry, notified, timestamp):
    reopened = entry_states.reopen(txn, entry)
    if reopened:
        entry = txn.entry(entry.id)
    result = _follow_dates(txn, entry, notified)
    return ('reopened; ' if reopened else 'bound; ') + result


def _updated(txn, entry, notified, timestamp):
    if entry.state == models.ABANDONED:
        entry_states.reopen(txn, entry)
        entry = txn.entry(entry.id)
    return _follow_dates(txn, entry, notified)


def _started(txn, entry, notified, timestamp):
    return 'active' if entry_states.start(txn, entry) else \
        'not started: entry %s' % entry.state


def _ended(txn, entry, notified, timestamp):
    refund = entry_states.close(txn, entry, min(timestamp, entry.end_date))
    return 'closed; %d micro-credits refunded' % refund


def _bound(txn, entry, notified, timestamp):
    return 'bound'


_ACTIONS = {CREATE: _created, UPDATE: _updated, START: _started,
            END: _ended, DELETE: _ended, BEFORE_END: _bound}


def settle(ledger, seen_until, pending_timeout):
    """Abandon the entries check-create recorded whose lease Blazar never
    created: pending, bound to no lease ID, and recorded more than
    ``pending_timeout`` seconds before ``seen_until`` (the newest
    notification the listener has seen: Blazar's notifications were
    flowing long after them). Their charge is released; a late
    ``lease.create`` reopens them. Returns the settled entries' IDs."""
    cutoff = seen_until - datetime.timedelta(seconds=pending_timeout)
    with ledger.transaction() as txn:
        candidates = txn.unbound_pending(cutoff)
    settled = []
    by_project = {}
    for row_id, project_id in candidates:
        by_project.setdefault(project_id, []).append(row_id)
    for project_id, row_ids in sorted(by_project.items()):
        with ledger.transaction([project_id]) as txn:
            for row_id in row_ids:
                entry = txn.entry(row_id)
                if entry is None or entry.created_at >= cutoff:
                    continue
                if entry_states.abandon(txn, entry):
                    settled.append(row_id)
    return settled
