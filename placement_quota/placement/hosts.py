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
(what an instance of the whole host can use). Two calls per host, cached
for a configurable time; an unknown host has none.

An admission must not wait for Placement while it holds ledger locks: the
hosts of a lease are read before (:meth:`HostResources.prefetch`) and the
admission looks them up in what was read (:class:`Prefetched`).
"""

import threading
import time
from urllib import parse

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

#: The classes of a host that a physical:host reservation records.
CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB')


class HostResources:
    """Callable ``hostname -> {'VCPU': n, 'MEMORY_MB': n, 'DISK_GB': n}``.
    """

    def __init__(self, client, ttl=300, clock=time.monotonic):
        self.client = client
        self.ttl = ttl
        self.clock = clock
        self._cache = {}
        self._lock = threading.Lock()
        self.reads = 0

    def __call__(self, hostname):
        now = self.clock()
        with self._lock:
            cached = self._cache.get(hostname)
        if cached is not None and now - cached[0] < self.ttl:
            return cached[1]
        resources = self._read(hostname)
        with self._lock:
            self._cache[hostname] = (now, resources)
        return resources

    def prefetch(self, hostnames):
        """A :class:`Prefetched` of ``hostnames``, read now."""
        return Prefetched({name: self(name) for name in sorted(
            set(hostnames))})

    def _read(self, hostname):
        self.reads += 1
        found = self.client.get('/resource_providers?name=%s'
                                % parse.quote(hostname, safe=''))
        providers = found.get('resource_providers') or []
        if not providers:
            LOG.info('Host %s has no resource provider in Placement; it '
                     'counts only as a host.', hostname)
            return {}
        uuid = providers[0]['uuid']
        inventories = self.client.get(
            '/resource_providers/%s/inventories' % uuid)['inventories']
        return {rc: inv['total'] - inv.get('reserved', 0)
                for rc, inv in inventories.items()
                if rc in CLASSES}


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
