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
"""What an enforcement payload may hold: bounds, JSON schemas, checks.

Pure code, used by :mod:`placement_quota.lease.model` to validate the bodies of
Blazar's "Flexible Reservation Usage Enforcement" spec before it builds its
model; each check raises
:class:`~placement_quota.lease.errors.PayloadError` naming the field.

What the ledger cannot hold, or a log line could be forged with, is refused
before any filter runs (each with a 400 naming the field):

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

The schemas (:data:`CONTEXT_SCHEMA`, :data:`LEASE_SCHEMA`,
:data:`RESERVATION_SCHEMAS`) hold the field rules, :func:`check` applies
one and names the failing field, and :func:`check_document` walks a whole
decoded body for what no schema can express (depth, NUL, surrogates). The
date range, the duration, the totals and the non-finite numbers are checked
by :mod:`placement_quota.lease.model`, against the bounds defined here.
"""

import datetime
import re

import fastjsonschema
import jsonschema

from placement_quota.lease.errors import PayloadError


# --- bounds -------------------------------------------------------------

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

# The resource types of Blazar's reservations.
HOST = 'physical:host'
INSTANCE = 'virtual:instance'
FLAVOR = 'flavor:instance'
FLOATINGIP = 'virtual:floatingip'
NETWORK = 'network'


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
def _count(minimum):
    """The schema of a count from ``minimum`` (0 or 1) to MAX_INT."""
    digits = _digits_up_to(MAX_INT)
    if minimum == 0:
        digits = '(0|%s)' % digits
    integer = {'type': 'integer', 'minimum': minimum, 'maximum': MAX_INT}
    string = {'type': 'string', 'pattern': r'^\s*0{0,10}%s\s*$' % digits}
    return {'description': 'a whole number from %d to %d (an integer or a '
                           'string of digits)' % (minimum, MAX_INT),
            'anyOf': [integer, string]}


_COUNT = _count(0)
_POSITIVE_COUNT = _count(1)
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

# Fields of each reservation type of the Blazar specs ("Network Reservation",
# "Floating IP Reservation", "Placement API support for instance
# reservation", "New instance reservation");
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
    # Blazar's flavor plugin: amount from 1 to DB_MAX_INT, the flavor.
    FLAVOR: {'properties': {
        'amount': _POSITIVE_COUNT, 'flavor_id': dict(_ID, minLength=1),
        'affinity': _BOOLISH, 'resource_properties': _NULLABLE_STRING,
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


# --- checks -------------------------------------------------------------

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


CONTEXT_VALIDATOR = _validator(CONTEXT_SCHEMA)
LEASE_VALIDATOR = _validator(LEASE_SCHEMA)
RESERVATION_BASE_VALIDATOR = _validator(_RESERVATION_BASE)
# Known types: the common fields and the type's own in one schema, so a
# reservation is checked in one call.
RESERVATION_VALIDATORS = {
    rtype: _validator({'allOf': [_RESERVATION_BASE, schema]})
    for rtype, schema in RESERVATION_SCHEMAS.items()
}


def _path(prefix, error_path):
    field = prefix
    for part in error_path:
        field += '[%d]' % part if isinstance(part, int) else '.%s' % part
    return field


def check(validator, instance, field):
    """Raise :class:`PayloadError` naming the first field of ``instance``
    (the value found at ``field``) that ``validator`` refuses."""
    try:
        validator.fast(instance)
        return   # valid: the common case, one compiled call
    except fastjsonschema.JsonSchemaException:
        pass
    except RecursionError:
        raise PayloadError(field, 'is nested too deeply', has_value=False)
    try:
        errors = list(validator.full.iter_errors(instance))
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


# --- the whole document -------------------------------------------------

# What no column of the ledger stores: NUL (PostgreSQL refuses it in text)
# and lone UTF-16 surrogates (JSON escapes such as "\ud800", which
# json.loads accepts but no UTF-8 encodes).
_UNSTORABLE = re.compile('[\x00\ud800-\udfff]')


def check_document(document, limit=MAX_DEPTH, strings=True, text=None):
    """Refuse documents nested deeper than ``limit`` (without recursion:
    validating or printing a deeper one could exhaust Python's stack), and
    (with ``strings``) strings, keys included, that the ledger cannot
    store. ``text``, the JSON ``document`` was decoded from, lets a
    document with no more than ``limit`` brackets in all skip the walk (it
    cannot nest deeper) when there are no strings to look into."""
    if (not strings and text is not None
            and text.count('{') + text.count('[') <= limit):
        return
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
