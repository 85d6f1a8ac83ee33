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

What the ledger cannot hold, or a log line could be forged with, is refused
here, before any filter runs (each with a 400 naming the field):

* dates before :data:`MIN_DATE` or after :data:`MAX_DATE` (UTC), and leases
  longer than :data:`MAX_DURATION` (the ledger keeps durations as a 32-bit
  count of seconds, and subtracts the longest from a start date);
* identifiers and names (``context.project_id``, ``lease.id``,
  ``lease.name``, reservation and allocation ids, host names...) longer than
  :data:`MAX_STRING` characters (the ledger's ``String(255)`` columns) or
  holding a control character (C0, DEL, C1, U+2028, U+2029);
* anywhere in an HTTP body: NUL (PostgreSQL stores no U+0000), lone UTF-16
  surrogates (``"\\ud800"``: no UTF-8 encodes them), ``NaN``,
  ``Infinity`` and numbers too large for a float (``1e400``);
* counts (``amount``, ``min``, ``vcpus``...) beyond :data:`MAX_INT`, whether
  sent as integers or as strings of digits, and instance reservations adding
  up to more than :data:`MAX_TOTAL` of a resource class.
"""

import dataclasses
import datetime
import json
import math
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
# The ledger's String(255) columns: project and user ids, lease id and name.
MAX_STRING = 255
# Lease dates (naive UTC, bounds included). Blazar stores minute-precision
# DATETIMEs; this range holds every real lease and keeps the ledger's date
# arithmetic (a start date minus the longest duration, a date plus a grace
# period) far from datetime's limits of years 1 and 9999.
MIN_DATE = datetime.datetime(1970, 1, 1)
MAX_DATE = datetime.datetime(3000, 1, 1)
# The longest lease: the ledger's duration_s column is a 32-bit integer of
# seconds (about 68 years).
MAX_DURATION = datetime.timedelta(seconds=MAX_INT)
# The largest total of a resource class in one lease (``amount`` x
# ``vcpus``, ``memory_mb`` or ``disk_gb`` summed over its instance
# reservations): exact as a float and as a JSON number anywhere, and far
# within the ledger's 64-bit columns.
MAX_TOTAL = 2 ** 53 - 1
INSTANCE_SIZE_FIELDS = ('vcpus', 'memory_mb', 'disk_gb')

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


def _digits_up_to(limit):
    """A regular expression matching the decimal numbers from 1 to
    ``limit``, written without leading zeros.

    JSON Schema compares strings with patterns only; this one lets a digit
    string obey the same bound as an integer (``"9999999999"`` is refused
    like 2147483648).
    """
    digits = str(limit)
    size = len(digits)

    def span(low, high):
        return str(low) if low == high else '[%d-%d]' % (low, high)

    def tail(count):
        return '' if not count else '[0-9]' if count == 1 else (
            '[0-9]{%d}' % count)

    # Shorter numbers, then same-length numbers smaller than ``limit`` at
    # their first differing digit, then ``limit`` itself.
    choices = []
    if size > 1:
        choices.append('[1-9]' + ('[0-9]{0,%d}' % (size - 2) if size > 2
                                  else ''))
    for i, digit in enumerate(digits):
        low = 1 if i == 0 else 0
        if int(digit) > low:
            choices.append(digits[:i] + span(low, int(digit) - 1) +
                           tail(size - i - 1))
    choices.append(digits)
    return '(%s)' % '|'.join(choices)


# Blazar passes the amounts of a reservation as the user sent them: an
# integer or a string of digits (a few leading zeros and surrounding
# blanks are fine, as Python's int() reads them).
_COUNT = {
    'description': 'a whole number from 0 to %d (an integer or a string of '
                   'digits)' % MAX_INT,
    'anyOf': [{'type': 'integer', 'minimum': 0, 'maximum': MAX_INT},
              {'type': 'string', 'pattern': r'^\s*0{0,10}(0|%s)\s*$'
                                            % _digits_up_to(MAX_INT)}],
}
_POSITIVE_COUNT = {
    'description': 'a whole number from 1 to %d (an integer or a string of '
                   'digits)' % MAX_INT,
    'anyOf': [{'type': 'integer', 'minimum': 1, 'maximum': MAX_INT},
              {'type': 'string', 'pattern': r'^\s*0{0,10}%s\s*$'
                                            % _digits_up_to(MAX_INT)}],
}
# Characters that end or forge a log line, or that a terminal interprets:
# C0 (NUL, \n, \r, ESC...), DEL, C1 (NEL...), the Unicode line and
# paragraph separators.
CONTROL_CHARACTERS = '\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029'
_NO_CONTROL = {
    'description': 'a string without control characters (C0, DEL, C1, '
                   'U+2028, U+2029)',
    # Not "$" at the end: Python's "$" also matches before a final "\n"
    # (jsonschema uses it as it is; fastjsonschema turns it into "\Z").
    # "(?![\s\S])" is the end of the string in both, and in JSON Schema.
    'pattern': '^[^%s]*(?![\\s\\S])' % CONTROL_CHARACTERS,
}
# An identifier or a name the ledger stores or the service logs; the rules
# apply to strings only, so the field's type is given separately.
_ID_TEXT = dict(_NO_CONTROL, maxLength=MAX_STRING)
_ID = dict(_ID_TEXT, type='string')
_NULLABLE_ID = dict(_ID_TEXT, type=['string', 'null'])
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
        'project_id': dict(_ID, minLength=1),
        'user_id': _NULLABLE_ID,
        'auth_url': _NULLABLE_STRING,
        'region_name': _NULLABLE_STRING,
    },
}

# Blazar's allocation: its host's or IP's id (an integer or a string) and
# host name, with the host's extra capabilities.
ALLOCATION_SCHEMA = {
    'type': 'object',
    'properties': {
        'id': _ID_TEXT,
        'hypervisor_hostname': _ID_TEXT,
    },
}

_RESERVATION_BASE = {
    'type': 'object',
    'required': ['resource_type'],
    'properties': {
        'resource_type': dict(_ID, minLength=1),
        'id': _ID_TEXT,
        'lease_id': _ID_TEXT,
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
        'network_id': dict(_ID, minLength=1),
        'amount': _POSITIVE_COUNT,
        'required_floatingips': {'type': 'array', 'items': _ID},
    }},
    NETWORK: {'properties': {
        'network_name': _NULLABLE_ID,
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
        # Blazar's lease id and name (the ledger stores both), and the
        # project and user Blazar recorded. A name is free text in Blazar;
        # here it is refused with a control character like an id.
        'id': _ID_TEXT,
        'name': _ID_TEXT,
        'project_id': _ID_TEXT,
        'user_id': _ID_TEXT,
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
    if error.validator in ('anyOf', 'pattern') and (
            'description' in error.schema):
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

def parse_date(value, field, bounded=False):
    """Return a naive UTC datetime from Blazar's or the spec's format.

    ``bounded`` refuses dates outside :data:`MIN_DATE` to :data:`MAX_DATE`
    (lease dates always are).
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
    if bounded and not MIN_DATE <= parsed <= MAX_DATE:
        raise PayloadError(field, 'must be from %s to %s (UTC)'
                           % (_when(MIN_DATE), _when(MAX_DATE)), value)
    return parsed


def _when(moment):
    return moment.strftime('%Y-%m-%d %H:%M')


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
        rtype = (value.get('resource_type') if isinstance(value, Mapping)
                 else None)
        # Only a string names a type (a list or an object is not even
        # hashable): anything else fails the common schema.
        validator = (_RESERVATION_VALIDATORS.get(rtype) if isinstance(
            rtype, str) else None) or _RESERVATION_BASE_VALIDATOR
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
        start = parse_date(value['start_date'], field + '.start_date',
                           bounded=True)
        end = _end_date(value, field)
        if end <= start:
            raise PayloadError(field + '.end_date', 'must be after %s.'
                               'start_date (%s)' % (field, _show(
                                   value['start_date'])),
                               value.get('end_date', value.get('end_time')))
        if end - start > MAX_DURATION:
            end_field = ('end_date' if value.get('end_date') is not None
                         else 'end_time')
            raise PayloadError(
                '%s.%s' % (field, end_field), 'must be at most %d seconds '
                '(about %d years) after %s.start_date (%s)' % (
                    MAX_DURATION.total_seconds(),
                    MAX_DURATION.days // 365, field,
                    _show(value['start_date'])), value[end_field])
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
        body = {k: _jsonable(v) for k, v in self.values.items()
                if k != 'end_time'}
        body['start_date'] = format_date(self.start_date)
        body['end_date'] = format_date(self.end_date)
        body['reservations'] = [r.to_dict() for r in self.reservations]
        return body


def _check_totals(reservations, field):
    """Refuse a lease whose instances add up to more than
    :data:`MAX_TOTAL` of a resource class (each count is bounded by the
    schema; their products and sums are not)."""
    totals = dict.fromkeys(INSTANCE_SIZE_FIELDS, 0)
    for index, reservation in enumerate(reservations):
        if reservation.resource_type != INSTANCE:
            continue
        amount = reservation.count('amount', 1)
        for key in INSTANCE_SIZE_FIELDS:
            totals[key] += amount * reservation.count(key, 0)
            if totals[key] > MAX_TOTAL:
                raise PayloadError(
                    '%s.reservations[%d].%s' % (field, index, key),
                    'makes the lease reserve more than %d %s in all '
                    '(amount x %s, over its instance reservations)'
                    % (MAX_TOTAL, key, key), reservation.get(key))


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
                               ' (%s); send one of them' % (field,
                                                            _show(end_date)),
                               end_time)
        return parsed
    if end_date is not None:
        return parse_date(end_date, field + '.end_date', bounded=True)
    return parse_date(end_time, field + '.end_time', bounded=True)


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
        document = json.loads(body, parse_constant=_reject_constant,
                              parse_float=_finite_float)
    except (ValueError, RecursionError) as exc:
        raise PayloadError('body', 'is not valid JSON: %s' % exc,
                           has_value=False)
    # A JSON string holds NUL or a lone surrogate only as a \u escape
    # (json.loads refuses raw control characters in strings, and UTF-8
    # decodes no surrogate), or raw in a str handed to us: without either,
    # there are no strings to look into.
    _check_document(document, strings='\\u' in body or (
        not decoded and not body.isascii()))
    return parse_document(kind, document)


# What no column of the ledger stores: NUL (PostgreSQL refuses it in text)
# and lone UTF-16 surrogates (JSON escapes such as "\ud800", which
# json.loads accepts but no UTF-8 encodes).
_UNSTORABLE = re.compile('[\x00\ud800-\udfff]')


def _check_document(document, limit=MAX_DEPTH, strings=True):
    """Refuse documents nested deeper than ``limit`` (without recursion:
    validating or printing a deeper one could exhaust Python's stack), and
    (with ``strings``) strings, keys included, that the ledger cannot
    store."""
    # (value, depth, parent entry, key): the path is spelled on error only.
    stack = [(document, 1, None, None)]
    while stack:
        entry = stack.pop()
        value, depth = entry[0], entry[1]
        if isinstance(value, str):
            if strings and _UNSTORABLE.search(value):
                raise _unstorable(_entry_path(entry), value)
            continue
        if isinstance(value, dict):
            if strings:
                for key in value:
                    if _UNSTORABLE.search(key):
                        raise _unstorable(_entry_path(entry), key,
                                          'has a key that must')
            children = value.items()
        elif isinstance(value, list):
            children = enumerate(value)
        else:
            continue
        if depth > limit:
            raise PayloadError('body', 'is nested deeper than %d levels'
                               % limit, has_value=False)
        stack.extend((child, depth + 1, entry, key)
                     for key, child in children)


def _entry_path(entry):
    parts = []
    while entry[2] is not None:
        parts.append(entry[3])
        entry = entry[2]
    if not parts:
        return 'body'
    parts.reverse()
    return _path(_printable(parts[0]), [
        p if isinstance(p, int) else _printable(p) for p in parts[1:]])


def _printable(text):
    """``text`` with lone surrogates spelled as ``\\udXXX`` escapes."""
    return text.encode('utf-8', 'backslashreplace').decode('utf-8')


def _unstorable(field, text, what='must'):
    if '\x00' in text:
        reason = '%s not contain a NUL character (U+0000)' % what
    else:
        reason = ('%s not contain a lone UTF-16 surrogate (it is not '
                  'Unicode: no UTF-8 encodes it)' % what)
    return PayloadError(field, reason, _printable(text))


def _reject_constant(name):
    raise ValueError('%s is not allowed in JSON' % name)


def _finite_float(text):
    value = float(text)
    if not math.isfinite(value):
        raise ValueError('the number %s is too large'
                         % (text if len(text) <= 40 else text[:37] + '...'))
    return value


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
