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
"""The payload of Blazar's "Flexible Reservation Usage Enforcement" spec:
context, lease, reservations, allocations.

Pure code: parsing and validation only, no I/O. The same model serves the
HTTP service (JSON bodies, dates as strings) and filters driven in-process
by Blazar (dicts whose dates are ``datetime`` objects).

Dates are accepted as Blazar really sends them (``datetime.isoformat()``,
e.g. ``2020-05-13T00:00:00.123456``) and as the spec shows them
(``2020-05-13 00:00``); an offset or ``Z`` is converted to naive UTC, which
is what Blazar stores. ``end_time`` (the spec's examples) is an alias of
``end_date`` (Blazar's field).

What the ledger cannot hold, or a log line could be forged with, is refused
here, before any filter runs, with a :class:`PayloadError` (a 400) naming
the field. The bounds, the JSON schemas and the walk of a whole body are in
:mod:`placement_quota.lease.schema`, the error in
:mod:`placement_quota.lease.errors`; callers find the error, the resource
types (:data:`HOST`, :data:`INSTANCE`...) and :data:`MAX_INT` here.
"""

from collections import abc
import dataclasses
import datetime
import json
import math
import re
import types
from typing import Mapping, Optional

from placement_quota.lease import errors as lease_errors
from placement_quota.lease import schema as lease_schema
# Part of this module's interface (lease.PayloadError, lease.HOST...).
from placement_quota.lease.errors import PayloadError
from placement_quota.lease.schema import FLAVOR  # noqa: F401
from placement_quota.lease.schema import FLOATINGIP  # noqa: F401
from placement_quota.lease.schema import HOST
from placement_quota.lease.schema import INSTANCE
from placement_quota.lease.schema import MAX_INT  # noqa: F401
from placement_quota.lease.schema import NETWORK  # noqa: F401

# The sizes of an instance reservation, each summed over a lease (amount x
# size) and bounded by lease_schema.MAX_TOTAL.
INSTANCE_SIZE_FIELDS = ('vcpus', 'memory_mb', 'disk_gb')

# The documents of each kind of request.
_SCHEMAS_BY_KIND = {
    'check-create': ('context', 'lease'),
    'check-update': ('context', 'current_lease', 'lease'),
    'on-end': ('context', 'lease'),
}
KINDS = tuple(_SCHEMAS_BY_KIND)

_DATE_RE = re.compile(
    r'^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?'
    r'(Z|[+-]\d{2}:?\d{2})?$')


# --- dates --------------------------------------------------------------

def parse_date(value, field, bounded=False):
    """Return a naive UTC datetime from Blazar's or the spec's format.

    ``bounded`` refuses dates outside
    :data:`~placement_quota.lease.schema.MIN_DATE` to
    :data:`~placement_quota.lease.schema.MAX_DATE` (lease dates always
    are).
    """
    if isinstance(value, datetime.datetime):
        parsed = value
    elif isinstance(value, str):
        text = value.strip()
        if not _DATE_RE.match(text):
            raise PayloadError(
                field, 'is not a date in the form "YYYY-MM-DD HH:MM" or '
                'ISO 8601 "YYYY-MM-DDTHH:MM:SS[.ffffff][+HH:MM]"', value)
        try:
            parsed = datetime.datetime.fromisoformat(text.replace('Z',
                                                                  '+00:00'))
        except ValueError as exc:
            raise PayloadError(field, 'is not a valid date: %s' % exc, value)
    else:
        raise PayloadError(field, 'must be a date string', value)
    if parsed.tzinfo is not None:
        try:
            parsed = parsed.astimezone(datetime.timezone.utc)
        except OverflowError:
            raise PayloadError(field, 'is out of range once converted to '
                               'UTC', value)
        parsed = parsed.replace(tzinfo=None)
    if bounded and not (
            lease_schema.MIN_DATE <= parsed <= lease_schema.MAX_DATE):
        raise PayloadError(field, 'must be from %s to %s (UTC)' % (
            _when(lease_schema.MIN_DATE), _when(lease_schema.MAX_DATE)),
            value)
    return parsed


def _when(moment):
    return moment.strftime('%Y-%m-%d %H:%M')


def format_date(value):
    """Format a date the way Blazar's external filter sends it."""
    return value.isoformat()


# --- the model ----------------------------------------------------------

def _is_mapping(value):
    """isinstance(value, Mapping), a JSON object's dict first (typing's
    Mapping makes isinstance several times slower)."""
    return type(value) is dict or isinstance(value, abc.Mapping)


@dataclasses.dataclass(frozen=True)
class Context:
    """Who asks: the ``context`` object of Blazar's "Flexible Reservation Usage
    Enforcement" spec."""

    project_id: str
    user_id: Optional[str] = None
    auth_url: Optional[str] = None
    region_name: Optional[str] = None
    values: Mapping = dataclasses.field(default_factory=dict, repr=False,
                                        compare=False)

    @classmethod
    def coerce(cls, value, field='context'):
        """Accept a Context, or a mapping as sent by Blazar or over HTTP."""
        if isinstance(value, cls):
            return value
        if not _is_mapping(value):
            raise PayloadError(field, 'must be an object', value)
        lease_schema.check(lease_schema.CONTEXT_VALIDATOR, value, field)
        return cls(project_id=value['project_id'],
                   user_id=value.get('user_id'),
                   auth_url=value.get('auth_url'),
                   region_name=value.get('region_name'),
                   values=types.MappingProxyType(value))

    def to_dict(self):
        body = dict(self.values)
        body.update(project_id=self.project_id, user_id=self.user_id,
                    auth_url=self.auth_url, region_name=self.region_name)
        return body


@dataclasses.dataclass(frozen=True)
class Reservation:
    """One reservation of a lease, with the allocations Blazar chose.

    ``values`` holds every field as it was sent, so filters can read
    plugin-specific or unknown fields; the typed helpers below normalise
    Blazar's integer-or-string amounts.
    """

    resource_type: str
    allocations: tuple
    values: Mapping = dataclasses.field(repr=False, compare=False)

    @classmethod
    def coerce(cls, value, field):
        if isinstance(value, cls):
            return value
        rtype = (value.get('resource_type') if _is_mapping(value)
                 else None)
        # Only a string names a type (a list or an object is not even
        # hashable): anything else fails the common schema.
        validator = (lease_schema.RESERVATION_VALIDATORS.get(rtype)
                     if isinstance(rtype, str) else None) or (
                         lease_schema.RESERVATION_BASE_VALIDATOR)
        lease_schema.check(validator, value, field)
        if value['resource_type'] == HOST:
            low, high = value.get('min'), value.get('max')
            if low is not None and high is not None and int(low) > int(high):
                raise PayloadError(field + '.min', 'is greater than max (%s)'
                                   % high, low)
        allocations = tuple(types.MappingProxyType(a)
                            for a in value.get('allocations') or ())
        return cls(resource_type=value['resource_type'],
                   allocations=allocations,
                   values=types.MappingProxyType(value))

    def get(self, key, default=None):
        return self.values.get(key, default)

    def count(self, key, default=0):
        """An integer field (``amount``, ``min``, ``vcpus``...)."""
        value = self.values.get(key)
        return default if value is None else int(value)

    def to_dict(self):
        body = dict(self.values)
        body['allocations'] = [dict(a) for a in self.allocations]
        return body


@dataclasses.dataclass(frozen=True)
class Lease:
    """A lease as the filters see it: dates, reservations, allocations."""

    start_date: datetime.datetime
    end_date: datetime.datetime
    reservations: tuple = ()
    values: Mapping = dataclasses.field(default_factory=dict, repr=False,
                                        compare=False)

    @classmethod
    def coerce(cls, value, field='lease'):
        """Accept a Lease, or a mapping as sent by Blazar or over HTTP."""
        if isinstance(value, cls):
            return value
        if not _is_mapping(value):
            raise PayloadError(field, 'must be an object', value)
        lease_schema.check(lease_schema.LEASE_VALIDATOR, _for_schema(value),
                           field)
        start = parse_date(value['start_date'], field + '.start_date',
                           bounded=True)
        end = _end_date(value, field)
        if end <= start:
            raise PayloadError(field + '.end_date', 'must be after %s.'
                               'start_date (%s)' % (field, lease_errors.show(
                                   value['start_date'])),
                               value.get('end_date', value.get('end_time')))
        if end - start > lease_schema.MAX_DURATION:
            end_field = ('end_date' if value.get('end_date') is not None
                         else 'end_time')
            raise PayloadError(
                '%s.%s' % (field, end_field), 'must be at most %d seconds '
                '(about %d years) after %s.start_date (%s)' % (
                    lease_schema.MAX_DURATION.total_seconds(),
                    lease_schema.MAX_DURATION.days // 365, field,
                    lease_errors.show(value['start_date'])), value[end_field])
        reservations = tuple(
            Reservation.coerce(r, '%s.reservations[%d]' % (field, i))
            for i, r in enumerate(value.get('reservations') or ()))
        _check_totals(reservations, field)
        return cls(start_date=start, end_date=end, reservations=reservations,
                   values=types.MappingProxyType(value))

    @property
    def duration(self):
        return self.end_date - self.start_date

    def reservations_of(self, resource_type):
        return [r for r in self.reservations
                if r.resource_type == resource_type]

    def to_dict(self):
        """The lease as JSON for the external service (Blazar's shape)."""
        body = {k: lease_errors.jsonable(v) for k, v in self.values.items()
                if k != 'end_time'}
        body['start_date'] = format_date(self.start_date)
        body['end_date'] = format_date(self.end_date)
        body['reservations'] = [r.to_dict() for r in self.reservations]
        return body


def _check_totals(reservations, field):
    """Refuse a lease whose instances add up to more than
    :data:`~placement_quota.lease.schema.MAX_TOTAL` of a resource class
    (each count is bounded by the schema; their products and sums are
    not)."""
    totals = dict.fromkeys(INSTANCE_SIZE_FIELDS, 0)
    for index, reservation in enumerate(reservations):
        if reservation.resource_type != INSTANCE:
            continue
        amount = reservation.count('amount', 1)
        for key in INSTANCE_SIZE_FIELDS:
            totals[key] += amount * reservation.count(key, 0)
            if totals[key] > lease_schema.MAX_TOTAL:
                raise PayloadError(
                    '%s.reservations[%d].%s' % (field, index, key),
                    'makes the lease reserve more than %d %s in all '
                    '(amount x %s, over its instance reservations)'
                    % (lease_schema.MAX_TOTAL, key, key),
                    reservation.get(key))


def _for_schema(value):
    """Blazar in-process hands us datetimes: show them as strings."""
    if any(isinstance(value.get(k), datetime.datetime)
           for k in ('start_date', 'end_date', 'end_time')):
        value = dict(value)
        for key in ('start_date', 'end_date', 'end_time'):
            if isinstance(value.get(key), datetime.datetime):
                value[key] = value[key].isoformat()
    return value


def _end_date(value, field):
    end_date, end_time = value.get('end_date'), value.get('end_time')
    if end_date is None and end_time is None:
        raise PayloadError(field + '.end_date', 'is required (or its alias '
                           'end_time)', has_value=False)
    if end_date is not None and end_time is not None:
        parsed = parse_date(end_date, field + '.end_date', bounded=True)
        if parsed != parse_date(end_time, field + '.end_time', bounded=True):
            raise PayloadError(field + '.end_time', 'differs from %s.end_date'
                               ' (%s); send one of them' % (
                                   field, lease_errors.show(end_date)),
                               end_time)
        return parsed
    if end_date is not None:
        return parse_date(end_date, field + '.end_date', bounded=True)
    return parse_date(end_time, field + '.end_time', bounded=True)


# --- request bodies -----------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Request:
    """A parsed request body of the enforcement API."""

    kind: str
    context: Context
    lease: Lease
    current_lease: Optional[Lease] = None


def parse_body(kind, body):
    """Parse and validate a request body (bytes or str) for ``kind``.

    ``kind`` is one of :data:`KINDS`. Raises :class:`PayloadError`.
    """
    decoded = isinstance(body, bytes)
    if decoded:
        try:
            body = body.decode('utf-8')
        except UnicodeDecodeError as exc:
            raise PayloadError('body', 'is not UTF-8: %s' % exc,
                               has_value=False)
    try:
        document = _DECODER.decode(body)
    except (ValueError, RecursionError) as exc:
        raise PayloadError('body', 'is not valid JSON: %s' % exc,
                           has_value=False)
    # A JSON string holds NUL or a lone surrogate only as a \u escape
    # (json.loads refuses raw control characters in strings, and UTF-8
    # decodes no surrogate), or raw in a str handed to us: without either,
    # there are no strings to look into.
    lease_schema.check_document(document, strings='\\u' in body or (
        not decoded and not body.isascii()), text=body)
    return parse_document(kind, document)


def _reject_constant(name):
    raise ValueError('%s is not allowed in JSON' % name)


def _finite_float(text):
    value = float(text)
    if not math.isfinite(value):
        raise ValueError('the number %s is too large'
                         % (text if len(text) <= 40 else text[:37] + '...'))
    return value


# One decoder for every body (json.loads with hooks makes one per call).
_DECODER = json.JSONDecoder(parse_constant=_reject_constant,
                            parse_float=_finite_float)


def parse_document(kind, document):
    """Validate an already-decoded request document for ``kind``."""
    if kind not in _SCHEMAS_BY_KIND:
        raise ValueError('unknown request kind %r' % kind)
    if not isinstance(document, dict):
        raise PayloadError('body', 'must be a JSON object', document)
    for key in _SCHEMAS_BY_KIND[kind]:
        if key not in document:
            raise PayloadError(key, 'is required', has_value=False)
    return Request(
        kind=kind,
        context=Context.coerce(document['context']),
        lease=Lease.coerce(document['lease']),
        current_lease=(Lease.coerce(document['current_lease'],
                                    'current_lease')
                       if kind == 'check-update' else None))
