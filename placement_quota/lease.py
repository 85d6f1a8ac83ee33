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
"""The payload of specs/000: context, lease, reservations, allocations.

Pure code: parsing and validation only, no I/O. The same model serves the
HTTP service (JSON bodies, dates as strings) and filters driven in-process
by Blazar (dicts whose dates are ``datetime`` objects).

Dates are accepted as Blazar really sends them (``datetime.isoformat()``,
e.g. ``2020-05-13T00:00:00.123456``) and as the spec shows them
(``2020-05-13 00:00``); an offset or ``Z`` is converted to naive UTC, which
is what Blazar stores. ``end_time`` (the spec's examples) is an alias of
``end_date`` (Blazar's field).
"""

import dataclasses
import datetime
import json
import re
import types
from typing import Any, Mapping, Optional

import fastjsonschema
import jsonschema

# Blazar's DB_MAX_INT: the largest amount its database can hold.
MAX_INT = 2 ** 31 - 1
# A Blazar payload nests about 7 levels (body, lease, reservations, one
# reservation, allocations, one allocation, extra capabilities).
MAX_DEPTH = 32

HOST = 'physical:host'
INSTANCE = 'virtual:instance'
FLOATINGIP = 'virtual:floatingip'
NETWORK = 'network'

_DATE_RE = re.compile(
    r'^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?'
    r'(Z|[+-]\d{2}:?\d{2})?$')


class PayloadError(ValueError):
    """A payload field is missing or wrong; names the field and the value."""

    def __init__(self, field: str, reason: str, value: Any = None,
                 has_value: bool = True):
        self.field = field
        self.reason = reason
        self.value = value
        self.has_value = has_value
        if has_value:
            message = '%s: %s (got %s)' % (field, reason, _show(value))
        else:
            message = '%s: %s' % (field, reason)
        super().__init__(message)

    def to_dict(self):
        body = {'message': str(self), 'field': self.field}
        if self.has_value:
            body['value'] = _jsonable(self.value)
        return body


def _show(value, limit=120):
    text = json.dumps(_jsonable(value), sort_keys=True)
    return text if len(text) <= limit else text[:limit - 3] + '...'


def _jsonable(value):
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


# --- JSON schemas -------------------------------------------------------

_NULLABLE_STRING = {'type': ['string', 'null']}
# Blazar passes the amounts of a reservation as the user sent them: an
# integer or a string of digits.
_COUNT = {
    'description': 'a whole number from 0 to %d (an integer or a string of '
                   'digits)' % MAX_INT,
    'anyOf': [{'type': 'integer', 'minimum': 0, 'maximum': MAX_INT},
              {'type': 'string', 'pattern': r'^\s*\d{1,10}\s*$'}],
}
_POSITIVE_COUNT = {
    'description': 'a whole number from 1 to %d (an integer or a string of '
                   'digits)' % MAX_INT,
    'anyOf': [{'type': 'integer', 'minimum': 1, 'maximum': MAX_INT},
              {'type': 'string', 'pattern': r'^\s*0*[1-9]\d{0,9}\s*$'}],
}
_BOOLISH = {
    'description': 'a boolean, null, or a string such as "true" or "false"',
    'anyOf': [{'type': ['boolean', 'null']},
              {'type': 'string',
               'pattern': r'(?i)^(true|false|yes|no|on|off|1|0|none|null)$'}],
}
_DATE = {'description': 'a date string', 'type': 'string'}

CONTEXT_SCHEMA = {
    'type': 'object',
    'required': ['project_id'],
    'properties': {
        'project_id': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'user_id': {'type': ['string', 'null'], 'maxLength': 255},
        'auth_url': _NULLABLE_STRING,
        'region_name': _NULLABLE_STRING,
    },
}

ALLOCATION_SCHEMA = {'type': 'object'}

_RESERVATION_BASE = {
    'type': 'object',
    'required': ['resource_type'],
    'properties': {
        'resource_type': {'type': 'string', 'minLength': 1},
        'allocations': {'type': 'array', 'items': ALLOCATION_SCHEMA},
    },
}

# Fields of each reservation type of specs/001 (chapters 7, 12, 15, 22);
# other fields pass through untouched, and so do unknown types.
RESERVATION_SCHEMAS = {
    HOST: {'properties': {
        'min': _POSITIVE_COUNT, 'max': _POSITIVE_COUNT,
        'hypervisor_properties': _NULLABLE_STRING,
        'resource_properties': _NULLABLE_STRING,
        'before_end': _NULLABLE_STRING,
    }},
    INSTANCE: {'properties': {
        'amount': _POSITIVE_COUNT, 'vcpus': _COUNT, 'memory_mb': _COUNT,
        'disk_gb': _COUNT, 'affinity': _BOOLISH,
        'resource_properties': _NULLABLE_STRING,
    }},
    FLOATINGIP: {'properties': {
        'network_id': {'type': 'string', 'minLength': 1},
        'amount': _POSITIVE_COUNT,
        'required_floatingips': {'type': 'array',
                                 'items': {'type': 'string'}},
    }},
    NETWORK: {'properties': {
        'network_name': _NULLABLE_STRING,
        'network_description': _NULLABLE_STRING,
        'resource_properties': _NULLABLE_STRING,
        'network_properties': _NULLABLE_STRING,
    }},
}

LEASE_SCHEMA = {
    'type': 'object',
    'required': ['start_date'],
    'properties': {
        'start_date': _DATE,
        'end_date': _DATE,
        'end_time': _DATE,
        'reservations': {'type': 'array', 'items': {'type': 'object'}},
    },
}

_SCHEMAS_BY_KIND = {
    'check-create': ('context', 'lease'),
    'check-update': ('context', 'current_lease', 'lease'),
    'on-end': ('context', 'lease'),
}
KINDS = tuple(_SCHEMAS_BY_KIND)


class _Validator:
    """One schema, two engines.

    fastjsonschema compiles the schema to Python and answers "valid" in
    about a microsecond; jsonschema, a hundred times slower, runs only when
    that answer is "invalid", to say which field and why. Both implement
    JSON Schema, so the schema stays the single source of the rules; should
    they ever disagree, jsonschema's verdict stands.
    """

    def __init__(self, schema):
        self.fast = fastjsonschema.compile(schema)
        self.full = jsonschema.validators.validator_for(schema)(schema)

    def iter_errors(self, instance):
        try:
            self.fast(instance)
        except fastjsonschema.JsonSchemaException:
            return self.full.iter_errors(instance)
        return ()


def _validator(schema):
    return _Validator(schema)


_CONTEXT_VALIDATOR = _validator(CONTEXT_SCHEMA)
_LEASE_VALIDATOR = _validator(LEASE_SCHEMA)
_RESERVATION_BASE_VALIDATOR = _validator(_RESERVATION_BASE)
# Known types: the common fields and the type's own in one schema, so a
# reservation is checked in one call.
_RESERVATION_VALIDATORS = {
    rtype: _validator({'allOf': [_RESERVATION_BASE, schema]})
    for rtype, schema in RESERVATION_SCHEMAS.items()
}


def _path(prefix, error_path):
    field = prefix
    for part in error_path:
        field += '[%d]' % part if isinstance(part, int) else '.%s' % part
    return field


def _check(validator, instance, field):
    try:
        errors = list(validator.iter_errors(instance))
    except RecursionError:
        raise PayloadError(field, 'is nested too deeply', has_value=False)
    if not errors:
        return
    # Report the outermost failure: for an anyOf that is the field itself,
    # described by the schema rather than by one of its alternatives.
    error = max(errors, key=jsonschema.exceptions.relevance)
    if error.validator == 'anyOf':
        reason = 'must be %s' % error.schema['description']
    elif error.validator == 'required':
        missing = error.message.split("'")[1]
        raise PayloadError(_path(field, list(error.absolute_path) +
                                 [missing]),
                           'is required', has_value=False)
    else:
        reason = _REASONS.get(error.validator, lambda v: error.message)(
            error.validator_value)
    raise PayloadError(_path(field, error.absolute_path), reason,
                       error.instance)


def _type_reason(expected):
    names = expected if isinstance(expected, list) else [expected]
    return 'must be of type %s' % ' or '.join(
        {'null': 'null', 'object': 'object'}.get(n, n) for n in names)


_REASONS = {
    'type': _type_reason,
    'minimum': lambda v: 'must be at least %s' % v,
    'maximum': lambda v: 'must be at most %s' % v,
    'minLength': lambda v: 'must not be empty' if v == 1 else
    'must be at least %d characters long' % v,
    'maxLength': lambda v: 'must be at most %d characters long' % v,
    'pattern': lambda v: 'must match the pattern %s' % v,
}


# --- dates --------------------------------------------------------------

def parse_date(value, field):
    """Return a naive UTC datetime from Blazar's or the spec's format."""
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
    return parsed


def format_date(value):
    """Format a date the way Blazar's external filter sends it."""
    return value.isoformat()


# --- the model ----------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Context:
    """Who asks: the ``context`` object of specs/000."""

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
        if not isinstance(value, Mapping):
            raise PayloadError(field, 'must be an object', value)
        _check(_CONTEXT_VALIDATOR, value, field)
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
        validator = _RESERVATION_VALIDATORS.get(
            value.get('resource_type') if isinstance(value, Mapping)
            else None, _RESERVATION_BASE_VALIDATOR)
        _check(validator, value, field)
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
        if not isinstance(value, Mapping):
            raise PayloadError(field, 'must be an object', value)
        _check(_LEASE_VALIDATOR, _for_schema(value), field)
        start = parse_date(value['start_date'], field + '.start_date')
        end = _end_date(value, field)
        if end <= start:
            raise PayloadError(field + '.end_date', 'must be after %s.'
                               'start_date (%s)' % (field, _show(
                                   value['start_date'])),
                               value.get('end_date', value.get('end_time')))
        reservations = tuple(
            Reservation.coerce(r, '%s.reservations[%d]' % (field, i))
            for i, r in enumerate(value.get('reservations') or ()))
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
        body = {k: _jsonable(v) for k, v in self.values.items()
                if k != 'end_time'}
        body['start_date'] = format_date(self.start_date)
        body['end_date'] = format_date(self.end_date)
        body['reservations'] = [r.to_dict() for r in self.reservations]
        return body


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
        parsed = parse_date(end_date, field + '.end_date')
        if parsed != parse_date(end_time, field + '.end_time'):
            raise PayloadError(field + '.end_time', 'differs from %s.end_date'
                               ' (%s); send one of them' % (field,
                                                            _show(end_date)),
                               end_time)
        return parsed
    if end_date is not None:
        return parse_date(end_date, field + '.end_date')
    return parse_date(end_time, field + '.end_time')


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
    if isinstance(body, bytes):
        try:
            body = body.decode('utf-8')
        except UnicodeDecodeError as exc:
            raise PayloadError('body', 'is not UTF-8: %s' % exc,
                               has_value=False)
    try:
        document = json.loads(body, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise PayloadError('body', 'is not valid JSON: %s' % exc,
                           has_value=False)
    _check_depth(document)
    return parse_document(kind, document)


def _check_depth(document, limit=MAX_DEPTH):
    """Refuse documents nested deeper than ``limit`` (without recursion:
    validating or printing a deeper one could exhaust Python's stack)."""
    stack = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            raise PayloadError('body', 'is nested deeper than %d levels'
                               % limit, has_value=False)
        stack.extend((child, depth + 1) for child in children)


def _reject_constant(name):
    raise ValueError('%s is not allowed in JSON' % name)


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
