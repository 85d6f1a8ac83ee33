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
"""``member_of`` expressions for Placement: validate, build, query (pure).

Specs/004 ("Support filtering by forbidden aggregate membership") adds
``member_of=!<agg>`` and ``member_of=!in:<a>,<b>`` to the required forms
``member_of=<agg>`` and ``member_of=in:<a>,<b>``. Placement's own rules
(``placement/util.py`` ``normalize_member_of_qs_param(s)``,
``placement/lib.py`` ``RequestGroup.dict_from_request`` and the query
schemas of ``placement/schemas``) decide what is a 400; this module
mirrors them without I/O so that we can check what we send before we send
it, and raises :class:`MemberOfError` with Placement's own ``detail``.

* :func:`validate_member_of` -- would Placement accept these ``member_of*``
  parameters at this microversion?
* :func:`required`, :func:`forbidden`, :class:`MemberOf` -- build values.
* :class:`AllocationCandidatesQuery` -- a whole ``GET
  /allocation_candidates`` query, with the microversion it needs.
"""

import dataclasses
import re
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union
from urllib import parse

from oslo_utils import uuidutils

Microversion = Tuple[int, int]
Pairs = List[Tuple[str, str]]

#: The highest microversion of the Placement we test against ('latest').
MAX_MICROVERSION: Microversion = (1, 39)

ALLOCATION_CANDIDATES = 'allocation_candidates'
RESOURCE_PROVIDERS = 'resource_providers'

# Microversions of the features involved (placement/microversion.py).
RP_MEMBER_OF = (1, 3)          # GET /resource_providers?member_of
AC_MEMBER_OF = (1, 21)         # GET /allocation_candidates?member_of
MULTIPLE_MEMBER_OF = (1, 24)   # member_of repeated
NUMBERED_GROUPS = (1, 25)      # resources1, member_of1, group_policy
# Placement's "Support filtering by forbidden aggregate membership" spec:
# member_of=!agg, !in:a,b
FORBIDDEN_AGGREGATES = (1, 32)
SUFFIXED_GROUPS = (1, 33)      # resources_NAME, member_of_NAME
SAME_SUBTREE = (1, 36)         # resourceless groups named in same_subtree

_GROUP_PAT = r'[1-9][0-9]*'                 # placement/schemas/common.py
_GROUP_PAT_1_33 = r'[a-zA-Z0-9_-]{1,64}'
_PREFIXES = ('resources', 'required', 'member_of', 'in_tree')
_BAD_UUID = ("Invalid query string parameters: Expected 'member_of' "
             "parameter to contain valid UUID(s). Got: %s")


class MemberOfError(ValueError):
    """Placement would answer 400; the message is Placement's ``detail``.

    Messages of the query-string schema (unknown or too-early keys) are
    the first line of Placement's: Placement goes on with a dump of its
    JSON schema and of the whole query, which we do not reproduce.
    """

    @property
    def detail(self) -> str:
        return self.args[0]


def _microversion(value: Union[str, Sequence[int]]) -> Microversion:
    if isinstance(value, str):
        if value.strip() == 'latest':
            return MAX_MICROVERSION
        match = re.fullmatch(r'\s*(\d+)\.(\d+)\s*', value)
        if not match:
            raise ValueError('Invalid microversion: %r' % (value,))
        return int(match.group(1)), int(match.group(2))
    major, minor = value
    return int(major), int(minor)


def _pairs(query: Union[str, Iterable[Tuple[str, str]]]) -> Pairs:
    """Split a query string the way WebOb does for ``req.GET``."""
    if not isinstance(query, str):
        return [(str(k), str(v)) for k, v in query]
    raw = query[1:] if query.startswith('?') else query
    pairs = []
    for item in re.split('[&;]', raw.replace('+', ' ')):
        if item:
            name, _, value = item.partition('=')
            try:
                pairs.append((parse.unquote_to_bytes(name).decode('utf-8'),
                              parse.unquote_to_bytes(value).decode('utf-8')))
            except UnicodeDecodeError as exc:
                raise MemberOfError(
                    'Invalid query string parameters: %s' % exc) from None
    return pairs


def _getall(pairs: Pairs, key: str) -> List[str]:
    return [v for k, v in pairs if k == key]


def parse_member_of_value(value: str) -> Tuple[set, set]:
    """Return ``(required, forbidden)`` aggregate sets of one value.

    Placement's "Support filtering by forbidden aggregate membership" spec,
    Proposed change: "we don't support ``!`` for arguments to the ``in:``
    prefix ... This would result in HTTP 400 Bad Request error. Instead, we
    support ``!in:`` prefix". Mirrors Placement's
    ``normalize_member_of_qs_param``, including which invalid UUID it names:
    the first of the same set, built the same way.
    """
    if ',' in value and not (
            value.startswith('in:') or value.startswith('!in:')):
        raise MemberOfError(
            "Multiple values for 'member_of' must be prefixed with the "
            "'in:' or '!in:' keyword using the valid microversion. "
            "Got: %s" % value)
    required = forbidden = set()
    if value.startswith('!in:'):
        forbidden = set(value[4:].split(','))
    elif value.startswith('!'):
        forbidden = set([value[1:]])
    elif value.startswith('in:'):
        required = set(value[3:].split(','))
    else:
        required = set([value])
    for aggregate in (required | forbidden):
        if not uuidutils.is_uuid_like(aggregate):
            raise MemberOfError(_BAD_UUID % aggregate)
    return required, forbidden


@dataclasses.dataclass
class MemberOf:
    """The aggregate constraints of one request group.

    ``required`` is a list of any-of sets ("must be at least one of agg1 or
    agg2, definitely in agg3"), ``forbidden`` one set ("definitely *not* in
    agg4") -- Placement's "Support filtering by forbidden aggregate membership"
    spec, Proposed change.
    """

    required: List[frozenset] = dataclasses.field(default_factory=list)
    forbidden: set = dataclasses.field(default_factory=set)

    def require(self, *aggregate_uuids: str) -> 'MemberOf':
        """Require membership of at least one of ``aggregate_uuids``."""
        required(*aggregate_uuids)  # validates
        self.required.append(frozenset(aggregate_uuids))
        return self

    def forbid(self, *aggregate_uuids: str) -> 'MemberOf':
        """Forbid membership of every one of ``aggregate_uuids``."""
        forbidden(*aggregate_uuids)  # validates
        self.forbidden.update(aggregate_uuids)
        return self

    def __bool__(self) -> bool:
        return bool(self.required or self.forbidden)

    def values(self) -> List[str]:
        """The ``member_of`` values: one per required set, then one ``!``.

        ``!in:a,b`` "is equivalent to ``member_of=!a&member_of=!b``"
        (Placement's "Support filtering by forbidden aggregate membership"
        spec), so all forbidden aggregates go in one value.
        """
        values = [required(*sorted(s)) for s in self.required]
        if self.forbidden:
            values.append(forbidden(*sorted(self.forbidden)))
        return values

    def to_params(self, suffix: str = '') -> Pairs:
        """``(key, value)`` pairs for the group ``suffix`` ('' ,'1', '_X')."""
        return [('member_of' + suffix, v) for v in self.values()]

    def min_microversion(self,
                         endpoint: str = ALLOCATION_CANDIDATES
                         ) -> Optional[Microversion]:
        """The lowest microversion accepting :meth:`values` (None if empty).
        """
        if not self:
            return None
        needs = [AC_MEMBER_OF if endpoint == ALLOCATION_CANDIDATES
                 else RP_MEMBER_OF]
        if len(self.values()) > 1:
            needs.append(MULTIPLE_MEMBER_OF)
        if self.forbidden:
            needs.append(FORBIDDEN_AGGREGATES)
        return max(needs)


def _aggregate_list(prefix: str, aggregate_uuids: Sequence[str]) -> str:
    if not aggregate_uuids:
        raise ValueError('At least one aggregate UUID is needed')
    for aggregate in aggregate_uuids:
        if not uuidutils.is_uuid_like(aggregate):
            raise MemberOfError(_BAD_UUID % (aggregate,))
    unique = list(dict.fromkeys(aggregate_uuids))
    if len(unique) == 1:
        return prefix + unique[0]
    return prefix + 'in:' + ','.join(unique)


def required(*aggregate_uuids: str) -> str:
    """``a`` or ``in:a,b``: member of at least one of the aggregates."""
    return _aggregate_list('', aggregate_uuids)


def forbidden(*aggregate_uuids: str) -> str:
    """``!a`` or ``!in:a,b``: member of none of the aggregates (1.32)."""
    return _aggregate_list('!', aggregate_uuids)


def _schema_rejects(keys: List[str], version: Microversion,
                    endpoint: str) -> None:
    """The query-string JSON schema of the endpoint, for group keys.

    Placement validates ``dict(req.GET)`` against the schema of the
    microversion first; keys it does not know are
    ``additionalProperties``. ``keys`` are those of the request-group
    prefixes (``resources``, ``required``, ``member_of``, ``in_tree``).
    """
    if endpoint == RESOURCE_PROVIDERS:
        since = {'member_of': RP_MEMBER_OF, 'resources': (1, 4),
                 'in_tree': (1, 14), 'required': (1, 18)}
    else:
        since = {'resources': (1, 10), 'required': (1, 17),
                 'member_of': AC_MEMBER_OF}
    allowed = set(k for k, v in since.items() if version >= v)
    patterns = None
    if endpoint == ALLOCATION_CANDIDATES and version >= NUMBERED_GROUPS:
        allowed = set()
        group = _GROUP_PAT_1_33 if version >= SUFFIXED_GROUPS else _GROUP_PAT
        kinds = _PREFIXES if version >= (1, 31) else _PREFIXES[:3]
        patterns = sorted('^%s(%s)?$' % (kind, group) for kind in kinds)
    extras = sorted(set(
        k for k in keys if k not in allowed and not (
            patterns and re.search('|'.join(patterns), k))))
    if not extras:
        return
    joined = ', '.join(repr(k) for k in extras)
    if patterns:
        message = '%s %s not match any of the regexes: %s' % (
            joined, 'does' if len(extras) == 1 else 'do',
            ', '.join(repr(p) for p in patterns))
    else:
        message = ('Additional properties are not allowed (%s %s '
                   'unexpected)' % (joined,
                                    'was' if len(extras) == 1 else 'were'))
    raise MemberOfError('Invalid query string parameters: ' + message)


def _group_member_of(pairs: Pairs, suffix: str,
                     version: Microversion) -> MemberOf:
    """Placement's ``normalize_member_of_qs_params`` for one group.

    "We begin supporting multiple member_of params in microversion 1.24 and
    forbidden aggregates in microversion 1.32" (its docstring; Placement's
    "Support filtering by forbidden aggregate membership" spec, REST API
    impact).
    """
    values = _getall(pairs, 'member_of' + suffix)
    if version < MULTIPLE_MEMBER_OF and len(values) > 1:
        raise MemberOfError(
            'Multiple member_of%s parameters are not supported' % suffix)
    result = MemberOf()
    for value in values:
        required_aggs, forbidden_aggs = parse_member_of_value(value)
        if required_aggs:
            result.required.append(frozenset(required_aggs))
        if forbidden_aggs:
            if version < FORBIDDEN_AGGREGATES:
                raise MemberOfError(
                    'Forbidden member_of%s parameters are not supported '
                    'in the specified microversion' % suffix)
            result.forbidden |= forbidden_aggs
    return result


def _check_groups(pairs: Pairs, groups: Dict[str, dict],
                  same_subtrees: List[set], version: Microversion) -> None:
    """Group rules of ``RequestGroup.dict_from_request`` and the handler.

    Before 1.36 every group naming ``member_of<N>`` needs ``resources<N>``
    ("orphaned"); from 1.36 a resourceless group must be named in
    ``same_subtree``. More than one suffixed group needs ``group_policy``.
    """
    if version >= SAME_SUBTREE:
        resourceless = set(s for s, g in groups.items() if not g['resources'])
        subtree = set().union(*same_subtrees)
        if len(resourceless) == len(groups):
            raise MemberOfError('There must be at least one resources or '
                                'resources[$S] parameter.')
        bad = [s for s in resourceless if s not in subtree]
        if bad:
            raise MemberOfError(
                'Resourceless suffixed group request should be specified '
                'in `same_subtree` query param: bad group(s) - %s.' % bad)
        bad = [s for s in subtree if s not in groups]
        if bad:
            raise MemberOfError(
                'Real suffixes should be specified in `same_subtree`: '
                '%s not found in %s.' % (bad, list(groups.keys())))
    else:
        for kind, what in (('required', 'traits'),
                           ('member_of', 'member_of')):
            orphans = ['%s%s' % (kind, s) for s, g in groups.items()
                       if g[kind] and not g['resources']]
            if orphans:
                raise MemberOfError(
                    'All %s parameters must be associated with resources.%s'
                    'Found the following orphaned %s keys: %s' % (
                        what, '  ' if kind == 'required' else ' ', what,
                        ', '.join(orphans)))
        if not all(g['resources'] for g in groups.values()):
            raise MemberOfError('All request groups must specify resources.')
    if not _getall(pairs, 'group_policy') and len(
            [s for s in groups if s]) > 1:
        raise MemberOfError(
            'The "group_policy" parameter is required when specifying '
            'more than one "resources{N}" parameter.')


def validate_member_of(query: Union[str, Iterable[Tuple[str, str]]],
                       microversion: Union[str, Sequence[int]],
                       endpoint: str = ALLOCATION_CANDIDATES
                       ) -> Dict[str, MemberOf]:
    """Raise :class:`MemberOfError` unless Placement accepts ``member_of*``.

    :param query: a URL query string (``member_of=in:a,b&member_of=!c``),
        parsed as WebOb parses it, or ``(key, value)`` pairs.
    :param microversion: ``'1.32'``, ``'latest'`` or ``(1, 32)``.
    :param endpoint: ``'allocation_candidates'`` (numbered groups from
        1.25, suffixed ones from 1.33) or ``'resource_providers'`` (only
        ``member_of``, from 1.3).
    :returns: the parsed constraints, keyed by group suffix (``''``,
        ``'1'``, ``'_NAME'``).

    ``member_of*`` values are judged, and whether the request-group keys
    (``resources*``, ``required*``, ``member_of*``, ``in_tree*``) exist at
    this microversion; other keys and values are assumed valid. When the
    query carries ``resources*`` keys it is taken as a whole
    ``GET /allocation_candidates`` query and the group rules (orphaned or
    resourceless groups, ``same_subtree``, ``group_policy``) are checked
    too; without them it is a fragment and they are not.
    """
    if endpoint not in (ALLOCATION_CANDIDATES, RESOURCE_PROVIDERS):
        raise ValueError('Unknown endpoint: %r' % (endpoint,))
    version = _microversion(microversion)
    pairs = _pairs(query)
    keys = list(dict.fromkeys(k for k, _ in pairs))
    _schema_rejects([k for k in keys if k.startswith(_PREFIXES)],
                    version, endpoint)
    if endpoint == RESOURCE_PROVIDERS:
        found = _group_member_of(pairs, '', version)
        return {'': found} if found else {}

    whole = any(k.startswith('resources') for k in keys)
    same_subtrees = []
    if whole and version >= SAME_SUBTREE:
        for value in _getall(pairs, 'same_subtree'):
            suffixes = set(part.strip() for part in value.split(','))
            if '' in suffixes:
                raise MemberOfError(
                    'Empty string (unsuffixed group) can not be specified '
                    'in `same_subtree` ')
            same_subtrees.append(suffixes)

    # RequestGroup._parse_request_items: groups in order of appearance.
    key_pattern = re.compile(r'^(%s)(%s)?$' % (
        '|'.join(_PREFIXES),
        _GROUP_PAT_1_33 if version >= SUFFIXED_GROUPS else _GROUP_PAT))
    groups: Dict[str, dict] = {}
    found: Dict[str, MemberOf] = {}
    for key, _value in pairs:
        match = key_pattern.match(key)
        if not match:
            continue
        prefix, suffix = match.group(1), match.group(2) or ''
        group = groups.setdefault(suffix, dict.fromkeys(_PREFIXES, False))
        if prefix == 'member_of':
            if suffix not in found:
                found[suffix] = _group_member_of(pairs, suffix, version)
            group[prefix] = bool(found[suffix])
        else:
            group[prefix] = True
    if whole:
        _check_groups(pairs, groups, same_subtrees, version)
    return {s: m for s, m in found.items() if m}


@dataclasses.dataclass
class RequestGroup:
    """One request group of ``GET /allocation_candidates``."""

    resources: Dict[str, int] = dataclasses.field(default_factory=dict)
    required_traits: List[str] = dataclasses.field(default_factory=list)
    forbidden_traits: List[str] = dataclasses.field(default_factory=list)
    member_of: MemberOf = dataclasses.field(default_factory=MemberOf)
    in_tree: Optional[str] = None


class AllocationCandidatesQuery:
    """Build a ``GET /allocation_candidates`` query and its microversion.

    ::

        q = AllocationCandidatesQuery(limit=5)
        g = q.group(resources={'VCPU': 1}, forbidden_traits=['CUSTOM_W'])
        g.member_of.forbid(agg)               # member_of=!agg
        q.to_querystring(), q.min_microversion()   # ..., (1, 32)
    """

    def __init__(self, group_policy: Optional[str] = None,
                 limit: Optional[int] = None):
        if group_policy not in (None, 'none', 'isolate'):
            raise ValueError('group_policy must be none or isolate')
        if limit is not None and int(limit) < 1:
            raise ValueError('limit must be a positive integer')
        self.group_policy = group_policy
        self.limit = limit
        self.groups: Dict[str, RequestGroup] = {}

    def group(self, suffix: str = '', *,
              resources: Optional[Dict[str, int]] = None,
              required_traits: Iterable[str] = (),
              forbidden_traits: Iterable[str] = (),
              member_of: Optional[MemberOf] = None,
              in_tree: Optional[str] = None) -> RequestGroup:
        """Return (creating it) group ``suffix``, adding what is given.

        ``suffix`` is Placement's: ``''``, a number (``'1'``, 1.25) or
        1-64 of ``[a-zA-Z0-9_-]`` (``'_COMPUTE'``, 1.33).
        """
        if suffix and not re.fullmatch(_GROUP_PAT_1_33, suffix):
            raise ValueError('Invalid request group suffix: %r' % (suffix,))
        group = self.groups.setdefault(suffix, RequestGroup())
        for name, amount in (resources or {}).items():
            if int(amount) < 1:
                raise ValueError('%s: amount must be positive' % name)
            group.resources[name] = int(amount)
        group.required_traits.extend(required_traits)
        group.forbidden_traits.extend(forbidden_traits)
        if member_of is not None:
            group.member_of.required.extend(member_of.required)
            group.member_of.forbidden |= member_of.forbidden
        if in_tree is not None:
            if not uuidutils.is_uuid_like(in_tree):
                raise ValueError('in_tree must be a UUID: %r' % (in_tree,))
            group.in_tree = in_tree
        return group

    def _ordered(self) -> List[Tuple[str, RequestGroup]]:
        return sorted(self.groups.items(), key=lambda item: item[0] != '')

    def to_query(self) -> Pairs:
        """The query as ``(key, value)`` pairs, unsuffixed group first."""
        suffixed = [s for s in self.groups if s]
        if len(suffixed) > 1 and self.group_policy is None:
            raise ValueError('group_policy is required with more than one '
                             'suffixed request group')
        pairs = []
        for suffix, group in self._ordered():
            if not group.resources:
                raise ValueError('Request group %r has no resources'
                                 % (suffix,))
            pairs.append(('resources' + suffix, ','.join(
                '%s:%d' % item for item in group.resources.items())))
            traits = group.required_traits + [
                '!' + t for t in group.forbidden_traits]
            if traits:
                pairs.append(('required' + suffix, ','.join(traits)))
            pairs.extend(group.member_of.to_params(suffix))
            if group.in_tree:
                pairs.append(('in_tree' + suffix, group.in_tree))
        if self.group_policy:
            pairs.append(('group_policy', self.group_policy))
        if self.limit is not None:
            pairs.append(('limit', str(int(self.limit))))
        return pairs

    def to_querystring(self) -> str:
        """The URL-encoded query string (without ``?``)."""
        return parse.urlencode(self.to_query())

    def min_microversion(self) -> Microversion:
        """The lowest microversion that accepts every feature used."""
        needs = [(1, 10)]
        if self.limit is not None:
            needs.append((1, 16))
        if self.group_policy is not None:
            needs.append(NUMBERED_GROUPS)
        for suffix, group in self.groups.items():
            if suffix:
                needs.append(NUMBERED_GROUPS if re.fullmatch(
                    _GROUP_PAT, suffix) else SUFFIXED_GROUPS)
            if group.required_traits or group.forbidden_traits:
                needs.append((1, 22) if group.forbidden_traits else (1, 17))
            if group.member_of:
                needs.append(group.member_of.min_microversion())
            if group.in_tree:
                needs.append((1, 31))
        return max(needs)
