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
"""Hypothesis strategies for fuzzing our two HTTP APIs.

Shared by tests/functional/test_fuzz.py (a bounded run in CI) and
tools/fuzz.py (longer runs); tests/fuzz_harness.py sends what they make
to the real services and checks the properties.

A fuzz example is a :class:`Scenario`: a few setup requests, then the
request under test (its last step). Each request starts from a valid
shape -- a lease of :mod:`tests.builders`, a request example of
:mod:`tests.spec_examples`, an account body of the admin API -- and is
then mutated: values of the wrong type at any field (lists, objects,
null, booleans, floats, huge integers, digit strings), bounds (0, -1,
2**31, 2**63, 1e308, "1e309", NaN and Infinity as raw JSON literals),
unicode (lone surrogates as raw ``\\ud800`` escapes, NUL, control
characters, RTL marks, 300-character strings), dates (year 1,
9999-12-31, malformed, with offsets), sizes (many reservations and
allocations, deep nesting), missing and extra fields; bodies also go out
in other encodings (not UTF-8, a BOM, chunked). Setup steps give the
request under test a ledger to meet: its lease already created, ended or
updated, the same lease ID in another project, a mutated lease recorded
as denied.

Everything is deterministic given hypothesis' choices: fixed project,
host and lease names (:data:`PROJECTS`, :data:`HOSTS`, ...) that
tests/fuzz_harness.py seeds, and dates in June 2026 around
:data:`tests.builders.NOW`, the ledger's clock during a run.
"""

import copy
import dataclasses
import datetime
import functools
import json
from urllib import parse

from hypothesis import strategies as st

from tests import builders
from tests import spec_examples

NOW = builders.NOW

#: Projects of the fuzz: in the limits files, with credits (the last has
#: almost none, so that the credit policy denies).
PROJECTS = ('fuzz-root', 'fuzz-child', 'fuzz-other')
#: Credits of each project in :data:`PROJECTS`.
CREDITS = {'fuzz-root': 5000, 'fuzz-child': 500, 'fuzz-other': 1}
#: Compute nodes seeded in Placement (each 16 VCPU, 32 GiB, 500 GB), and
#: a name Placement does not know.
HOSTS = ('fuzz-cn-0', 'fuzz-cn-1', 'fuzz-cn-2', 'fuzz-cn-3')
UNKNOWN_HOST = 'fuzz-cn-unknown'
LEASE_IDS = (builders.LEASE_ID, '8a5a9d5e-0000-4000-8000-000000000002',
             'fuzz-lease-3')
#: The Placement consumer of fuzz-root (an instance using 2 VCPU).
CONSUMER = '6f1c1f4e-0000-4000-8000-00000000f022'
#: The open lease of fuzz-root in the ledger during admin API runs.
ACCOUNT_LEASE_ID = '6f1c1f4e-0000-4000-8000-0000000003a5'
#: Accounts of the admin API at the start of each example:
#: {account: (parent, limits)}.
ACCOUNTS = {
    'fuzz-root': (None, {'hosts': 6, 'instances': 12}),
    'fuzz-child': ('fuzz-root', {'hosts': 3}),
    'fuzz-other': (None, {}),
}

ENFORCEMENT_KINDS = ('check-create', 'check-update', 'on-end')
ADMIN = 'admin'
ENDPOINTS = ENFORCEMENT_KINDS + (ADMIN,)


# --- raw JSON -------------------------------------------------------------

class Raw:
    """JSON text inserted as is: ``NaN``, ``1e400``, ``"\\ud800"``..."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return 'Raw(%s)' % _short(repr(self.text))

    def __eq__(self, other):
        return isinstance(other, Raw) and other.text == self.text

    def __hash__(self):
        return hash(self.text)


class Pairs:
    """A JSON object written from ``pairs``, a key possibly repeated."""

    def __init__(self, pairs):
        self.pairs = tuple(pairs)

    def __repr__(self):
        return 'Pairs(%r)' % (self.pairs,)


def _short(text, limit=200):
    if len(text) <= limit:
        return text
    return '%s...<%d chars>...%s' % (
        text[:limit // 2], len(text), text[-limit // 4:])


def to_json(value, ascii_only=True):
    """JSON text of ``value``, which may hold :class:`Raw` and
    :class:`Pairs` anywhere; floats such as ``nan`` come out as Python's
    ``NaN``/``Infinity`` literals. No recursion, so deep nesting works."""
    out = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Text):
            out.append(item.text)
        elif isinstance(item, Raw):
            out.append(item.text)
        elif isinstance(item, (dict, Pairs)):
            pairs = list(item.items() if isinstance(item, dict)
                         else item.pairs)
            parts = [_Text('}')]
            for index, (key, child) in reversed(list(enumerate(pairs))):
                parts.append(child)
                parts.append(_Text(json.dumps(key if isinstance(key, str)
                                              else str(key),
                                              ensure_ascii=ascii_only) +
                                   ': '))
                if index:
                    parts.append(_Text(', '))
            parts.append(_Text('{'))
            stack.extend(parts)
        elif isinstance(item, (list, tuple)):
            parts = [_Text(']')]
            for index, child in reversed(list(enumerate(item))):
                parts.append(child)
                if index:
                    parts.append(_Text(', '))
            parts.append(_Text('['))
            stack.extend(parts)
        else:
            out.append(json.dumps(item, ensure_ascii=ascii_only))
    return ''.join(out)


class _Text:
    __slots__ = ('text',)

    def __init__(self, text):
        self.text = text


#: How a JSON body is turned into bytes.
ENCODINGS = ('ascii', 'utf-8', 'utf-8-bom', 'utf-16', 'latin-1')


def encode(document, encoding='ascii'):
    """The bytes of ``document`` in ``encoding`` (see :data:`ENCODINGS`);
    ``bytes`` go as they are."""
    if isinstance(document, bytes):
        return document
    if encoding == 'ascii':
        return to_json(document).encode('ascii')
    text = to_json(document, ascii_only=False)
    if encoding == 'utf-8':
        # A lone surrogate goes out as its 3 bytes: not UTF-8.
        return text.encode('utf-8', 'surrogatepass')
    if encoding == 'utf-8-bom':
        return b'\xef\xbb\xbf' + text.encode('utf-8', 'surrogatepass')
    if encoding == 'utf-16':
        return text.encode('utf-16', 'surrogatepass')
    return text.encode('latin-1', 'replace')


# --- requests -------------------------------------------------------------

JSON = 'application/json'
NO_BODY = None


@dataclasses.dataclass(frozen=True)
class Request:
    """One HTTP request of a scenario.

    ``endpoint`` is an enforcement kind or ``admin``; ``path`` is the raw
    request target (ASCII, percent-encoded as sent); ``body`` a document
    (dicts, lists, :class:`Raw`...), raw ``bytes`` or None.
    """

    endpoint: str
    method: str
    path: str
    body: object = NO_BODY
    encoding: str = 'ascii'
    headers: tuple = (('Content-Type', JSON),)
    chunked: bool = False

    @functools.cached_property
    def project(self):
        """The ``context.project_id`` of the body as a JSON parser reads
        it (the last of repeated keys), or None."""
        try:
            return _project_of(json.loads(self.payload().decode('utf-8')))
        except Exception:
            return None

    def payload(self):
        if self.body is NO_BODY:
            return None
        return encode(self.body, self.encoding)

    def __repr__(self):
        lines = ['%s %s' % (self.method, self.path)]
        lines += ['%s: %s' % (k, v) for k, v in self.headers]
        if self.chunked:
            lines.append('Transfer-Encoding: chunked')
        payload = self.payload()
        if payload is not None:
            shown = payload.decode('utf-8', 'backslashreplace')
            lines.append('[%s, %d bytes] %s' % (self.encoding, len(payload),
                                                _short(shown, 3000)))
        return '\n    '.join(lines)


@dataclasses.dataclass(frozen=True)
class Scenario:
    """Setup requests, then the request under test (the last step)."""

    steps: tuple

    @property
    def target(self):
        return self.steps[-1]

    def __repr__(self):
        return 'Scenario(\n%s)' % ''.join(
            '  %d. %r\n' % (i + 1, step) for i, step in enumerate(self.steps))


def _project_of(document):
    context = document.get('context') if isinstance(document, dict) \
        else None
    project = context.get('project_id') if isinstance(context, dict) \
        else None
    return project if isinstance(project, str) else None


def enforcement_request(kind, document, path=None, encoding='ascii',
                        headers=(('Content-Type', JSON),), chunked=False):
    return Request(endpoint=kind, method='POST',
                   path=path or '/v1/' + kind, body=document,
                   encoding=encoding, headers=tuple(headers),
                   chunked=chunked)


# --- weird values ---------------------------------------------------------

LONG = 'x' * 300
#: A log line a request tries to forge (after a line break).
FORGED = 'INFO forged log line'
#: Values of the wrong type for any field.
WRONG_TYPES = [None, True, False, [], {}, [None], [1, 2], {'': None},
               {'a': {'b': []}}, ['virtual:instance'],
               {'resource_type': 'virtual:instance'}, 0.5, -0.0]
#: Numbers at and past the bounds of every integer type.
BOUNDS = [0, -1, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 53 + 1, 2 ** 63 - 1,
          2 ** 63, -2 ** 63 - 1, 10 ** 100, 0.0, 1.5, 1e308, -1e308, 5e-324,
          float('nan'), float('inf'), float('-inf')]
#: Strings a number field may receive.
NUMERIC_STRINGS = ['', ' ', '0', '-1', '1', '01', ' 7 ', '2147483647',
                   '2147483648', '9999999999', '99999999999', '1e309',
                   '1e308', 'nan', 'NaN', 'inf', '-inf', 'Infinity', 'true',
                   'null', '0x10', '1_000', '\uff11\uff12', '-1000']
#: Strings of every awkward kind: NUL, controls, RTL, surrogates, lengths.
STRINGS = ['\x00', 'a\x00b', '\n', 'x\r\ny', 'x\n' + FORGED, 'x\r' + FORGED,
           '\t', '\x1b[31m', '\x7f', '\u202e', 'abc\u202edef', '\u200b',
           '\ufeff', '\uffff', '\U0001f984', '\u03a3\u221e\u0394\u03a0',
           "Bob's Account", '../..', '%2F', 'a/b', '\ud800', 'a\udfffb', LONG,
           'x' * 255, 'x' * 256, '\u03a3' * 256, 'y' * 4001,
           'virtual:instance', 'physical:host', '*']
#: JSON literals Python's json module writes only by accident.
RAW_LITERALS = [
    Raw('NaN'), Raw('Infinity'), Raw('-Infinity'), Raw('1e400'),
    Raw('-1e400'), Raw('1e309'), Raw('"\\ud800"'), Raw('"\\udfff"'),
    Raw('"x\\ud800y"'), Raw('"\\ud83e\\udd84"'), Raw('"\\u0000"'),
    Raw('"a\\u0000b"'), Raw('"\\u202e"'), Raw('-0'), Raw('1E+2'), Raw('1.0'),
    Raw('2147483648.0'), Raw('1' * 5000), Raw('-' + '9' * 4400),
    Raw('0.' + '0' * 400 + '1')]
#: The string literals of :data:`RAW_LITERALS`.
RAW_STRINGS = [r for r in RAW_LITERALS if r.text.startswith('"')]
WEIRD = WRONG_TYPES + BOUNDS + NUMERIC_STRINGS + STRINGS + RAW_LITERALS

#: Dates Blazar could never send, and the edges of the ones it could.
WEIRD_DATES = [
    '0001-01-01 00:00', '0001-01-01T00:00:00+00:01',
    '0001-01-01T00:00:00-23:59', '0001-01-02 00:00', '9999-12-31 00:00',
    '9999-12-31 23:59', '9999-12-31T23:59:59.999999',
    '9999-12-31T23:59:59-01:00', '9999-12-31T23:00:00+01:00',
    '9998-01-01 00:00', '2026-02-30 00:00', '2026-06-02 24:00',
    '2026-06-02 10:60', '2026-13-01 00:00', '2026-00-10 00:00',
    '2026-06-02', '2026-06-02T10', '2026-06-02 10:00Z',
    '2026-06-02T10:00:00+14:00', '2026-06-02T10:00:00-12:00',
    '2026-06-02T10:00:00+2400', '2026-06-02T10:00:00+99:99',
    '2026-06-02T10:00:00.1234567', ' 2026-06-02 10:00 ',
    '\uff12\uff10\uff12\uff16-06-02 10:00',
    '\u0662\u0660\u0662\u0666-06-02 10:00',
    '2026-06-02\n10:00', '2026-06-02 10:00\x00', '1969-12-31 23:59',
    '1970-01-01 00:00', '2038-01-19 03:14', '2106-02-07 06:28',
    '0000-01-01 00:00', 'now', '', '2026-06-01 00:00', '2026-05-31 23:59',
    '2026-06-02 10:00:00+00:00', '2026-06-02T10:00:00.000001Z',
    1780000000, 1.78e9, ['2026-06-02 10:00'],
]

KEYS = ['id', 'name', 'project_id', 'user_id', 'start_date', 'end_date',
        'end_time', 'reservations', 'allocations', 'resource_type', 'amount',
        'min', 'max', 'vcpus', 'memory_mb', 'disk_gb', 'extra', 'su_factor',
        'hypervisor_hostname', 'current_lease', 'lease', 'context',
        'before_end', 'status', '', ' ', '\x00', '\ud800', LONG,
        '\u202e', '__proto__', 'constructor']


def _characters():
    # Every code point, lone surrogates included.
    return st.characters(min_codepoint=0, max_codepoint=0x10ffff)


def weird_values():
    """A value of a wrong type, a bound, an odd string, a raw literal."""
    return st.one_of(
        st.sampled_from(WRONG_TYPES),
        st.sampled_from(BOUNDS),
        st.sampled_from(NUMERIC_STRINGS),
        st.sampled_from(STRINGS),
        st.sampled_from(RAW_LITERALS),
        st.sampled_from(WEIRD_DATES),
        st.integers() | st.floats(),
        st.text(_characters(), max_size=20),
        st.recursive(st.none() | st.booleans() | st.integers() |
                     st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3) |
                     st.dictionaries(st.text(max_size=5), inner,
                                     max_size=3), max_leaves=6),
    )


def _nested(kind, depth, leaf):
    """``leaf`` inside ``depth`` lists or objects, as raw JSON text (no
    recursion anywhere on our side, however deep)."""
    opening, closing = ('[', ']') if kind == 'list' else ('{"a": ', '}')
    return Raw(opening * depth + to_json(leaf) + closing * depth)


# --- valid shapes ---------------------------------------------------------

#: How a date goes out: the spec's form, Blazar's isoformat, UTC with
#: ``Z``, the same instant in +02:00, with microseconds.
DATE_FORMS = ('spec', 'iso', 'z', 'offset', 'micro')


def date_text(value, form='spec'):
    if form == 'spec':
        return value.strftime('%Y-%m-%d %H:%M')
    if form == 'iso':
        return value.isoformat()
    if form == 'z':
        return value.isoformat() + 'Z'
    if form == 'offset':
        return (value + datetime.timedelta(hours=2)).isoformat() + '+02:00'
    return value.replace(microsecond=123456).isoformat()


def host_reservations():
    return st.builds(
        lambda names, extra, spread: builders.hosts(
            *names, min=max(1, len(names) - spread), **extra),
        st.lists(st.sampled_from(HOSTS + (UNKNOWN_HOST,)), min_size=1,
                 max_size=4, unique=True),
        st.sampled_from([{}, {'su_factor': 2.5}, {'su_factor': '1.5'},
                         {'availability_zone': 'az1'},
                         {'su_factor': 1, 'availability_zone': 'az1'}]),
        st.integers(0, 1))


def instance_reservations():
    return st.builds(
        builders.instances, st.integers(1, 6),
        vcpus=st.sampled_from([1, 2, 4, 8]),
        memory_mb=st.sampled_from([512, 2048, 8192]),
        disk_gb=st.sampled_from([1, 10, 40]),
        hosts=st.lists(st.sampled_from(HOSTS), max_size=2, unique=True))


def reservations():
    return st.one_of(
        host_reservations(), instance_reservations(),
        st.builds(builders.floatingips, st.integers(1, 3)),
        st.builds(builders.network, st.sampled_from(['n', 'net-2'])),
        st.builds(lambda: {'resource_type': 'flavor:instance', 'amount': 1,
                           'flavor_id': 'f1', 'allocations': []}))


@st.composite
def leases(draw, lease_id=True):
    """A valid lease of June 2026 (lengths from 1 hour to past the
    7-day maximum), with 1 to 3 reservations."""
    start = NOW + datetime.timedelta(days=draw(st.integers(1, 20)),
                                     hours=draw(st.integers(0, 23)))
    hours = draw(st.sampled_from([24, 1, 6, 48, 168, 169, 400]))
    end = start + datetime.timedelta(hours=hours)
    form = draw(st.sampled_from(DATE_FORMS))
    body = builders.lease(
        date_text(start, form), date_text(end, form),
        *draw(st.lists(reservations(), min_size=1, max_size=3)),
        name=draw(st.sampled_from([None, 'l', 'fuzz lease'])),
        lease_id=(draw(st.sampled_from((None,) + LEASE_IDS))
                  if lease_id else None))
    if draw(st.booleans()) and form == 'spec':
        body['end_time'] = body.pop('end_date')
    return body


def updated(lease):
    """The same lease, changed as an update would: later end, other
    reservations."""
    @st.composite
    def strategy(draw):
        new = copy.deepcopy(lease)
        change = draw(st.sampled_from(['end', 'reservations', 'same',
                                       'id']))
        if change == 'end':
            key = 'end_date' if 'end_date' in new else 'end_time'
            end = datetime.datetime.fromisoformat(
                new[key].replace('Z', '').split('+')[0])
            new[key] = date_text(end + datetime.timedelta(
                hours=draw(st.sampled_from([1, 24, 200]))))
        elif change == 'id':
            # Another lease's ID (the ledger may hold it already).
            new['id'] = draw(st.sampled_from(
                [i for i in LEASE_IDS if i != new.get('id')]))
        elif change == 'reservations':
            new['reservations'] = draw(st.lists(reservations(), min_size=1,
                                                max_size=2))
        return new
    return strategy()


# --- mutations ------------------------------------------------------------

def _paths(value, prefix=()):
    stack = [(value, prefix)]
    while stack:
        item, path = stack.pop()
        yield path
        if isinstance(item, dict):
            stack.extend((item[k], path + (k,)) for k in item)
        elif isinstance(item, list):
            stack.extend((c, path + (i,)) for i, c in enumerate(item))


def _get(value, path):
    for part in path:
        value = value[part]
    return value


def _set(document, path, new):
    # A value drawn from the pools above is shared: never let a later
    # mutation change it in place.
    new = copy.deepcopy(new)
    if not path:
        return new
    _get(document, path[:-1])[path[-1]] = new
    return document


DATE_KEYS = ('start_date', 'end_date', 'end_time')
#: The fields a mutation aims at half of the time.
FIELDS = frozenset(DATE_KEYS + (
    'context', 'project_id', 'user_id', 'lease', 'current_lease', 'name',
    'id', 'reservations', 'resource_type', 'allocations', 'amount', 'min',
    'max', 'vcpus', 'memory_mb', 'disk_gb', 'affinity', 'network_id',
    'network_name', 'hypervisor_hostname', 'extra', 'su_factor',
    'resource_properties', 'hypervisor_properties', 'parent_id', 'limits',
    'metadata', 'hosts', 'class:VCPU'))
#: Start and end dates set together: both at an edge of the calendar,
#: spanning it, reversed, equal, 26 hours apart in local times.
DATE_PAIRS = [
    ('0001-01-01 00:00', '0001-01-01 01:00'),
    ('0001-01-01 00:00', '2026-06-02 10:00'),
    ('0001-01-01 00:00', '9999-12-31 23:59'),
    ('2026-06-02 10:00', '9999-12-31 00:00'),
    ('9999-12-31 00:00', '9999-12-31 23:59'),
    ('9999-12-31T22:00:00', '9999-12-31T23:59:59.999999'),
    ('0001-01-01T00:00:00+01:00', '0001-01-01T05:00:00'),
    ('9999-12-31T23:00:00-02:00', '9999-12-31T23:30:00-02:00'),
    ('2026-06-02T10:00:00+14:00', '2026-06-02T10:00:00-12:00'),
    ('2026-06-03 10:00', '2026-06-02 10:00'),
    ('2026-06-02 10:00', '2026-06-02 10:00'),
    ('2026-06-02 10:00:00', '2026-06-02 10:00:00.000001'),
    ('1970-01-01 00:00', '2038-01-19 03:15'),
]
#: Fields that hold names and IDs: they get odd strings more often.
TEXT_FIELDS = frozenset(['project_id', 'user_id', 'name', 'id',
                         'hypervisor_hostname', 'network_id', 'network_name',
                         'resource_type', 'parent_id'])
#: What a name or an ID column cannot hold: NUL, lone surrogates, more
#: than 255 characters; and a forged log line.
ODD_IDS = ['\x00', 'a\x00b', Raw('"\\u0000"'), '\ud800', Raw('"\\ud800"'),
           LONG, 'x' * 256, '\u03a3' * 256, 'x\n' + FORGED]
#: The kinds of mutation; a known field is the most likely target.
MUTATIONS = ('field', 'field', 'field', 'replace', 'dates', 'delete',
             'extra', 'grow', 'nest', 'top')


def _set_dates(document, draw):
    """Set the start and end of every lease of ``document`` (a request
    body or a lease) to one drawn pair; False if it has none."""
    leases = [document] if 'start_date' in document else [
        document[k] for k in ('lease', 'current_lease')
        if isinstance(document.get(k), dict)]
    if not leases:
        return False
    start, end = draw(st.sampled_from(DATE_PAIRS))
    for lease in draw(st.sampled_from([leases[-1:], leases])):
        lease['start_date'] = start
        lease.pop('end_time', None)
        lease['end_date'] = end
    return True


@st.composite
def mutated(draw, document, max_mutations=3):
    """``document`` with 0 to ``max_mutations`` mutations (0: as valid as
    it came)."""
    document = copy.deepcopy(document)
    for _ in range(draw(st.integers(0, max_mutations))):
        if not isinstance(document, (dict, list)):
            break
        paths = sorted(_paths(document), key=repr)
        kind = draw(st.sampled_from(MUTATIONS))
        if kind == 'dates':
            if isinstance(document, dict) and _set_dates(document, draw):
                continue
            kind = 'field'
        if kind == 'field':
            fields = [p for p in paths if p and p[-1] in FIELDS]
            if fields:
                path = draw(st.sampled_from(fields))
                if path[-1] in DATE_KEYS and draw(st.booleans()):
                    value = draw(st.sampled_from(WEIRD_DATES))
                elif path[-1] in TEXT_FIELDS and draw(st.booleans()):
                    value = draw(st.sampled_from(ODD_IDS) | st.sampled_from(
                        STRINGS + RAW_STRINGS))
                else:
                    value = draw(weird_values())
                document = _set(document, path, value)
                continue
            kind = 'replace'
        if kind == 'top':
            document = draw(st.sampled_from(
                [[], [document], 'lease', 0, None, Raw(''), Raw('{'),
                 Raw('{"context": {}} trailing'), Raw('{"a": 1,}'),
                 Raw("{'single': 'quotes'}"),
                 Pairs([('context', {'project_id': PROJECTS[0]})] +
                       (list(document.items())
                        if isinstance(document, dict) else []))]))
            continue
        path = draw(st.sampled_from(paths))
        target = _get(document, path)
        if kind == 'delete' and path:
            parent = _get(document, path[:-1])
            if isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent.pop(path[-1])
        elif kind == 'extra' and isinstance(target, dict):
            target[draw(st.sampled_from(KEYS))] = copy.deepcopy(
                draw(weird_values()))
        elif kind == 'grow' and isinstance(target, list) and target:
            count = draw(st.sampled_from([10, 100, 1000]))
            target.extend(copy.deepcopy(target[:1]) * count)
        elif kind == 'nest':
            document = _set(document, path, _nested(
                draw(st.sampled_from(['list', 'dict'])),
                draw(st.sampled_from([31, 33, 100, 5000])), target))
            break
        else:
            document = _set(document, path, draw(weird_values()))
    return document


# --- enforcement scenarios ------------------------------------------------

def _body(kind, project, lease, current=None, user='u'):
    body = {'context': builders.context(project, user)}
    if kind == 'check-update':
        body['current_lease'] = current if current is not None else lease
    body['lease'] = lease
    return body


def _transport():
    """How a body goes out: encoding, headers, chunked, path form."""
    return st.tuples(
        st.sampled_from(ENCODINGS[:1] * 6 + ENCODINGS[1:]),
        st.sampled_from([
            (('Content-Type', JSON),), (),
            (('Content-Type', 'application/json; charset=utf-8'),),
            (('Content-Type', 'text/plain'),),
            (('Content-Type', 'application/x-www-form-urlencoded'),),
            (('Content-Type', JSON), ('X-Roles', 'reader')),
        ]),
        st.booleans(),
        st.sampled_from(['/v1/%s', '/%s', '/v1/%s/']))


@st.composite
def _transported(draw, kind, document):
    """The request of ``document``: mostly as Blazar sends it, one in
    five in another encoding, content type, framing or path."""
    encoding, headers, chunked, form = draw(st.one_of(
        st.just(('ascii', (('Content-Type', JSON),), False, '/v1/%s')),
        st.just(('ascii', (('Content-Type', JSON),), False, '/v1/%s')),
        st.just(('ascii', (('Content-Type', JSON),), False, '/v1/%s')),
        st.just(('ascii', (('Content-Type', JSON),), False, '/v1/%s')),
        _transport()))
    return enforcement_request(kind, document, path=form % kind,
                               encoding=encoding, headers=headers,
                               chunked=chunked)


def _spec_body(kind):
    return {'check-create': spec_examples.check_create,
            'check-update': spec_examples.check_update,
            'on-end': spec_examples.on_end}[kind]()


#: The host factors of the credit policy (an extra capability of each
#: allocated host): negative, zero, huge, not finite, not numbers.
FACTORS = [-1000, -1, -0.5, 0, 1e-300, 1e308, 2 ** 63, 10 ** 30, '-1000',
           '1e309', 'nan', 'inf', '-inf', 'Infinity', Raw('NaN'),
           Raw('1e400'), Raw('-1e400'), '', None, True, [], {'a': 1}, '2,5']

#: What the ledger holds when the request under test comes (see
#: :func:`enforcement_scenarios`).
STORIES = ('plain', 'plain', 'plain', 'poison', 'other-project',
           'after-end', 'after-update', 'id-clash', 'factors', 'odd-ids')
#: Where the ``odd-ids`` story puts one of :data:`ODD_IDS`.
ID_PATHS = [('context', 'project_id'), ('context', 'user_id'),
            ('lease', 'name'), ('lease', 'id'),
            ('lease', 'reservations', 0, 'allocations', 0,
             'hypervisor_hostname'),
            ('lease', 'reservations', 0, 'network_id'),
            ('lease', 'reservations', 0, 'resource_type')]


def _create(project, lease):
    return enforcement_request('check-create',
                               _body('check-create', project, lease))


@st.composite
def enforcement_scenarios(draw, kind):
    """A story (setup requests that leave the ledger in some state), then
    a ``kind`` request about the story's lease, mutated:

    * ``plain``: the lease created before (or not), maybe another lease or
      a mutated create; the request under test gets up to 3 mutations;
    * ``poison``: first a lease at an edge of the calendar (year 1, year
      9999, spanning both...), allowed or denied (denied ones are kept);
    * ``other-project``: the same lease (same ID) created by another
      project first;
    * ``after-end`` / ``after-update``: the lease created, then ended /
      updated;
    * ``id-clash``: two leases, and the request gives one the other's ID;
    * ``factors``: a host lease whose hosts' ``su_factor`` is negative,
      huge, not finite or not a number;
    * ``odd-ids``: a name or ID of the request (project, user, lease name
      and ID, host name...) that a database column cannot hold: NUL, a
      lone surrogate, more than 255 characters.

    In every story but ``plain`` the request under test gets at most one
    mutation, so that it meets the state the story made.
    """
    story = draw(st.sampled_from(STORIES))
    project = draw(st.sampled_from(PROJECTS))
    lease = draw(leases())
    current = None
    steps = []
    mutations = 1
    if story == 'plain':
        mutations = 3
        if (draw(st.booleans()) if kind == 'check-create'
                else not draw(st.booleans())):
            steps.append(_create(project, lease))
        for setup in draw(st.lists(st.sampled_from(
                ['mutated-create', 'other-lease']), max_size=1)):
            if setup == 'mutated-create':
                steps.append(enforcement_request('check-create', draw(
                    mutated(_body('check-create', project, draw(leases())),
                            max_mutations=2))))
            else:
                steps.append(_create(draw(st.sampled_from(PROJECTS)),
                                     draw(leases())))
    elif story == 'poison':
        body = _body('check-create', draw(st.sampled_from(PROJECTS)),
                     draw(leases()))
        _set_dates(body, draw)
        steps.append(enforcement_request('check-create', body))
        if kind != 'check-create':
            steps.append(_create(project, lease))
    elif story == 'other-project':
        lease['id'] = draw(st.sampled_from(LEASE_IDS))
        other = draw(st.sampled_from([p for p in PROJECTS if p != project]))
        steps.append(_create(other, lease))
        if kind != 'check-create' and draw(st.booleans()):
            steps.append(_create(project, lease))
    elif story in ('after-end', 'after-update'):
        steps.append(_create(project, lease))
        if story == 'after-end':
            steps.append(enforcement_request(
                'on-end', _body('on-end', project, lease)))
        else:
            new = draw(updated(lease))
            steps.append(enforcement_request(
                'check-update', _body('check-update', project, new, lease)))
            lease = new
    elif story == 'id-clash':
        lease['id'] = LEASE_IDS[0]
        other = draw(leases())
        other['id'] = LEASE_IDS[1]
        steps.append(_create(project, other))
        steps.append(_create(project, lease))
        current = lease
        lease = dict(copy.deepcopy(lease), id=LEASE_IDS[1])
    elif story == 'factors':
        factor = draw(st.sampled_from(FACTORS))
        lease['reservations'] = [builders.hosts(
            *draw(st.lists(st.sampled_from(HOSTS), min_size=1, max_size=3,
                           unique=True)), su_factor=factor)]
        if kind != 'check-create':
            steps.append(_create(project, lease))
    elif story == 'odd-ids' and kind != 'check-create':
        steps.append(_create(project, lease))
    if story == 'plain' and draw(st.integers(0, 9)) == 0:
        document = _spec_body(kind)
    elif kind == 'check-update':
        if current is None:
            current, lease = lease, draw(updated(lease))
        document = _body(kind, project, lease, current)
    else:
        document = _body(kind, project, lease)
    if story == 'odd-ids':
        document = copy.deepcopy(document)   # the setup shares its lease
        paths = [p for p in ID_PATHS if _has(document, p)]
        document = _set(document, draw(st.sampled_from(paths)),
                        draw(st.sampled_from(ODD_IDS)))
        mutations = 0
    steps.append(draw(_transported(kind, draw(mutated(
        document, max_mutations=mutations)))))
    return Scenario(tuple(steps))


def _has(document, path):
    try:
        _get(document, path)
    except (KeyError, IndexError, TypeError):
        return False
    return True


# --- admin API scenarios --------------------------------------------------

#: Account IDs that are not, or barely, valid.
WEIRD_ACCOUNT_IDS = [
    'fuzz-new', 'x' * 255, 'x' * 256, '\u03a3' * 255, '\u03a3' * 256,
    '\u03a3\u221e\u0394\u03a0', "Bob's Account", 'resel\\sub\\acct',
    'resel:sub:acct', 'a/b', '..', '.', ' ', 'a b', 'a\x00b', '\x00', '\n',
    'a\r\nX-Injected: 1', '\u202e', '\ufeff', '\U0001f984', '?', '#', ';',
    '%', '%2F', 'v1', 'action', LONG,
]
#: Path segments as raw (still encoded) text: what quote() never makes.
RAW_SEGMENTS = ['', '%FF', '%ED%A0%80', '%C0%AF', '%', '%zz', '%2F', '%2f',
                '%00', '..', '.', '%2E%2E', '%25', 'a%20b', '%E2%80%AE']
CONSUMER_SEGMENTS = [
    CONSUMER, '6f1c1f4e-0000-4000-8000-00000000dead', 'not-a-uuid',
    '..%2F..%2F..%2Fidentity%2Fv3%2Fusers', '..%2F..%2Fresource_providers',
    '%3Fproject_id%3Dfuzz-root', '%23frag', '%00', 'x' * 300, '%FF',
    '%ED%A0%80', CONSUMER.upper(), '{' + CONSUMER + '}',
]
LEASE_SEGMENTS = [ACCOUNT_LEASE_ID, LEASE_IDS[0], 'fuzz-lease-3', '%00',
                  'x' * 300, '%FF', '%ED%A0%80', '..%2F..', '%3F']


@st.composite
def account_segments(draw):
    """An account ID as a path segment or query value, as sent."""
    how = draw(st.sampled_from(['known'] * 4 + ['weird', 'raw']))
    if how == 'known':
        return parse.quote(draw(st.sampled_from(sorted(ACCOUNTS))),
                           safe='')
    if how == 'weird':
        value = draw(st.one_of(st.sampled_from(WEIRD_ACCOUNT_IDS),
                               st.text(_characters(), min_size=1,
                                       max_size=8)))
        return parse.quote(value.encode('utf-8', 'surrogatepass'), safe='')
    return draw(st.sampled_from(RAW_SEGMENTS))


def account_bodies():
    """A valid PUT body, or one read back from a GET."""
    return st.one_of(
        st.just({}),
        st.builds(lambda parent, limits, meta: dict(
            {} if parent is False else {'parent_id': parent},
            limits=limits, metadata=meta),
            st.sampled_from([False, None, 'fuzz-root', 'fuzz-other']),
            st.dictionaries(st.sampled_from(['hosts', 'instances',
                                             'class:VCPU', 'servers']),
                            st.integers(-1, 20), max_size=3),
            st.dictionaries(st.sampled_from(['tier', 'owner']),
                            st.sampled_from(['gold', 'x']), max_size=2)),
        st.just({'id': 'fuzz-other', 'parent_id': None, 'limits': {},
                 'metadata': {}, 'generation': 0, 'children': [],
                 'created_at': '2026-06-01T00:00:00', 'updated_at': None,
                 'usage': {}}),
    )


#: Headers of a request a web page makes a browser send.
WEB_PAGE_HEADERS = [('Origin', 'http://evil.example'), ('Origin', 'null'),
                    ('Host', 'evil.example'), ('Host', 'evil.example:80')]
#: Content types an HTML form or a simple cross-site request can send.
WEB_PAGE_TYPES = ('text/plain', 'application/x-www-form-urlencoded',
                  'multipart/form-data')


#: The admin API's resources (after ``/v1/{account}``) and the methods
#: each takes; () for paths that are no resource.
ADMIN_ROUTES = {
    '': ('GET', 'HEAD', 'PUT', 'DELETE'),
    '/action/recover': ('POST',),
    '/action/move': ('GET', 'POST'),
    '/consumers/%s': ('GET',),
    '/consumers/%s/action/move': ('GET', 'POST'),
    '/leases/%s': ('GET',),
    '/leases/%s/action/move': ('GET', 'POST'),
    '/report': ('GET',),
    '/': (), '/unknown': (), '/action': (), '/consumers': (),
    '/leases/%s/extra': (), '/action/move/': (),
}


#: Values of the report's dates: valid, out of range, no date, raw.
REPORT_DATES = ['2026-06-01', '2026-07-01', '2026-06-01T12:00:00',
                '2026-06-01T12:00:00Z', '2026-06-01%2012:00', '1970-01-01',
                '3000-01-01', '0001-01-01', '9999-12-31T23:59:59',
                '2026-02-30', 'June', '', '-1', '1e9', '%00', '%FF',
                '2026-06-01%00', LONG[:300]]
REPORT_BY = ['project', 'user', 'resource-type', 'day', 'week', 'month',
             'total', '', 'year', 'PROJECT', '%00', 'day%2Cweek']


@st.composite
def report_queries(draw):
    """The query of ``GET /v1/{account}/report``: its fields, each
    present, repeated, empty or odd."""
    fields = []
    for name, values in (('start', REPORT_DATES), ('end', REPORT_DATES),
                         ('by', REPORT_BY),
                         ('user', ['alice', 'a%00b', '', '%FF', 'x' * 300,
                                   'a%0D%0AX-Injected:%201'])):
        for _ in range(draw(st.sampled_from([1, 1, 1, 0, 2]))):
            fields.append('%s=%s' % (name, draw(st.sampled_from(values))))
    if draw(st.integers(0, 5)) == 0:
        fields.append(draw(st.sampled_from(['dest=fuzz-other', 'start',
                                            'limit=1', '=x'])))
    return '?' + '&'.join(draw(st.permutations(fields)))


@st.composite
def admin_requests(draw):
    """One admin API call: a method on an account resource, mutated."""
    account = draw(account_segments())
    route = draw(st.sampled_from(sorted(ADMIN_ROUTES)))
    rest = route
    if '%s' in rest:
        pool = CONSUMER_SEGMENTS if rest.startswith('/consumers') \
            else LEASE_SEGMENTS
        rest = rest % draw(st.sampled_from(pool))
    query = ''
    shape = draw(st.sampled_from(['dest'] * 3 + ['none', 'dup', 'unknown',
                                                 'bare', 'empty', 'bad']))
    if route == '/report':
        query = draw(report_queries())
    elif shape == 'dest':
        query = '?dest=' + draw(account_segments())
    elif shape == 'dup':
        query = '?dest=fuzz-other&dest=fuzz-child'
    elif shape == 'unknown':
        query = '?dest=fuzz-other&limit=1'
    elif shape == 'bare':
        query = '?dest'
    elif shape == 'empty':
        query = '?'
    elif shape == 'bad':
        query = '?dest=' + draw(st.sampled_from(RAW_SEGMENTS))
    # Mostly a method the resource takes; sometimes any.
    methods = ADMIN_ROUTES[route]
    if not methods or draw(st.integers(0, 6)) == 0:
        methods = ('GET', 'PUT', 'POST', 'HEAD', 'DELETE', 'PATCH',
                   'OPTIONS')
    method = draw(st.sampled_from(methods))
    headers = [('Content-Type', JSON)]
    body = NO_BODY
    if method in ('PUT', 'POST', 'PATCH'):
        body = draw(mutated(draw(account_bodies())))
        headers = list(draw(st.sampled_from([
            (('Content-Type', JSON),), (('Content-Type', JSON),), (),
            (('Content-Type', 'text/plain'),),
            (('Content-Type', 'application/x-www-form-urlencoded'),),
            (('Content-Type', 'multipart/form-data; boundary=x'),)])))
    # What a web page sends: its Origin, or a name of its own for this
    # host (DNS rebinding).
    if draw(st.integers(0, 5)) == 0:
        headers.append(draw(st.sampled_from(WEB_PAGE_HEADERS)))
    if draw(st.integers(0, 4)) == 0:
        headers.append(('If-Match', draw(st.sampled_from(
            ['*', '"abc"', 'W/"x"', '""', '"' + 'f' * 40 + '"']))))
    if draw(st.integers(0, 9)) == 0:
        headers.append(('X-Roles', draw(st.sampled_from(
            ['reader', '', 'admin', 'ADMIN', ' admin ']))))
    encoding = draw(st.sampled_from(ENCODINGS[:1] * 6 + ENCODINGS[1:]))
    return Request(endpoint=ADMIN, method=method,
                   path='/v1/' + account + rest + query, body=body,
                   encoding=encoding, headers=tuple(headers))


@st.composite
def admin_scenarios(draw):
    """Up to two admin calls, then the one under test."""
    setup = draw(st.lists(admin_requests(), max_size=2))
    return Scenario(tuple(setup) + (draw(admin_requests()),))


def scenarios(endpoint):
    """The scenario strategy of ``endpoint`` (:data:`ENDPOINTS`)."""
    if endpoint == ADMIN:
        return admin_scenarios()
    return enforcement_scenarios(endpoint)
