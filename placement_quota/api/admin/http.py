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
"""HTTP encoding of the account admin API
(:mod:`placement_quota.api.admin.app`).

What the handlers parse and answer, apart from routing and the account
service: the raw request path (``%2F`` still encoded, so an account ID is
one segment), its other segments, the query string, strict JSON request
bodies (no ``NaN``, ``Infinity``, or number too large for a float), and the
percent-encoded ``X-Account-*`` headers of an account.
"""

import datetime
import json
import math
from urllib import parse

from placement_quota.accounts import consumers
from placement_quota.api import util

HEADER_PREFIX = 'X-Account-'
_UNSAFE = "!$&'()*+,;=:@"


def _encode(text):
    """A header value: percent-encoded, so that any account ID or
    metadata value fits HTTP's latin-1 headers."""
    return parse.quote(str(text), safe=_UNSAFE + ' ')


def _pairs(mapping):
    return ', '.join('%s=%s' % (_encode(k).replace(',', '%2C')
                                .replace('=', '%3D'),
                                _encode(v).replace(',', '%2C'))
                     for k, v in sorted(mapping.items()))


def account_headers(document):
    """The ``X-Account-*`` headers of a GET representation: what HEAD
    answers, and GET too."""
    headers = {
        'Id': _encode(document['id']),
        'Parent-Id': _encode(document['parent_id'] or ''),
        'Generation': str(document['generation']),
        'Limits': _pairs(document['limits']),
        'Metadata': _pairs(document['metadata']),
        'Children': ', '.join(_encode(c).replace(',', '%2C')
                              for c in document['children']),
        'Created-At': document['created_at'],
        'Updated-At': document['updated_at'] or '',
    }
    usage = document.get('usage') or {}
    if 'placement' in usage:
        headers['Usage'] = _pairs(usage['placement']['resources'])
        headers['Consumers'] = _pairs(usage['placement']['consumers'])
    if 'reservations' in usage:
        reserved = usage['reservations']
        headers['Reserved'] = _pairs(reserved['now'])
        headers['Reserved-Peak'] = _pairs(
            {r: p['amount'] for r, p in reserved['peak'].items()})
        headers['Leases'] = _pairs({'pending': reserved['pending'],
                                    'active': reserved['active']})
    return {HEADER_PREFIX + k: v for k, v in headers.items()}


def raw_path(environ):
    """The path as the client encoded it (``%2F`` still encoded), without
    the script name."""
    raw = environ.get('RAW_URI') or environ.get('REQUEST_URI')
    if raw is None:
        return parse.quote(environ.get('PATH_INFO', '').encode('latin-1'),
                           safe='/' + _UNSAFE)
    raw = raw.split('?', 1)[0]
    if '://' in raw:                     # absolute-form request target
        raw = '/' + raw.split('://', 1)[1].partition('/')[2]
    script = parse.quote(environ.get('SCRIPT_NAME', ''), safe='/')
    if script and raw.startswith(script):
        raw = raw[len(script):]
    return raw


#: The longest lease ID (or other segment) the ledger's columns hold.
MAX_SEGMENT = 255


def segment(text, field):
    """A decoded path segment other than the account ID."""
    try:
        value = parse.unquote(text, errors='strict')
    except UnicodeDecodeError:
        raise util.HTTPError(400, '%s %r is not percent-encoded UTF-8'
                             % (field, text), field=field, value=text)
    return identifier(value, field)


def identifier(value, field):
    """``value`` (decoded) when the ledger can hold it as an ID: not
    empty, at most :data:`MAX_SEGMENT` characters, no control characters
    or lone surrogates; else a 400 naming ``field``."""
    if not value:
        raise util.HTTPError(400, '%s must not be empty' % field,
                             field=field)
    if len(value) > MAX_SEGMENT or any(
            ord(c) < 32 or 127 <= ord(c) < 160 or 0xd800 <= ord(c) < 0xe000
            for c in value):
        raise util.HTTPError(
            400, '%s %r is not an ID the ledger can hold: at most %d '
            'characters, no control characters' % (field, value,
                                                   MAX_SEGMENT),
            field=field, value=value)
    return value


def consumer_uuid(text):
    """The consumer UUID of a path segment: Placement's consumers are UUIDs,
    and nothing else may reach a Placement URL."""
    value = segment(text, 'consumer_uuid')
    if not consumers.is_uuid(value):
        raise util.HTTPError(400, 'consumer_uuid %r is not a UUID' % value,
                             field='consumer_uuid', value=value)
    return value


def _refuse_constant(name):
    raise ValueError('%s is not a JSON number' % name)


def _finite_float(text):
    value = float(text)
    if math.isinf(value):
        raise ValueError('the number %s is too large' % text)
    return value


def loads(raw):
    """A JSON request body (bytes), strictly: UTF-8, and no ``NaN``,
    ``Infinity`` or number that overflows a float (400 naming the body)."""
    try:
        return json.loads(raw.decode('utf-8'), parse_constant=_refuse_constant,
                          parse_float=_finite_float)
    except (UnicodeDecodeError, ValueError) as exc:
        raise util.HTTPError(400, 'The body is not JSON: %s' % exc,
                             field='body')
    except RecursionError:
        raise util.HTTPError(400, 'The body is not JSON this API takes: '
                             'it is nested too deeply', field='body')


def date(found, name):
    """The required query parameter ``name`` as a naive UTC datetime
    (ISO 8601: ``2026-06-01`` or ``2026-06-01T12:00``, ``Z`` or an
    offset); 400 naming it otherwise."""
    value = found.get(name)
    if not value:
        raise util.HTTPError(400, 'Query parameter %s is required: an ISO '
                             '8601 date' % name, field=name, value=value)
    try:
        parsed = datetime.datetime.fromisoformat(
            value[:-1] + '+00:00' if value.endswith('Z') else value)
    except ValueError:
        raise util.HTTPError(400, 'Query parameter %s is not an ISO 8601 '
                             'date: %r' % (name, value), field=name,
                             value=value)
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(datetime.timezone.utc).replace(
            tzinfo=None)
    if not 1970 <= parsed.year <= 3000:
        raise util.HTTPError(400, 'Query parameter %s is out of range '
                             '(1970 to 3000): %r' % (name, value),
                             field=name, value=value)
    return parsed


def query(req, allowed):
    """The query parameters, each once, all in ``allowed``."""
    raw = req.environ.get('QUERY_STRING', '')
    try:
        pairs = parse.parse_qsl(raw, keep_blank_values=True,
                                strict_parsing=False, errors='strict')
    except (UnicodeDecodeError, ValueError):
        raise util.HTTPError(400, 'The query string %r is not percent-'
                             'encoded UTF-8' % raw, field='query',
                             value=raw)
    found = {}
    for name, value in pairs:
        if name not in allowed:
            raise util.HTTPError(
                400, 'Unknown query parameter %r; this resource takes %s'
                % (name, ', '.join(allowed) or 'none'), field=name,
                value=value)
        if name in found:
            raise util.HTTPError(400, 'Query parameter %s given twice'
                                 % name, field=name, value=value)
        found[name] = value
    return found
