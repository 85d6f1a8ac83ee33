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
"""Instance reservation in Placement (Blazar's "Placement API support for
instance reservation" specification).

* A reservation provider ``blazar_<hypervisor_hostname>`` nested under each
  compute node provider (the names a real Blazar uses, so either can manage
  providers the other made).
* A resource class ``CUSTOM_RESERVATION_<UUID>`` per reservation (upper
  case, ``-`` replaced by ``_``).
* Lease start sets, on each reserved host's reservation provider, an
  inventory of that class with ``total`` = the instances reserved there
  (``min_unit = max_unit = step_size = 1``: one unit per instance, as
  Blazar writes it; ``allocation_ratio = 1.0``);
  lease end removes it.

placement-quota owns the reservation providers, so it keeps their
generations and inventories (:class:`ProviderCache`) and writes every host
of a transition in one atomic ``POST /reshaper``: a constant number of calls
whatever the number of hosts. Without the reshaper (its policy wants the
``service`` role) the writes go provider by provider, concurrently, and what
was written is rolled back if a later host fails. A 409 re-reads only the
provider it names.
"""

import concurrent.futures
import dataclasses
import re
import threading

from oslo_log import log as logging

from placement_quota.placement import client as placement_client

LOG = logging.getLogger(__name__)

PROVIDER_PREFIX = 'blazar_'
CLASS_PREFIX = 'CUSTOM_RESERVATION_'
# Placement's rule for custom resource class names (schemas/resource_class).
_CLASS_RE = re.compile(r'^CUSTOM_[A-Z0-9_]+$')
_CLASS_MAX = 255
_UUID_RE = re.compile(r'[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?'
                      r'[0-9a-f]{12}')


class ReservationError(Exception):
    """A reservation operation that cannot be done; says why."""


class HostNotFound(ReservationError):
    pass


def provider_name(host):
    return PROVIDER_PREFIX + host


def reservation_class(reservation_id):
    """``CUSTOM_RESERVATION_<ID>`` for a reservation id (Blazar's naming).

    :raises ValueError: naming the id when the class would not be a valid
        Placement resource class name.
    """
    if not isinstance(reservation_id, str) or not reservation_id:
        raise ValueError('reservation id must be a non-empty string, not %r'
                         % (reservation_id,))
    name = CLASS_PREFIX + reservation_id.upper().replace('-', '_')
    if not _CLASS_RE.match(name):
        raise ValueError('reservation id %r gives resource class %r, which '
                         'Placement refuses: custom classes match %s'
                         % (reservation_id, name, _CLASS_RE.pattern))
    if len(name) > _CLASS_MAX:
        raise ValueError('reservation id %r gives a resource class longer '
                         'than %d characters' % (reservation_id, _CLASS_MAX))
    return name


def reservation_inventory(total):
    """The inventory of a reservation class on one host."""
    return {'total': total, 'reserved': 0, 'min_unit': 1, 'max_unit': 1,
            'step_size': 1, 'allocation_ratio': 1.0}


@dataclasses.dataclass
class ReservationProviderState:
    """What we know of one reservation provider."""

    uuid: str
    name: str
    generation: int
    inventories: dict


@dataclasses.dataclass(frozen=True)
class Change:
    """One inventory that a transition changed (None: absent)."""

    host: str
    provider_uuid: str
    resource_class: str
    before: object
    after: object


class ReservationProviders:
    """Reservation providers and what we know of their inventories."""

    def __init__(self, client):
        self.client = client
        self._by_host = {}
        self._lock = threading.Lock()

    # --- providers ----------------------------------------------------------

    def _all_by_name(self):
        listing = self.client.get('/resource_providers')
        return {rp['name']: rp for rp in listing['resource_providers']}

    def ensure(self, hosts):
        """Make sure each host has its reservation provider; return
        ``{host: ReservationProviderState}``. Idempotent: no call when
        every host is known, otherwise :meth:`refresh` (one listing call
        plus one creation per missing provider).

        :raises HostNotFound: naming the hosts without a compute node
            provider.
        """
        hosts = list(dict.fromkeys(hosts))
        if any(h not in self._by_host for h in hosts):
            return self.refresh(hosts)
        return {h: self._by_host[h] for h in hosts}

    def refresh(self, hosts, create=True):
        """What each host's reservation provider holds, checked against
        Placement: one listing of providers and their generations; a
        provider whose generation moved is re-read, one that is gone is
        forgotten (and created again when ``create``). Hosts without a
        provider are left out when not ``create``. ``create`` is a bool,
        or the collection of the hosts whose provider may be created.

        A provider we do not know yet is read once, unless the listing
        shows it at generation 0: Placement bumps a provider's generation
        at every inventory, trait, aggregate or allocation change, so a
        provider still at 0 has no inventory and needs no read.
        """
        by_name = self._all_by_name()
        states = {}
        unknown = []
        for host in dict.fromkeys(hosts):
            listed = by_name.get(provider_name(host))
            known = self._by_host.get(host)
            if listed is None:
                with self._lock:
                    self._by_host.pop(host, None)
                if not (create is True or (create and host in create)):
                    continue
                if host not in by_name:
                    unknown.append(host)
                    continue
                self._adopt_or_create(host, by_name)
            elif known is None or known.uuid != listed['uuid']:
                self._adopt_or_create(host, by_name)
            elif known.generation != listed['generation']:
                self.reread(known.uuid)
            states[host] = self._by_host[host]
        if unknown:
            raise HostNotFound('No compute node resource provider named %s '
                               'in Placement' % ', '.join(sorted(unknown)))
        return states

    def _adopt_or_create(self, host, by_name):
        compute_node = by_name[host]
        existing = by_name.get(provider_name(host))
        if existing is not None:
            if existing.get('parent_provider_uuid') != compute_node['uuid']:
                raise ReservationError(
                    'Provider %s exists but is not a child of compute node '
                    '%s (%s)' % (provider_name(host), host,
                                 compute_node['uuid']))
            if existing.get('generation') == 0:
                state = ReservationProviderState(
                    existing['uuid'], existing['name'], 0, {})
            else:
                state = self._read(existing['uuid'], existing['name'])
        else:
            try:
                created = self.client.post('/resource_providers', json={
                    'name': provider_name(host),
                    'parent_provider_uuid': compute_node['uuid']}).json()
            except placement_client.Conflict:
                # Another writer created it meanwhile: adopt theirs.
                found = self.client.get('/resource_providers?name=%s'
                                        % provider_name(host))
                by_name = dict(by_name, **{
                    rp['name']: rp for rp in found['resource_providers']})
                if provider_name(host) not in by_name:
                    raise
                return self._adopt_or_create(host, by_name)
            state = ReservationProviderState(
                created['uuid'], created['name'], created['generation'], {})
            LOG.info('Created reservation provider %s under %s',
                     state.name, host)
        with self._lock:
            self._by_host[host] = state

    def _read(self, uuid, name):
        body = self.client.get('/resource_providers/%s/inventories' % uuid)
        return ReservationProviderState(
            uuid, name, body['resource_provider_generation'],
            body['inventories'])

    def by_uuid(self, provider_uuid):
        """The state of a provider we know, by UUID (None if unknown)."""
        for state in list(self._by_host.values()):
            if state.uuid == provider_uuid:
                return state
        return None

    def reread(self, provider_uuid):
        """Refresh one provider we know (after a generation conflict)."""
        state = self.by_uuid(provider_uuid)
        if state is not None:
            fresh = self._read(state.uuid, state.name)
            state.generation, state.inventories = (fresh.generation,
                                                   fresh.inventories)
        return state

    def remove(self, host):
        """Delete the host's reservation provider.

        :raises placement_client.InUse: naming the consumers while it holds
            allocations.
        """
        by_name = self._all_by_name()
        rp = by_name.get(provider_name(host))
        if rp is None:
            self._by_host.pop(host, None)
            return False
        allocations = self.client.get('/resource_providers/%s/allocations'
                                      % rp['uuid'])['allocations']
        if allocations:
            raise placement_client.InUse(
                409, 'placement.resource_provider.inuse',
                'Reservation provider %s still holds allocations of '
                'consumers %s' % (rp['name'], ', '.join(sorted(allocations))),
                'DELETE', '/resource_providers/%s' % rp['uuid'])
        self.client.delete('/resource_providers/%s' % rp['uuid'])
        self._by_host.pop(host, None)
        LOG.info('Deleted reservation provider %s', rp['name'])
        return True


class ReservationClasses:
    """``CUSTOM_RESERVATION_*`` resource classes."""

    def __init__(self, client):
        self.client = client

    def ensure(self, name):
        """Create the class if needed (idempotent, one call)."""
        self.client.put('/resource_classes/%s' % name)

    def delete(self, name):
        """Delete the class; absent is fine.

        :raises placement_client.InUse: while inventories or allocations
            of it exist, with Placement's reason.
        """
        try:
            self.client.delete('/resource_classes/%s' % name)
        except placement_client.NotFound:
            return False
        except placement_client.Conflict as exc:
            raise placement_client.InUse(exc.status, exc.code, exc.detail,
                                         exc.method, exc.url)
        return True


class Transitions:
    """Lease start and end for instance reservations, in few calls."""

    def __init__(self, client, providers=None, conflict_retries=5,
                 max_concurrency=8):
        self.client = client
        self.providers = providers or ReservationProviders(client)
        self.classes = ReservationClasses(client)
        self.conflict_retries = conflict_retries
        self.max_concurrency = max_concurrency
        self._reshaper = None  # unknown until tried

    @classmethod
    def from_conf(cls, conf, client=None):
        """With ``[placement] conflict_retries`` and ``max_concurrency``."""
        client = client or placement_client.PlacementClient.from_conf(conf)
        return cls(client, conflict_retries=conf.placement.conflict_retries,
                   max_concurrency=conf.placement.max_concurrency)

    def start(self, reservation_id, instances_by_host):
        """Set each host's inventory of the reservation's class to its
        number of instances. Returns the :class:`Change` list (empty when
        everything already was so)."""
        name = reservation_class(reservation_id)
        for host, total in instances_by_host.items():
            if not isinstance(total, int) or total < 1:
                raise ValueError('instances on host %s must be a positive '
                                 'integer, not %r' % (host, total))
        self.classes.ensure(name)
        wanted = {host: reservation_inventory(total)
                  for host, total in instances_by_host.items()}
        return self._apply(name, wanted, create=True)

    def change(self, reservation_id, totals):
        """Set each host's inventory of the reservation's class to
        ``totals[host]`` instances, or remove it where that is None, all
        hosts in one write (what a lease update or a healed host needs).
        The class is created first when a host gets instances; only those
        hosts get a reservation provider when they lack one. The class is
        never deleted here. Returns the :class:`Change` list."""
        name = reservation_class(reservation_id)
        adding = [host for host, total in totals.items() if total is not None]
        for host in adding:
            total = totals[host]
            if not isinstance(total, int) or total < 1:
                raise ValueError('instances on host %s must be a positive '
                                 'integer or None, not %r' % (host, total))
        if adding:
            self.classes.ensure(name)
        wanted = {host: None if total is None else reservation_inventory(total)
                  for host, total in totals.items()}
        return self._apply(name, wanted, create=adding)

    def end(self, reservation_id, hosts):
        """Remove the reservation's class from each host's inventory, then
        the class itself, unless other hosts still have it (then it is kept
        and the reason logged). Returns the :class:`Change` list."""
        name = reservation_class(reservation_id)
        changes = self._apply(name, dict.fromkeys(hosts), create=False)
        try:
            self.classes.delete(name)
        except placement_client.InUse as exc:
            LOG.warning('Resource class %s kept: %s', name, exc.detail)
        return changes

    # --- writing ------------------------------------------------------------

    def _apply(self, name, wanted, create):
        """Make each host's inventory of ``name`` equal ``wanted[host]``
        (None: absent), atomically where possible; return what changed.

        Hosts without a reservation provider are created when ``create``
        (True, or a collection naming them) and skipped otherwise (nothing
        to remove there).
        """
        states = {}

        def check():
            states.clear()
            states.update(self.providers.refresh(wanted, create=create))

        def plan():
            changes = []
            for host, state in states.items():
                before = state.inventories.get(name)
                after = wanted[host]
                if not _same(before, after):
                    changes.append(Change(host, state.uuid, name, before,
                                          after))
            return changes

        check()
        if not plan():
            return []
        if self._reshaper is not False and self.client.supports(
                placement_client.RESHAPER):
            try:
                changes = placement_client.retry_on_conflict(
                    self.conflict_retries, lambda exc: check())(
                        lambda: self._reshape(plan()))
                self._reshaper = True
                return changes
            except placement_client.Forbidden:
                LOG.info('POST /reshaper is not allowed to our Placement '
                         'user (its policy wants the service role); writing '
                         'provider by provider.')
                self._reshaper = False
        return self._write_each(plan())

    def _with_retries(self, write, provider_uuid=None):
        """Run ``write``; on a generation conflict re-read the provider
        (``provider_uuid``, or the one Placement's message names) and
        retry."""
        def reread(exc):
            match = _UUID_RE.search(exc.detail or '')
            uuid = provider_uuid or (match.group(0) if match else None)
            if uuid:
                self.providers.reread(uuid)
        return placement_client.retry_on_conflict(
            self.conflict_retries, reread)(write)

    def _reshape(self, changes):
        """One POST /reshaper writing ``changes``; returns them."""
        if not changes:
            return changes
        targets = {}
        for change in changes:
            state = self._state(change.host)
            new = targets.setdefault(state.uuid, dict(state.inventories))
            _set(new, change.resource_class, change.after)
        body = {'inventories': {
            uuid: {'resource_provider_generation':
                   self.providers.by_uuid(uuid).generation,
                   'inventories': inventories}
            for uuid, inventories in targets.items()}, 'allocations': {}}
        self.client.post('/reshaper', json=body)
        for uuid, inventories in targets.items():
            state = self.providers.by_uuid(uuid)
            # The reshaper writes an interim inventory, then the final one:
            # two generations, or one when the final inventory is empty.
            state.generation += 2 if inventories else 1
            state.inventories = inventories
        return changes

    def _write_each(self, changes):
        written = []
        lock = threading.Lock()

        def write(change):
            self._with_retries(lambda: self._put(change.host,
                                                 change.resource_class,
                                                 change.after),
                               change.provider_uuid)
            with lock:
                written.append(change)

        with concurrent.futures.ThreadPoolExecutor(
                self.max_concurrency) as pool:
            futures = [pool.submit(write, c) for c in changes]
            errors = [f.exception() for f in futures if f.exception()]
        if errors:
            LOG.error('%d of %d inventory writes failed (%s); rolling back '
                      'the %d written.', len(errors), len(changes),
                      errors[0], len(written))
            self._roll_back(written)
            raise errors[0]
        return changes

    def _roll_back(self, written):
        """Undo every written change; one that cannot be undone is logged
        with its reason and the others are still undone."""
        for change in written:
            try:
                self._with_retries(lambda c=change: self._put(
                    c.host, c.resource_class, c.before), change.provider_uuid)
            except Exception as exc:
                LOG.error('Could not roll back %s on %s (%s -> %s): %s',
                          change.resource_class, change.host, change.after,
                          change.before, exc)

    def _put(self, host, name, inventory):
        state = self._state(host)
        new = dict(state.inventories)
        _set(new, name, inventory)
        body = self.client.put(
            '/resource_providers/%s/inventories' % state.uuid,
            json={'resource_provider_generation': state.generation,
                  'inventories': new}).json()
        state.generation = body['resource_provider_generation']
        state.inventories = body['inventories']

    def _state(self, host):
        return self.providers.ensure([host])[host]


def _set(inventories, name, inventory):
    if inventory is None:
        inventories.pop(name, None)
    else:
        inventories[name] = inventory


def _same(a, b):
    """Equal inventories (None: absent), whatever defaults Placement
    filled in."""
    if a is None or b is None:
        return a is b
    return all(a[k] == b[k] for k in set(a) & set(b))
