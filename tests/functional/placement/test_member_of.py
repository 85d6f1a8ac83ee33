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
"""Placement's "Support filtering by forbidden aggregate membership" spec
(forbidden aggregates) against the real Placement.

* :class:`TestSpec004NestedExample` builds the spec's diagram of nested
  and sharing providers and checks each exclusion list it gives.
* :class:`TestMemberOfDifferential` sends a corpus of ``member_of``
  queries to Placement and to :func:`member_of.validate_member_of`: they
  must agree on accept/reject and on the message. Schema errors are
  compared on their first line: Placement goes on with a dump of its JSON
  schema and the query, which we do not reproduce.
"""

import re
from urllib import parse
import uuid

import hypothesis
from hypothesis import strategies as st
import requests
import testtools

from placement_quota.placement import member_of
from tests.fixtures import placement as placement_fixtures

AGG = ['aaaaaaaa-1111-4aaa-8aaa-aaaaaaaaaaaa',
       'bbbbbbbb-2222-4bbb-8bbb-bbbbbbbbbbbb',
       'cccccccc-3333-4ccc-8ccc-cccccccccccc']
A, B, C = AGG
SCHEMA_DUMP = "Failed validating 'additionalProperties' in schema"


def _normalise(text):
    return ' '.join(text.split())


class _PlacementTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.placement = self.useFixture(
            placement_fixtures.PlacementInProcess())
        self.http = requests.Session()
        self.http.headers.update(self.placement.headers)
        self.addCleanup(self.http.close)

    def request(self, method, path, microversion='1.39', **kwargs):
        return self.http.request(
            method, self.placement.endpoint + path, headers={
                'OpenStack-API-Version': 'placement %s' % microversion},
            **kwargs)


# -- Placement's "Support filtering by forbidden aggregate membership" spec,
# "Nested resource providers" ----------------------------------

#: (name, parent, aggregate, shares) as the spec's diagram draws them.
SPEC_TREE = [
    ('cn1', None, 'aggA', False),
    ('numa1_1', 'cn1', 'aggC', False),
    ('numa1_2', 'cn1', None, False),
    ('cn2', None, 'aggB', False),
    ('numa2_1', 'cn2', None, False),
    ('numa2_2', 'cn2', None, False),
    ('ss1', None, 'aggB', True),
    ('ss2', None, 'aggC', True),
]


class TestSpec004NestedExample(_PlacementTestCase):
    """The exclusion lists of Placement's "Support filtering by forbidden
    aggregate membership" spec, "Nested resource providers".

    Every provider of the diagram has one unit of a resource class of its
    own, so each is a candidate on its own; a provider is "excluded" when
    no allocation request uses it any more.
    """

    def setUp(self):
        super().setUp()
        self.rc = 'CUSTOM_PQ_MEMBER_OF_' + uuid.uuid4().hex.upper()
        self.assertIn(self.request('PUT', '/resource_classes/' + self.rc)
                      .status_code, (201, 204))
        self.aggs = {n: str(uuid.uuid4()) for n in ('aggA', 'aggB', 'aggC')}
        self.uuids = {}
        for name, parent, agg, shares in SPEC_TREE:
            self._provider(name, parent, agg, shares)
        self.names = {u: n for n, u in self.uuids.items()}

    def _provider(self, name, parent, agg, shares):
        rp = self.uuids[name] = str(uuid.uuid4())
        body = {'name': '%s-%s' % (name, rp), 'uuid': rp}
        if parent:
            body['parent_provider_uuid'] = self.uuids[parent]
        gen = self._ok('POST', '/resource_providers', body)['generation']
        for path, key, value in (
                ('inventories', 'inventories', {self.rc: {'total': 1}}),
                ('aggregates', 'aggregates', [self.aggs[agg]] if agg else []),
                ('traits', 'traits',
                 ['MISC_SHARES_VIA_AGGREGATE'] if shares else [])):
            gen = self._ok('PUT', '/resource_providers/%s/%s' % (rp, path), {
                'resource_provider_generation': gen, key: value,
            })['resource_provider_generation']

    def _ok(self, method, path, body):
        resp = self.request(method, path, json=body)
        self.assertEqual(200, resp.status_code, resp.text)
        return resp.json()

    def candidates(self, query):
        """Names of the providers used by some allocation request."""
        resp = self.request('GET', '/allocation_candidates?' + query % dict(
            self.aggs, rc=self.rc))
        self.assertEqual(200, resp.status_code, resp.text)
        return {self.names[rp]
                for request in resp.json()['allocation_requests']
                for rp in request['allocations']}

    def excluded(self, query):
        return set(self.uuids) - self.candidates(query)

    def test_every_provider_is_a_candidate_without_member_of(self):
        self.assertEqual(set(self.uuids),
                         self.candidates('resources=%(rc)s:1'))

    def test_forbidden_aggA_excludes_cn1_and_its_numa_children(self):
        """``member_of=!<aggA>`` excludes "cn1", "numa1_1" and "numa1_2"."""
        self.assertEqual({'cn1', 'numa1_1', 'numa1_2'}, self.excluded(
            'resources=%(rc)s:1&member_of=!%(aggA)s'))

    def test_forbidden_aggB_excludes_cn2_its_children_and_ss1(self):
        """``member_of=!<aggB>`` excludes "cn2", "numa2_1", "numa2_2", and
        "ss1"."""
        self.assertEqual({'cn2', 'numa2_1', 'numa2_2', 'ss1'}, self.excluded(
            'resources=%(rc)s:1&member_of=!%(aggB)s'))

    def test_forbidden_aggC_excludes_numa1_1_and_ss2(self):
        """``member_of=!<aggC>`` excludes "numa1_1" and "ss2"."""
        self.assertEqual({'numa1_1', 'ss2'}, self.excluded(
            'resources=%(rc)s:1&member_of=!%(aggC)s'))

    def test_numbered_forbidden_aggA_excludes_only_cn1(self):
        """``member_of<N>=!<aggA>`` excludes "cn1": numbered groups do not
        span the tree."""
        self.assertEqual({'cn1'}, self.excluded(
            'resources1=%(rc)s:1&member_of1=!%(aggA)s'))

    def test_numbered_forbidden_aggB_excludes_only_cn2_and_ss1(self):
        """``member_of<N>=!<aggB>`` excludes "cn2" and "ss1"."""
        self.assertEqual({'cn2', 'ss1'}, self.excluded(
            'resources1=%(rc)s:1&member_of1=!%(aggB)s'))

    def test_numbered_forbidden_aggC_excludes_numa1_1_and_ss2(self):
        """``member_of<N>=!<aggC>`` excludes "numa1_1" and "ss2"."""
        self.assertEqual({'numa1_1', 'ss2'}, self.excluded(
            'resources1=%(rc)s:1&member_of1=!%(aggC)s'))

    def test_suffixed_group_does_not_span_the_tree_either(self):
        """1.33 suffixes are request groups like ``<N>`` ones."""
        self.assertEqual({'cn1'}, self.excluded(
            'resources_X=%(rc)s:1&member_of_X=!%(aggA)s'))

    def test_forbidden_in_list_equals_one_forbidden_per_aggregate(self):
        """``member_of=!in:<agg1>,<agg2>,<agg3>`` "is equivalent to
        ``member_of=!<agg1>&member_of=!<agg2>&member_of=!<agg3>``"."""
        self.assertEqual(
            self.excluded('resources=%(rc)s:1&member_of=!%(aggA)s'
                          '&member_of=!%(aggC)s'),
            self.excluded('resources=%(rc)s:1&member_of=!in:%(aggA)s,'
                          '%(aggC)s'))

    def test_forbidden_removes_its_aggregate_from_a_required_in_list(self):
        """``member_of=in:<agg1>,<agg2>&member_of=!<agg2>`` returns "just
        those resource_providers in agg1" (REST API impact)."""
        self.assertEqual({'cn1', 'numa1_1', 'numa1_2'}, self.candidates(
            'resources=%(rc)s:1&member_of=in:%(aggA)s,%(aggB)s'
            '&member_of=!%(aggB)s'))

    def test_required_and_forbidden_same_aggregate_is_empty_not_400(self):
        """``member_of=<agg1>&member_of=!<agg1>``: "we return 200 with
        empty results"."""
        self.assertEqual(set(), self.candidates(
            'resources=%(rc)s:1&member_of=%(aggA)s&member_of=!%(aggA)s'))


# -- differential: Placement vs validate_member_of ---------------------------

def _uuid_forms(u):
    return [u, u.upper(), u.replace('-', ''), '{%s}' % u]


VALID_ITEMS = [form for u in AGG for form in _uuid_forms(u)]
INVALID_ITEMS = ['', 'foo', 'INVALID_UUID', '(^o^)', A[:-1], A + 'a',
                 ' ' + A, A + ' ', '!' + B, 'in:' + C, A.replace('-', '_'),
                 'é']
SUFFIX_ALPHABET = ('abcXYZ019_-')


@st.composite
def member_of_queries(draw):
    """``(microversion, query)`` with ``resources=VCPU:1`` first.

    Mostly plausible keys and values, some malformed ones; groups get a
    ``resources<S>`` now and then (when that key is valid), so that
    numbered and suffixed ``member_of`` are accepted too.
    """
    minor = draw(st.integers(21, 39))
    # Suffixes valid at this microversion, mostly.
    common_suffix = st.sampled_from(
        [''] + (['', '1', '2'] if minor >= 25 else []) +
        (['_NET', 'x'] if minor >= 33 else []))
    odd_suffix = st.one_of(
        st.integers(0, 12).map(str), st.sampled_from(['01', '007']),
        st.text(SUFFIX_ALPHABET, min_size=1, max_size=4),
        st.text(SUFFIX_ALPHABET, min_size=1, max_size=4).map('_'.__add__),
        st.sampled_from(['_' + 'x' * 63, '_' + 'x' * 64, '.x', '@', 'é']))
    valid_value = st.builds(
        lambda prefix, items: prefix + ','.join(items),
        st.sampled_from(['', 'in:', '!', '!in:']),
        st.lists(st.sampled_from(VALID_ITEMS), min_size=1, max_size=3))
    any_value = st.builds(
        lambda prefix, items: prefix + ','.join(items),
        st.sampled_from(['', 'in:', '!', '!in:', 'in:!', '!!', 'IN:',
                         '! ', '!in']),
        st.lists(st.one_of(st.sampled_from(VALID_ITEMS),
                           st.sampled_from(INVALID_ITEMS)), max_size=3))
    params = [
        (draw(odd_suffix if draw(st.integers(0, 5)) == 5 else common_suffix),
         draw(any_value if draw(st.integers(0, 2)) == 2 else valid_value))
        for _ in range(draw(st.integers(1, 3)))]
    pairs = [('resources', 'VCPU:1')]
    pairs += [('member_of' + s, v) for s, v in params]
    # Give some groups resources, where the key itself is valid, so that
    # numbered and suffixed member_of can be accepted too.
    pattern = (member_of._GROUP_PAT_1_33 if minor >= 33
               else member_of._GROUP_PAT if minor >= 25 else None)
    for s in dict.fromkeys(s for s, _ in params if s):
        if (pattern and re.fullmatch(pattern, s)
                and draw(st.integers(0, 3)) > 0):
            pairs.append(('resources' + s, 'VCPU:1'))
    if minor >= 25 and draw(st.booleans()):
        pairs.append(('group_policy', 'none'))
    return '1.%d' % minor, parse.urlencode(pairs)


class TestMemberOfDifferential(_PlacementTestCase):
    """Placement and ``validate_member_of`` agree, case by case."""

    def disagreement(self, microversion, query, endpoint):
        path = '/%s?%s' % (endpoint, query)
        resp = self.request('GET', path, microversion)
        try:
            member_of.validate_member_of(query, microversion, endpoint)
            ours = None
        except member_of.MemberOfError as exc:
            ours = _normalise(exc.detail)
        if resp.status_code == 200:
            return None if ours is None else 'we reject: %s' % ours
        if resp.status_code != 400:
            return 'Placement answered %s: %s' % (resp.status_code, resp.text)
        theirs = _normalise(
            resp.json()['errors'][0]['detail'].split('\n\n', 1)[-1])
        if ours is None:
            return 'we accept; Placement: %s' % theirs
        if SCHEMA_DUMP in theirs:  # compare the first line only
            theirs = theirs.split(SCHEMA_DUMP)[0].strip()
        if ours != theirs:
            return 'messages differ:\n  ours:      %s\n  Placement: %s' % (
                ours, theirs)
        return None

    def assertAgree(self, cases, endpoint='allocation_candidates',
                    base='resources=VCPU:1&'):
        """``cases``: ``(microversion, member_of query, accepted)``."""
        problems = []
        for microversion, query, accepted in cases:
            query = base + query
            problem = self.disagreement(microversion, query, endpoint)
            if problem is None and accepted != (self.request(
                    'GET', '/%s?%s' % (endpoint, query),
                    microversion).status_code == 200):
                problem = 'expected %s' % (
                    'acceptance' if accepted else 'a 400')
            if problem:
                problems.append('%s %s: %s' % (microversion, query, problem))
        self.assertEqual([], problems, '\n'.join(problems))

    # Each rule, at each microversion boundary.

    def test_member_of_on_allocation_candidates_starts_at_1_21(self):
        self.assertAgree([('1.20', 'member_of=' + A, False),
                          ('1.21', 'member_of=' + A, True),
                          ('1.21', 'member_of=in:%s,%s' % (A, B), True)])

    def test_uuid_forms_placement_accepts(self):
        self.assertAgree([('1.21', 'member_of=' + form, True)
                          for form in _uuid_forms(A)])

    def test_malformed_uuids_are_rejected(self):
        self.assertAgree(
            [('1.32', 'member_of=' + parse.quote(bad), False)
             for bad in INVALID_ITEMS if not bad.startswith(('!', 'in:'))] +
            [('1.32', 'member_of=in:%s,foo,bar' % A, False),
             ('1.32', 'member_of=!in:foo,' + A, False)])

    def test_empty_values_are_rejected(self):
        self.assertAgree([('1.32', 'member_of=', False),
                          ('1.32', 'member_of', False),
                          ('1.32', 'member_of=in:', False),
                          ('1.32', 'member_of=!', False),
                          ('1.32', 'member_of=!in:', False),
                          ('1.32', 'member_of=in:%s,' % A, False),
                          ('1.32', 'member_of=!in:,' + A, False)])

    def test_commas_without_in_prefix_are_rejected(self):
        self.assertAgree([('1.21', 'member_of=%s,%s' % (A, B), False),
                          ('1.32', 'member_of=!%s,%s' % (A, B), False),
                          ('1.32', 'member_of=,', False)])

    def test_forbidden_inside_in_list_is_rejected(self):
        self.assertAgree([('1.32', 'member_of=in:%s,!%s' % (A, B), False),
                          ('1.39', 'member_of=in:!%s' % A, False)])

    def test_repeated_member_of_starts_at_1_24(self):
        twice = 'member_of=%s&member_of=in:%s,%s' % (A, B, C)
        self.assertAgree([('1.23', twice, False), ('1.24', twice, True)])

    def test_forbidden_starts_at_1_32(self):
        self.assertAgree([('1.31', 'member_of=!' + A, False),
                          ('1.31', 'member_of=!in:%s,%s' % (A, B), False),
                          ('1.32', 'member_of=!' + A, True),
                          ('1.32', 'member_of=!in:%s,%s' % (A, B), True),
                          ('1.32', 'member_of=!in:' + A, True)])

    def test_forbidden_and_required_mix_from_1_32(self):
        self.assertAgree([
            ('1.32', 'member_of=in:%s,%s&member_of=%s&member_of=!%s'
             % (A, B, C, A), True),
            ('1.32', 'member_of=%s&member_of=!%s' % (A, A), True),
            ('1.31', 'member_of=%s&member_of=!%s' % (A, B), False)])

    def test_numbered_groups_start_at_1_25(self):
        grouped = 'resources1=VCPU:1&member_of1=' + A
        self.assertAgree([('1.24', grouped, False), ('1.25', grouped, True),
                          ('1.25', 'resources0=VCPU:1&member_of0=' + A,
                           False),
                          ('1.32', 'resources1=VCPU:1&member_of1=!' + A,
                           True),
                          ('1.31', 'resources1=VCPU:1&member_of1=!' + A,
                           False)])

    def test_repeated_numbered_member_of_needs_1_24_only(self):
        self.assertAgree([('1.25', 'resources2=VCPU:1&member_of2=%s'
                           '&member_of2=%s' % (A, B), True)])

    def test_suffixed_groups_start_at_1_33(self):
        named = 'resources_NET=VCPU:1&member_of_NET=' + A
        self.assertAgree([('1.32', named, False), ('1.33', named, True),
                          ('1.33', 'resources_%s=VCPU:1&member_of_%s=%s'
                           % ('x' * 63, 'x' * 63, A), True),
                          ('1.33', 'member_of_%s=%s' % ('x' * 64, A),
                           False),
                          ('1.33', 'member_of.x=' + A, False)])

    def test_orphaned_member_of_is_rejected_before_1_36(self):
        self.assertAgree([('1.25', 'member_of1=' + A, False),
                          ('1.35', 'member_of_X=' + A, False),
                          ('1.35', 'member_of1=%s&member_of_Y=!%s'
                           % (A, B), False)])

    def test_resourceless_group_needs_same_subtree_from_1_36(self):
        self.assertAgree([
            ('1.36', 'member_of1=' + A, False),
            ('1.36', 'resources_C=VCPU:1&member_of_X=%s&group_policy=none'
             '&same_subtree=_C,_X' % A, True),
            ('1.36', 'resources_C=VCPU:1&group_policy=none'
             '&same_subtree=_C,_Z', False),
            ('1.36', 'member_of_X=%s&same_subtree=_X,' % A, False)])

    def test_two_numbered_groups_need_group_policy(self):
        two = 'resources1=VCPU:1&member_of1=%s&resources2=VCPU:1' % A
        self.assertAgree([('1.25', two, False),
                          ('1.25', two + '&group_policy=isolate', True)])

    def test_resource_providers_member_of_rules(self):
        self.assertAgree([
            ('1.2', 'member_of=' + A, False),
            ('1.3', 'member_of=' + A, True),
            ('1.3', 'member_of=in:%s,%s' % (A, B), True),
            ('1.3', 'member_of=in:%s,!%s' % (A, B), False),
            ('1.23', 'member_of=%s&member_of=%s' % (A, B), False),
            ('1.24', 'member_of=%s&member_of=%s' % (A, B), True),
            ('1.31', 'member_of=!' + A, False),
            ('1.32', 'member_of=!in:%s,%s' % (A, B), True),
            ('1.39', 'member_of1=' + A, False)],
            endpoint='resource_providers', base='')

    def test_builder_queries_are_accepted_from_their_min_microversion(self):
        q = member_of.AllocationCandidatesQuery(group_policy='none', limit=3)
        q.group(resources={'VCPU': 1}, forbidden_traits=['HW_CPU_X86_AVX']
                ).member_of.forbid(A, B)
        q.group('1', resources={'MEMORY_MB': 1}).member_of.require(B, C)
        microversion = q.min_microversion()
        below = '%d.%d' % (microversion[0], microversion[1] - 1)
        self.assertEqual((1, 32), microversion)
        self.assertAgree([('1.32', q.to_querystring(), True),
                          (below, q.to_querystring(), False)], base='')

    @hypothesis.settings(max_examples=200, deadline=None, derandomize=True,
                         database=None, suppress_health_check=list(
                             hypothesis.HealthCheck))
    @hypothesis.given(member_of_queries())
    def test_generated_queries_agree(self, case):
        microversion, query = case
        problem = self.disagreement(microversion, query,
                                    'allocation_candidates')
        self.assertIsNone(problem, '%s %s' % (microversion, query))
