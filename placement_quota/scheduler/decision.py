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
"""Which aggregates a Nova request must land in, or stay out of (pure).

The scheduler side of reserved capacity: Placement's "Support filtering by
forbidden aggregate membership" spec ("Developer impact") moves Blazar's fence
from a host filter into the Placement query with ``member_of=in:`` (required)
and ``member_of=!in:`` (forbidden). This module makes that decision from what
the scheduler has -- flavor extra specs, image properties, scheduler hints, the
project, and every aggregate with its metadata -- without importing Nova or
doing I/O.

What stock Blazar writes, and what we read (Blazar 18, blazar-nova 10):

* **Host reservation** (``physical:host``): an aggregate named after the
  reservation id, in the availability zone ``blazar_<reservation id>``
  (``[physical:host] blazar_az_prefix``), with metadata ``blazar:owner=
  <project id>``; on lease start its hosts move out of the free pool into
  it. Users pass the scheduler hint ``reservation=<reservation id>``.
* **Instance reservation** (``virtual:instance``, ``flavor:instance``): an
  aggregate named after the reservation id, no availability zone, with
  metadata ``reservation=<id>``, ``filter_tenant_id=<project id>``,
  ``blazar:owner=<project id>`` (and ``affinity_id``); its hosts *stay* in
  the free pool. Blazar's private flavor has the extra specs
  ``aggregate_instance_extra_specs:reservation=<id>`` and
  ``resources:CUSTOM_RESERVATION_<ID>=1`` (id upper-cased, ``-`` -> ``_``).
* **Free pool**: the aggregate named ``[nova] aggregate_freepool_name``
  (``freepool``), created by the operator, not by Blazar; every host Blazar
  manages is in it while unreserved. Preemptible instances
  (``blazar:preemptible=true``, Blazar's "Support preemptible instances with
  Blazar" spec) may run there.
* **More projects** for a pool: Blazar's ``add_project`` writes
  ``<project id>=blazar:project``; blazar-nova admits a project when the
  aggregate has a key equal to its id (any non-empty value) or when
  ``blazar:owner`` is its id.

And the style of Placement's "Support filtering by forbidden aggregate
membership" spec: a reservation aggregate carries the key ``reservation:<id>``
(``required_prefix`` + id), a flavor or image asks for it with the same key,
and every aggregate with a key starting with a ``forbidden_prefixes`` entry is
fenced off for other requests.

The rules:

* a reservation request (hint ``reservation=<id>``; flavor
  ``aggregate_instance_extra_specs:reservation=<id>``,
  ``resources*:CUSTOM_RESERVATION_<ID>`` or ``reservation:<id>``; image
  ``reservation:<id>``) requires the reservation's aggregate(s) -- those that
  admit the project -- and forbids nothing (step 3 of that spec);
* a preemptible request requires the free pool and forbids every other
  Blazar aggregate (so hosts of instance reservations, which stay in the
  free pool, are out too -- blazar-nova's "only in the preemptible
  aggregate");
* any other request forbids every Blazar aggregate, the free pool included
  (step 4 of that spec).

A hint wins over the flavor for the kind, as in blazar-nova; a
reservation wins over preemptible.

Bad metadata never raises. What the request depends on and cannot be
decided safely lands in :attr:`Decision.errors` and the request is
**refused** (the scheduler answers "no valid host"): we fail closed,
because falling back would put unreserved instances on reserved hosts or
reserved instances on shared capacity. Oddities that do not change the
answer land in :attr:`Decision.warnings`.

The aggregates are scanned once per request (:class:`AggregateIndex`),
never once per host; :meth:`Decision.admits_host` then answers for a
host from the aggregate UUIDs it is in.
"""

import collections
import dataclasses
import re
from typing import Dict, Iterable, List, Mapping, Optional, Set, Tuple, Union

from oslo_utils import strutils
from oslo_utils import uuidutils

from placement_quota.scheduler import settings as settings_mod

REGULAR = 'regular'
INSTANCE_RESERVATION = 'instance-reservation'
HOST_RESERVATION = 'host-reservation'
PREEMPTIBLE = 'preemptible'
KINDS = (REGULAR, INSTANCE_RESERVATION, HOST_RESERVATION, PREEMPTIBLE)

#: Nova stores an aggregate's availability zone in its metadata.
AZ_KEY = 'availability_zone'
#: Nova's ``AggregateInstanceExtraSpecsFilter`` namespace in extra specs.
AGGREGATE_EXTRA_SPECS_SCOPE = 'aggregate_instance_extra_specs:'
#: ``resources:X``, ``resources1:X``, ``resources_NET:X`` (granular groups).
#: The names and prefixes of a deployment (see
#: :mod:`placement_quota.scheduler.settings`).
Settings = settings_mod.Settings
DEFAULT_SETTINGS = settings_mod.DEFAULT_SETTINGS
_RESOURCES_KEY = re.compile(r'^resources([1-9][0-9]*|_[a-zA-Z0-9_-]{1,64})?:'
                            r'(?P<rc>.+)$')


@dataclasses.dataclass(frozen=True)
class Aggregate:
    """A Nova host aggregate as the decision sees it."""

    uuid: str
    name: Optional[str] = None
    metadata: Mapping[str, str] = dataclasses.field(default_factory=dict)
    hosts: Tuple[str, ...] = ()

    @classmethod
    def from_object(cls, obj) -> 'Aggregate':
        """From anything with ``uuid``, ``name``, ``metadata``, ``hosts``
        attributes (``nova.objects.Aggregate``, an openstacksdk
        ``Aggregate``). Unset attributes read as empty."""
        def get(name, default):
            try:
                value = getattr(obj, name)
            except Exception:  # unset Nova field, lazy-load failure
                return default
            return default if value is None else value
        metadata = get('metadata', {})
        return cls(uuid=get('uuid', ''), name=get('name', None),
                   metadata=dict(metadata) if isinstance(
                       metadata, Mapping) else {},
                   hosts=tuple(get('hosts', ())))


def _metadata(agg: Aggregate) -> Dict[str, str]:
    """The aggregate's metadata as strings, keys set to None dropped (Nova's
    ``set_metadata`` removes them); anything but a mapping reads as empty."""
    metadata = agg.metadata
    if not isinstance(metadata, Mapping):
        return {}
    return {str(k): str(v) for k, v in metadata.items() if v is not None}


def _name(agg: Aggregate) -> str:
    return '' if agg.name is None else str(agg.name)


def _label(agg: Aggregate) -> str:
    return '%r (%s)' % (agg.name, agg.uuid)


class AggregateIndex:
    """Every aggregate, classified once per request.

    :ivar fenced: aggregates Blazar manages (free pool included): forbidden
        to regular requests.
    :ivar freepools: aggregates named ``freepool_name``.
    :ivar by_reservation: reservation id (lower case) -> aggregates.
    :ivar conflicts: aggregate uuid -> why it is both the free pool and a
        reservation's aggregate.
    """

    def __init__(self, aggregates: Iterable[Union[Aggregate, object]],
                 settings: Settings = DEFAULT_SETTINGS):
        self.settings = settings
        self.aggregates: List[Aggregate] = []
        self.fenced: List[Aggregate] = []
        self.freepools: List[Aggregate] = []
        self.by_reservation: Dict[str, List[Aggregate]] = (
            collections.defaultdict(list))
        self.conflicts: Dict[str, str] = {}
        self._by_host: Optional[Dict[str, Set[str]]] = None
        for agg in aggregates:
            if not isinstance(agg, Aggregate):
                agg = Aggregate.from_object(agg)
            self.aggregates.append(agg)
            self._classify(agg)

    def _classify(self, agg: Aggregate) -> None:
        s = self.settings
        metadata = _metadata(agg)
        name = _name(agg)
        is_freepool = name == s.freepool_name
        az = metadata.get(AZ_KEY, '')
        ids = {}  # reservation id -> the tag naming it
        # Stock Blazar, host reservation: name = id, AZ = prefix + id.
        for prefix in s.az_prefixes:
            if az.startswith(prefix) and len(az) > len(prefix):
                ids.setdefault(az[len(prefix):], '%s=%s' % (AZ_KEY, az))
                if name:
                    ids.setdefault(name, '%s=%s' % (AZ_KEY, az))
        # Stock Blazar, instance reservation: reservation=<id>.
        if metadata.get(s.reservation_key):
            value = metadata[s.reservation_key]
            ids.setdefault(value, '%s=%s' % (s.reservation_key, value))
        # Placement's "Support filtering by forbidden aggregate membership"
        # spec: key reservation:<id>. On the free pool it is the fence tag
        # that spec's step 1 gives it, not a reservation.
        if not is_freepool:
            for key in metadata:
                if key.startswith(s.required_prefix) and len(key) > len(
                        s.required_prefix):
                    ids.setdefault(key[len(s.required_prefix):], key)
        if is_freepool and ids:
            self.conflicts[agg.uuid] = (
                'aggregate %s is the free pool and is also tagged as '
                'reservation aggregate (%s)' % (
                    _label(agg), ', '.join(sorted(ids.values()))))
        for rid in ids:
            self.by_reservation[rid.lower()].append(agg)
        fenced = (is_freepool or bool(ids) or s.owner_key in metadata or
                  s.reservation_key in metadata or
                  any(key.startswith(p) for key in metadata
                      for p in s.forbidden_prefixes))
        if is_freepool:
            self.freepools.append(agg)
        if fenced:
            self.fenced.append(agg)

    def aggregates_of_host(self, host: str) -> Set[str]:
        """UUIDs of the aggregates listing ``host`` (indexed on first use)."""
        if self._by_host is None:
            self._by_host = collections.defaultdict(set)
            for agg in self.aggregates:
                for name in agg.hosts or ():
                    self._by_host[str(name)].add(agg.uuid)
        return set(self._by_host.get(host, ()))


@dataclasses.dataclass
class Decision:
    """Where a request may go.

    :ivar kind: one of :data:`KINDS`.
    :ivar required: aggregate UUID groups; the host must be in at least one
        aggregate of every group (one ``member_of=in:`` each; Nova's
        ``Destination.require_aggregates(group)``).
    :ivar forbidden: aggregate UUIDs the host must be in none of
        (``member_of=!in:``; ``Destination.append_forbidden_aggregates``).
    :ivar reason: one sentence saying why, for logs and ``explain``.
    :ivar errors: why the request is refused; empty when it is not.
    :ivar warnings: bad metadata that did not change the answer.
    :ivar reservation_ids: the reservations the request asked for.
    """

    kind: str
    required: List[List[str]] = dataclasses.field(default_factory=list)
    forbidden: Set[str] = dataclasses.field(default_factory=set)
    reason: str = ''
    errors: List[str] = dataclasses.field(default_factory=list)
    warnings: List[str] = dataclasses.field(default_factory=list)
    reservation_ids: List[str] = dataclasses.field(default_factory=list)

    @property
    def refused(self) -> bool:
        """No host may take this request ("no valid host")."""
        return bool(self.errors)

    def admits_host(self, aggregate_uuids: Iterable[str]) -> bool:
        """Would a host in these aggregates pass? (The host filter's
        answer, the same as Placement's for the query.)"""
        if self.refused:
            return False
        member = set(aggregate_uuids)
        if member & self.forbidden:
            return False
        return all(member.intersection(group) for group in self.required)


def to_query(decision: Decision) -> Optional[str]:
    """The ``member_of`` part of ``GET /allocation_candidates``.

    ``member_of=in:a,b&member_of=!in:c,d`` (UUIDs sorted, groups in order,
    as Nova's ``RequestGroup.to_queryparams`` writes them); ``''`` when
    nothing is required or forbidden; ``None`` for a refused decision,
    which must not be sent. Needs Placement microversion 1.32 when
    something is forbidden (1.24 for several required groups).
    """
    if decision.refused:
        return None
    params = ['member_of=in:' + ','.join(sorted(group))
              for group in decision.required if group]
    if decision.forbidden:
        params.append('member_of=!in:' + ','.join(sorted(decision.forbidden)))
    return '&'.join(params)


# --- reading the request ----------------------------------------------------

def _hint_values(hints: Optional[Mapping], name: str) -> List[str]:
    """Nova stores hints as lists of strings; accept a bare string too."""
    if not hints or name not in hints:
        return []
    value = hints[name]
    if value is None:
        return []
    if isinstance(value, (str, bytes)):
        value = [value]
    out = []
    for item in value:
        item = item.decode() if isinstance(item, bytes) else str(item)
        if item.strip():
            out.append(item.strip())
    return out


def _class_reservation_id(resource_class: str, s: Settings) -> str:
    """Blazar's ``CUSTOM_RESERVATION_`` + id.upper().replace('-', '_'),
    reversed (Blazar's ids are lower-case UUIDs)."""
    return resource_class[len(s.reservation_class_prefix):].replace(
        '_', '-').lower()


def _flavor_reservations(extra_specs: Mapping, image_properties: Mapping,
                         s: Settings, errors: List[str]):
    """``{id: [sources]}`` from the flavor and image; and the kind."""
    found = collections.defaultdict(list)
    instance = False
    scoped = AGGREGATE_EXTRA_SPECS_SCOPE + s.reservation_key
    for key, value in (extra_specs or {}).items():
        key = str(key)
        if key == scoped and value:
            found[str(value).strip().lower()].append(
                'flavor %s=%s' % (key, value))
            instance = True
            continue
        match = _RESOURCES_KEY.match(key)
        if match and match.group('rc').startswith(
                s.reservation_class_prefix):
            if str(value).strip() in ('0', ''):
                continue  # Nova drops zero amounts
            rid = _class_reservation_id(match.group('rc'), s)
            if not rid:
                errors.append('flavor extra spec %s names no reservation'
                              % key)
                continue
            found[rid].append('flavor %s=%s' % (key, value))
            instance = True
            continue
        if key.startswith(s.required_prefix):
            rid = key[len(s.required_prefix):].strip().lower()
            if not rid:
                errors.append('flavor extra spec %r names no reservation '
                              '(expected %s<reservation id>)'
                              % (key, s.required_prefix))
                continue
            found[rid].append('flavor %s' % key)
    for key in (image_properties or {}):
        key = str(key)
        if key.startswith(s.required_prefix):
            rid = key[len(s.required_prefix):].strip().lower()
            if not rid:
                errors.append('image property %r names no reservation '
                              '(expected %s<reservation id>)'
                              % (key, s.required_prefix))
                continue
            found[rid].append('image %s' % key)
    return dict(found), instance


def _preemptible(extra_specs, image_properties, s: Settings, warnings):
    for where, props in (('flavor extra spec', extra_specs),
                         ('image property', image_properties)):
        if props and props.get(s.preemptible_key) is not None:
            value = props[s.preemptible_key]
            try:
                if strutils.bool_from_string(value, strict=True):
                    return True
            except ValueError:
                warnings.append('%s %s=%r is not a boolean: taken as false'
                                % (where, s.preemptible_key, value))
    return False


def _admits(agg: Aggregate, project_id: Optional[str], s: Settings) -> bool:
    """blazar-nova's rule, plus Nova's ``filter_tenant_id*`` lists.

    The project is admitted when it is ``blazar:owner``, when it is a key with
    a non-empty value (Blazar's ``add_project``), or when it is in a
    ``filter_tenant_id*`` list. An aggregate with neither ``blazar:owner`` nor
    a ``filter_tenant_id*`` key admits every project (the aggregates of
    Placement's "Support filtering by forbidden aggregate membership" spec
    have no owner)."""
    metadata = _metadata(agg)
    tenants = set()
    for key, value in metadata.items():
        if key.startswith(s.tenant_key_prefix):
            tenants.update(t.strip() for t in value.split(','))
    restricted = s.owner_key in metadata or bool(tenants)
    if not restricted:
        return True
    if not project_id:
        return False
    return (metadata.get(s.owner_key) == project_id or
            bool(metadata.get(project_id)) or project_id in tenants)


def _valid_uuids(aggs: Iterable[Aggregate], errors: List[str],
                 role: str) -> List[str]:
    uuids = []
    for agg in aggs:
        if isinstance(agg.uuid, str) and uuidutils.is_uuid_like(agg.uuid):
            uuids.append(agg.uuid)
        else:
            errors.append('aggregate %r has a malformed UUID %r: cannot %s '
                          'it in Placement' % (agg.name, agg.uuid, role))
    return uuids


def _owners(aggs: Iterable[Aggregate], s: Settings) -> str:
    owners = sorted({_metadata(a)[s.owner_key] for a in aggs
                     if _metadata(a).get(s.owner_key)})
    return ', '.join(owners) or 'no owner'


# --- the decision -----------------------------------------------------------

def decide(extra_specs: Optional[Mapping] = None,
           image_properties: Optional[Mapping] = None,
           scheduler_hints: Optional[Mapping] = None,
           project_id: Optional[str] = None,
           aggregates: Union[AggregateIndex, Iterable] = (),
           settings: Optional[Settings] = None) -> Decision:
    """Decide a request's required and forbidden aggregates.

    :param extra_specs: the flavor's extra specs.
    :param image_properties: the image's properties (a dict).
    :param scheduler_hints: as Nova stores them: name -> list of strings.
    :param project_id: the project making the request.
    :param aggregates: an :class:`AggregateIndex` built once for the
        request, or the aggregates (indexed here).
    :param settings: defaults to :data:`DEFAULT_SETTINGS` (or the index's).
    :returns: a :class:`Decision`; never raises on bad metadata.
    """
    if isinstance(aggregates, AggregateIndex):
        index = aggregates
        if settings is not None and settings != index.settings:
            raise ValueError('the index was built with other settings')
    else:
        index = AggregateIndex(aggregates, settings or DEFAULT_SETTINGS)
    s = index.settings
    errors: List[str] = []
    warnings: List[str] = []

    hinted = _hint_values(scheduler_hints, s.reservation_hint)
    flavor_ids, instance = _flavor_reservations(
        extra_specs or {}, image_properties or {}, s, errors)
    if hinted or flavor_ids or errors:
        kind = (HOST_RESERVATION if hinted or not instance
                else INSTANCE_RESERVATION)
        decision = _reservation(index, kind, hinted, flavor_ids, project_id,
                                errors, warnings)
    elif (s.allow_preemptibles and
          _preemptible(extra_specs, image_properties, s, warnings)):
        decision = _preemptible_decision(index, errors, warnings)
    else:
        decision = _regular(index, errors, warnings)
    # Conflicting tags the decision did not depend on: still say so.
    for uuid, why in sorted(index.conflicts.items()):
        if not any(why in e for e in decision.errors):
            decision.warnings.append(why)
    if decision.refused:
        decision.reason = 'refused (no valid host): ' + '; '.join(
            decision.errors)
    return decision


def _regular(index, errors, warnings):
    s = index.settings
    forbidden = set(_valid_uuids(index.fenced, errors, 'forbid'))
    if errors:
        errors.append('a regular request cannot be kept off every Blazar '
                      'aggregate')
    return Decision(
        REGULAR, forbidden=forbidden, errors=errors, warnings=warnings,
        reason='regular request: kept off %d Blazar aggregate(s) (free pool '
               '%r, reservation aggregates, %s* metadata)' % (
                   len(forbidden), s.freepool_name,
                   '*, '.join(s.forbidden_prefixes)))


def _preemptible_decision(index, errors, warnings):
    s = index.settings
    if not index.freepools:
        errors.append('preemptible request but no free pool aggregate '
                      'named %r' % s.freepool_name)
    for agg in index.freepools:
        if agg.uuid in index.conflicts:
            errors.append(index.conflicts[agg.uuid])
    required = _valid_uuids(index.freepools, errors, 'require')
    pool_ids = {a.uuid for a in index.freepools}
    forbidden = set(_valid_uuids(
        [a for a in index.fenced if a.uuid not in pool_ids], errors,
        'forbid'))
    return Decision(
        PREEMPTIBLE, required=[required] if required else [],
        forbidden=forbidden, errors=errors, warnings=warnings,
        reason='preemptible request: free pool %r only, kept off %d '
               'reservation aggregate(s)' % (s.freepool_name,
                                             len(forbidden)))


def _reservation(index, kind, hinted, flavor_ids, project_id, errors,
                 warnings):
    s = index.settings
    hinted_ids = list(dict.fromkeys(h.lower() for h in hinted))
    if len(flavor_ids) > 1:
        errors.append('the request names several reservations: %s' % '; '.join(
            '%s (%s)' % (rid, ', '.join(src))
            for rid, src in sorted(flavor_ids.items())))
    elif flavor_ids and hinted_ids and not set(flavor_ids) <= set(hinted_ids):
        (rid, src), = flavor_ids.items()
        errors.append('the flavor/image names reservation %s (%s) but the '
                      'scheduler hint %s=%s names another' % (
                          rid, ', '.join(src), s.reservation_hint,
                          ','.join(hinted)))
    # The hint lists alternatives (blazar-nova: any of the pools); the
    # flavor names one. When both are given the flavor's is in the hint.
    wanted = list(flavor_ids) if flavor_ids else hinted_ids
    decision = Decision(kind, errors=errors, warnings=warnings,
                        reservation_ids=wanted)
    if errors:
        return decision
    group = []
    for rid in wanted:
        aggs = index.by_reservation.get(rid, [])
        if not aggs:
            errors.append('reservation %s has no aggregate (no aggregate '
                          'named %s in a %s* availability zone, none with '
                          '%s=%s or %s%s): unknown reservation, or its '
                          'lease has ended'
                          % (rid, rid, s.az_prefixes[0], s.reservation_key,
                             rid, s.required_prefix, rid))
            continue
        for agg in aggs:
            if agg.uuid in index.conflicts:
                errors.append(index.conflicts[agg.uuid])
        admitting = [a for a in aggs if _admits(a, project_id, s)]
        if not admitting:
            errors.append('project %s is not admitted to reservation %s '
                          '(aggregate %s, owner %s)' % (
                              project_id, rid,
                              ', '.join(_label(a) for a in aggs),
                              _owners(aggs, s)))
            continue
        group.extend(u for u in _valid_uuids(admitting, errors, 'require')
                     if u not in group)
    if not errors:
        decision.required = [group]
        decision.reason = '%s %s: requires aggregate(s) %s' % (
            kind, ', '.join(wanted), ', '.join(group))
    return decision
