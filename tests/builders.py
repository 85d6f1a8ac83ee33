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
"""Leases and reservations as Blazar sends them to enforcement.

The payloads of Blazar's "Flexible Reservation Usage Enforcement" spec: a lease
is Blazar's lease values (``start_date``, ``end_date``, ``name``, ``id`` once
it exists) with its ``reservations``; each reservation is Blazar's reservation
values plus the ``allocations`` Blazar chose for it, as
``UsageEnforcement.format_lease`` builds them
(blazar/enforcement/enforcement.py). Plain dicts, for the HTTP service and for
filters called in-process alike::

    lease(day(2), day(3), hosts('a', 'b'), instances(2, vcpus=4),
          name='l')

Dates are strings in the spec's ``YYYY-MM-DD HH:MM`` form, in June 2026
(:func:`day`); :data:`NOW` is the start of that month. Every lease field
or reservation field not given keeps the value the policy tests always
sent.
"""

import datetime

#: "Now" of the ledger tests: 2026-06-01 00:00 (naive UTC).
NOW = datetime.datetime(2026, 6, 1, 0, 0)

#: A lease ID as Blazar gives one, once the lease exists.
LEASE_ID = '8a5a9d5e-0000-4000-8000-000000000001'


def day(d, hour=0):
    """A date string of June 2026: ``day(2, 10)`` is
    ``'2026-06-02 10:00'``."""
    return '2026-06-%02d %02d:00' % (d, hour)


def at(d, hour=0):
    """The datetime of :func:`day` ``(d, hour)``."""
    return datetime.datetime(2026, 6, d, hour)


def context(project_id, user_id='u', **extra):
    """The ``context`` of a request: who asks (``auth_url`` and
    ``region_name`` may be added as keywords)."""
    return dict({'project_id': project_id, 'user_id': user_id}, **extra)


def instances(amount, vcpus=1, memory_mb=512, disk_gb=1, hosts=()):
    """A ``virtual:instance`` reservation of ``amount`` instances of one
    flavor, allocated on ``hosts`` (hypervisor host names)."""
    return {'resource_type': 'virtual:instance', 'amount': amount,
            'vcpus': vcpus, 'memory_mb': memory_mb, 'disk_gb': disk_gb,
            'affinity': None, 'resource_properties': '',
            'allocations': [{'id': h, 'hypervisor_hostname': h}
                            for h in hosts]}


def hosts(*names, min=None, max=None, hypervisor_properties='[]',
          resource_properties='', first_id=0, **extra):
    """A ``physical:host`` reservation allocated the hosts ``names``.

    ``min`` and ``max`` default to the number of hosts; the allocations'
    IDs count from ``first_id``; ``extra`` are the extra capabilities of
    every host (``su_factor=2.5``, ``availability_zone='az1'``).
    """
    return {'resource_type': 'physical:host',
            'min': len(names) if min is None else min,
            'max': len(names) if max is None else max,
            'hypervisor_properties': hypervisor_properties,
            'resource_properties': resource_properties,
            'allocations': [{'id': str(i + first_id),
                             'hypervisor_hostname': n,
                             'extra': dict(extra)}
                            for i, n in enumerate(names)]}


def floatingips(amount, network_id='ext', allocations=()):
    """A ``virtual:floatingip`` reservation of ``amount`` IPs."""
    return {'resource_type': 'virtual:floatingip', 'network_id': network_id,
            'amount': amount, 'allocations': list(allocations)}


def network(name='n'):
    """A ``network`` reservation (one network segment)."""
    return {'resource_type': 'network', 'network_name': name,
            'allocations': []}


def lease(start, end, *reservations, name=None, lease_id=None, **extra):
    """A lease from ``start`` to ``end`` (strings or datetimes, as Blazar
    in-process passes them) holding ``reservations``; ``name`` and
    ``lease_id`` (the ``id`` field) only when given, as are ``extra``
    fields (``end_time`` instead of ``end_date``...)."""
    body = {'start_date': start, 'end_date': end,
            'reservations': list(reservations)}
    if name is not None:
        body['name'] = name
    if lease_id is not None:
        body['id'] = lease_id
    body.update(extra)
    return body


class Clock:
    """A monotonic clock the test moves (``now``, from 1000 s)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now
