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
"""Compare the ledger with Blazar's lease list (pure).

Blazar's notifications and its on-end call keep the ledger's entries in
step with the leases (placement_quota/lifecycle/events.py); when one is
lost, the entry drifts. :func:`find` compares every entry that is not
denied with every lease Blazar lists (``GET /v1/leases``, all projects),
pairing them as the ledger does (ledger/keys.py): by the lease ID an entry
is bound to, else, for an entry bound to none, by the lease's fingerprint
(project, user, name, dates to the minute, reservations), then by its
shape (the same without name and user: a renamed lease). Each lease is
paired with one entry at most, the oldest; fingerprints are paired before
shapes.

==================  =========================================================
kind                drift, and its fix
==================  =========================================================
unbound_entry       an entry bound to no ID matches a lease no entry is
                    bound to: bind it (reopen it too if it was abandoned)
lease_window        an open entry's start or end (to the minute) differs
                    from its lease's: move it to Blazar's dates, charging or
                    refunding the difference at its hourly rate
lease_state         the lease is over in Blazar (``TERMINATED``, ``ERROR``;
                    ``blazar/status.py``) while the entry is open: close it
                    at the lease's end, or now if earlier, refunding the
                    unused part; the lease is ``ACTIVE`` while the entry is
                    pending: mark it active
gone_lease          an open entry is bound to a lease ID Blazar no longer
                    has (deleted, and its on-end and ``lease.delete`` never
                    reached us): close it now (the best known time),
                    clamped to its dates, refunding the unused part
stuck_pending       an entry pending, bound to no ID, recorded more than
                    ``pending_timeout`` ago, that no lease matches: Blazar
                    never created it; abandon it (its charge released)
unknown_lease       a lease not over that no entry is bound to or matches:
                    created without placement-quota's check; reported only
==================  =========================================================

Transitional lease statuses (``CREATING``, ``STARTING``, ``UPDATING``,
``TERMINATING``, ``DELETING``) decide nothing: Blazar is still working on
the lease, and its notification follows.
"""

import dataclasses
import datetime
from typing import Optional

from placement_quota.ledger import keys
from placement_quota.ledger import models
from placement_quota.ledger import store
from placement_quota.reconcile import model as m

#: Blazar's lease statuses (``blazar.status.LeaseStatus``) that end a
#: lease, and the older or reservation-level ones that mean the same.
ENDED_STATUSES = frozenset(('TERMINATED', 'ERROR', 'DELETED', 'KILLED'))
ACTIVE_STATUS = 'ACTIVE'


@dataclasses.dataclass(frozen=True)
class Lease:
    """One lease of Blazar's list, as the comparison reads it."""

    id: str
    project_id: str
    user_id: Optional[str]
    name: Optional[str]
    status: str
    start: datetime.datetime
    end: datetime.datetime
    fingerprint: str
    shape: str
    created_at: str = ''

    @property
    def over(self):
        return self.status in ENDED_STATUSES

    def ended(self, now):
        """Over in Blazar, or past its end date."""
        return self.over or now >= self.end

    def describe(self):
        return '%s (%s, project %s)' % (self.id, self.name or 'no name',
                                        self.project_id)


def _date(value):
    """A naive UTC datetime of Blazar's date text; None when it is not
    one."""
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(
                value.strip().replace('Z', '+00:00'))
        except ValueError:
            return None
    if not isinstance(value, datetime.datetime):
        return None
    return store.utc(value)


def lease_of(raw):
    """The :class:`Lease` of one item of Blazar's lease list (a dict);
    None when it lacks an ID, a project or readable dates."""
    if not isinstance(raw, dict):
        return None
    lease_id, project = raw.get('id'), raw.get('project_id')
    start, end = _date(raw.get('start_date')), _date(raw.get('end_date'))
    if not (isinstance(lease_id, str) and lease_id and
            isinstance(project, str) and project and start and end):
        return None
    user = raw.get('user_id')
    return Lease(id=lease_id, project_id=project,
                 user_id=user if isinstance(user, str) else None,
                 name=raw.get('name'),
                 status=str(raw.get('status') or '').upper(), start=start,
                 end=end, fingerprint=keys.fingerprint(project, user, raw),
                 shape=keys.shape(project, raw),
                 created_at=str(raw.get('created_at') or ''))


def find(entries, leases, now, pending_timeout):
    """Every drift between ``entries`` (:class:`~.model.Entry`, every
    ledger entry not denied) and ``leases`` (:class:`Lease`, Blazar's
    list)."""
    by_id = {lease.id: lease for lease in leases}
    found = []
    bound = set()
    unbound = []
    for e in sorted(entries, key=lambda e: e.id):
        if e.lease_id:
            bound.add(e.lease_id)
            lease = by_id.get(e.lease_id)
            if lease is None:
                found.extend(_gone(e, now))
            else:
                found.extend(_compare(e, lease, now))
        elif e.state in store.MATCHABLE:
            unbound.append(e)
    free = sorted((lease for lease in leases if lease.id not in bound),
                  key=lambda lease: (lease.created_at, lease.id))
    paired = _pair(unbound, free)
    for e in unbound:
        lease, how = paired.get(e.id, (None, None))
        if lease is not None:
            found.append(_bind(e, lease, how))
            found.extend(_compare(e, lease, now, binding=True))
        elif _stuck(e, now, pending_timeout):
            found.append(_abandon(e, now, pending_timeout))
    matched = {lease.id for lease, _ in paired.values()}
    for lease in free:
        if lease.id not in matched and not lease.ended(now):
            found.append(_unknown(lease))
    return found


def _pair(entries, leases):
    """``{entry ID: (lease, 'fingerprint'|'shape')}``: each lease with the
    oldest entry of its project matching its fingerprint, then (for the
    leases and entries left) its shape."""
    paired = {}
    taken = set()
    for how, of_entry, of_lease in (
            ('fingerprint', lambda e: e.provisional_key,
             lambda lease: lease.fingerprint),
            ('shape', lambda e: e.shape_key, lambda lease: lease.shape)):
        waiting = {}
        for e in entries:
            if e.id not in paired and of_entry(e):
                waiting.setdefault((e.project_id, of_entry(e)), []).append(e)
        for lease in leases:
            if lease.id in taken:
                continue
            queue = waiting.get((lease.project_id, of_lease(lease)))
            if queue:
                paired[queue.pop(0).id] = (lease, how)
                taken.add(lease.id)
    return paired


def _subject(e):
    return 'ledger entry %d (lease %s, project %s)' % (
        e.id, e.lease_id or e.name or e.provisional_key[:12], e.project_id)


def _refund(charged, rate, start, end, at):
    """What :func:`~placement_quota.ledger.entry_states.close` at ``at``
    refunds of an entry charged ``charged`` for ``[start, end)``."""
    used = store.cost(rate, start, min(max(at, start), end))
    return max(0, charged - min(charged, used))


def _gone(e, now):
    if not e.open:
        return []
    end = e.end_date or e.end
    at = min(max(now, e.start), end)
    return [m.Finding(
        m.GONE_LEASE, _subject(e),
        'the entry is %s (%s - %s) and bound to lease %s, which Blazar no '
        'longer has: it was deleted, and neither its on-end call nor its '
        'lease.delete notification reached placement-quota. When is not '
        'known: the best known time is now (%s), clamped to the entry\'s '
        'dates' % (e.state, _at(e.start), _at(end), e.lease_id, _at(now)),
        'close it at %s and refund the unused part of its %d micro-credits '
        '(%d)' % (_at(at), e.charged,
                  _refund(e.charged, e.hourly_rate, e.start, end, at)), True,
        m.Action(m.END_ENTRY, entry_id=e.id, lease_id=e.lease_id, at=at))]


def _compare(e, lease, now, binding=False):
    """The window and state findings of ``e`` against its lease (found by
    ID, or by its fingerprint or shape when ``binding``)."""
    state = models.PENDING if (binding and
                               e.state == models.ABANDONED) else e.state
    if state not in (models.PENDING, models.ACTIVE):
        return []
    found = []
    subject = _subject(e)
    lease_id = lease.id
    end = e.end_date or e.end
    start_date, end_date = e.start, end
    # What the entry is charged once bound (an abandoned one is reopened:
    # charged its window again).
    charged = e.charged
    if e.state == models.ABANDONED:
        charged = store.cost(e.hourly_rate, e.start, end)
    if (keys.minute(e.start), keys.minute(end)) != (
            keys.minute(lease.start), keys.minute(lease.end)) and \
            lease.end > lease.start:
        delta = 0
        if e.hourly_rate:
            delta = store.cost(e.hourly_rate, lease.start, lease.end) - \
                charged
        found.append(m.Finding(
            m.LEASE_WINDOW, subject,
            'the entry reserves %s - %s, Blazar\'s lease %s %s - %s (a '
            'lease.update notification or check-update did not reach the '
            'ledger)' % (_at(e.start), _at(end), lease.describe(),
                         _at(lease.start), _at(lease.end)),
            'move it to %s - %s, %s %d micro-credits at its hourly rate'
            % (_at(lease.start), _at(lease.end),
               'charging' if delta >= 0 else 'refunding', abs(delta)), True,
            m.Action(m.SET_WINDOW, entry_id=e.id, lease_id=lease_id,
                     start=lease.start, end=lease.end,
                     seen=(e.start, end))))
        start_date, end_date = lease.start, lease.end
        charged += delta
    if lease.over:
        at = min(lease.end, now)
        found.append(m.Finding(
            m.LEASE_STATE, subject,
            'Blazar\'s lease %s is %s (until %s), but the entry is still %s '
            '(its end never reached the ledger)' % (
                lease.describe(), lease.status, _at(lease.end), state),
            'close it at %s (the lease\'s end, or now if earlier) and refund '
            'the unused part (%d micro-credits)' % (
                _at(at), _refund(charged, e.hourly_rate, start_date,
                                 end_date, at)), True,
            m.Action(m.END_ENTRY, entry_id=e.id, lease_id=lease_id, at=at)))
    elif lease.status == ACTIVE_STATUS and state == models.PENDING:
        found.append(m.Finding(
            m.LEASE_STATE, subject,
            'Blazar\'s lease %s is ACTIVE (started %s), but the entry is '
            'still pending (its lease.event.start_lease notification never '
            'reached the ledger)' % (lease.describe(), _at(lease.start)),
            'mark it active', True,
            m.Action(m.START_ENTRY, entry_id=e.id, lease_id=lease_id)))
    return found


def _bind(e, lease, how):
    what = ('fingerprint (project, user, name, dates, reservations)'
            if how == 'fingerprint' else
            'shape (project, dates, reservations: renamed, or another '
            'user)')
    fix = 'bind it to lease %s' % lease.id
    if e.state == models.ABANDONED:
        fix += (' and reopen it (it was abandoned: its window is charged '
                'again at its hourly rate)')
    return m.Finding(
        m.UNBOUND_ENTRY, _subject(e),
        'the entry (%s) is bound to no lease ID, and its %s matches '
        'Blazar\'s lease %s, which no entry is bound to' % (
            e.state, what, lease.describe()), fix, True,
        m.Action(m.BIND_ENTRY, entry_id=e.id, lease_id=lease.id))


def _stuck(e, now, pending_timeout):
    recorded = e.created_at or e.start
    return e.state == models.PENDING and now >= recorded + pending_timeout


def _abandon(e, now, pending_timeout):
    recorded = e.created_at or e.start
    return m.Finding(
        m.STUCK_PENDING, _subject(e),
        'pending since its check-create at %s (more than %s ago) without '
        'a lease ID, and no lease in Blazar has its fingerprint or shape: '
        'Blazar never created it (it failed after the check, or was '
        'deleted before any of its notifications reached the ledger)' % (
            _at(recorded), pending_timeout),
        'abandon it: release its %d micro-credits (it then counts toward '
        'nothing; a late lease.create notification reopens it)'
        % e.charged, True,
        m.Action(m.ABANDON_ENTRY, entry_id=e.id))


def _unknown(lease):
    return m.Finding(
        m.UNKNOWN_LEASE, 'lease %s' % lease.describe(),
        'Blazar has it %s, %s - %s, but no ledger entry is bound to it or '
        'matches its fingerprint or shape: it was created without '
        'placement-quota\'s check (before enforcement was configured, or '
        'past it), so it counts toward no limit or credit' % (
            lease.status or 'without status', _at(lease.start),
            _at(lease.end)),
        'manual: look at it (openstack reservation lease show %s); it is '
        'reported only' % lease.id, False)


def _at(value):
    return value.strftime('%Y-%m-%d %H:%M')
