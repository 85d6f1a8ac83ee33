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
"""How a lease is found in the ledger: Blazar's lease ID, else a
fingerprint of what was seen.

Blazar's check-create runs before the lease exists, so it carries no lease
ID ("Flexible Reservation Usage Enforcement": UUIDs will not be sent);
Blazar does not keep lease names unique (it dropped that constraint in
2017) and calls no enforcement on a name-only update. A name therefore
never identifies a lease. An entry is found:

1. by Blazar's lease ID, once any source has shown it (a notification,
   check-update's current lease, on-end) and it was bound to the entry;
2. else by its **fingerprint** (:func:`fingerprint`): project and user
   IDs, name, start and end truncated to the minute (Blazar stores minute
   precision) and, per reservation, its type and the amounts Blazar keeps
   of that type (:data:`RESERVATION_FIELDS`). What check-create saw and
   what Blazar's ``lease.create`` notification or a later call sends of
   the same lease give the same fingerprint;
3. else by its **shape** (:func:`shape`): the fingerprint without the
   name and the user, so that a renamed lease is still found.

Only entries bound to no lease ID are matched by fingerprint or shape
(:meth:`~placement_quota.ledger.store.Transaction.find`): an entry bound
to another lease, or closed, is never taken for another lease.
"""

import collections.abc
import datetime
import hashlib
import json
import re

#: Per resource type, the reservation fields that Blazar's check-create
#: sends and its database gives back unchanged (its notifications, the
#: current lease of check-update, on-end). Other fields are left out: the
#: plugins add some (a virtual:instance reservation's ``flavor_id`` is the
#: flavor Blazar creates for it) or drop them. A type not listed counts
#: by its type alone.
RESERVATION_FIELDS = {
    'physical:host': ('min', 'max'),
    'virtual:instance': ('amount', 'vcpus', 'memory_mb', 'disk_gb'),
    'flavor:instance': ('amount', 'flavor_id'),
    'virtual:floatingip': ('amount', 'network_id'),
}

_MAPPING = collections.abc.Mapping
_INT_RE = re.compile(r'^\s*[+-]?\d+\s*$')


def lease_id(lease):
    """Blazar's lease ID in a lease payload (a lease model or a dict), or
    None."""
    if isinstance(lease, dict):
        # A notification's payload names it lease_id.
        value = lease.get('id') or lease.get('lease_id')
    else:
        values = getattr(lease, 'values', None)
        value = values.get('id') if isinstance(values, _MAPPING) else None
    return value if isinstance(value, str) and value else None


def _normal(value):
    """One value as both sides see it: integers whether sent as numbers or
    strings, other text stripped."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        return int(value) if _INT_RE.match(value) else value.strip()
    return str(value)


def minute(value):
    """``YYYY-MM-DDTHH:MM`` of a date (a ``datetime`` or Blazar's text
    forms), in UTC; ``''`` when it is not a date."""
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(
                value.strip().replace('Z', '+00:00'))
        except ValueError:
            return ''
    if not isinstance(value, datetime.datetime):
        return ''
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc)
    return value.strftime('%Y-%m-%dT%H:%M')


def _reservation(reservation):
    values = reservation if isinstance(reservation, dict) else getattr(
        reservation, 'values', None)
    if not isinstance(values, _MAPPING):
        return json.dumps(None)
    resource_type = values.get('resource_type')
    fields = RESERVATION_FIELDS.get(resource_type, ())
    kept = {f: _normal(values[f]) for f in fields
            if values.get(f) is not None}
    kept['resource_type'] = resource_type
    return json.dumps(kept, sort_keys=True, default=str)


def values_of(lease):
    """The fields of a lease model or a payload dict, as one dict."""
    if isinstance(lease, dict):
        return lease
    values = getattr(lease, 'values', None)
    if not isinstance(values, _MAPPING):
        return {}
    # A placement_quota.lease.model.Lease: its parsed dates and reservations.
    merged = dict(values)
    merged.update(start_date=lease.start_date, end_date=lease.end_date,
                  reservations=list(lease.reservations))
    return merged


def _material(kind, project_id, lease, extra=()):
    values = values_of(lease)
    reservations = values.get('reservations')
    if not isinstance(reservations, (list, tuple)):
        reservations = ()
    return [kind, project_id or ''] + list(extra) + [
        minute(values.get('start_date')),
        minute(values.get('end_date') or values.get('end_time')),
        sorted(_reservation(r) for r in reservations)]


def _digest(material):
    return hashlib.sha256(json.dumps(material).encode('utf-8')).hexdigest()


def fingerprint(project_id, user_id, lease):
    """The fingerprint of ``lease`` (a lease model or a payload dict) in
    ``project_id``, made by ``user_id`` (the lease's own ``user_id`` when
    it has one)."""
    values = values_of(lease)
    user = values.get('user_id')
    if not isinstance(user, str) or not user:
        user = user_id
    name = values.get('name')
    return _digest(_material(
        'fingerprint-1', project_id, values,
        [user if isinstance(user, str) else '',
         name if isinstance(name, str) else '']))


def shape(project_id, lease):
    """The fingerprint of ``lease`` without its name and user: what finds
    a renamed lease."""
    return _digest(_material('shape-1', project_id, lease))
