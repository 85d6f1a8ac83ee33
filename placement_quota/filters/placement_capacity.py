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
"""PlacementCapacityFilter: reserved instances must fit the free capacity.

Blazar's "New instance reservation" spec: a lease is issued only if unused
capacity can hold all its reservations. For each ``virtual:instance``
reservation, and each ``flavor:instance`` one (one instance being what Blazar's
flavor plugin reserves in Placement for its flavor,
``flavor_rules.placement_resources``: VCPU or PCPU, MEMORY_MB, DISK_GB = root +
ephemeral, ``resources:<CLASS>`` overrides; the flavor read from Nova before
the locks):

* the eligible hosts are those Blazar allocated (their
  ``hypervisor_hostname``, the name of their Placement provider), or every
  compute node (a root provider with VCPU) when it allocated none, or
  always every compute node with ``capacity_hosts = all``;
* their free capacity per resource class is read from Placement in one
  call, whatever the number of hosts: ``GET /allocation_candidates`` for
  one instance of the size (with the flavor's ``trait:<NAME>`` extra specs
  as ``required=NAME,!NAME``, as Blazar's flavor plugin asks; a required
  trait Placement has never heard of fits nowhere, an unknown forbidden
  one excludes nothing), whose provider summaries give each host's
  capacity (Placement's own rule, ``(total - reserved) x
  allocation_ratio``) and usage. A host with no room for one such instance
  is not a candidate and counts as full;
* the peak of the instance resources (VCPU, MEMORY_MB, DISK_GB) that other
  leases reserve on those hosts during the window — every project's, from
  the ledger — plus the lease's must fit that free capacity, class by
  class;
* and ``amount`` instances of the requested size must fit on the eligible
  hosts one by one (a host holds whole instances only).

The locks of the capacity pools the lease takes room from are held
(:meth:`PlacementCapacityFilter.lease_locks`: one per allocated host and
the cloud row shared, or the cloud row exclusively when the hosts are not
known), so two admissions never hand out the same free capacity, and
admissions on disjoint hosts do not wait for each other. Placement is
read before they are taken (:meth:`PlacementCapacityFilter.prepare`): the
eligible hosts and their room, as Placement reports them then; the check
under the locks adds the ledger's peaks to that. Read live, the room of
a lease naming at most :data:`MAX_TREE_READS` hosts is read tree by tree
(``GET /allocation_candidates?in_tree=<host>``, about 15 ms a call at
1,000 hosts, in parallel), unless a sharing provider holds a requested
class, which ``in_tree`` would leave out; otherwise one call across the
cloud. A host that is a tree of its own (no nested provider, as of a
listing at most a minute old) is read in two calls instead of the
candidates call (its inventories and usages, about 4 ms each, where the
``in_tree`` call takes about 15 ms; :func:`~placement_quota.placement.
capacity_view.flat_room`, Placement's candidate rules applied here). The
hosts' UUIDs, whether they are flat, and the sharing providers' classes
come from the services' :class:`~placement_quota.placement.directory.
ProviderDirectory` (one listing of every provider; the sharing classes
at most a minute old).

With ``capacity_max_age`` above 0 the room comes from a local view of the
providers (:mod:`~placement_quota.placement.capacity_view`) at most that
many seconds old, refreshed in the background; Placement is still read live
when the view cannot be exact (nested or sharing providers holding a
requested class) or when fewer than twice the asked instances fit in the
view's room (close to the limit, where a recent change could decide). A
decision says how old its Placement data was (:attr:`Capacity.ages`, the
DEBUG log, and the denial message when not read live).
"""

import dataclasses
import typing
from urllib import parse
import weakref

from oslo_log import log as logging

from oslo_config import cfg

from placement_quota.filters import ledger_base
from placement_quota.lease import amounts as accounting
from placement_quota.ledger.db import locks
from placement_quota.ledger import models
from placement_quota.ledger import window
from placement_quota.lease import model as lease_model
from placement_quota.placement import usage_room
from placement_quota.placement import capacity_view
from placement_quota.placement import client as placement_client

LOG = logging.getLogger(__name__)

#: Most hosts a lease may name for its capacity to be read live tree by
#: tree (one call each, in parallel: about 15 ms at 1,000 hosts) rather
#: than across the cloud (one call growing with the cloud: about 150 ms
#: at 1,000 hosts).
MAX_TREE_READS = 16


@dataclasses.dataclass(frozen=True)
class Capacity:
    """What :meth:`PlacementCapacityFilter.prepare` read from Placement:
    ``hosts`` (``{name: uuid}`` of the allocated hosts, or None for every
    compute node) and ``rooms`` (``{instance size: {uuid: room}}``, the
    size as :func:`_size_key` of its classes and traits) and ``ages``
    (``{instance size: seconds}``, how old the room's Placement data was
    when read; 0 when read live)."""

    hosts: typing.Optional[typing.Mapping[str, str]]
    rooms: typing.Mapping[tuple, typing.Mapping[str, dict]]
    ages: typing.Mapping[tuple, float] = dataclasses.field(
        default_factory=dict)


def _size_key(size, traits=None):
    """Sorted ``(class, amount)`` pairs and sorted ``(trait, value)``
    pairs."""
    return tuple(sorted(size.items())), tuple(sorted((traits or {}).items()))


class PlacementCapacityFilter(ledger_base.LedgerFilter):
    """Deny instance reservations the free capacity cannot hold."""

    # It bounds the window's read of other leases' instances.
    reads_ahead = ('longest_duration',)

    enforcement_opts = [
        cfg.IntOpt(
            'capacity_max_age', default=0, min=0,
            deprecated_name='capacity_cache_ttl',
            help='Oldest, in seconds, the Placement data of a capacity '
                 'decision may be. 0 (the default) reads Placement for '
                 'every lease: the inventories and usages of the hosts '
                 'Blazar named (two calls a host without nested '
                 'providers, one GET /allocation_candidates?in_tree a '
                 'host with some), or one GET /allocation_candidates per '
                 'instance size across the cloud when it named none or '
                 'more than 16: what Placement says at that moment. '
                 'Which hosts have nested providers and which classes '
                 'sharing providers hold are configuration, read at most '
                 'once a minute; a change not seen yet can only refuse a '
                 'lease Placement could hold, never admit one it cannot. '
                 'Above 0, a local view of every provider\'s '
                 'inventories, usages and traits answers instead; it is '
                 'refreshed in the background every max_age / 2 seconds '
                 '(one provider listing, then only the providers whose '
                 'generation moved); a decision finding it older than '
                 'max_age reads Placement live rather than wait for the '
                 'refresh, and Placement is read live anyway when fewer '
                 'than twice the asked instances fit (near the limit) or '
                 'for nested and sharing providers. The default keeps '
                 'every decision exact; a few seconds limits what a '
                 'decision can miss to the allocations made in those '
                 'seconds, the window Nova\'s scheduler already has '
                 'between reading candidates and claiming them, and '
                 'spares Placement a call per lease on large clouds. The '
                 'ledger part of the check is never stale. Replaces '
                 'capacity_cache_ttl (deprecated alias).'),
        cfg.StrOpt(
            'capacity_hosts', default='allocations', choices=[
                ('allocations', 'the hosts Blazar allocated, or every '
                                'compute node when it allocated none'),
                ('all', 'every compute node')],
            help='Which hosts\' free capacity an instance reservation may '
                 'use.'),
    ]

    def __init__(self, conf, services=None):
        super().__init__(conf, services)
        # The local view of the providers, made at the first decision
        # with capacity_max_age > 0; its thread ends with this filter.
        self._view = None

    def capacity_view(self, client):
        """The :class:`~placement_quota.placement.capacity_view.
        CapacityView` of this filter, refreshing itself every
        ``capacity_max_age / 2`` seconds from its first use."""
        max_age = self.conf.enforcement.capacity_max_age
        if self._view is None:
            # Its listings keep the provider directory's names too.
            view = capacity_view.CapacityView(
                client, directory=self.services.provider_directory)
            weakref.finalize(self, view.stop, 0)
            self._view = view
            # The reserved hosts' inventories come from it too.
            if hasattr(self.host_resources, 'use_view'):
                self.host_resources.use_view(view)
        self._view.start(max(0.5, max_age / 2.0))
        return self._view

    def close(self):
        """Stop the background refresh of the capacity view, if any."""
        if self._view is not None:
            self._view.stop()

    def _room(self, client, size, traits=None, amount=1, among=None):
        """``(room, age)``: ``{uuid: {class: room}}`` of the hosts that can
        hold one instance of ``size`` and how old (seconds) that is."""
        max_age = self.conf.enforcement.capacity_max_age
        text = _size_text(size, traits)
        if max_age:
            view = self.capacity_view(client)
            if view.age() is None:
                # Its first, whole, read runs in the background meanwhile.
                LOG.debug('Capacity of %s read live: the view is being '
                          'read for the first time.', text)
            else:
                age = view.fresh(max_age)
                room = None if age is None else view.room(size, traits,
                                                          among)
                if age is None:
                    LOG.debug('Capacity of %s read live: the view is older '
                              'than %d s and being refreshed.', text,
                              max_age)
                elif room is None:
                    LOG.debug('Capacity of %s read live: nested or sharing '
                              'providers hold a requested class.', text)
                elif capacity_view.near_limit(room, size, amount):
                    LOG.debug('Capacity of %s read live: %d asked, near '
                              'the limit of the view (%.1f s old).', text,
                              amount, age)
                else:
                    LOG.debug('Capacity of %s from the local view, %.1f s '
                              'old.', text, age)
                    return room, age
        LOG.debug('Capacity of %s read live from Placement.', text)
        return self._live_room(client, size, traits, among), 0.0

    def _live_room(self, client, size, traits=None, among=None):
        """The room read from Placement now: tree by tree when the lease
        names a few hosts (:func:`~placement_quota.placement.usage_room.
        tree_room`), else, or when a sharing provider could lend them
        room, across the whole cloud."""
        try:
            room = None
            if among is not None and len(among) <= MAX_TREE_READS:
                directory = self.services.provider_directory

                def read_flat(root):
                    if not directory.is_flat(root):
                        return None  # nested providers: Placement's call
                    try:
                        return capacity_view.flat_room(
                            client, size, traits, root, known=directory)
                    except placement_client.NotFound:
                        # Gone since it was listed: no room; its name is
                        # looked up again next time.
                        directory.forget(root)
                        return {}
                room = usage_room.tree_room(
                    client, size, traits, among,
                    sharing=directory.sharing_classes(),
                    read_flat=read_flat)
            if room is None:
                room = usage_room.candidate_room(client, size, traits)
        except placement_client.PlacementError as exc:
            # A flavor asking for a class no provider has ever had
            # (resources:CUSTOM_X): no host can hold one instance.
            if exc.status != 400:
                raise
            if 'No such trait' in str(exc):
                room = self._room_unknown_traits(client, size, traits)
            elif 'No such resource class' in str(exc):
                room = {}
            else:
                raise
        return room

    @staticmethod
    def _room_unknown_traits(client, size, traits):
        """The room when Placement does not know some of ``traits``: none
        if one is required (no host has it), else the room without the
        unknown forbidden ones (no host has them either)."""
        found = client.get('/traits?name=in:%s' % ','.join(
            parse.quote(name, safe='') for name in sorted(traits)))
        known = set(found['traits'])
        if any(value == 'required' and name not in known
               for name, value in traits.items()):
            return {}
        return usage_room.candidate_room(client, size, {
            name: value for name, value in traits.items() if name in known})

    def lease_locks(self, lease):
        """The capacity pools the lease's instances take room from: one
        per allocated host, with the cloud row shared (admissions on
        disjoint hosts do not wait for each other); the cloud row
        exclusively when the hosts are not known (the check then counts
        every host). None without instance reservations."""
        reservations = _instance_reservations(lease)
        if not reservations:
            return []
        names = self._allocated_hosts(reservations)
        if not names:
            return [models.GLOBAL_LOCK]
        return [locks.host_pool_lock(accounting.host_key(name))
                for name in names] + [locks.shared(models.GLOBAL_LOCK)]

    def _allocated_hosts(self, reservations):
        """The host names Blazar allocated to ``reservations``, sorted;
        none with ``capacity_hosts = all`` (every host is eligible)."""
        names = set()
        if self.conf.enforcement.capacity_hosts == 'allocations':
            for reservation in reservations:
                names.update(accounting.host_names(reservation))
        return sorted(names)

    def _eligible(self, reservations):
        """``{name: uuid}`` of the allocated hosts, or None for every
        compute node. The UUIDs come from the capacity view's listing when
        it names the host, else from the services' provider directory
        (one listing of every provider, or a lookup of the name)."""
        names = self._allocated_hosts(reservations)
        if not names:
            return None
        uuids = {}
        if self._view is not None:
            for name in names:
                uuid = self._view.uuid_of(name)
                if uuid is not None:
                    uuids[name] = uuid
        missing = [name for name in names if name not in uuids]
        if missing:
            uuids.update(self.services.provider_directory.uuids(missing))
        return uuids

    def prepare(self, context, lease, flavors=None):
        """The eligible hosts and their room for each instance size of
        ``lease``, from Placement; None without instance reservations
        (Placement is not read)."""
        reservations = _instance_reservations(lease)
        if not reservations:
            return None
        flavors = self.flavors_of(lease, flavors)
        client = self.services.placement
        hosts = self._eligible(reservations)
        among = None if hosts is None else set(hosts.values())
        sizes = {}
        for reservation in reservations:
            size = _size(reservation, flavors)
            traits = _traits(reservation, flavors)
            if size:
                key = _size_key(size, traits)
                _, _, asked = sizes.get(key, (size, traits, 0))
                sizes[key] = (size, traits,
                              asked + reservation.count('amount', 1))
        rooms, ages = {}, {}
        for key, (size, traits, asked) in sizes.items():
            rooms[key], ages[key] = self._room(client, size, traits, asked,
                                               among)
        return Capacity(hosts, rooms, ages)

    def check(self, admission):
        self.deny_unaccounted(admission.lease)
        reservations = _instance_reservations(admission.lease)
        if not reservations:
            return
        read = admission.prepared_for(self)
        if read is None:
            # An admission opened without the prepare step (a caller of
            # admit() of its own): read Placement now.
            read = self.prepare(admission.context, admission.lease,
                                admission.flavors)
        hosts = read.hosts
        eligible = None if hosts is None else set(hosts.values())
        asked = {}
        room = {}
        age = 0.0
        for reservation in reservations:
            size = _size(reservation, admission.flavors)
            amount = reservation.count('amount', 1)
            for rc, value in size.items():
                asked[rc] = asked.get(rc, 0) + amount * value
            if not size:
                continue
            traits = _traits(reservation, admission.flavors)
            key = _size_key(size, traits)
            for uuid, found in read.rooms[key].items():
                if eligible is None or uuid in eligible:
                    room[uuid] = found
            age = max(age, read.ages.get(key, 0.0))
            count = len(room) if hosts is None else len(hosts)
            fit = sum(usage_room.fit_in_room(r, size) for r in room.values())
            if fit < amount:
                raise self.deny(
                    'Only %d instances of %s fit on the %d eligible hosts '
                    'now; the reservation asks for %d.%s'
                    % (fit, _size_text(size, traits), count, amount,
                       _age_text(age)))
        if not asked:
            return
        free = {rc: sum(max(0, r.get(rc, 0)) for r in room.values())
                for rc in asked}
        # Other leases' instances on our hosts, or on hosts not named.
        ours = None if hosts is None else {
            accounting.host_key(name) for name in hosts}
        others = [interval for interval, _ in
                  admission.txn.instance_intervals(
                      admission.start, admission.end,
                      exclude=admission.exclude, hosts=ours)]
        peaks = window.peaks(others, admission.start, admission.end,
                             list(asked))
        for rc in sorted(asked):
            if peaks[rc].amount + asked[rc] > free[rc]:
                raise self.deny(
                    'Not enough free %s on the %d eligible hosts from %s to '
                    '%s: the lease asks for %d, other leases hold %s, and '
                    '%d is free in Placement now.%s'
                    % (rc, count, ledger_base.when(admission.start),
                       ledger_base.when(admission.end), asked[rc],
                       ledger_base.peak_text(peaks[rc]), free[rc],
                       _age_text(age)))
        LOG.debug('Capacity allowed the lease of project %s with Placement '
                  'data %.1f s old.', admission.project_id, age)


def _instance_reservations(lease):
    return [r for r in lease.reservations
            if r.resource_type in (lease_model.INSTANCE, lease_model.FLAVOR)]


def _size(reservation, flavors):
    """One instance of ``reservation`` in Placement: its fields for a
    ``virtual:instance``, Blazar's rule on its flavor for a
    ``flavor:instance``."""
    if reservation.resource_type == lease_model.FLAVOR:
        return accounting.flavor_size(reservation, flavors)
    return accounting.instance_size(reservation)


def _traits(reservation, flavors):
    """``{trait: 'required'|'forbidden'}`` the candidate hosts of one
    instance of ``reservation`` must match: its flavor's ``trait:<NAME>``
    extra specs for a ``flavor:instance``, none for a ``virtual:instance``."""
    if reservation.resource_type == lease_model.FLAVOR:
        return accounting.flavor_traits(reservation, flavors)
    return {}


def _size_text(size, traits=None):
    text = ', '.join('%s=%d' % item for item in sorted(size.items()))
    if traits:
        text += ' (traits: %s)' % ', '.join(
            '%s %s' % item for item in sorted(traits.items()))
    return text


def _age_text(age):
    """'' for live data, else a sentence giving its age."""
    if not age:
        return ''
    return ' (Placement data read %.1f s before the decision.)' % age
