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
"""NovaQuotaFilter: reservations may not promise more than Nova's quota.

The use case of Blazar's "Flexible Reservation Usage Enforcement" spec,
 "disallowing more reservations for physical hosts than
a project's instance quota allows". For each quota resource, the most the
project already holds reserved at one moment of the lease's window (the
ledger's peak), plus its current Nova usage, plus what the lease asks, must
fit the project's Nova quota:

================  ==========================  ===========================
Nova resource     unified limits (Keystone)   legacy quota sets (Nova API)
================  ==========================  ===========================
instances         ``servers``                 ``instances``
VCPU              ``class:VCPU``              ``cores``
RAM (MiB)         ``class:MEMORY_MB``         ``ram``
disk (GiB)        ``class:DISK_GB``           (none)
================  ==========================  ===========================

A reserved instance counts one instance and its flavor's VCPU, RAM and
disk. A ``flavor:instance`` reservation counts, per instance, what Nova
will count when it boots (``flavor_rules.nova_resources``, the rule of
Nova's ``resources_from_flavor``: PCPU for dedicated CPUs, swap in the
disk, ``resources:<CLASS>`` extra specs), against every ``class:*`` unified
limit the project has (``class:PCPU``, ``class:CUSTOM_*``... too); with
legacy quota sets, ``cores`` counts its VCPU and PCPU. A reserved host
counts as one instance (``nova_quota_hosts_as_instances``) and, with
``nova_quota_count_host_resources``, its whole VCPU, RAM and disk.

Unified limits are read from Keystone (service ``nova_quota_service_type``)
or, for clouds without Keystone limits, from a limits file; usage from
Placement ``GET /usages`` (one call per decision). Legacy quota sets and
their usage are one ``GET os-quota-sets/{project}/detail`` from Nova. A
resource with no limit at all is not limited (Nova's unified limits would
count it as 0; that refusal is not ours to copy).

With ``nova_quota_max_age`` above 0, what was read (limits and usage) is
kept per project for at most that many seconds (:class:`QuotaCache`) and
reused for leases that start in the future; a lease starting now reads it
again. A cached read is checked inside the admission against the
project's generation in the ledger, which moves when one of its leases
starts or ends (ledger/entry_states.py) or when an operator asks
(``placement-quota quota refresh``), in any process on any host: when it
moved, the quota is read again there, under the project's lock.
"""

import collections
import dataclasses
import threading
import time
import typing

from oslo_config import cfg
from oslo_log import log as logging

from placement_quota.nova import quotas
from placement_quota.filters import ledger_base
from placement_quota.filters import measures
from placement_quota.identity import limits as identity_limits
from placement_quota.identity import projects
from placement_quota.lease import model as lease_model
from placement_quota.lease import amounts as accounting
from placement_quota.ledger import window
from placement_quota.limits import sources
from placement_quota.placement import usage

LOG = logging.getLogger(__name__)

UNIFIED = 'unified'
LEGACY = 'legacy'
FILE = 'file'

#: Share of ``nova_quota_max_age`` after which a cached read that answers
#: a decision is also read again in the background (refresh-ahead): the
#: decisions of an active project then seldom wait for Nova or Placement.
REFRESH_AHEAD = 0.5
#: Background reads at most at once (more: the decision that finds the
#: read too old reads it itself).
REFRESH_THREADS = 4

# Nova resource -> (ledger instance resource, host resource class)
UNIFIED_RESOURCES = {
    'servers': (accounting.INSTANCES, None),
    'class:VCPU': (accounting.VCPU, 'VCPU'),
    'class:MEMORY_MB': (accounting.MEMORY_MB, 'MEMORY_MB'),
    'class:DISK_GB': (accounting.DISK_GB, 'DISK_GB'),
}
LEGACY_RESOURCES = {
    'instances': (accounting.INSTANCES, None),
    # Nova's legacy cores count a flavor's vcpus, dedicated or not.
    'cores': ((accounting.VCPU, accounting.CLASS_PREFIX + 'PCPU'), 'VCPU'),
    'ram': (accounting.MEMORY_MB, 'MEMORY_MB'),
}


def nova_amounts(amounts, resources, hosts_as_instances,
                 count_host_resources):
    """Ledger amounts -> ``{nova resource: amount}``."""
    found = {}
    for nova_resource, (ours, host_class) in resources.items():
        if isinstance(ours, tuple):
            value = sum(amounts.get(name, 0) for name in ours)
        else:
            value = amounts.get(ours, 0)
        if ours == accounting.INSTANCES and hosts_as_instances:
            value += amounts.get(accounting.HOSTS, 0)
        if host_class and count_host_resources:
            value += amounts.get(accounting.HOST_PREFIX + host_class, 0)
        if value:
            found[nova_resource] = value
    return found


def fits(limit, peak, in_use, asked):
    """Does ``asked`` fit ``limit`` (-1 unlimited) after the others?"""
    return limit < 0 or peak + in_use + asked <= limit


def instances_that_fit(limits, in_use, peaks, per_instance):
    """How many instances of size ``per_instance`` ({nova resource:
    amount}) fit the quota at once: the tightest resource decides. None
    when nothing limits them."""
    best = None
    for resource, size in per_instance.items():
        limit = limits.get(resource, -1)
        if limit < 0 or size <= 0:
            continue
        room = limit - in_use.get(resource, 0) - peaks.get(resource, 0)
        count = max(0, room // size)
        best = count if best is None else min(best, count)
    return best


@dataclasses.dataclass(frozen=True)
class QuotaRead:
    """What :meth:`NovaQuotaFilter.prepare` read: ``limits`` and
    ``in_use`` ({nova resource: amount}) of the ``class:*`` limits
    ``classes`` too; ``generation``, the project's generation before it
    was read; ``cached``, whether it comes from :class:`QuotaCache`, and
    then its ``age`` (seconds)."""

    limits: typing.Mapping[str, int]
    in_use: typing.Mapping[str, int]
    classes: tuple = ()
    generation: typing.Optional[int] = None
    cached: bool = False
    age: float = 0.0


class QuotaCache:
    """:class:`QuotaRead` per (project, classes), at most ``size`` of
    them (the least recently used go first); ``clock`` gives seconds."""

    def __init__(self, size=10000, clock=time.monotonic):
        self.size = size
        self.clock = clock
        self._lock = threading.Lock()
        self._found = collections.OrderedDict()

    def get(self, key, max_age):
        """The read of ``key`` at most ``max_age`` seconds old (marked
        ``cached``, its ``age`` set), or None."""
        with self._lock:
            found = self._found.get(key)
            if found is None:
                return None
            read, at = found
            age = self.clock() - at
            if age > max_age:
                del self._found[key]
                return None
            self._found.move_to_end(key)
        return dataclasses.replace(read, cached=True, age=age)

    def put(self, key, read):
        with self._lock:
            self._found[key] = (read, self.clock())
            self._found.move_to_end(key)
            while len(self._found) > self.size:
                self._found.popitem(last=False)


class QuotaReader:
    """``read(project_id) -> (limits, in_use)`` from the configured
    source; built lazily, so that the service starts while Keystone, Nova
    or Placement are still down."""

    def __init__(self, services):
        self.services = services
        self.conf = services.conf
        self._lock = threading.Lock()
        self._source = None
        self._usage = None
        self._legacy = None

    @property
    def group(self):
        return self.conf.enforcement

    def resources(self, amounts=()):
        """Nova resource -> (ledger resource, host class): with unified
        limits, every other ``class:*`` of ``amounts`` too."""
        if self.group.nova_quota_source == LEGACY:
            return LEGACY_RESOURCES
        found = dict(UNIFIED_RESOURCES)
        for name in amounts:
            if name.startswith(accounting.CLASS_PREFIX):
                found.setdefault(name, (name, None))
        return found

    def read(self, project_id, classes=()):
        """``(limits, in_use)``; ``classes``: the other ``class:*``
        unified limits to read (those the lease asks for)."""
        if self.group.nova_quota_source == LEGACY:
            return self._read_legacy(project_id)
        return self._read_unified(project_id, classes)

    def _read_legacy(self, project_id):
        with self._lock:
            if self._legacy is None:
                self._legacy = quotas.LegacyQuotas.from_conf(self.conf)
        found = self._legacy.limits_and_usage(project_id)
        limits, in_use = {}, {}
        for resource in LEGACY_RESOURCES:
            if resource in found:
                limits[resource], in_use[resource] = found[resource]
        return limits, in_use

    def _unified_source(self):
        group = self.group
        if group.nova_quota_source == FILE:
            if not group.nova_quota_limits_file:
                raise ValueError('[enforcement] nova_quota_source = file '
                                 'needs nova_quota_limits_file')
            return sources.EmbeddedSource.from_file(
                group.nova_quota_limits_file)
        return identity_limits.KeystoneLimitSource(
            projects.connection(self.conf),
            service_id=group.nova_quota_service_id,
            service_type=group.nova_quota_service_type,
            region_id=group.nova_quota_region_id)

    def _placement_usage(self):
        """The Placement usage reader, made when the usage is first
        counted (never with ``nova_quota_include_usage`` off)."""
        with self._lock:
            if self._usage is None:
                self._usage = usage.PlacementUsage(self.services.placement)
            return self._usage

    def _read_unified(self, project_id, classes=()):
        with self._lock:
            if self._source is None:
                self._source = self._unified_source()
        data = self._source.refresh([project_id])
        project = data.projects.get(project_id)
        own = project.limits if project is not None else {}
        limits = {}
        names = list(UNIFIED_RESOURCES) + sorted(
            set(classes) - set(UNIFIED_RESOURCES))
        for resource in names:
            value = own.get(resource, data.registered_limits.get(resource))
            if value is not None:
                limits[resource] = value
        in_use = {}
        if self.group.nova_quota_include_usage:
            in_use = self._placement_usage().get_usage(
                [project_id], names)[project_id]
        return limits, in_use


class NovaQuotaFilter(ledger_base.LedgerFilter):
    """Deny a lease that would reserve past the project's Nova quota."""

    # A quota from the cache is checked against the project's generation.
    reads_ahead = ('generation',)

    enforcement_opts = [
        cfg.StrOpt(
            'nova_quota_source', default=UNIFIED, choices=[
                (UNIFIED, 'Nova unified limits: Keystone limits of the '
                          'nova_quota_service_type service, usage from '
                          'Placement'),
                (LEGACY, 'Nova legacy quota sets and their usage, from the '
                         'Nova API ([nova] credentials)'),
                (FILE, 'limits from nova_quota_limits_file (the [limits] '
                       'file format, flat), usage from Placement')],
            help='Where the Nova quotas come from.'),
        cfg.StrOpt(
            'nova_quota_limits_file',
            help='With nova_quota_source = file: a YAML or JSON file of '
                 'registered_limits and projects with limits (servers, '
                 'class:VCPU, class:MEMORY_MB, class:DISK_GB).'),
        cfg.StrOpt(
            'nova_quota_service_type', default='compute',
            help='Keystone service type whose limits are Nova\'s.'),
        cfg.StrOpt(
            'nova_quota_service_id',
            help='Keystone service ID whose limits are Nova\'s; unset: the '
                 'single service of type nova_quota_service_type.'),
        cfg.StrOpt(
            'nova_quota_region_id',
            help='Keystone region of Nova\'s limits; unset: limits without '
                 'a region.'),
        cfg.BoolOpt(
            'nova_quota_hosts_as_instances', default=True,
            help='Count each reserved physical host as one instance.'),
        cfg.BoolOpt(
            'nova_quota_count_host_resources', default=False,
            help='Count the VCPU, RAM and disk of reserved physical hosts '
                 '(from Placement; see [ledger] count_host_resources) '
                 'against the cores, RAM and disk quotas.'),
        cfg.BoolOpt(
            'nova_quota_include_usage', default=True,
            help='Add the project\'s current Nova usage to what is '
                 'reserved. Off: only reservations count against the '
                 'quota.'),
        cfg.IntOpt(
            'nova_quota_max_age', default=0, min=0,
            help='Seconds a project\'s quota and usage, once read (from '
                 'Keystone or the limits file and Placement, or from '
                 'Nova\'s quota sets), are reused for its leases that '
                 'start in the future. 0 (the default) reads them for '
                 'every decision (a Nova or Keystone call and a Placement '
                 'call each). A lease starting now always reads them. A '
                 'reused read is dropped, in every service process, as '
                 'soon as one of the project\'s leases starts or ends or '
                 '"placement-quota quota refresh" is run for it (the '
                 'project\'s generation in the ledger); other changes (a '
                 'quota set changed in Nova, servers booted outside '
                 'reservations) are seen within this many seconds. A '
                 'reused read older than half of it is read again in the '
                 'background, so an active project\'s decisions seldom '
                 'wait for the read.'),
    ]

    def __init__(self, conf, services=None):
        super().__init__(conf, services)
        self.reader = QuotaReader(self.services)
        self.cache = QuotaCache()
        self._refreshing = set()
        self._refreshing_lock = threading.Lock()

    def _convert(self, amounts):
        group = self.conf.enforcement
        return nova_amounts(amounts, self.reader.resources(amounts),
                            group.nova_quota_hosts_as_instances,
                            group.nova_quota_count_host_resources)

    def prepare(self, context, lease, flavors=None):
        """Read the quota and the usage (Keystone or Nova, and Placement)
        before the ledger locks anything, for a lease with hosts or
        instances; from :attr:`cache` for a lease starting in the future
        when ``nova_quota_max_age`` allows."""
        if not (lease.reservations_of(lease_model.HOST) or
                lease.reservations_of(lease_model.INSTANCE) or
                lease.reservations_of(lease_model.FLAVOR)):
            return None
        classes = tuple(self._classes(lease, flavors))
        return self._quota(context.project_id, classes,
                           lease.start_date > self.ledger.clock())

    def _quota(self, project_id, classes=(), cached=True):
        """The :class:`QuotaRead` of the project: from :attr:`cache` when
        ``cached`` and ``nova_quota_max_age`` allows, else read now."""
        max_age = self.conf.enforcement.nova_quota_max_age
        if not max_age:
            return QuotaRead(*self.reader.read(project_id, classes),
                             classes=classes)
        if cached:
            found = self.cache.get((project_id, classes), max_age)
            if found is not None:
                if found.age >= max_age * REFRESH_AHEAD:
                    self._refresh_ahead(project_id, classes)
                return found
        return self._read(project_id, classes, self._generation(project_id))

    def _refresh_ahead(self, project_id, classes):
        """Read the project's quota again in a thread of its own (one
        per key, :data:`REFRESH_THREADS` at most)."""
        key = (project_id, classes)
        with self._refreshing_lock:
            if key in self._refreshing or \
                    len(self._refreshing) >= REFRESH_THREADS:
                return
            self._refreshing.add(key)
        threading.Thread(target=self._refresh, args=(key,), daemon=True,
                         name='quota-refresh').start()

    def _refresh(self, key):
        project_id, classes = key
        try:
            self._read(project_id, classes, self._generation(project_id))
        except Exception as exc:
            # The decision that finds the cached read too old reads it
            # itself, and says what failed.
            LOG.warning('Reading the quota of project %s ahead of time '
                        'failed: %s', project_id, exc)
        finally:
            with self._refreshing_lock:
                self._refreshing.discard(key)

    def _read(self, project_id, classes, generation):
        """A :class:`QuotaRead` read now, cached."""
        read = QuotaRead(*self.reader.read(project_id, classes),
                         classes=classes, generation=generation)
        self.cache.put((project_id, classes), read)
        return read

    def _generation(self, project_id):
        """The project's generation, read before its quota is (without
        any lock: a move after this read is seen by the admission)."""
        with self.ledger.reader() as txn:
            return txn.generation(project_id)

    def _current(self, admission, read):
        """``(limits, in_use)`` for the admission: ``read``, unless it
        came from the cache and the project's generation moved since (then
        read again, under the project's lock, which every move takes)."""
        if read.cached:
            generation = admission.txn.generation(admission.project_id)
            if generation != read.generation:
                LOG.debug('Quota of project %s read again: its generation '
                          'moved (%s -> %s).', admission.project_id,
                          read.generation, generation)
                read = self._read(admission.project_id, read.classes,
                                  generation)
            else:
                LOG.debug('Quota of project %s from the cache, %.1f s old.',
                          admission.project_id, read.age)
        return read.limits, read.in_use

    def _classes(self, lease, flavors):
        """The ``class:*`` resources the lease's flavors ask for."""
        flavors = self.flavors_of(lease, flavors)
        if flavors is None:
            return ()
        return sorted(r for r in accounting.lease_amounts(
            lease, flavors=flavors) if r.startswith(
                accounting.CLASS_PREFIX))

    def quota_intervals(self, admission):
        """What the project holds reserved over the admission's window
        (the lease itself left out), in Nova's quota resources."""
        return [window.Interval(i.start, i.end, self._convert(i.amounts))
                for i, row in admission.intervals()]

    def prepare_describe(self, project_id):
        """The quota and usage :meth:`describe` shows, read before (while
        the other filters describe theirs from the ledger). The view is
        no decision: a read ``nova_quota_max_age`` allows is good for it,
        whether the lease it would be for starts now or not."""
        return self._quota(project_id)

    def describe(self, probe):
        read = probe.prepared_for(self)
        if read is None:
            read = self.prepare_describe(probe.project_id)
        limits, in_use = self._current(probe, read)
        resources = sorted(r for r, limit in limits.items() if limit >= 0)
        if not resources:
            return []
        now, peaks = measures.now_and_peaks(
            self.quota_intervals(probe), probe.start, probe.end, resources)
        found = []
        for resource in resources:
            used = in_use.get(resource, 0)
            peak = peaks[resource]
            found.append(measures.Measure(
                self.name, resource, measures.PROJECT, limits[resource],
                resource, in_use=used + now[resource],
                peak=dataclasses.replace(peak, amount=peak.amount + used),
                project_id=probe.project_id))
        return found

    def check(self, admission):
        self.deny_unaccounted(admission.lease)
        asked = self._convert(admission.amounts)
        if not asked:
            return
        read = admission.prepared_for(self)
        if read is None:
            limits, in_use = self.reader.read(admission.project_id, [
                r for r in asked if r.startswith(accounting.CLASS_PREFIX)])
        else:
            limits, in_use = self._current(admission, read)
        peaks = window.peaks(self.quota_intervals(admission),
                             admission.start, admission.end, asked)
        for resource, amount in sorted(asked.items()):
            limit = limits.get(resource, -1)
            peak = peaks[resource]
            used = in_use.get(resource, 0)
            if not fits(limit, peak.amount, used, amount):
                raise self.deny(
                    'Nova quota of project %s for %s: the lease asks for %d '
                    'from %s to %s, %s, and %d in use now; the quota is %d.'
                    % (admission.project_id, resource, amount,
                       ledger_base.when(admission.start),
                       ledger_base.when(admission.end),
                       ledger_base.peak_text(peak), used, limit))
