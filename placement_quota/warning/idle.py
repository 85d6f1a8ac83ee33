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
"""Idle reservations: started leases whose reserved providers in Placement
carry no allocation (instances never launched, or deleted).

Which providers a lease reserves, from its ledger entry (the ``lease``
Blazar sent, ``reservations``):

* an instance reservation (``virtual:instance``, ``flavor:instance``) with
  its ID: the providers with an inventory of its class
  ``CUSTOM_RESERVATION_<ID>`` (placement/reservations.py). It is idle when
  nothing uses that class, and those providers hold the reservation's
  whole ``amount``: a provider whose inventory is all used is not listed
  by Placement's candidates, so fewer instances found than reserved means
  some may be running -- not idle;
* a host reservation (``physical:host``): the compute node providers named
  after the hosts Blazar chose (``allocations``, ``hypervisor_hostname``).
  It is idle when they hold no allocation at all.

A lease is idle when each of its reservations is; busy when one is not; a
reservation of another type, or one whose providers cannot be told (no
ID, no hosts, no inventory written yet), makes it neither: it is never
reported, nor ended.

Placement, in as few calls as its API allows (concurrently, at most
``[placement] max_concurrency`` at a time):

* one ``GET /allocation_candidates?resources=<class>:1`` per instance
  reservation: every provider with room in the class, with its capacity
  and usage (``provider_summaries``);
* one ``GET /resource_providers/<uuid>/usages`` per reserved host;
* ``GET /resource_providers`` once (names of providers, kept between
  scans; read again when a name or UUID is not in it).

Placement keeps no history, so "idle since" is observed: each scan
records in the ledger table ``idle_watch`` the leases it finds idle (since
now, or since the lease's start when it started less than one
``[warnings] scan_interval`` ago) and forgets the others. A lease is
reported once it has been idle ``[warnings] idle_after`` seconds.

Ending (``[warnings] end_idle_after``): Placement is asked again right
before (and the project's usage of each reservation class); a lease whose
providers hold any allocation is never ended. Blazar ends it: its end date
is set to ``now`` (``PUT /leases/<id>``, which stock Blazar takes as the
current minute; in the lease's first minute, the next minute: see
:func:`blazar_end`), as an update, not a delete: the lease keeps its record
in Blazar, which ends it at its next event pass (``lease.event.end_lease``,
``on_end``). The ledger refunds the unused part through the usual path:
Blazar's check-update moves the entry's end (refunding the rest), the end
notification closes it.
"""

import concurrent.futures
import dataclasses
import datetime
import threading
import urllib.parse

from blazarclient import exception as blazar_exceptions
from keystoneauth1 import exceptions as ks_exceptions
from oslo_log import log as logging
import sqlalchemy as sa

from placement_quota.ledger.db import locks
from placement_quota.ledger import models
from placement_quota.ledger import store
from placement_quota.placement import client as placement_client
from placement_quota.placement import reservations as rsv
from placement_quota.reconcile import readers
from placement_quota.warning import model

LOG = logging.getLogger(__name__)

HOST = 'physical:host'
#: Blazar's API date format.
BLAZAR_DATE_FORMAT = '%Y-%m-%d %H:%M'
MINUTE = datetime.timedelta(minutes=1)
#: Reservation types whose instances use a ``CUSTOM_RESERVATION_<ID>``
#: class.
CLASS_TYPES = ('virtual:instance', 'flavor:instance')

IDLE = 'idle'
BUSY = 'busy'
UNKNOWN = 'unknown'


@dataclasses.dataclass(frozen=True)
class IdleLease:
    """A started lease whose reserved providers carry no allocation."""

    row: int
    project_id: str
    lease_id: str
    name: str
    user_id: str
    start_date: datetime.datetime
    end_date: datetime.datetime
    #: Names of the hosts of its reserved providers, sorted.
    hosts: tuple
    idle_since: datetime.datetime
    #: Credits it would get back if it ended now: the unused part of its
    #: charge at its rate.
    credits_at_stake: float
    busy: bool = False


@dataclasses.dataclass(frozen=True)
class _Check:
    """What one reservation needs from Placement: its class (and amount),
    or its hosts."""

    resource_class: str = None
    amount: int = 0
    hosts: tuple = ()


class _Lease:
    """A started ledger entry and its checks (None: cannot be told)."""

    def __init__(self, row):
        self.row = row
        self.checks, self.why = _checks(row)


def _checks(row):
    """``(checks, None)`` of a ledger row, or ``(None, reason)``."""
    body = row.lease if isinstance(row.lease, dict) else {}
    found = []
    reservations = body.get('reservations') or []
    if not reservations:
        return None, 'it has no reservation'
    for value in reservations:
        if not isinstance(value, dict):
            return None, 'a reservation is not an object'
        rtype = value.get('resource_type')
        if rtype in CLASS_TYPES:
            rid = value.get('id')
            amount = value.get('amount')
            if not isinstance(rid, str) or not rid:
                return None, ('its %s reservation has no ID in the ledger '
                              'yet' % rtype)
            try:
                name = rsv.reservation_class(rid)
            except ValueError as exc:
                return None, str(exc)
            if isinstance(amount, bool) or not isinstance(amount, int) or \
                    amount < 1:
                return None, ('its reservation %s has no amount of '
                              'instances (%r)' % (rid, amount))
            found.append(_Check(resource_class=name, amount=amount))
        elif rtype == HOST:
            hosts = sorted({a.get('hypervisor_hostname')
                            for a in value.get('allocations') or ()
                            if isinstance(a, dict) and
                            isinstance(a.get('hypervisor_hostname'), str) and
                            a.get('hypervisor_hostname')})
            if not hosts:
                return None, 'its host reservation names no host'
            found.append(_Check(hosts=tuple(hosts)))
        else:
            return None, 'its reservation type %r is not looked at' % rtype
    return found, None


@dataclasses.dataclass
class _ClassState:
    """What Placement's candidates show of one class."""

    capacity: int = 0
    used: int = 0
    providers: tuple = ()


class _Probe:
    """One round of Placement reads (see the module's docstring)."""

    def __init__(self, finder):
        self.finder = finder
        self.client = finder.placement
        self.classes = {}
        self.hosts = {}   # host -> total usage, None when not found

    def read(self, leases):
        classes = sorted({c.resource_class for lease in leases
                          for c in lease.checks if c.resource_class})
        hosts = sorted({h for lease in leases for c in lease.checks
                        for h in c.hosts})
        uuids = self.finder.uuids_of(hosts) if hosts else {}
        for host in hosts:
            if host not in uuids:
                self.hosts[host] = None
        with concurrent.futures.ThreadPoolExecutor(
                self.finder.max_concurrency) as pool:
            futures = [pool.submit(self._read_class, name)
                       for name in classes]
            futures += [pool.submit(self._read_host, host, uuids[host])
                        for host in hosts if host in uuids]
            for future in futures:
                future.result()

    def _read_class(self, name):
        url = '/allocation_candidates?%s' % urllib.parse.urlencode(
            {'resources': '%s:1' % name})
        try:
            body = self.client.get(url)
        except placement_client.PlacementError as exc:
            if isinstance(exc, placement_client.Unavailable) or \
                    exc.status not in (400, 404):
                raise
            # The class is gone, or never was: no inventory of it.
            LOG.debug('No candidates of %s: %s', name, exc)
            body = {}
        state = _ClassState()
        providers = []
        for uuid, summary in sorted(
                (body.get('provider_summaries') or {}).items()):
            found = (summary.get('resources') or {}).get(name)
            if found is None:
                continue
            state.capacity += int(found.get('capacity') or 0)
            state.used += int(found.get('used') or 0)
            providers.append(uuid)
        state.providers = tuple(providers)
        self.classes[name] = state

    def _read_host(self, host, uuid):
        try:
            usages = self.client.get('/resource_providers/%s/usages'
                                     % uuid)['usages']
        except placement_client.NotFound:
            self.finder.forget(host)
            self.hosts[host] = None
            return
        self.hosts[host] = sum(int(v or 0) for v in usages.values())

    def verdict(self, lease):
        """``(IDLE | BUSY | UNKNOWN, hosts)`` of a lease with checks."""
        verdicts, hosts = [], set()
        for check in lease.checks:
            if check.resource_class:
                state = self.classes[check.resource_class]
                hosts.update(self.finder.host_of(uuid)
                             for uuid in state.providers)
                if state.used:
                    verdicts.append(BUSY)
                elif state.capacity < check.amount:
                    verdicts.append(UNKNOWN)
                else:
                    verdicts.append(IDLE)
            else:
                hosts.update(check.hosts)
                used = [self.hosts[h] for h in check.hosts]
                if any(u for u in used if u is not None):
                    verdicts.append(BUSY)
                elif any(u is None for u in used):
                    verdicts.append(UNKNOWN)
                else:
                    verdicts.append(IDLE)
        if BUSY in verdicts:
            return BUSY, ()
        if UNKNOWN in verdicts:
            return UNKNOWN, ()
        return IDLE, tuple(sorted(h for h in hosts if h))


class IdleFinder:
    """Finds idle reservations (see the module's docstring) in ``ledger``
    (a :class:`~placement_quota.ledger.store.Ledger`) and
    ``placement_client`` (a :class:`~placement_quota.placement.client.
    PlacementClient`), with ``conf``'s ``[warnings]`` and ``[placement]
    max_concurrency``."""

    def __init__(self, conf, ledger, placement_client):
        self.conf = conf
        self.group = conf.warnings
        self.ledger = ledger
        self.placement = placement_client
        self.max_concurrency = max(1, conf.placement.max_concurrency)
        self._lock = threading.Lock()
        self._by_name = None   # provider name -> uuid
        self._by_uuid = {}

    # --- provider names ---------------------------------------------------

    def _list_providers(self):
        listed = self.placement.get('/resource_providers')[
            'resource_providers']
        with self._lock:
            self._by_name = {rp['name']: rp['uuid'] for rp in listed}
            self._by_uuid = {rp['uuid']: rp['name'] for rp in listed}

    def uuids_of(self, hosts):
        """``{host: compute node provider UUID}`` of the hosts Placement
        has (listed once, again when one is missing)."""
        if self._by_name is None or any(h not in self._by_name
                                        for h in hosts):
            self._list_providers()
        return {h: self._by_name[h] for h in hosts if h in self._by_name}

    def forget(self, host):
        with self._lock:
            if self._by_name is not None:
                self._by_name.pop(host, None)

    def host_of(self, uuid):
        """The host a provider is of: its name, less the reservation
        provider's prefix (None when Placement does not list it)."""
        if uuid not in self._by_uuid:
            self._list_providers()
        name = self._by_uuid.get(uuid)
        if name and name.startswith(rsv.PROVIDER_PREFIX):
            return name[len(rsv.PROVIDER_PREFIX):]
        return name

    # --- finding -------------------------------------------------------

    def _started(self, now, rows=None):
        t = models.leases
        query = sa.select(
            t.c.id, t.c.project_id, t.c.lease_id, t.c.name, t.c.user_id,
            t.c.start_date, t.c.end_date, t.c.effective_end, t.c.state,
            t.c.lease, t.c.hourly_rate, t.c.charged).where(
                t.c.state.in_((models.PENDING, models.ACTIVE)),
                t.c.start_date <= now, t.c.effective_end > now)
        if rows is not None:
            query = query.where(t.c.id.in_(sorted(rows)))
        with self.ledger.reader() as reader:
            return [_Lease(row) for row in
                    reader.connection.execute(query.order_by(t.c.id))]

    def _verdicts(self, leases):
        """``{row id: (verdict, hosts)}`` of ``leases``."""
        told = [lease for lease in leases if lease.checks is not None]
        for lease in leases:
            if lease.checks is None:
                LOG.debug('Ledger entry %d: idle or not cannot be told: %s',
                          lease.row.id, lease.why)
        probe = _Probe(self)
        probe.read(told)
        found = {lease.row.id: (UNKNOWN, ()) for lease in leases}
        for lease in told:
            found[lease.row.id] = probe.verdict(lease)
        return found, probe

    def find(self, now, record=True, idle_after=None):
        """The leases idle at ``now`` for at least ``idle_after`` seconds
        (default ``[warnings] idle_after``), by row. With ``record``
        (the default), this scan's observations are kept in
        ``idle_watch``; without, nothing is written (a preview).

        :raises placement_client.PlacementError: Placement cannot be read.
        """
        if idle_after is None:
            idle_after = self.group.idle_after
        leases = self._started(now)
        verdicts, _ = self._verdicts(leases)
        idle = {lease.row.id: lease for lease in leases
                if verdicts[lease.row.id][0] == IDLE}
        since = self._watch(idle, now, record)
        found = []
        for row_id, lease in sorted(idle.items()):
            if (now - since[row_id]).total_seconds() < idle_after:
                continue
            found.append(_idle_lease(lease.row, verdicts[row_id][1],
                                     since[row_id], now))
        return found

    def _watch(self, idle, now, record):
        """``{row: idle_since}`` of the idle rows; with ``record`` the
        watch table keeps exactly them."""
        t = models.idle_watch
        interval = datetime.timedelta(seconds=self.group.scan_interval)

        def first_seen(lease):
            start = lease.row.start_date
            return start if now - start < interval else now

        ids = sorted(idle)
        if not record:
            with self.ledger.reader() as reader:
                known = _since(reader.connection, ids) if ids else {}
            return {i: known.get(i) or first_seen(idle[i]) for i in ids}
        with self.ledger.transaction([models.IDLE_WATCH_LOCK]) as txn:
            connection = txn.connection
            if ids:
                connection.execute(t.delete().where(
                    t.c.lease_row.notin_(ids)))
            else:
                connection.execute(t.delete())
            if not ids:
                return {}
            known = _since(connection, ids)
            new = [{'lease_row': i, 'idle_since': first_seen(idle[i]),
                    'checked_at': now} for i in ids if i not in known]
            if new:
                connection.execute(locks.insert_ignoring_duplicates(
                    self.ledger.dialect, t), new)
            connection.execute(t.update().where(
                t.c.lease_row.in_(ids)).values(checked_at=now))
            return _since(connection, ids)

    # --- warnings ------------------------------------------------------

    def ends_at(self, idle_lease):
        """When the lease will be ended for being idle (None: never, or
        not before its own end)."""
        after = self.group.end_idle_after
        if not after:
            return None
        at = idle_lease.idle_since + datetime.timedelta(seconds=after)
        return at if at < idle_lease.end_date else None

    def notices(self, idle_leases, now):
        """One IDLE warning per idle lease (per period of idleness)."""
        found = []
        for lease in idle_leases:
            facts = _facts(lease)
            facts.update(credits_at_stake=lease.credits_at_stake,
                         ends_at=model.iso(self.ends_at(lease)))
            found.append(_notice(model.IDLE, model.key(
                model.IDLE, lease.row, lease.idle_since), lease, now, facts))
        return found

    def end_idle(self, idle_leases, now, blazar):
        """End, through ``blazar`` (a python-blazarclient ``Client``), the
        leases idle for at least ``[warnings] end_idle_after`` (0: none)
        that Placement, asked again now, still shows idle; one IDLE_ENDED
        warning per lease ended. A lease Blazar does not end is logged and
        left for the next scan."""
        after = self.group.end_idle_after
        if not after:
            return []
        due = {lease.row: lease for lease in idle_leases
               if (now - lease.idle_since).total_seconds() >= after}
        if not due:
            return []
        fresh = self._started(now, rows=due)
        self._by_name = None   # re-read the providers too
        verdicts, probe = self._verdicts(fresh)
        ended = []
        for lease in fresh:
            row = lease.row
            verdict = verdicts[row.id][0]
            try:
                if verdict == IDLE and self._project_uses(lease):
                    verdict = BUSY
            except placement_client.PlacementError as exc:
                LOG.warning('Lease %s (ledger entry %d) not ended: its '
                            'project\'s usages cannot be read: %s',
                            row.lease_id or row.name, row.id, exc)
                continue
            if verdict != IDLE:
                LOG.info('Lease %s (ledger entry %d) is %s now: not ended.',
                         row.lease_id or row.name, row.id, verdict)
                continue
            if not row.lease_id:
                LOG.warning('Idle ledger entry %d is bound to no Blazar '
                            'lease: it cannot be ended.', row.id)
                continue
            if not self._end(blazar, row, now):
                continue
            _, at = blazar_end(now, row.start_date)
            facts = _facts(due[row.id])
            facts.update(ended_at=model.iso(at),
                         refunded=store.from_micro(_unused(row, at)))
            ended.append(_notice(model.IDLE_ENDED, model.key(
                model.IDLE_ENDED, row.id), due[row.id], now, facts))
        return ended

    def _project_uses(self, lease):
        """Whether the lease's project uses any of its reservation
        classes, wherever (a second look, before ending it)."""
        classes = [c.resource_class for c in lease.checks
                   if c.resource_class]
        if not classes:
            return False
        usages = self.placement.get('/usages?%s' % urllib.parse.urlencode(
            {'project_id': lease.row.project_id}))['usages']
        if usages and all(isinstance(v, dict) for v in usages.values()):
            # Grouped by consumer type (microversion 1.38 and later).
            used = {}
            for by_type in usages.values():
                for name, value in by_type.items():
                    if name != 'consumer_count':
                        used[name] = used.get(name, 0) + value
            usages = used
        return any(usages.get(name) for name in classes)

    def _end(self, blazar, row, now):
        """Tell Blazar to end the lease now; whether it took it."""
        end, _ = blazar_end(now, row.start_date)
        try:
            blazar.lease.request_manager.put(
                '/leases/%s' % row.lease_id, body={'end_date': end})
        except (blazar_exceptions.BlazarClientException,
                ks_exceptions.ClientException) as exc:
            LOG.error('Blazar did not end idle lease %s (ledger entry '
                      '%d): %s', row.lease_id, row.id, exc)
            return False
        LOG.warning('Ended idle lease %s (%s) of project %s through '
                    'Blazar (end date %s).', row.lease_id, row.name,
                    row.project_id, end)
        return True


def obsolete(ledger, notice):
    """Why an IDLE warning recorded earlier is no longer true when it is
    about to be sent (None: it is): its lease ended, or a scan since found
    it busy (``idle_watch`` no longer holds that period of idleness)."""
    row = notice.facts.get('lease_row')
    if notice.kind != model.IDLE or row is None:
        return None
    t = models.idle_watch
    with ledger.reader() as reader:
        entry = reader.entry(row)
        since = reader.connection.execute(
            sa.select(t.c.idle_since).where(t.c.lease_row == row)).scalar()
    if entry is None:
        return 'its ledger entry is gone'
    if entry.state not in (models.PENDING, models.ACTIVE):
        return 'the lease is %s' % entry.state
    if since is None or model.iso(since) != notice.facts.get('idle_since'):
        return 'the lease is no longer idle'
    return None


def blazar_client(conf):
    """The python-blazarclient ``Client`` of ``[blazar]`` that ends idle
    leases. Raises ValueError when ``[blazar]`` configures no Blazar."""
    reader = readers.BlazarReader.from_conf(conf)
    if reader is None:
        raise ValueError('[warnings] end_idle_after is set but [blazar] '
                         'names no Blazar: set its auth_type and '
                         'credentials (or endpoint_override)')
    return reader.client


def _since(connection, ids):
    """``{row: idle_since}`` of the watched rows among ``ids``."""
    t = models.idle_watch
    return {row.lease_row: row.idle_since for row in connection.execute(
        sa.select(t.c.lease_row, t.c.idle_since).where(
            t.c.lease_row.in_(ids)))}


def blazar_end(now, start):
    """``(end_date, ended_at)``: the end date to send stock Blazar to end a
    lease that started at ``start`` at ``now``, and the end it gives the
    lease. Blazar's dates have no seconds: ``'now'`` is the current
    minute; in the lease's first minute that is its start, which Blazar
    and placement-quota refuse as an end, so the next minute then."""
    minute = now.replace(second=0, microsecond=0)
    if minute > start:
        return 'now', minute
    at = start.replace(second=0, microsecond=0) + MINUTE
    return at.strftime(BLAZAR_DATE_FORMAT), at


def _unused(row, at):
    """Micro-credits of the row's charge not used if it ends at ``at``
    (ledger/entry_states.py ``close``)."""
    end = min(max(at, row.start_date), row.end_date)
    used = store.cost(row.hourly_rate or 0, row.start_date, end)
    charged = row.charged or 0
    return charged - min(charged, used)


def _idle_lease(row, hosts, since, now):
    return IdleLease(
        row=row.id, project_id=row.project_id, lease_id=row.lease_id,
        name=row.name, user_id=row.user_id, start_date=row.start_date,
        end_date=row.effective_end, hosts=tuple(hosts), idle_since=since,
        credits_at_stake=store.from_micro(_unused(row, now)))


def _facts(lease):
    return {'lease_row': lease.row, 'start_date': model.iso(lease.start_date),
            'end_date': model.iso(lease.end_date),
            'idle_since': model.iso(lease.idle_since),
            'hosts': list(lease.hosts)}


def _notice(kind, key, lease, now, facts):
    return model.Notice(kind=kind, key=key, project_id=lease.project_id,
                        user_id=lease.user_id, lease_id=lease.lease_id,
                        lease_name=lease.name, due_at=now, facts=facts)
