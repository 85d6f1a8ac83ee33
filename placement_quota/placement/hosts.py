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
"""The resources of a physical host, from its Placement inventories.

Blazar names a host by its hypervisor host name, which is also the name of
the compute node's resource provider. A host's resources are its
``VCPU``, ``MEMORY_MB`` and ``DISK_GB`` inventories, ``total - reserved``
(what an instance of the whole host can use). One call per host (its
inventories; its UUID from the
:class:`~placement_quota.placement.directory.ProviderDirectory`), the
hosts of a lease read in parallel, cached for a configurable time; an
unknown host has none. When the capacity
policy keeps a local view of the providers
(:mod:`~placement_quota.placement.capacity_view`, ``capacity_max_age``),
a host it knows is answered from it, no call, as long as the view is no
older than the cache time.

An admission must not wait for Placement while it holds ledger locks: the
hosts of a lease are read before (:meth:`HostResources.prefetch`) and the
admission looks them up in what was read (:class:`Prefetched`).
"""

import threading
import time

from oslo_log import log as logging

from placement_quota.placement import usage_room
from placement_quota.placement import client as placement_client
from placement_quota.placement import directory as directory_mod

LOG = logging.getLogger(__name__)

#: The classes of a host that a physical:host reservation records.
CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB')


class HostResources:
    """Callable ``hostname -> {'VCPU': n, 'MEMORY_MB': n, 'DISK_GB': n}``.
    """

    def __init__(self, client, ttl=300, clock=time.monotonic,
                 directory=None):
        self.client = client
        self.directory = directory or directory_mod.ProviderDirectory(
            client)
        self.ttl = ttl
        self.clock = clock
        self._cache = {}
        self._lock = threading.Lock()
        self.reads = 0
        self.view = None

    def use_view(self, view):
        """Answer the hosts ``view`` (a
        :class:`~placement_quota.placement.capacity_view.CapacityView`)
        knows from it while it is younger than the cache time."""
        self.view = view

    def __call__(self, hostname):
        resources = self._known(hostname)
        if resources is None:
            resources = self._read_now(hostname)
        return resources

    def _known(self, hostname):
        """The host's resources from the cache or the view, or None."""
        with self._lock:
            cached = self._cache.get(hostname)
        if cached is not None and self.clock() - cached[0] < self.ttl:
            return cached[1]
        resources = self._from_view(hostname)
        if resources is not None:
            with self._lock:
                self._cache[hostname] = (self.clock(), resources)
        return resources

    def _read_now(self, hostname):
        now = self.clock()
        resources = self._read(hostname)
        with self._lock:
            self._cache[hostname] = (now, resources)
        return resources

    def prefetch(self, hostnames):
        """A :class:`Prefetched` of ``hostnames``, those not known read
        now (in parallel)."""
        found = {}
        for name in set(hostnames):
            found[name] = self._known(name)
        missing = sorted(name for name, value in found.items()
                         if value is None)
        found.update(zip(missing, usage_room.read_all(self._read_now,
                                                      missing)))
        return Prefetched(found)

    def _from_view(self, hostname):
        """The host's resources from the view, or None (no view, too old
        for the cache time, or a host it does not know)."""
        view = self.view
        age = view.age() if view is not None else None
        if age is None or age >= self.ttl:
            return None
        found = view.provider(view.uuid_of(hostname))
        if found is None:
            return None
        return {rc: c.total - c.reserved
                for rc, c in found.capacities.items() if rc in CLASSES}

    def _read(self, hostname):
        self.reads += 1
        for _attempt in range(2):
            uuid = self.directory.uuid(hostname)
            if uuid is None:
                LOG.info('Host %s has no resource provider in Placement; '
                         'it counts only as a host.', hostname)
                return {}
            try:
                answer = self.client.get(
                    '/resource_providers/%s/inventories' % uuid)
            except placement_client.NotFound:
                # Deleted (and maybe created again) since it was listed.
                self.directory.forget(uuid)
                continue
            # A live capacity read of this host saves a call with it.
            self.directory.keep_inventories(uuid, answer)
            return {rc: inv['total'] - inv.get('reserved', 0)
                    for rc, inv in answer['inventories'].items()
                    if rc in CLASSES}
        return {}


class Prefetched:
    """Callable ``hostname -> {'VCPU': n, ...}`` over hosts read
    beforehand; never calls Placement (a host not read has none)."""

    def __init__(self, found):
        self.found = found

    def __call__(self, hostname):
        found = self.found.get(hostname)
        if found is None:
            LOG.warning('Host %s was not read from Placement before the '
                        'admission; it counts only as a host.', hostname)
            return {}
        return found
