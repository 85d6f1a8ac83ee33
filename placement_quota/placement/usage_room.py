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
"""Usages and room (what Placement would still let be allocated), read
from Placement.

* :func:`project_usages` -- ``GET /usages`` of a project (and user): the
  amount used per resource class and, from microversion 1.38, per consumer
  type with the number of consumers.
* :func:`provider_capacity` -- one provider's inventories and usages
  combined: per resource class, what Placement would still let be
  allocated.
* :func:`instances_that_fit` (pure) and :func:`instances_that_fit_on_hosts`
  -- how many instances of a given size fit on a provider, on several.

The arithmetic is Placement's own. An allocation of ``amount`` of a class on
a provider is accepted when (``placement/objects/allocation.py``,
``_check_capacity_exceeded``; the same test is the SQL clause
``_capacity_check_clause`` of ``placement/objects/research_context.py``
used for allocation candidates)::

    min_unit <= amount <= max_unit  and  amount % step_size == 0
    used + amount <= (total - reserved) * allocation_ratio

Placement compares with the unrounded product; as ``used + amount`` is an
integer that is the same as comparing with
``int((total - reserved) * allocation_ratio)``, which is how
``placement/objects/inventory.py`` (``Inventory.capacity``) defines
capacity. Constraints hold per allocation, that is per instance (each one a
consumer of its own), while capacity is shared by all.

Pure computation (parsing answers, counting) is kept apart from the calls
that fetch the answers.
"""

import concurrent.futures
import contextvars
import dataclasses
import typing
from urllib import parse

from oslo_log import log as logging

from placement_quota.placement import client as placement_client

LOG = logging.getLogger(__name__)

#: Key of the consumer count in a 1.38 ``GET /usages`` consumer type entry.
CONSUMER_COUNT = 'consumer_count'
#: Reads of a provider's inventories and usages until both answers carry the
#: same provider generation (they are two requests, not one snapshot).
CONSISTENT_READ_ATTEMPTS = 5
#: Providers read at the same time by :func:`instances_that_fit_on_hosts`.
MAX_WORKERS = 8
#: The trait of a provider sharing its inventory through aggregates.
SHARING_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'
#: The microversion of ``in_tree`` in ``GET /allocation_candidates``.
IN_TREE_VERSION = (1, 31)


def read_all(read: typing.Callable, items: typing.Iterable,
             max_workers: int = MAX_WORKERS,
             inline_up_to: int = 1) -> list:
    """``[read(item) for item in items]``, the reads made concurrently by
    at most ``max_workers`` threads; with at most ``inline_up_to`` items,
    in the calling thread (no pool of threads competing with the
    decisions of this process for the interpreter). The first exception
    of a read is raised. Each read runs in a copy of the caller's
    context (:mod:`contextvars`: the request ID sent to Placement)."""
    items = list(items)
    if len(items) <= inline_up_to:
        return [read(item) for item in items]
    contexts = [contextvars.copy_context() for _ in items]
    with concurrent.futures.ThreadPoolExecutor(
            max_workers=max(1, min(max_workers, len(items)))) as pool:
        return list(pool.map(lambda context, item: context.run(read, item),
                             contexts, items))


# --- project usages ----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ConsumerTypeUsage:
    """What the consumers of one consumer type use (microversion 1.38+)."""

    consumer_count: int
    resources: typing.Dict[str, int]


@dataclasses.dataclass(frozen=True)
class ProjectUsages:
    """A project's (or project user's) usage.

    :ivar resources: resource class -> amount, all consumer types together
        (only the asked type when filtered by one).
    :ivar consumer_types: consumer type -> :class:`ConsumerTypeUsage`, or
        None when the microversion (below 1.38) does not offer them.
        Consumers without a type are under ``unknown``; asked for
        ``consumer_type='all'``, Placement puts everything under ``all``.
    """

    resources: typing.Dict[str, int]
    consumer_types: typing.Optional[typing.Dict[str, ConsumerTypeUsage]] = None

    @property
    def consumer_counts(self) -> typing.Optional[typing.Dict[str, int]]:
        """Consumer type -> number of consumers (None below 1.38)."""
        if self.consumer_types is None:
            return None
        return {name: usage.consumer_count
                for name, usage in self.consumer_types.items()}


def parse_usages(body: dict, per_consumer_type: bool) -> ProjectUsages:
    """A :class:`ProjectUsages` from a ``GET /usages`` answer.

    :param per_consumer_type: whether the answer has the 1.38 shape
        ``{"usages": {"INSTANCE": {"consumer_count": 2, "VCPU": 4}}}``
        rather than ``{"usages": {"VCPU": 4}}``.
    """
    usages = body['usages']
    if not per_consumer_type:
        return ProjectUsages(resources={rc: int(amount)
                                        for rc, amount in usages.items()})
    by_type = {}
    totals: typing.Dict[str, int] = {}
    for name, entry in usages.items():
        resources = {rc: int(amount) for rc, amount in entry.items()
                     if rc != CONSUMER_COUNT}
        by_type[name] = ConsumerTypeUsage(
            int(entry.get(CONSUMER_COUNT, 0)), resources)
        for rc, amount in resources.items():
            totals[rc] = totals.get(rc, 0) + amount
    return ProjectUsages(resources=totals, consumer_types=by_type)


def usages_url(project_id: str, user_id: typing.Optional[str] = None,
               consumer_type: typing.Optional[str] = None) -> str:
    """The ``GET /usages`` URL for these filters."""
    query = [('project_id', project_id)]
    if user_id:
        query.append(('user_id', user_id))
    if consumer_type:
        query.append(('consumer_type', consumer_type))
    return '/usages?' + parse.urlencode(query)


def project_usages(client: placement_client.PlacementClient,
                   project_id: str, user_id: typing.Optional[str] = None,
                   consumer_type: typing.Optional[str] = None
                   ) -> ProjectUsages:
    """What a project (and optionally one of its users) uses, in one call.

    From microversion 1.38 usages come per consumer type with consumer
    counts; below it, flat (``consumer_types`` is None).

    :param consumer_type: only consumers of this type (1.38+; ``all`` and
        ``unknown`` -- consumers without a type -- are Placement's special
        values).
    :raises ValueError: when ``project_id`` is empty.
    :raises placement_client.VersionTooOld: when filtering by consumer type
        on a Placement below 1.38 (it would answer every type).
    :raises placement_client.PlacementError: Placement's refusal (e.g. 400
        for a malformed consumer type), with its message.
    """
    if not project_id:
        raise ValueError('project_id must be a non-empty string, not %r'
                         % (project_id,))
    per_type = client.supports(placement_client.CONSUMER_TYPES)
    if consumer_type and not per_type:
        raise placement_client.VersionTooOld(
            200, None, 'Usages by consumer type (%r) need Placement '
            'microversion %s; this Placement offers %s' % (
                consumer_type,
                placement_client.version_string(
                    placement_client.CONSUMER_TYPES),
                placement_client.version_string(client.version)),
            'GET', '/usages')
    body = client.get(usages_url(project_id, user_id, consumer_type))
    return parse_usages(body, per_type)


# --- provider capacity -------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ClassCapacity:
    """One resource class of one provider: its inventory and usage.

    ``capacity`` and ``free`` follow Placement's rule (see the module
    docstring). ``free`` is negative when a provider is over capacity
    (Placement lets an inventory shrink below what is allocated).
    """

    total: int
    reserved: int = 0
    allocation_ratio: float = 1.0
    min_unit: int = 1
    max_unit: int = 0x7FFFFFFF  # Placement's default (db_const.MAX_INT)
    step_size: int = 1
    used: int = 0

    @property
    def capacity(self) -> int:
        """``int((total - reserved) * allocation_ratio)``."""
        return int((self.total - self.reserved) * self.allocation_ratio)

    @property
    def free(self) -> int:
        """``capacity - used``: what more can be allocated in all."""
        return self.capacity - self.used

    def as_dict(self) -> dict:
        """The fields plus ``capacity`` and ``free``."""
        values = dataclasses.asdict(self)
        values.update(capacity=self.capacity, free=self.free)
        return values


def combine(inventories: dict, usages: dict
            ) -> typing.Dict[str, ClassCapacity]:
    """Resource class -> :class:`ClassCapacity`, from the ``inventories``
    and ``usages`` mappings of one provider's two answers."""
    return {rc: ClassCapacity(
        total=inv['total'], reserved=inv['reserved'],
        allocation_ratio=inv['allocation_ratio'], min_unit=inv['min_unit'],
        max_unit=inv['max_unit'], step_size=inv['step_size'],
        used=int(usages.get(rc, 0)))
        for rc, inv in inventories.items()}


def read_provider(client, provider_uuid, known=None):
    """Inventories and usages answers of one provider, two calls, re-read
    (a few times) until both carry the same provider generation (the
    ``resource_provider_generation`` of either answer is then the
    generation they describe).

    ``known`` (a :class:`~placement_quota.placement.directory.
    ProviderDirectory`) keeps inventories by generation: the usages are
    read first, and inventories kept at their generation, of the classes
    the usages name, are used without a call (the provider has not
    changed since); inventories read are kept (from the time of their
    read: a use does not make them younger).

    :raises placement_client.NotFound: for an unknown provider.
    """
    base = '/resource_providers/%s' % parse.quote(provider_uuid, safe='')
    if known is not None:
        usages = client.get(base + '/usages')
        generation = usages['resource_provider_generation']
        inventories = known.inventories(provider_uuid, generation)
        # Usages name exactly the provider's inventory classes; other
        # names mean a class renamed since (Placement's PUT
        # /resource_classes below microversion 1.7 moves no generation).
        if inventories is not None and (
                set(inventories['inventories']) == set(usages['usages'])):
            return inventories, usages
        inventories = client.get(base + '/inventories')
        if inventories['resource_provider_generation'] == generation:
            known.keep_inventories(provider_uuid, inventories)
            return inventories, usages
        # Changed in between: the usual consistent read.
    for attempt in range(1, CONSISTENT_READ_ATTEMPTS + 1):
        inventories = client.get(base + '/inventories')
        usages = client.get(base + '/usages')
        if (inventories['resource_provider_generation'] ==
                usages['resource_provider_generation']):
            break
        LOG.debug('Provider %s changed between reading its inventories and '
                  'usages (generation %s, then %s); reading again (%d).',
                  provider_uuid, inventories['resource_provider_generation'],
                  usages['resource_provider_generation'], attempt)
    else:
        LOG.warning('Provider %s kept changing while being read; using its '
                    'last inventories and usages.', provider_uuid)
        return inventories, usages
    if known is not None:
        known.keep_inventories(provider_uuid, inventories)
    return inventories, usages


def provider_capacity(client: placement_client.PlacementClient,
                      provider_uuid: str) -> typing.Dict[str, ClassCapacity]:
    """Resource class -> :class:`ClassCapacity` of one provider.

    Two calls (``GET .../inventories``, ``GET .../usages``), repeated only
    when the provider changed in between.

    :raises placement_client.NotFound: for an unknown provider, with
        Placement's message.
    """
    inventories, usages = read_provider(client, provider_uuid)
    return combine(inventories['inventories'], usages['usages'])


# --- instances that fit ------------------------------------------------------


def validate_request(request: typing.Mapping[str, int]
                     ) -> typing.Dict[str, int]:
    """The positive amounts of an instance size (zero amounts dropped).

    :raises ValueError: naming the class and value of an amount that is
        not a non-negative integer, or when nothing positive is asked (as
        many such instances would fit as one likes).
    """
    wanted = {}
    for rc, amount in request.items():
        if (isinstance(amount, bool) or not isinstance(amount, int) or
                amount < 0):
            raise ValueError('amount of %s must be a non-negative integer, '
                             'not %r' % (rc, amount))
        if amount:
            wanted[rc] = amount
    if not wanted:
        raise ValueError('the instance size %r asks for no resources'
                         % (dict(request),))
    return wanted


def class_fit(capacity: typing.Optional[ClassCapacity], amount: int) -> int:
    """How many allocations of ``amount`` (> 0) one class still takes:
    0 when the class is absent or ``amount`` breaks its ``min_unit``,
    ``max_unit`` or ``step_size``; else ``free // amount`` (never
    negative)."""
    if capacity is None:
        return 0
    if (amount < capacity.min_unit or amount > capacity.max_unit or
            amount % capacity.step_size):
        return 0
    return max(0, capacity.free) // amount


def fit_by_class(capacity_by_class: typing.Mapping[str, ClassCapacity],
                 request: typing.Mapping[str, int]) -> typing.Dict[str, int]:
    """Resource class -> instances of the ``request`` size that class alone
    would take (zero amounts are left out).

    :raises ValueError: as :func:`validate_request`.
    """
    return {rc: class_fit(capacity_by_class.get(rc), amount)
            for rc, amount in validate_request(request).items()}


def instances_that_fit(capacity_by_class: typing.Mapping[str, ClassCapacity],
                       request: typing.Mapping[str, int]) -> int:
    """How many instances of size ``request`` (resource class -> amount)
    fit on one provider: the tightest class decides.

    :raises ValueError: as :func:`validate_request`.
    """
    return min(fit_by_class(capacity_by_class, request).values())


@dataclasses.dataclass(frozen=True)
class HostsFit:
    """:func:`instances_that_fit_on_hosts`' answer.

    :ivar per_host: provider UUID -> instances that fit on it.
    :ivar total: their sum.
    :ivar capacities: provider UUID -> what was read of it.
    """

    per_host: typing.Dict[str, int]
    total: int
    capacities: typing.Dict[str, typing.Dict[str, ClassCapacity]]


def instances_that_fit_on_hosts(
        client: placement_client.PlacementClient,
        provider_uuids: typing.Iterable[str],
        request: typing.Mapping[str, int],
        max_workers: int = MAX_WORKERS) -> HostsFit:
    """How many instances of size ``request`` fit on each provider, and in
    all. Providers are read concurrently (at most ``max_workers`` at a
    time), two calls each; repeated UUIDs are read once.

    :raises ValueError: as :func:`validate_request`, before any call.
    :raises placement_client.NotFound: for an unknown provider, with
        Placement's message.
    """
    validate_request(request)
    uuids = list(dict.fromkeys(provider_uuids))
    if not uuids:
        return HostsFit({}, 0, {})
    read = read_all(lambda u: provider_capacity(client, u), uuids,
                    max_workers)
    capacities = dict(zip(uuids, read))
    per_host = {u: instances_that_fit(capacities[u], request) for u in uuids}
    return HostsFit(per_host, sum(per_host.values()), capacities)


# --- capacity of every host in one call --------------------------------------


def required_param(traits: typing.Optional[typing.Mapping[str, str]]
                   ) -> str:
    """The ``required`` value of ``{trait: 'required'|'forbidden'}``:
    ``TRAIT1,!TRAIT2`` (forbidden traits need microversion 1.22, below
    :data:`~placement_quota.placement.client.MIN_VERSION`); '' for none."""
    return ','.join(('!' if value == 'forbidden' else '') + name
                    for name, value in sorted((traits or {}).items()))


def candidate_room(client: placement_client.PlacementClient,
                   request: typing.Mapping[str, int],
                   traits: typing.Optional[typing.Mapping[str, str]] = None,
                   in_tree: typing.Optional[str] = None
                   ) -> typing.Dict[str, typing.Dict[str, int]]:
    """Provider UUID -> {resource class: room} of every provider that can
    hold at least one instance of size ``request``, in one call; with
    ``traits`` (``{trait: 'required'|'forbidden'}``, a flavor's
    ``trait:<NAME>`` extra specs) only providers having every required
    trait and none of the forbidden ones.

    ``GET /allocation_candidates?resources=...`` answers with provider
    summaries giving each candidate's ``capacity`` (Placement's rule) and
    ``used`` per class; room is their difference. A provider missing from
    the answer has no room for one such instance. One call whatever the
    number of hosts, where :func:`instances_that_fit_on_hosts` makes two
    per host.

    ``in_tree`` (a provider UUID) limits the answer to that provider's
    tree (Placement's ``in_tree``, microversion 1.31), sharing providers
    outside it excluded: see :func:`tree_room`.

    :raises ValueError: as :func:`validate_request`, before the call.
    :raises placement_client.PlacementError: Placement's refusal, e.g. 400
        ``No such trait(s)`` for a trait it does not know.
    """
    request = validate_request(request)
    query = [('resources', ','.join('%s:%d' % item
                                    for item in sorted(request.items())))]
    if traits:
        query.append(('required', required_param(traits)))
    if in_tree:
        query.append(('in_tree', in_tree))
    found = client.get('/allocation_candidates?%s' % parse.urlencode(
        query, safe=':,!'))
    return {uuid: {rc: int(value['capacity']) - int(value['used'])
                   for rc, value in summary['resources'].items()}
            for uuid, summary in found['provider_summaries'].items()}


def fit_in_room(room: typing.Mapping[str, int],
                request: typing.Mapping[str, int]) -> int:
    """How many instances of ``request`` fit in one provider's ``room``."""
    return min(max(0, room.get(rc, 0)) // amount
               for rc, amount in request.items() if amount)


def sharing_classes(client: placement_client.PlacementClient
                    ) -> typing.FrozenSet[str]:
    """The resource classes some sharing provider
    (``MISC_SHARES_VIA_AGGREGATE``) has inventory of: one call to list
    them, one for the inventories of each."""
    found = client.get('/resource_providers?required=%s' % SHARING_TRAIT)
    classes = set()
    for provider in found['resource_providers']:
        classes.update(client.get('/resource_providers/%s/inventories'
                                  % provider['uuid'])['inventories'])
    return frozenset(classes)


def tree_room(client: placement_client.PlacementClient,
              request: typing.Mapping[str, int],
              traits: typing.Optional[typing.Mapping[str, str]],
              roots: typing.Collection[str],
              max_workers: int = MAX_WORKERS,
              sharing: typing.Optional[typing.AbstractSet[str]] = None,
              read_flat: typing.Optional[typing.Callable] = None
              ) -> typing.Optional[typing.Dict[str, typing.Dict[str, int]]]:
    """:func:`candidate_room` read tree by tree: one ``GET
    /allocation_candidates?in_tree=<root>`` for each of ``roots`` (in
    parallel), which Placement answers in about 15 ms at 1,000 hosts,
    where the call without ``in_tree`` grows with the whole cloud (about
    150 ms at 1,000 hosts). The rooms of the providers of ``roots`` are
    those of :func:`candidate_room` (the trees' candidacy does not depend
    on other trees), unless a sharing provider
    (``MISC_SHARES_VIA_AGGREGATE``) can lend a tree what it lacks:
    ``in_tree`` leaves sharing providers out, so when the cloud has one
    with inventory of a requested class (``sharing``, the classes of
    :func:`sharing_classes`, read now when not given) the answer is None
    and the caller reads the whole cloud instead. None too from a
    Placement older than :data:`IN_TREE_VERSION`.

    ``read_flat(root)``, when given, answers for a tree first: the room
    of a tree known to be one provider, read without the candidates call
    (:func:`~placement_quota.placement.capacity_view.flat_room`), or None
    to make the call.
    """
    if not client.supports(IN_TREE_VERSION):
        return None
    if sharing is None:
        sharing = sharing_classes(client)
    if set(sharing) & set(request):
        return None

    def read(root):
        found = read_flat(root) if read_flat is not None else None
        if found is None:
            found = candidate_room(client, request, traits, in_tree=root)
        return found

    room = {}
    for one in read_all(read, sorted(roots), max_workers):
        room.update(one)
    return room
