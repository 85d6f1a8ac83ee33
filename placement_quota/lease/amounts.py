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
"""What a lease reserves, as amounts per resource (pure).

The names are those of the ledger, of ``placement-quota usage show`` and of
the limits the policies read:

=================  ====================================================
``hosts``          ``physical:host``: the hosts Blazar allocated (or
                   ``max`` before it chose them)
``host:VCPU``...   those hosts' Placement inventories (``total -
                   reserved``), when a host resource reader is given
``instances``      ``virtual:instance``: ``amount``
``class:VCPU``     ``amount`` x ``vcpus``; ``class:MEMORY_MB`` and
                   ``class:DISK_GB`` likewise (Nova's unified-limit names)
``instances``      ``flavor:instance``: ``amount``
``class:<CLASS>``  ``amount`` x what Nova counts for one instance of the
                   flavor (``flavor_rules.nova_resources``: VCPU or PCPU,
                   MEMORY_MB, DISK_GB with swap, ``resources:`` extra
                   specs), when the flavors are given (read from Nova
                   before the admission); without them, only instances
``floatingips``    ``virtual:floatingip``: ``amount``
``networks``       ``network``: one segment per reservation
=================  ====================================================

Other reservation types reserve nothing here; the counting filters deny
them unless ``[enforcement] unknown_reservation_types = allow``
(:func:`unaccounted_types`).
"""

import json

from placement_quota.lease import flavor_rules
from placement_quota.lease import model as lease_model
from placement_quota.lease import schema as lease_schema

HOSTS = 'hosts'
INSTANCES = 'instances'
FLOATINGIPS = 'floatingips'
NETWORKS = 'networks'
VCPU = 'class:VCPU'
MEMORY_MB = 'class:MEMORY_MB'
DISK_GB = 'class:DISK_GB'
HOST_PREFIX = 'host:'

CLASS_PREFIX = 'class:'

#: The reservation types this module accounts for.
KNOWN_TYPES = (lease_model.HOST, lease_model.INSTANCE, lease_model.FLAVOR,
               lease_model.FLOATINGIP, lease_model.NETWORK)

#: Instance fields -> the resource they multiply into.
INSTANCE_CLASSES = (('vcpus', VCPU), ('memory_mb', MEMORY_MB),
                    ('disk_gb', DISK_GB))


def host_names(reservation):
    """The hypervisor host names of a reservation's allocations, in order
    (allocations without one are skipped)."""
    names = []
    for allocation in reservation.allocations:
        name = allocation.get('hypervisor_hostname')
        if isinstance(name, str) and name:
            names.append(name)
    return names


def host_count(reservation):
    """Hosts of a ``physical:host`` reservation: one per allocation once
    Blazar has chosen them, else ``max`` (what it may choose), else
    ``min``, else 1."""
    if reservation.allocations:
        return len(reservation.allocations)
    return reservation.count('max', 0) or reservation.count('min', 0) or 1


def unaccounted_types(lease):
    """The reservation types of ``lease`` this module does not account
    for, sorted (empty for a lease it counts entirely)."""
    return sorted({r.resource_type for r in lease.reservations
                   if r.resource_type not in KNOWN_TYPES})


def flavor_id(reservation):
    """The flavor ID of a ``flavor:instance`` reservation: its
    ``flavor_id``, else the ``id`` of the flavor Blazar stored in its
    ``resource_properties`` (a stored reservation), else None."""
    found = reservation.get('flavor_id')
    if isinstance(found, str) and found:
        return found
    stored = reservation.get('resource_properties')
    if isinstance(stored, str) and stored.startswith('{'):
        try:
            found = json.loads(stored).get('id')
        except (ValueError, AttributeError):
            return None
        if isinstance(found, str) and found:
            return found
    return None


def flavor_ids(lease):
    """``[(index, reservation, flavor ID or None)]`` of the
    ``flavor:instance`` reservations of ``lease``."""
    return [(index, r, flavor_id(r))
            for index, r in enumerate(lease.reservations)
            if r.resource_type == lease_model.FLAVOR]


def flavor_of(reservation, flavors):
    """The :class:`~placement_quota.lease.flavor_rules.Flavor` of a
    ``flavor:instance`` reservation in ``flavors`` (the prefetched
    mapping); KeyError when it was not read."""
    return flavors[flavor_id(reservation)]


def flavor_size(reservation, flavors):
    """``{class: amount}`` Blazar reserves in Placement for one instance
    of a ``flavor:instance`` reservation (zero amounts left out)."""
    size, _ = flavor_rules.placement_resources(flavor_of(reservation,
                                                         flavors))
    return {rc: value for rc, value in size.items() if value > 0}


def flavor_traits(reservation, flavors):
    """``{trait: 'required'|'forbidden'}`` of the flavor of a
    ``flavor:instance`` reservation (its unsuffixed ``trait:<NAME>`` extra
    specs), which Blazar passes to Placement with the resources."""
    return dict(flavor_rules.placement_resources(flavor_of(reservation,
                                                           flavors))[1])


def check_flavor_totals(lease, flavors, field='lease'):
    """Refuse a lease whose flavor instances add up to more than
    :data:`~placement_quota.lease.schema.MAX_TOTAL` of a class, by either
    rule, as a :class:`~placement_quota.lease.model.PayloadError` naming the
    reservation's ``amount``."""
    totals = {}
    for index, reservation, _ in flavor_ids(lease):
        flavor = flavor_of(reservation, flavors)
        amount = reservation.count('amount', 1)
        sizes = dict(flavor_rules.placement_resources(flavor)[0])
        for rc, value in flavor_rules.nova_resources(flavor).items():
            sizes[rc] = max(sizes.get(rc, 0), value)
        for rc, value in sizes.items():
            totals[rc] = totals.get(rc, 0) + amount * value
            if totals[rc] > lease_schema.MAX_TOTAL:
                raise lease_model.PayloadError(
                    '%s.reservations[%d].amount' % (field, index),
                    'makes the lease reserve more than %d %s in all '
                    '(amount x the %s of flavor %s)'
                    % (lease_schema.MAX_TOTAL, rc, rc, flavor.id),
                    reservation.get('amount'))


def reservation_amounts(reservation, host_resources=None, flavors=None):
    """``{resource: amount}`` of one :class:`~lease.Reservation`.

    ``host_resources(hostname)`` returns ``{'VCPU': n, ...}`` of one host
    (from Placement); without it, or for a host it does not know, hosts
    count only as hosts. ``flavors`` maps a flavor ID to its flavor (read
    from Nova beforehand, :class:`~placement_quota.nova.flavors.
    Prefetched`); without it a ``flavor:instance`` reservation counts only
    its instances, and a flavor it lacks raises KeyError.
    """
    rtype = reservation.resource_type
    amounts = {}
    if rtype == lease_model.HOST:
        amounts[HOSTS] = host_count(reservation)
        if host_resources is not None:
            for name in host_names(reservation):
                for rc, value in (host_resources(name) or {}).items():
                    key = HOST_PREFIX + rc
                    amounts[key] = amounts.get(key, 0) + value
    elif rtype == lease_model.INSTANCE:
        amount = reservation.count('amount', 1)
        amounts[INSTANCES] = amount
        for field, resource in INSTANCE_CLASSES:
            per_instance = reservation.count(field, 0)
            if per_instance:
                amounts[resource] = amount * per_instance
    elif rtype == lease_model.FLAVOR:
        amount = reservation.count('amount', 1)
        amounts[INSTANCES] = amount
        if flavors is not None:
            flavor = flavor_of(reservation, flavors)
            for rc, value in flavor_rules.nova_resources(flavor).items():
                amounts[CLASS_PREFIX + rc] = amount * value
    elif rtype == lease_model.FLOATINGIP:
        amounts[FLOATINGIPS] = reservation.count('amount', 1)
    elif rtype == lease_model.NETWORK:
        amounts[NETWORKS] = 1
    return amounts


def add(total, amounts):
    """Add ``amounts`` into ``total`` in place; returns ``total``."""
    for resource, value in amounts.items():
        total[resource] = total.get(resource, 0) + value
    return total


def lease_amounts(lease, host_resources=None, flavors=None):
    """``{resource: amount}`` of a whole :class:`~lease.Lease` (see
    :func:`reservation_amounts`)."""
    total = {}
    for reservation in lease.reservations:
        add(total, reservation_amounts(reservation, host_resources,
                                       flavors))
    return total


def instance_size(reservation):
    """``{resource class: amount}`` of one instance of a
    ``virtual:instance`` reservation (zero amounts left out)."""
    size = {}
    for field, resource in INSTANCE_CLASSES:
        value = reservation.count(field, 0)
        if value:
            size[resource[len('class:'):]] = value
    return size


def host_key(name):
    """A host name as entries record it (``instance_hosts`` is
    space-separated) and as its capacity pool is named: spaces as ``%20``.
    """
    return name.replace(' ', '%20')


#: The reservation types whose allocated hosts an entry records.
INSTANCE_TYPES = (lease_model.INSTANCE, lease_model.FLAVOR)


def instance_hosts(lease_body):
    """Host names of the instance reservations (``virtual:instance`` and
    ``flavor:instance``) of a lease body, spaces as ``%20``: the capacity
    pools (ledger/db/locks.py) the entry takes room from."""
    names = set()
    for reservation in (lease_body or {}).get('reservations') or ():
        if reservation.get('resource_type') not in INSTANCE_TYPES:
            continue
        for allocation in reservation.get('allocations') or ():
            name = allocation.get('hypervisor_hostname')
            if isinstance(name, str) and name:
                names.add(host_key(name))
    return names


def resource_type(lease_body):
    """The ``resource_type`` column of an entry whose lease is
    ``lease_body`` (a dict): its reservations' types, sorted, joined by
    ``+`` (``physical:host+virtual:floatingip``), at most 255 characters;
    None without reservations."""
    reservations = (lease_body or {}).get('reservations') \
        if isinstance(lease_body, dict) else None
    types = {r.get('resource_type') for r in reservations or ()
             if isinstance(r, dict)}
    types = sorted(t for t in types if isinstance(t, str) and t)
    return '+'.join(types)[:255] or None


def instance_columns(amounts, lease_body=None):
    """The ``instance_*`` columns of an entry holding ``amounts``."""
    return {'instance_vcpus': amounts.get(VCPU, 0),
            'instance_memory_mb': amounts.get(MEMORY_MB, 0),
            'instance_disk_gb': amounts.get(DISK_GB, 0),
            'instance_hosts': ' '.join(sorted(instance_hosts(lease_body)))}
