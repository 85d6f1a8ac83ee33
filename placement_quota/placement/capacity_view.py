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
"""A local view of every provider's capacity, kept fresh by generations.

:func:`~placement_quota.placement.usage_room.candidate_room` asks Placement
``GET /allocation_candidates`` for every decision; that call grows with the
number of hosts. :class:`CapacityView` keeps, in memory, each provider's
inventories, usages and traits and answers the same question
(:meth:`CapacityView.room`) without a call.

**Freshness.** :meth:`CapacityView.refresh` makes one call,
``GET /resource_providers`` (the capacity check sends no ``member_of`` or
``in_tree``, so every provider), whose answer gives each provider's
``generation``. Placement bumps a provider's generation on every change of
its inventories, traits, aggregates and on every allocation written
against it, so only providers whose generation moved are read again
(inventories and usages with
:func:`~placement_quota.placement.usage_room.read_provider`, the same
consistent read the usage_room module uses, then traits); a provider still at
generation 0 has nothing to read (the rule
:mod:`~placement_quota.placement.reservations` uses for its own
providers). After a refresh the view is at least as new as the moment the
listing was asked for: :meth:`CapacityView.age` counts from then.

That listing is the cheapest way Placement offers to learn what changed:
one call, whatever the number of providers (no call filters providers by
generation, and the inventories, usages and traits of several providers
cannot be read in one call), where reading every provider again would be
three calls each. It is still the largest answer Placement gives (7.8 MB
at 10,000 providers), so it is decoded one provider at a time
(:meth:`~placement_quota.placement.client.PlacementClient.get_items`),
keeping of each only its UUID, name, generation and tree: decoded in one
call it would hold the interpreter lock for 0.3 s and stop every
decision of the process meanwhile. The listing also refreshes the
services' :class:`~placement_quota.placement.directory.ProviderDirectory`
when the view is given it, which then lists nothing itself.

A refresh never makes a decision wait: the answers come from the last
complete refresh (the providers, their names and the index of their trees
replaced at once when a refresh ends), and a decision finding the view
older than it may be while the background thread refreshes it reads
Placement live (:meth:`CapacityView.fresh`) instead of waiting for the
refresh to end (at 10,000 providers a refresh takes about a second).

One kind of change does not move a generation: Placement deletes a
consumer's allocations (``DELETE /allocations/{consumer}``, or a consumer
moved away from a provider) without bumping the providers they were on.
The view can therefore miss *freed* capacity -- never used capacity: its
room is then smaller than Placement's, the safe side. Each refresh also
re-reads :data:`RESYNC_BATCH` unchanged providers, in turn, so a missed
free is seen after at most ``providers / RESYNC_BATCH`` refreshes (one
``GET .../usages`` per provider re-read so, one at a time, once the
refresh is in the view: the view's age never waits for them, and they
never burst on Placement beside the decisions' calls, as the reads of
changed providers, made side by side, may); and the capacity filter reads
Placement live when few instances more than asked fit in the view
(:func:`near_limit`), so a missed free never decides that too few fit.

**Exactness.** :meth:`CapacityView.room` gives what ``GET
/allocation_candidates`` gives for one unnumbered request group
(``resources`` and ``required`` with forbidden traits, as the flavor path
asks; no ``member_of``), when every requested class is provided by root
providers alone: a root is a candidate when each class takes one more
allocation of the amount (``(total - reserved) x allocation_ratio``,
``min_unit``, ``max_unit``, ``step_size``; :func:`~placement_quota.
placement.usage_room.class_fit`) and it has every required trait and none of
the forbidden ones; the answer holds the room of every provider of the
candidates' trees (Placement's provider summaries since microversion
1.29). When a requested class is also inventory of a nested provider of a
considered tree (Placement could split the request inside the tree) or of
a sharing provider (``MISC_SHARES_VIA_AGGREGATE``, shared through
aggregates the view does not follow), the answer is None: the caller must
read Placement live.
"""

import bisect
import dataclasses
import threading
import time
import typing

from oslo_log import log as logging

from placement_quota.placement import usage_room
from placement_quota.placement import client as placement_client

LOG = logging.getLogger(__name__)

#: The trait of a provider sharing its inventory through aggregates.
SHARING_TRAIT = usage_room.SHARING_TRAIT
#: Unchanged providers whose usages each refresh reads again, in turn (see
#: the module docstring: frees do not move generations); one call each.
RESYNC_BATCH = 8
#: A decision is close to the limit when fewer than this many times the
#: asked instances fit in the view's room (:func:`near_limit`).
NEAR_LIMIT_FACTOR = 2


@dataclasses.dataclass(frozen=True)
class ProviderState:
    """One provider as the view knows it.

    :ivar generation: the generation its inventories, usages and traits
        were read at (-1: read while it kept changing; read again next).
    :ivar capacities: resource class ->
        :class:`~placement_quota.placement.usage_room.ClassCapacity`.
    """

    uuid: str
    root: str
    parent: typing.Optional[str]
    generation: int
    capacities: typing.Mapping[str, usage_room.ClassCapacity]
    traits: frozenset

    def room(self) -> typing.Dict[str, int]:
        """Resource class -> ``capacity - used``, as a provider summary."""
        return {rc: c.free for rc, c in self.capacities.items()}


@dataclasses.dataclass(frozen=True)
class Listed:
    """What the view keeps of one entry of ``GET /resource_providers``."""

    uuid: str
    name: str
    generation: int
    root: str
    parent: typing.Optional[str]

    @classmethod
    def of(cls, entry: typing.Mapping) -> 'Listed':
        return cls(entry['uuid'], entry['name'], entry['generation'],
                   entry.get('root_provider_uuid') or entry['uuid'],
                   entry.get('parent_provider_uuid'))


def list_providers(client: placement_client.PlacementClient
                   ) -> typing.List[Listed]:
    """Every provider of ``GET /resource_providers``, as :class:`Listed`
    (decoded one at a time: see the module docstring)."""
    return client.get_items('/resource_providers', 'resource_providers',
                            Listed.of)


class Snapshot:
    """The view as its last refresh left it; replaced whole, never
    changed (but for :attr:`memo`), so a reader holding one sees one
    refresh.

    :ivar providers: UUID -> :class:`ProviderState`.
    :ivar names: provider name -> UUID.
    :ivar trees: root UUID -> the UUIDs of its tree.
    :ivar sharing: the classes some sharing provider has inventory of.
    :ivar memo: whole-cloud answers of :meth:`CapacityView.room` made of
        this snapshot, by request.
    """

    def __init__(self, providers, names, as_of):
        self.providers = providers
        self.names = names
        self.as_of = as_of
        self.trees = {}
        sharing = set()
        for state in providers.values():
            self.trees.setdefault(state.root, []).append(state.uuid)
            if SHARING_TRAIT in state.traits:
                sharing.update(state.capacities)
        self.sharing = frozenset(sharing)
        self.memo = {}

    def replacing(self, pairs):
        """A snapshot of the same age with each ``(old, new)`` state of
        ``pairs`` in place of ``old`` where this one still has ``old``
        (a state read again, of the same trees)."""
        providers = dict(self.providers)
        for old, new in pairs:
            if providers.get(old.uuid) is old:
                providers[old.uuid] = new
        return Snapshot(providers, self.names, self.as_of)

    def room(self, request, traits, among):
        """:func:`room_of` of these providers, reading only the trees of
        ``among`` when given (and the whole-cloud answer made once)."""
        request = usage_room.validate_request(request)
        if among is None:
            key = (tuple(sorted(request.items())),
                   tuple(sorted((traits or {}).items())))
            if key not in self.memo:
                self.memo[key] = room_of(self.providers, request, traits)
            found = self.memo[key]
            return None if found is None else dict(found)
        if self.sharing.intersection(request):
            return None  # a sharing provider could lend room
        providers = self.providers
        members = {uuid: providers[uuid] for root in among
                   for uuid in self.trees.get(root, ())}
        return room_of(members, request, traits, among)


def read_state(client: placement_client.PlacementClient,
               listed: Listed) -> ProviderState:
    """A :class:`ProviderState` of the provider ``listed`` (a
    :class:`Listed`): three calls (inventories, usages, traits), with their
    generations checked against each other.

    :raises placement_client.NotFound: when the provider is gone.
    """
    uuid = listed.uuid
    for _attempt in range(usage_room.CONSISTENT_READ_ATTEMPTS):
        inventories, usages = usage_room.read_provider(client, uuid)
        traits = client.get('/resource_providers/%s/traits' % uuid)
        generation = inventories['resource_provider_generation']
        if (usages['resource_provider_generation'] == generation ==
                traits['resource_provider_generation']):
            break
    else:
        generation = -1
    return ProviderState(
        uuid, listed.root, listed.parent, generation,
        usage_room.combine(inventories['inventories'], usages['usages']),
        frozenset(traits['traits']))


def near_limit(room: typing.Mapping[str, typing.Mapping[str, int]],
               request: typing.Mapping[str, int], amount: int) -> bool:
    """Whether fewer than :data:`NEAR_LIMIT_FACTOR` x ``amount`` instances
    of ``request`` fit in ``room`` ({provider: {class: room}}): what
    changed since the view's last refresh could then decide."""
    fit = sum(usage_room.fit_in_room(r, request) for r in room.values())
    return fit < NEAR_LIMIT_FACTOR * max(1, amount)


class CapacityView:
    """Every provider's inventories, usages and traits, in memory.

    :param client: a
        :class:`~placement_quota.placement.client.PlacementClient`.
    :param clock: seconds, monotonic (tests pass a fake one).
    :param directory: a :class:`~placement_quota.placement.directory.
        ProviderDirectory` given each listing (it then lists nothing
        itself while the view refreshes).
    :ivar reads: providers read so far (their states; tests and tools).
    :ivar refreshes: refreshes made so far.
    """

    def __init__(self, client, clock=time.monotonic,
                 resync_batch=RESYNC_BATCH,
                 max_workers=usage_room.MAX_WORKERS, directory=None):
        self.client = client
        self.clock = clock
        self.resync_batch = resync_batch
        self.max_workers = max_workers
        self.directory = directory
        self.reads = 0
        self.refreshes = 0
        self._snapshot = Snapshot({}, {}, None)
        self._resync_from = ''
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._thread = None

    @property
    def _providers(self):
        return self._snapshot.providers

    # --- freshness ----------------------------------------------------------

    def age(self) -> typing.Optional[float]:
        """Seconds since the listing of the last refresh was asked for
        (None before the first refresh)."""
        as_of = self._snapshot.as_of
        return None if as_of is None else max(0.0, self.clock() - as_of)

    def refresh(self) -> float:
        """Bring the view up to date now; return its age (about 0)."""
        with self._lock:
            self._refresh()
        return self.age()

    def ensure_fresh(self, max_age: float) -> float:
        """Refresh unless the view is younger than ``max_age`` seconds;
        return its age. Callers arriving during a refresh wait for it and
        use it (a decision calls :meth:`fresh`, which never waits)."""
        age = self.age()
        if age is not None and age < max_age:
            return age
        with self._lock:
            age = self.age()
            if age is None or age >= max_age:
                self._refresh()
        return self.age()

    def fresh(self, max_age: float) -> typing.Optional[float]:
        """The view's age when it is younger than ``max_age`` seconds,
        else None: the caller reads Placement live, and the background
        refresh (:meth:`start`) is asked to run now if it is not running
        already. Never waits for a refresh. Without a background refresh
        the view is refreshed here (:meth:`ensure_fresh`)."""
        age = self.age()
        if age is not None and age < max_age:
            return age
        thread = self._thread
        if thread is None or not thread.is_alive():
            return self.ensure_fresh(max_age)
        self._wake.set()
        return None

    def _refresh(self):
        started = self.clock()
        listing = list_providers(self.client)
        if self.directory is not None:
            self.directory.take_listing(started, listing)
        known = self._snapshot.providers
        kept = {}
        to_read = []
        for listed in listing:
            state = known.get(listed.uuid)
            if listed.generation == 0:
                # Never changed: no inventory, usage or trait to read.
                if state is None or state.generation != 0 or \
                        (state.root, state.parent) != (listed.root,
                                                       listed.parent):
                    state = ProviderState(listed.uuid, listed.root,
                                          listed.parent, 0, {},
                                          frozenset())
                kept[listed.uuid] = state
            elif state is None or state.generation != listed.generation:
                to_read.append(listed)
            else:
                if (listed.root, listed.parent) != (state.root,
                                                    state.parent):
                    # Re-parented: the tree comes from the listing.
                    state = dataclasses.replace(
                        state, root=listed.root, parent=listed.parent)
                kept[listed.uuid] = state
        states = self._read_all(to_read)
        kept.update((s.uuid, s) for s in states if s is not None)
        names = {listed.name: listed.uuid for listed in listing
                 if listed.uuid in kept}
        # One assignment: a reader sees this refresh or the last, whole.
        self._snapshot = Snapshot(kept, names, started)
        self.refreshes += 1
        LOG.debug('Capacity view refreshed: %d providers, %d read again, in '
                  '%.3f s.', len(kept), len(to_read),
                  self.clock() - started)
        self._resync(self._resync_batch(kept))

    def _resync_batch(self, kept):
        """Up to :attr:`resync_batch` unchanged providers with a usage,
        the next ones after the last batch (UUID order, wrapping round),
        of ``kept`` (all listed now)."""
        if not self.resync_batch:
            return []
        candidates = sorted(uuid for uuid, state in kept.items()
                            if state.capacities)
        after = bisect.bisect_right(candidates, self._resync_from)
        batch = (candidates[after:] + candidates[:after])[
            :self.resync_batch]
        self._resync_from = batch[-1] if batch else ''
        return [kept[uuid] for uuid in batch]

    def _resync(self, states):
        """Read the usages of ``states`` again (:meth:`_usages`), one after
        the other, once the refresh is in the view, and put them in it.
        They only find frees that moved no generation (the view was on the
        safe side), so the view's age does not wait for them, and they
        come to Placement one at a time beside the decisions' calls."""
        fresh = []
        for state in states:
            self.reads += 1
            try:
                fresh.append((state, self._usages(state)))
            except placement_client.NotFound:
                pass  # deleted: the next listing takes it out
        if fresh:
            self._snapshot = self._snapshot.replacing(fresh)

    def _read_all(self, listed):
        """Fresh states of ``listed``: :class:`Listed` entries (read whole)
        and known states (:meth:`_usages`)."""
        def read(entry):
            try:
                if isinstance(entry, ProviderState):
                    return self._usages(entry)
                return read_state(self.client, entry)
            except placement_client.NotFound:
                return None  # deleted since the listing
        if not listed:
            return []
        self.reads += len(listed)
        # Side by side even when few: one after the other, a refresh
        # would wait for each answer of a busy Placement in turn, and the
        # view grow older than the decisions may use.
        return usage_room.read_all(read, listed, self.max_workers)

    def _usages(self, state):
        """``state`` with its usages read again (one call): a known
        provider whose generation did not move has the same inventories
        and traits, only frees may have gone unannounced. Read whole when
        the generation moved meanwhile."""
        body = self.client.get('/resource_providers/%s/usages' % state.uuid)
        if body['resource_provider_generation'] != state.generation:
            return read_state(self.client, Listed(
                state.uuid, '', body['resource_provider_generation'],
                state.root, state.parent))
        used = body['usages']
        return dataclasses.replace(state, capacities={
            rc: dataclasses.replace(c, used=int(used.get(rc, 0)))
            for rc, c in state.capacities.items()})

    # --- the background refresh ---------------------------------------------

    def start(self, interval: float):
        """Refresh now and then every ``interval`` seconds, in a daemon
        thread (until :meth:`stop`); a failed refresh is logged and
        retried at the next turn, the view keeping its last state and
        age."""
        self.interval = interval
        if self._thread is not None and self._thread.is_alive():
            return
        self._stopping.clear()
        self._thread = threading.Thread(
            target=self._run, name='capacity-view', daemon=True)
        self._thread.start()

    def _run(self):
        wait = 0
        while True:
            self._wake.wait(wait)
            self._wake.clear()
            if self._stopping.is_set():
                return
            try:
                self.refresh()
            except Exception as exc:  # keep refreshing whatever happens
                LOG.warning('Capacity view refresh failed (the view is %s '
                            's old): %s', self.age(), exc)
            wait = self.next_refresh_in()

    def next_refresh_in(self) -> float:
        """Seconds until the background refresh is due: ``interval`` after
        the listing of the last refresh (its age), not after the refresh
        ended, so that a long refresh (the first, whole, read of a large
        cloud) does not leave the view older than ``interval`` plus its
        own length; ``interval`` after a refresh that failed."""
        age = self.age()
        if age is None:
            return self.interval
        return max(0.0, self.interval - age)

    def stop(self, timeout=10.0):
        """Stop the background refresh and wait for it to end."""
        self._stopping.set()
        self._wake.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    # --- answers ------------------------------------------------------------

    def uuid_of(self, name: str) -> typing.Optional[str]:
        """The UUID of the provider named ``name`` at the last refresh
        (None: unknown then)."""
        return self._snapshot.names.get(name)

    def provider(self, uuid: typing.Optional[str]
                 ) -> typing.Optional[ProviderState]:
        """The provider ``uuid`` at the last refresh (None: unknown)."""
        return (self._snapshot.providers.get(uuid) if uuid is not None
                else None)

    def room(self, request: typing.Mapping[str, int],
             traits: typing.Optional[typing.Mapping[str, str]] = None,
             among: typing.Optional[typing.Collection[str]] = None
             ) -> typing.Optional[typing.Dict[str, typing.Dict[str, int]]]:
        """What :func:`~placement_quota.placement.usage_room.candidate_room`
        would answer, from the view (no call); limited to the trees of the
        roots ``among`` when given (only those trees are looked at). None
        when it cannot be exact (see the module docstring): read Placement
        instead.

        :raises ValueError: as :func:`~placement_quota.placement.usage_room.
            validate_request`.
        """
        return self._snapshot.room(request, traits, among)


def room_of(providers: typing.Mapping[str, ProviderState],
            request: typing.Mapping[str, int],
            traits: typing.Optional[typing.Mapping[str, str]] = None,
            among: typing.Optional[typing.Collection[str]] = None
            ) -> typing.Optional[typing.Dict[str, typing.Dict[str, int]]]:
    """:meth:`CapacityView.room` of ``providers`` ({uuid:
    :class:`ProviderState`}): the room of the candidates' trees for one
    instance of ``request``, or None when it cannot be exact."""
    request = usage_room.validate_request(request)
    wanted = set(request)
    required = {n for n, v in (traits or {}).items() if v == 'required'}
    forbidden = {n for n, v in (traits or {}).items()
                 if v == 'forbidden'}
    trees = {}
    for state in providers.values():
        if among is not None and state.root not in among:
            if SHARING_TRAIT in state.traits and \
                    wanted.intersection(state.capacities):
                return None
            continue
        if wanted.intersection(state.capacities) and (
                state.parent is not None or
                SHARING_TRAIT in state.traits):
            return None
        trees.setdefault(state.root, []).append(state)
    found = {}
    for root_uuid, members in trees.items():
        root = providers.get(root_uuid)
        if root is None or required - root.traits or \
                forbidden & root.traits:
            continue
        if all(usage_room.class_fit(root.capacities.get(rc), amount)
               for rc, amount in request.items()):
            found.update((m.uuid, m.room()) for m in members)
    return found


def flat_room(client: placement_client.PlacementClient,
              request: typing.Mapping[str, int],
              traits: typing.Optional[typing.Mapping[str, str]],
              root: str, known=None
              ) -> typing.Dict[str, typing.Dict[str, int]]:
    """What ``GET /allocation_candidates?in_tree=<root>`` answers of a
    tree that is one provider (a compute node without nested providers),
    read live in two calls (its inventories and usages, at one
    generation; a third for its traits when ``traits`` asks for some)
    instead, and decided by the rules of :func:`room_of`.

    A sharing provider holding a requested class is the caller's to rule
    out (:func:`~placement_quota.placement.usage_room.tree_room`). With
    ``known`` (a :class:`~placement_quota.placement.directory.
    ProviderDirectory`), inventories it kept at the provider's current
    generation save their call (:func:`~placement_quota.placement.
    usage_room.read_provider`).

    :raises placement_client.NotFound: when the provider is gone.
    """
    inventories, usages = usage_room.read_provider(client, root, known)
    found = frozenset()
    if traits:
        found = frozenset(client.get(
            '/resource_providers/%s/traits' % root)['traits'])
    state = ProviderState(
        root, root, None, inventories['resource_provider_generation'],
        usage_room.combine(inventories['inventories'], usages['usages']),
        found - {SHARING_TRAIT})
    return room_of({root: state}, request, traits) or {}
