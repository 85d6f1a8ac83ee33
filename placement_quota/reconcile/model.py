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
"""The two sides of a reconciliation, and what differs between them.

Pure data: nothing here does I/O.

* :class:`Reservation` -- one reservation as the ledger (or Blazar) says
  it is: its lease, its window, and how many allocations it has on each
  hypervisor host (for ``virtual:instance``: the instances reserved
  there, so the ``total`` of its class on that host's reservation
  provider, Blazar's "Placement API support for instance reservation" spec).
* :class:`Provider` and :class:`PlacementState` -- what Placement holds.
* :class:`Finding` -- one drift, typed, with its reason and its fix;
  :class:`Action` is the machine form of that fix.
"""

import dataclasses
import datetime
from typing import Mapping, Optional

from placement_quota.ledger import models
from placement_quota.placement import reservations as rsv

HOST = 'physical:host'
INSTANCE = 'virtual:instance'

#: Kinds of finding, in the order they are reported.
MISSING_PROVIDER = 'missing_provider'
ORPHAN_PROVIDER = 'orphan_provider'
MISSING_CLASS = 'missing_class'
ORPHAN_CLASS = 'orphan_class'
INVENTORY_MISMATCH = 'inventory_mismatch'
ENDED_INVENTORY = 'ended_inventory'
ENDED_ALLOCATIONS = 'ended_allocations'
DEGRADED = 'degraded'
STUCK_PENDING = 'stuck_pending'
#: The ledger against Blazar's lease list (see :mod:`.lease_findings`).
UNBOUND_ENTRY = 'unbound_entry'
LEASE_WINDOW = 'lease_window'
LEASE_STATE = 'lease_state'
GONE_LEASE = 'gone_lease'
UNKNOWN_LEASE = 'unknown_lease'
KINDS = (MISSING_PROVIDER, ORPHAN_PROVIDER, MISSING_CLASS, ORPHAN_CLASS,
         INVENTORY_MISMATCH, ENDED_INVENTORY, ENDED_ALLOCATIONS, DEGRADED,
         STUCK_PENDING, UNBOUND_ENTRY, LEASE_WINDOW, LEASE_STATE,
         GONE_LEASE, UNKNOWN_LEASE)

#: Trait nova-compute sets on the compute node of a disabled service.
DISABLED_TRAIT = 'COMPUTE_STATUS_DISABLED'


@dataclasses.dataclass(frozen=True)
class Reservation:
    """One reservation of one ledger entry."""

    #: Blazar's reservation UUID; None while the ledger has not seen it (a
    #: check-create carries no IDs, Blazar's "Flexible Reservation Usage
    #: Enforcement" spec).
    reservation_id: Optional[str]
    resource_type: str
    lease_id: Optional[str]
    lease_name: Optional[str]
    project_id: str
    entry_id: Optional[int]
    start: datetime.datetime
    #: The effective end (earlier than the end date after an early end).
    end: datetime.datetime
    #: The state recorded in the ledger (pending, active, terminated).
    state: str
    #: ``{hypervisor host: allocations on it}``.
    hosts: Mapping[str, int] = dataclasses.field(default_factory=dict)

    @property
    def resource_class(self):
        """``CUSTOM_RESERVATION_<ID>`` of an instance reservation whose ID
        is known, else None."""
        if self.resource_type != INSTANCE or not self.reservation_id:
            return None
        try:
            return rsv.reservation_class(self.reservation_id)
        except ValueError:
            return None

    @property
    def lease(self):
        """How the lease is named in messages."""
        return self.lease_id or self.lease_name or 'entry %s' % self.entry_id

    def ended(self, now, grace):
        """Over for good: closed in the ledger, or past its end by more
        than ``grace`` (Blazar may end a lease a little late)."""
        return (self.state == models.TERMINATED or
                now >= self.end + grace)

    def running(self, now, grace):
        """Started more than ``grace`` ago and not at its end: Blazar has
        had time to write its inventories."""
        return (self.state != models.TERMINATED and
                self.start + grace <= now < self.end)

    def started(self, now):
        return now >= self.start


@dataclasses.dataclass(frozen=True)
class Entry:
    """A ledger entry, as the stuck-pending check and the comparison with
    Blazar's lease list read it."""

    id: int
    project_id: str
    lease_id: Optional[str]
    provisional_key: str
    name: Optional[str]
    state: str
    start: datetime.datetime
    #: The effective end (earlier than ``end_date`` after an early end).
    end: datetime.datetime
    charged: int = 0
    #: The shape of the lease (ledger/keys.py), its end date, when the
    #: entry was recorded, and its price per hour (micro-credits).
    shape_key: Optional[str] = None
    end_date: Optional[datetime.datetime] = None
    created_at: Optional[datetime.datetime] = None
    hourly_rate: int = 0

    @property
    def open(self):
        """Pending or active: not closed, denied or abandoned."""
        return self.state in (models.PENDING, models.ACTIVE)


def reservations_of(row):
    """The :class:`Reservation` list of one ledger row (``leases``
    table); a denied or abandoned entry reserves nothing."""
    if row.state in models.NOT_COUNTED:
        return []
    body = row.lease if isinstance(row.lease, Mapping) else {}
    found = []
    for value in body.get('reservations') or ():
        if not isinstance(value, Mapping):
            continue
        hosts = {}
        for allocation in value.get('allocations') or ():
            name = (allocation.get('hypervisor_hostname')
                    if isinstance(allocation, Mapping) else None)
            if isinstance(name, str) and name:
                hosts[name] = hosts.get(name, 0) + 1
        rid = value.get('id')
        found.append(Reservation(
            reservation_id=rid if isinstance(rid, str) and rid else None,
            resource_type=str(value.get('resource_type')),
            lease_id=row.lease_id, lease_name=row.name,
            project_id=row.project_id, entry_id=row.id,
            start=row.start_date, end=row.effective_end, state=row.state,
            hosts=hosts))
    return found


def entry_of(row):
    return Entry(id=row.id, project_id=row.project_id, lease_id=row.lease_id,
                 provisional_key=row.provisional_key, name=row.name,
                 state=row.state, start=row.start_date,
                 end=row.effective_end, charged=row.charged or 0,
                 shape_key=row.shape_key, end_date=row.end_date,
                 created_at=row.created_at,
                 hourly_rate=row.hourly_rate or 0)


@dataclasses.dataclass
class Provider:
    """One resource provider as Placement lists it, plus (for reservation
    providers) what was read of its inventories and usage."""

    uuid: str
    name: str
    parent_uuid: Optional[str]
    generation: int
    #: ``{class: inventory}``; None when not read (not a reservation
    #: provider).
    inventories: Optional[dict] = None
    #: ``{class: used}`` (classes with no allocation left out).
    usages: dict = dataclasses.field(default_factory=dict)
    #: ``{class: [consumer UUID, ...]}``.
    consumers: dict = dataclasses.field(default_factory=dict)

    @property
    def is_reservation_provider(self):
        return self.name.startswith(rsv.PROVIDER_PREFIX)

    @property
    def host(self):
        """The hypervisor host a reservation provider is named after."""
        return self.name[len(rsv.PROVIDER_PREFIX):]


@dataclasses.dataclass
class PlacementState:
    """What Placement holds, as read by :mod:`.readers`."""

    #: ``{name: Provider}`` of every provider (names are unique).
    providers: dict
    #: The ``CUSTOM_RESERVATION_*`` resource classes.
    classes: set
    #: UUIDs of the providers with trait ``COMPUTE_STATUS_DISABLED``.
    disabled: set = dataclasses.field(default_factory=set)
    #: Placement calls the read took.
    calls: int = 0

    def __post_init__(self):
        self.by_uuid = {p.uuid: p for p in self.providers.values()}

    def compute_node(self, host):
        return self.providers.get(host)

    def reservation_provider(self, host):
        return self.providers.get(rsv.provider_name(host))

    def reservation_providers(self):
        return [p for p in self.providers.values()
                if p.is_reservation_provider]


@dataclasses.dataclass(frozen=True)
class Action:
    """The machine form of a fix, applied by :mod:`.repair`.

    ``op`` is one of :data:`OPS`; the other fields are those it needs.
    """

    op: str
    host: Optional[str] = None
    provider: Optional[str] = None
    resource_class: Optional[str] = None
    total: Optional[int] = None
    entry_id: Optional[int] = None
    state: Optional[str] = None
    refund: int = 0
    #: The ledger fixes against Blazar: the lease ID the entry is (to be)
    #: bound to, the time to close it at, the dates to move it to and the
    #: dates it had when read (a fix re-checks them under the lock).
    lease_id: Optional[str] = None
    at: Optional[datetime.datetime] = None
    start: Optional[datetime.datetime] = None
    end: Optional[datetime.datetime] = None
    seen: Optional[tuple] = None


CREATE_PROVIDER = 'create_provider'
CREATE_CLASS = 'create_class'
SET_INVENTORY = 'set_inventory'
REMOVE_INVENTORY = 'remove_inventory'
DELETE_CLASS = 'delete_class'
DELETE_PROVIDER = 'delete_provider'
CLOSE_ENTRY = 'close_entry'
BIND_ENTRY = 'bind_entry'
SET_WINDOW = 'set_entry_window'
START_ENTRY = 'start_entry'
END_ENTRY = 'end_entry'
ABANDON_ENTRY = 'abandon_entry'
#: The operations on the ledger (:mod:`.ledger_repair`).
LEDGER_OPS = (CLOSE_ENTRY, BIND_ENTRY, SET_WINDOW, START_ENTRY, END_ENTRY,
              ABANDON_ENTRY)
#: Operations in the order they are applied: providers and classes first
#: (inventories need them), removals before the class and provider
#: deletions they make possible, the ledger last: an entry is bound to its
#: lease before its dates follow Blazar's, and its dates before it is
#: started or closed (so the refund is of the right window).
OPS = (CREATE_PROVIDER, CREATE_CLASS, SET_INVENTORY, REMOVE_INVENTORY,
       DELETE_CLASS, DELETE_PROVIDER) + LEDGER_OPS


@dataclasses.dataclass(frozen=True)
class Finding:
    """One drift between the ledger and Placement.

    ``safe``: ``--fix`` applies ``action`` (never set on an unsafe one's
    behalf); an unsafe finding says in ``fix`` what an operator must do.
    """

    kind: str
    subject: str
    reason: str
    fix: str
    safe: bool
    action: Optional[Action] = dataclasses.field(default=None,
                                                 compare=False)

    def as_dict(self):
        return {'kind': self.kind, 'subject': self.subject,
                'reason': self.reason, 'fix': self.fix, 'safe': self.safe}

    def sort_key(self):
        return (KINDS.index(self.kind), self.subject)


def state_of(reservation, now):
    """pending, active or terminated at ``now``."""
    if reservation.state == models.TERMINATED or now >= reservation.end:
        return models.TERMINATED
    if now < reservation.start:
        return models.PENDING
    return models.ACTIVE


def allocations(reservations, now, host=None, lease=None,
                include_ended=False):
    """Which reservations use which hosts (Blazar's "Resource Allocation API"
    spec): one ``dict`` per (host, reservation), sorted by host then start.

    ``host`` and ``lease`` (an ID or a name) filter; ended reservations
    are left out unless ``include_ended``.
    """
    rows = []
    for r in reservations:
        state = state_of(r, now)
        if state == models.TERMINATED and not include_ended:
            continue
        if lease is not None and lease not in (r.lease_id, r.lease_name):
            continue
        for name, count in r.hosts.items():
            if host is not None and name != host:
                continue
            rows.append({'host': name, 'reservation': r.reservation_id,
                         'type': r.resource_type, 'lease': r.lease_id,
                         'lease_name': r.lease_name,
                         'project': r.project_id, 'allocations': count,
                         'start': r.start, 'end': r.end, 'state': state})
    rows.sort(key=lambda row: (row['host'], row['start'],
                               row['reservation'] or ''))
    return rows
