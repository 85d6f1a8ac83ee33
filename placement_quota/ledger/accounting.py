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
``floatingips``    ``virtual:floatingip``: ``amount``
``networks``       ``network``: one segment per reservation
=================  ====================================================

Unknown reservation types reserve nothing we count.
"""

from placement_quota import lease as lease_model

HOSTS = 'hosts'
INSTANCES = 'instances'
FLOATINGIPS = 'floatingips'
NETWORKS = 'networks'
VCPU = 'class:VCPU'
MEMORY_MB = 'class:MEMORY_MB'
DISK_GB = 'class:DISK_GB'
HOST_PREFIX = 'host:'

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


def reservation_amounts(reservation, host_resources=None):
    """``{resource: amount}`` of one :class:`~lease.Reservation`.

    ``host_resources(hostname)`` returns ``{'VCPU': n, ...}`` of one host
    (from Placement); without it, or for a host it does not know, hosts
    count only as hosts.
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


def lease_amounts(lease, host_resources=None):
    """``{resource: amount}`` of a whole :class:`~lease.Lease`."""
    total = {}
    for reservation in lease.reservations:
        add(total, reservation_amounts(reservation, host_resources))
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
