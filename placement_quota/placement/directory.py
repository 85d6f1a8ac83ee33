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
"""Which resource provider a host is, and which providers share.

Blazar names a host by its hypervisor host name, the name of its compute
node's resource provider; Placement calls take the provider's UUID. Looking
one name up is a call (``GET /resource_providers?name=``, about 4 ms on
the tests' Placement), so a lease naming two hosts not seen before paid
two calls before its capacity could be read. :class:`ProviderDirectory`
answers from one listing of every provider instead (``GET
/resource_providers``: about 25 ms at 1,000 providers), listed when a name
is missing and the last listing is older than ``relist_after`` seconds;
a name still missing is then looked up alone (in parallel), so a compute
node added since is found at once. Only the first listing is waited for:
a later one, due, runs in a background thread while the callers use the
last one (a name missing from it is looked up alone meanwhile), as
listing 10,000 providers takes about a second, which no decision should
wait for. The listing is decoded one provider at a time (see
:meth:`~placement_quota.placement.client.PlacementClient.get_items`); and
while the capacity policy keeps its local view of the providers, the
view's listings serve here too (:meth:`ProviderDirectory.take_listing`),
so the directory lists nothing itself. A name Placement does not know costs
its lookup each time (it is never remembered as missing). A compute node
keeps its name and UUID for life; one deleted (and maybe created again
under the same name) is dropped by the reader that finds its provider
gone (:meth:`ProviderDirectory.forget`) and by the next listing. A
listing is attempted at most once a ``relist_after``, failed or not.

It also knows which resource classes the sharing providers
(``MISC_SHARES_VIA_AGGREGATE``) hold, read at most every
``sharing_max_age`` seconds (one call, and one per sharing provider):
whether a lease's capacity can be read tree by tree
(:func:`~placement_quota.placement.usage_room.tree_room`) depends on it.
That is configuration (an operator adds shared storage), not usage, and a
stale answer errs towards refusing: a sharing provider not yet seen leaves
out room it could lend (a lease may be refused that it would hold, never
admitted beyond it), and one no longer sharing makes the decision read the
whole cloud (exact).

And it keeps the inventories of the providers read (``GET
.../inventories``, with the generation they were read at): a live
capacity read of a host (:func:`~placement_quota.placement.usage_room.
read_provider`) reads its usages first and takes the kept inventories
when the usages carry the same provider generation -- one call instead
of two. That is exact: Placement moves a provider's generation with every
change of its inventories, so inventories read at the generation the
usages are read at are its inventories now. (Frees do not move it, but
they change usages, which are read every time.) Kept inventories are
used for ``relist_after`` seconds at most, from their read, and only when
the usages name the same classes (a custom class renamed, which
Placement allows below microversion 1.7 without moving generations, is
read again). They are dropped when a reader finds their provider gone
(:meth:`ProviderDirectory.forget`) and at each listing, with providers
no longer listed or listed at a lower generation than kept (deleted and
created again under their UUID: generations start again). What is left:
a provider deleted and created again under its UUID, with the same
classes, reaching the kept generation, all within ``relist_after`` of
the kept read and before the next listing.
"""

import threading
import time
import typing
from urllib import parse

from oslo_log import log as logging

from placement_quota.placement import usage_room

LOG = logging.getLogger(__name__)

#: Seconds between two listings of every provider made because a name was
#: missing (a name missing sooner is looked up alone).
RELIST_AFTER = 60.0
#: Oldest, in seconds, the sharing providers' classes may be.
SHARING_MAX_AGE = 60.0


class _Listed(typing.NamedTuple):
    uuid: str
    name: str
    generation: int
    root: str


def _listed(entry):
    """What a directory keeps of an entry of ``GET /resource_providers``."""
    return _Listed(entry['uuid'], entry['name'], entry['generation'],
                   entry.get('root_provider_uuid') or entry['uuid'])


class ProviderDirectory:
    """Provider name -> UUID, and the classes of the sharing providers."""

    def __init__(self, client, relist_after: float = RELIST_AFTER,
                 sharing_max_age: float = SHARING_MAX_AGE,
                 clock=time.monotonic):
        self.client = client
        self.relist_after = relist_after
        self.sharing_max_age = sharing_max_age
        self.clock = clock
        self._lock = threading.Lock()
        self._listing = threading.Lock()
        self._relisting = None
        self._accepted_at = None
        self._uuids = {}
        self._listed_at = None
        self._tree_sizes = {}
        self._sharing = None
        self._inventories = {}
        #: Calls made, by kind (``listing``, ``name``, ``sharing``).
        self.calls = {'listing': 0, 'name': 0, 'sharing': 0}

    def uuids(self, names: typing.Iterable[str]) -> typing.Dict[str, str]:
        """``{name: uuid}`` of ``names`` Placement has a provider of (a
        name it has none of is left out)."""
        names = sorted(set(names))
        with self._lock:
            found = {n: self._uuids[n] for n in names if n in self._uuids}
        missing = [n for n in names if n not in found]
        if not missing:
            return found
        listed = self._list_if_due()
        with self._lock:
            found.update((n, self._uuids[n]) for n in missing
                         if n in self._uuids)
        missing = [n for n in missing if n not in found]
        if listed or not missing:
            # Just listed: a name missing now is not in Placement.
            return found
        for name, uuid in zip(missing, usage_room.read_all(
                self._look_up, missing, inline_up_to=1)):
            if uuid is not None:
                found[name] = uuid
        return found

    def uuid(self, name: str) -> typing.Optional[str]:
        """The UUID of the provider named ``name``, or None."""
        return self.uuids([name]).get(name)

    def _list_if_due(self):
        """List every provider when the last listing is ``relist_after``
        old; whether this call did. Only the first listing is made here
        (a caller arriving meanwhile waits for it, and finds its names in
        it); a later one runs in the background (:meth:`_relist`) and
        the caller goes on with the last one."""
        with self._lock:
            first = self._listed_at is None
            due = first or self.clock() - self._listed_at >= \
                self.relist_after
        if not due:
            return False
        if not first:
            self._relist()
            return False
        with self._listing:
            with self._lock:
                due = self._listed_at is None
            if due:
                self._list()
            return due

    def _relist(self):
        """List again in a background thread, unless one is at it."""
        with self._lock:
            if self._relisting is not None and self._relisting.is_alive():
                return
            # One attempt per relist_after, even a failed one.
            self._listed_at = self.clock()
            self._relisting = threading.Thread(
                target=self._list_logged, name='provider-directory',
                daemon=True)
            self._relisting.start()

    def _list_logged(self):
        try:
            with self._listing:
                self._list()
        except Exception as exc:  # the next due listing tries again
            LOG.warning('Listing the resource providers failed: %s', exc)

    def wait_listing(self, timeout=None):
        """Wait for a background listing to end (tests and tools)."""
        thread = self._relisting
        if thread is not None:
            thread.join(timeout)

    def _list(self):
        listed_at = self.clock()
        with self._lock:
            # One attempt per relist_after, even a failed one: the callers
            # meanwhile look names up alone rather than each list again.
            self._listed_at = listed_at
        listing = self.client.get_items(
            '/resource_providers', 'resource_providers', _listed)
        with self._lock:
            self.calls['listing'] += 1
        self._accept(listed_at, listing)

    def take_listing(self, listed_at, listing):
        """Use ``listing`` (entries with the ``uuid``, ``name``,
        ``generation`` and ``root`` of each provider, e.g. :class:`~
        placement_quota.placement.capacity_view.Listed`), made when
        :attr:`clock` read ``listed_at``, as a listing of this directory's
        own."""
        with self._lock:
            if self._listed_at is None or self._listed_at < listed_at:
                self._listed_at = listed_at
        self._accept(listed_at, listing)

    def _accept(self, listed_at, listing):
        uuids, sizes, generations = {}, {}, {}
        for rp in listing:
            uuids[rp.name] = rp.uuid
            generations[rp.uuid] = rp.generation
            sizes[rp.root] = sizes.get(rp.root, 0) + 1
        with self._lock:
            if self._accepted_at is not None and \
                    listed_at < self._accepted_at:
                return  # a newer listing is in already
            self._accepted_at = listed_at
            # Names gone from Placement go from here too.
            self._uuids = uuids
            self._tree_sizes = sizes
            # And kept inventories of providers gone, or created again
            # under their UUID (generations started again).
            self._inventories = {
                uuid: kept for uuid, kept in self._inventories.items()
                if generations.get(uuid, -1) >=
                kept[1]['resource_provider_generation']}
        LOG.debug('Listed %d resource providers.', len(uuids))

    def forget(self, uuid: str):
        """Drop the names of ``uuid``, a provider Placement no longer has:
        their next use looks them up again."""
        with self._lock:
            self._uuids = {name: known for name, known in self._uuids.items()
                           if known != uuid}
            self._tree_sizes.pop(uuid, None)
            self._inventories.pop(uuid, None)

    def inventories(self, uuid: str, generation: int
                    ) -> typing.Optional[typing.Mapping]:
        """The inventories answer of provider ``uuid`` kept by
        :meth:`keep_inventories`, if it was read at ``generation`` at
        most ``relist_after`` seconds ago; else None."""
        with self._lock:
            kept = self._inventories.get(uuid)
        if kept is None:
            return None
        read_at, answer = kept
        if (answer['resource_provider_generation'] != generation or
                self.clock() - read_at >= self.relist_after):
            return None
        return answer

    def keep_inventories(self, uuid: str, answer: typing.Mapping):
        """Keep ``answer`` (``GET /resource_providers/{uuid}/inventories``,
        with its ``resource_provider_generation``) for :meth:`inventories`.
        """
        with self._lock:
            self._inventories[uuid] = (self.clock(), answer)

    def is_flat(self, uuid: str) -> bool:
        """Whether the provider ``uuid`` was a tree of its own, without
        nested providers, at a listing at most ``relist_after`` seconds
        old (listed again when older). A nested provider added since is
        unseen until the next listing: the capacity read of such a tree
        leaves its room out (a lease may be refused that it would hold,
        never admitted beyond it)."""
        self._list_if_due()
        with self._lock:
            return self._tree_sizes.get(uuid) == 1

    def _look_up(self, name):
        found = self.client.get('/resource_providers?name=%s'
                                % parse.quote(name, safe=''))
        with self._lock:
            self.calls['name'] += 1
            for rp in found['resource_providers']:
                self._uuids[name] = rp['uuid']
                return rp['uuid']
        return None

    def sharing_classes(self) -> typing.FrozenSet[str]:
        """The resource classes some sharing provider has inventory of,
        at most ``sharing_max_age`` seconds old."""
        now = self.clock()
        with self._lock:
            cached = self._sharing
        if cached is not None and now - cached[0] < self.sharing_max_age:
            return cached[1]
        classes = usage_room.sharing_classes(self.client)
        with self._lock:
            self.calls['sharing'] += 1
            self._sharing = (now, classes)
        return classes
