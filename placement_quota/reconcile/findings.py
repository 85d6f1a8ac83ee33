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
"""Compare what is reserved with what Placement holds (pure).

:func:`find` returns every drift as a :class:`~.model.Finding`. The rules,
with the reservation's life in the words of the Blazar specs:

* Every host of a reservation that has not ended has a reservation provider
  ``blazar_<host>`` under its compute node (Blazar's "Placement API support for
  instance reservation" spec, "When creating a host"): **missing_provider**
  otherwise (safe: create it). A ``blazar_<host>`` whose compute node is gone,
  or that hangs under another parent, is an **orphan_provider** (safe to delete
  only when it holds no allocation and no inventory of a live reservation).
* An instance reservation's class ``CUSTOM_RESERVATION_<ID>`` exists from
  the lease's creation to its end (**missing_class**: safe, create it); a
  class whose reservation ended, or that no reservation known to the
  ledger or to Blazar has, is an **orphan_class** (safe to delete only
  when the reservation is known to have ended and nothing is allocated
  from it).
* While the lease runs, each reserved host's provider has an inventory of the
  class whose total is the instances reserved there ("Placement API support for
  instance reservation", "When starting a lease"): **inventory_mismatch**
  otherwise (safe when the new total is not below what is allocated, and a
  removal only when nothing is). ``grace`` after the start and after the end is
  left to Blazar.
* After the end, the inventory is gone (**ended_inventory**, safe to
  remove when unused); allocations left against it are
  **ended_allocations** (never touched: the servers must go first).
* A reservation on a host whose compute node is gone or disabled
  (``COMPUTE_STATUS_DISABLED``) is **degraded** (Blazar's "Monitor states of
  resources" spec: missing resources before the start, resources changed after
  it); Blazar heals leases, so this is only reported. With ``[blazar]``, the
  reservations Blazar's own monitor flagged (``missing_resources``,
  ``resources_changed``) are reported too.
* A ledger entry still pending ``pending_timeout`` after its start and
  without a lease ID is **stuck_pending** (see :func:`_stuck_pending`).
* With ``[blazar]``, every ledger entry is compared with Blazar's lease
  list too (:mod:`.lease_findings`).

A class whose reservation ID the ledger does not know is never touched on the
ledger's word alone: check-create carries no IDs (Blazar's "Flexible
Reservation Usage Enforcement" spec), so the ledger learns a reservation's ID
only when Blazar sends an update or the end; until then its class looks
unknown. With ``[blazar]`` configured the reservation is looked up in Blazar
instead.
"""

import dataclasses
import datetime

from placement_quota.ledger import models
from placement_quota.placement import reservations as rsv
from placement_quota.reconcile import lease_findings
from placement_quota.reconcile import model as m

LIVE = 'live'
ENDED = 'ended'
UNKNOWN = 'unknown'

DEFAULT_GRACE = datetime.timedelta(minutes=10)
DEFAULT_PENDING_TIMEOUT = datetime.timedelta(days=1)

#: Blazar statuses of a lease or reservation that is over.
BLAZAR_ENDED = frozenset(('terminated', 'deleted', 'error', 'killed'))
#: The flags Blazar's resource monitor sets on a reservation (Blazar's
#: "Monitor states of resources" spec), in the words of that spec.
BLAZAR_DEGRADED = {
    'missing_resources': 'missing_resources (a reserved resource failed and '
                         'Blazar found no other to take its place; the flag '
                         'stays until the owner updates the lease and the '
                         'capacity is there)',
    'resources_changed': 'resources_changed (a reserved resource failed '
                         'after the start and Blazar replaced it; the flag '
                         'never clears)',
}


@dataclasses.dataclass(frozen=True)
class BlazarView:
    """What Blazar's API says (None where :func:`find` has no Blazar).

    ``reservations``: ``{reservation ID: (lease ID, ended)}``;
    ``fingerprints``: the fingerprints (ledger/keys.py) of every lease Blazar
    has; ``leases``: every lease, as :class:`~.lease_findings.Lease` (what the
    ledger is compared with); ``flagged``: ``{reservation ID: (lease ID, lease
    name, flags)}`` of the reservations not over that Blazar's resource monitor
    marked ``missing_resources`` or ``resources_changed`` (Blazar's "Monitor
    states of resources" spec).
    """

    reservations: dict
    fingerprints: frozenset
    lease_ids: frozenset
    flagged: dict = dataclasses.field(default_factory=dict)
    leases: tuple = ()


def blazar_view(leases):
    """A :class:`BlazarView` of Blazar's lease list (``GET /leases``)."""
    reservations = {}
    lease_ids = set()
    flagged = {}
    parsed = []
    for lease in leases:
        lease_id = lease.get('id')
        lease_ids.add(lease_id)
        lease_over = str(lease.get('status') or '').lower() in BLAZAR_ENDED
        for reservation in lease.get('reservations') or ():
            over = lease_over or str(reservation.get(
                'status') or '').lower() in BLAZAR_ENDED
            reservations[reservation.get('id')] = (lease_id, over)
            flags = tuple(flag for flag in BLAZAR_DEGRADED
                          if reservation.get(flag) is True)
            if flags and not over:
                flagged[reservation.get('id')] = (lease_id, lease.get('name'),
                                                  flags)
        read = lease_findings.lease_of(lease)
        if read is not None:
            parsed.append(read)
    return BlazarView(reservations,
                      frozenset(lease.fingerprint for lease in parsed),
                      frozenset(lease_ids), flagged, tuple(parsed))


def find(reservations, entries, state, now, grace=DEFAULT_GRACE,
         pending_timeout=DEFAULT_PENDING_TIMEOUT, blazar=None):
    """Every drift between ``reservations`` (:class:`~.model.Reservation`,
    from the ledger) and ``state`` (:class:`~.model.PlacementState`), the
    stuck ``entries`` (:class:`~.model.Entry`) and, with ``blazar``, every
    drift between those entries and Blazar's leases
    (:mod:`.lease_findings`), sorted by kind."""
    checker = _Checker(reservations, state, now, grace, blazar)
    found = (checker.providers() + checker.classes() +
             checker.inventories() + checker.degraded() +
             _stuck_pending(entries, now, grace, pending_timeout, blazar))
    if blazar is not None:
        found += lease_findings.find(entries, blazar.leases, now,
                                     pending_timeout)
    return sorted(found, key=m.Finding.sort_key)


class _Checker:

    def __init__(self, reservations, state, now, grace, blazar):
        self.state = state
        self.now = now
        self.grace = grace
        self.blazar = blazar
        self.reservations = list(reservations)
        self.by_class = {}
        for r in self.reservations:
            if r.resource_class:
                self.by_class.setdefault(r.resource_class, []).append(r)
        self.blazar_classes = {}
        if blazar is not None:
            for rid, (lease_id, over) in blazar.reservations.items():
                try:
                    name = rsv.reservation_class(rid)
                except ValueError:
                    continue
                self.blazar_classes[name] = (rid, lease_id, over)

    # --- what a class is -------------------------------------------------

    def status(self, name):
        """``(LIVE|ENDED|UNKNOWN, why)`` of a reservation class."""
        known = self.by_class.get(name, [])
        live = [r for r in known if not r.ended(self.now, self.grace)]
        in_blazar = self.blazar_classes.get(name)
        if live:
            return LIVE, None
        if in_blazar is not None and not in_blazar[2]:
            return LIVE, None
        if known:
            r = max(known, key=lambda r: r.end)
            if r.state == models.TERMINATED:
                why = ('its reservation %s (lease %s) ended at %s'
                       % (r.reservation_id, r.lease, _at(r.end)))
            else:
                why = ('its reservation %s (lease %s) ended at %s and '
                       'was not closed' % (r.reservation_id, r.lease,
                                           _at(r.end)))
            return ENDED, why
        if in_blazar is not None:
            return ENDED, ('Blazar says reservation %s (lease %s) is over'
                           % (in_blazar[0], in_blazar[1]))
        if self.blazar is not None:
            return ENDED, 'neither the ledger nor Blazar has its reservation'
        return UNKNOWN, ('no reservation in the ledger has this ID (the '
                         'ledger learns reservation IDs only from Blazar\'s '
                         'updates and ends)')

    def live_reservations(self):
        return [r for r in self.reservations
                if not r.ended(self.now, self.grace)]

    # --- providers -------------------------------------------------------

    def providers(self):
        found = []
        needed = {}
        for r in self.live_reservations():
            if r.resource_type not in (m.HOST, m.INSTANCE):
                continue
            for host in r.hosts:
                needed.setdefault(host, r)
        for host, r in sorted(needed.items()):
            node = self.state.compute_node(host)
            if node is None or self.state.reservation_provider(host):
                continue
            name = rsv.provider_name(host)
            found.append(m.Finding(
                m.MISSING_PROVIDER, 'provider %s' % name,
                'host %s is reserved by reservation %s (lease %s) but has '
                'no reservation provider' % (host, r.reservation_id or '?',
                                             r.lease),
                'create resource provider %s under compute node %s (%s)'
                % (name, host, node.uuid), True,
                m.Action(m.CREATE_PROVIDER, host=host, provider=node.uuid)))
        for rp in sorted(self.state.reservation_providers(),
                         key=lambda p: p.name):
            found.extend(self._orphan_provider(rp))
        return found

    def _orphan_provider(self, rp):
        node = self.state.compute_node(rp.host)
        if node is not None and rp.parent_uuid == node.uuid:
            return []
        if node is None:
            why = 'no compute node provider is named %s' % rp.host
        else:
            parent = self.state.by_uuid.get(rp.parent_uuid)
            why = ('its parent is %s, not compute node %s (%s)'
                   % (parent.name if parent else 'none (it is a root)',
                      rp.host, node.uuid))
        used = sum(rp.usages.values())
        live = sorted(c for c in (rp.inventories or {})
                      if c.startswith(rsv.CLASS_PREFIX) and
                      self.status(c)[0] != ENDED)
        if used:
            return [m.Finding(
                m.ORPHAN_PROVIDER, 'provider %s' % rp.name,
                '%s; it holds allocations of %s' % (why, ', '.join(
                    sorted({c for cs in rp.consumers.values()
                            for c in cs}))),
                'manual: move or delete those servers, then delete the '
                'provider (openstack resource provider delete %s)'
                % rp.uuid, False)]
        if node is not None or live:
            what = ('inventories of live or unknown reservations %s'
                    % ', '.join(live) if live else 'no allocation')
            return [m.Finding(
                m.ORPHAN_PROVIDER, 'provider %s' % rp.name,
                '%s; it holds %s' % (why, what),
                'manual: re-parent it under compute node %s (microversion '
                '1.37) or delete it (openstack resource provider delete %s)'
                % (rp.host, rp.uuid), False)]
        return [m.Finding(
            m.ORPHAN_PROVIDER, 'provider %s' % rp.name,
            '%s; it holds no allocation' % why,
            'delete resource provider %s (%s)' % (rp.name, rp.uuid), True,
            m.Action(m.DELETE_PROVIDER, host=rp.host, provider=rp.uuid))]

    # --- classes ---------------------------------------------------------

    def classes(self):
        found = []
        for name, known in sorted(self.by_class.items()):
            if name in self.state.classes or self.status(name)[0] != LIVE:
                continue
            r = known[0]
            found.append(m.Finding(
                m.MISSING_CLASS, 'class %s' % name,
                'reservation %s (lease %s, until %s) has no resource class'
                % (r.reservation_id, r.lease, _at(r.end)),
                'create resource class %s' % name, True,
                m.Action(m.CREATE_CLASS, resource_class=name)))
        for name in sorted(self.state.classes):
            status, why = self.status(name)
            if status == LIVE:
                continue
            holders = [rp for rp in self.state.reservation_providers()
                       if name in (rp.inventories or {})]
            used = sum(rp.usages.get(name, 0) for rp in holders)
            where = ('; inventory on %s' % ', '.join(
                sorted(rp.name for rp in holders)) if holders else '')
            if status == UNKNOWN:
                found.append(m.Finding(
                    m.ORPHAN_CLASS, 'class %s' % name, why + where,
                    'manual: check in Blazar that no lease has this '
                    'reservation (openstack reservation lease list), then '
                    'delete its inventories and the class (openstack '
                    'resource class delete %s); or configure [blazar] so '
                    'that reconcile asks Blazar' % name, False))
            elif used:
                found.append(m.Finding(
                    m.ORPHAN_CLASS, 'class %s' % name,
                    '%s; %d allocated from it%s' % (why, used, where),
                    'manual: delete the servers allocated from it first '
                    '(see ended_allocations); reconcile --fix then deletes '
                    'the class', False))
            else:
                found.append(m.Finding(
                    m.ORPHAN_CLASS, 'class %s' % name, why + where,
                    'delete resource class %s%s' % (
                        name, ' after removing its inventories'
                        if holders else ''), True,
                    m.Action(m.DELETE_CLASS, resource_class=name)))
        return found

    # --- inventories ------------------------------------------------------

    def inventories(self):
        found = []
        expected = {}   # class -> {host: total}
        reservation = {}
        for r in self.reservations:
            name = r.resource_class
            if name is None or not r.running(self.now, self.grace):
                continue
            reservation[name] = r
            totals = expected.setdefault(name, {})
            for host, count in r.hosts.items():
                totals[host] = totals.get(host, 0) + count
        for name, totals in sorted(expected.items()):
            r = reservation[name]
            for host, total in sorted(totals.items()):
                found.extend(self._expected_inventory(r, name, host, total))
        for rp in sorted(self.state.reservation_providers(),
                         key=lambda p: p.name):
            for name in sorted(rp.inventories or {}):
                if not name.startswith(rsv.CLASS_PREFIX):
                    continue
                used = rp.usages.get(name, 0)
                subject = '%s / %s' % (rp.name, name)
                status, why = self.status(name)
                if status == ENDED:
                    found.append(self._ended(rp, name, used, why))
                elif name in expected and rp.host not in expected[name]:
                    r = reservation[name]
                    reason = ('reservation %s (lease %s) has no allocation '
                              'on host %s, yet its provider has %d of it'
                              % (r.reservation_id, r.lease, rp.host,
                                 rp.inventories[name].get('total', 0)))
                    if used:
                        found.append(m.Finding(
                            m.INVENTORY_MISMATCH, subject,
                            '%s, %d allocated' % (reason, used),
                            'manual: delete or move the servers of %s, '
                            'then reconcile --fix removes the inventory'
                            % ', '.join(rp.consumers.get(name, [])), False))
                    else:
                        found.append(m.Finding(
                            m.INVENTORY_MISMATCH, subject, reason,
                            'remove the inventory of %s from %s'
                            % (name, rp.name), True,
                            m.Action(m.REMOVE_INVENTORY, host=rp.host,
                                     provider=rp.uuid,
                                     resource_class=name)))
        return found

    def _expected_inventory(self, r, name, host, total):
        node = self.state.compute_node(host)
        if node is None:
            return []   # degraded: reported there
        subject = '%s / %s' % (rsv.provider_name(host), name)
        rp = self.state.reservation_provider(host)
        inventory = (rp.inventories or {}).get(name) if rp else None
        action = m.Action(m.SET_INVENTORY, host=host,
                          provider=rp.uuid if rp else None,
                          resource_class=name, total=total)
        what = ('reservation %s (lease %s) holds %d instance(s) on host %s'
                % (r.reservation_id, r.lease, total, host))
        if inventory is None:
            return [m.Finding(
                m.INVENTORY_MISMATCH, subject,
                '%s since %s, but %s has no inventory of it' % (
                    what, _at(r.start), rsv.provider_name(host)),
                'set the inventory of %s on %s to total %d'
                % (name, rsv.provider_name(host), total), True, action)]
        if inventory.get('total') == total:
            return []
        used = rp.usages.get(name, 0)
        reason = '%s, but the inventory total is %s' % (
            what, inventory.get('total'))
        if used > total:
            return [m.Finding(
                m.INVENTORY_MISMATCH, subject,
                '%s and %d are allocated' % (reason, used),
                'manual: %d servers use it, more than reserved; delete %d '
                'of them (consumers %s), then reconcile --fix' % (
                    used, used - total,
                    ', '.join(rp.consumers.get(name, []))), False)]
        return [m.Finding(
            m.INVENTORY_MISMATCH, subject, reason,
            'set the inventory total of %s on %s to %d'
            % (name, rp.name, total), True, action)]

    def _ended(self, rp, name, used, why):
        subject = '%s / %s' % (rp.name, name)
        if used:
            return m.Finding(
                m.ENDED_ALLOCATIONS, subject,
                '%s, but %d unit(s) are still allocated, to consumers %s' % (
                    why, used, ', '.join(rp.consumers.get(name, []))),
                'manual: delete those servers (or their allocations: '
                'openstack resource provider allocation delete); '
                'reconcile --fix then removes the inventory and the class',
                False)
        return m.Finding(
            m.ENDED_INVENTORY, subject,
            '%s; %s still has an inventory of total %s' % (
                why, rp.name, rp.inventories[name].get('total')),
            'remove the inventory of %s from %s' % (name, rp.name), True,
            m.Action(m.REMOVE_INVENTORY, host=rp.host, provider=rp.uuid,
                     resource_class=name))

    # --- degraded ---------------------------------------------------------

    def degraded(self):
        found = []
        seen = set()
        for r in self.reservations:
            if r.state == models.TERMINATED or self.now >= r.end:
                continue
            for host in sorted(r.hosts):
                node = self.state.compute_node(host)
                if node is None:
                    trouble = ('the compute node of host %s is gone from '
                               'Placement' % host)
                elif node.uuid in self.state.disabled:
                    trouble = ('compute node %s is disabled (%s)'
                               % (host, m.DISABLED_TRAIT))
                else:
                    continue
                if r.started(self.now):
                    phase = ('resources changed after the start (Blazar\'s '
                             '"Monitor states of resources", case 2): the '
                             'lease is degraded')
                else:
                    phase = ('missing resources before the start (Blazar\'s '
                             '"Monitor states of resources", case 1): '
                             'Blazar must reserve another host')
                found.append(m.Finding(
                    m.DEGRADED, 'host %s / reservation %s (lease %s)' % (
                        host, r.reservation_id or '?', r.lease),
                    '%s; %s' % (trouble, phase),
                    'manual: bring host %s back (openstack compute service '
                    'set --enable), or update the lease so that Blazar '
                    'reallocates it (openstack reservation lease set)'
                    % host, False))
                seen.add(r.reservation_id)
        if self.blazar is not None:
            found.extend(self._flagged_by_blazar(seen))
        return found

    def _flagged_by_blazar(self, seen):
        """What Blazar's monitor flagged and Placement did not show."""
        found = []
        for rid, (lease_id, name, flags) in sorted(
                self.blazar.flagged.items()):
            if rid in seen:
                continue
            found.append(m.Finding(
                m.DEGRADED, 'reservation %s (lease %s)' % (
                    rid, lease_id or name),
                'Blazar\'s resource monitor marks it %s (Blazar\'s "Monitor '
                'states of resources" spec)'
                % ' and '.join(BLAZAR_DEGRADED[f] for f in flags),
                'manual: openstack reservation lease show %s; bring the '
                'failed host back or add capacity, then have the owner '
                'update the lease (openstack reservation lease set); '
                'servers on a replaced host must be recreated'
                % (lease_id or name), False))
        return found


def _stuck_pending(entries, now, grace, pending_timeout, blazar):
    """Entries still pending, without a lease ID, ``pending_timeout`` after
    their start, when Blazar cannot be asked.

    The ledger records an entry at check-create, before Blazar creates the
    lease, and learns the lease ID from Blazar's notifications, a later
    update or the end. So an entry without an ID is either a lease Blazar
    never created (it failed after our check: the entry holds quota and
    credits for nothing) or a lease whose notifications were lost. Only
    Blazar can tell:

    * with ``[blazar]``: :mod:`.lease_findings` looks for the entry's
      fingerprint and shape in Blazar's lease list, and abandons it when
      no lease has either (nothing is found here);
    * without it, an entry past its end (plus ``grace``) is **terminated**
      at its end (safe: it counts toward nothing once ended; no refund,
      since whether one is owed cannot be known); one still inside its
      window is reported only.
    """
    if blazar is not None:
        return []
    found = []
    for e in entries:
        if (e.state != models.PENDING or e.lease_id or
                now < e.start + pending_timeout):
            continue
        subject = 'ledger entry %d (%s, project %s)' % (
            e.id, e.name or e.provisional_key[:12], e.project_id)
        since = 'pending since %s without a lease ID' % _at(e.start)
        if now >= e.end + grace:
            found.append(m.Finding(
                m.STUCK_PENDING, subject,
                '%s; it ended at %s and Blazar never sent its end: either '
                'Blazar never created it or its on-end was lost' % (
                    since, _at(e.end)),
                'mark it terminated at its end (no refund: whether one is '
                'owed cannot be told without Blazar)', True,
                m.Action(m.CLOSE_ENTRY, entry_id=e.id,
                         state=models.TERMINATED, at=e.end)))
        else:
            found.append(m.Finding(
                m.STUCK_PENDING, subject,
                '%s until %s: Blazar may never have created it, or it is a '
                'lease never updated (the ledger learns IDs only from '
                'updates and ends)' % (since, _at(e.end)),
                'manual: configure [blazar] so that reconcile asks Blazar, '
                'or check "openstack reservation lease list --project %s"'
                % e.project_id, False))
    return found


def _at(value):
    return value.strftime('%Y-%m-%d %H:%M')
