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
"""``member_of`` validation and builders (Placement's "Support filtering by
forbidden aggregate membership" spec), without Placement.

The messages asserted here are Placement's own; the functional test
``tests.functional.placement.test_member_of`` checks them against it.
"""

from urllib import parse

import testtools

from placement_quota.placement import member_of as mo

A = 'aaaaaaaa-1111-4aaa-8aaa-aaaaaaaaaaaa'
B = 'bbbbbbbb-2222-4bbb-8bbb-bbbbbbbbbbbb'
C = 'cccccccc-3333-4ccc-8ccc-cccccccccccc'
BAD_UUID = ("Invalid query string parameters: Expected 'member_of' "
            "parameter to contain valid UUID(s). Got: %s")
REGEXES_1_25 = ("'^member_of([1-9][0-9]*)?$', '^required([1-9][0-9]*)?$', "
                "'^resources([1-9][0-9]*)?$'")


class TestValidateMemberOf(testtools.TestCase):
    """:func:`validate_member_of` on ``GET /allocation_candidates``."""

    def assertRejected(self, message, query, microversion='1.39', **kw):
        error = self.assertRaises(mo.MemberOfError, mo.validate_member_of,
                                  query, microversion, **kw)
        self.assertEqual(message, error.detail)

    def test_single_required_aggregate_is_accepted(self):
        self.assertEqual({'': mo.MemberOf(required=[{A}])},
                         mo.validate_member_of('member_of=' + A, '1.21'))

    def test_required_in_list_is_accepted(self):
        self.assertEqual([{A, B}], mo.validate_member_of(
            'member_of=in:%s,%s' % (A, B), '1.21')[''].required)

    def test_forbidden_inside_in_list_is_rejected(self):
        """Placement's "Support filtering by forbidden aggregate membership"
        spec: "we don't support ``!`` for arguments to the ``in:`` prefix ...
        This would result in HTTP 400"."""
        self.assertRejected(BAD_UUID % ('!' + B),
                            'member_of=in:%s,!%s' % (A, B))

    def test_commas_without_in_prefix_are_rejected(self):
        self.assertRejected(
            "Multiple values for 'member_of' must be prefixed with the "
            "'in:' or '!in:' keyword using the valid microversion. "
            "Got: %s,%s" % (A, B), 'member_of=%s,%s' % (A, B))

    def test_forbidden_commas_without_in_prefix_are_rejected(self):
        self.assertRaises(mo.MemberOfError, mo.validate_member_of,
                          'member_of=!%s,%s' % (A, B), '1.32')

    def test_malformed_uuid_is_rejected_naming_it(self):
        self.assertRejected(BAD_UUID % '(^o^)', 'member_of=!(^o^)')

    def test_uuid_forms_accepted_by_oslo_are_accepted(self):
        for form in (A.upper(), A.replace('-', ''), '{%s}' % A):
            mo.validate_member_of([('member_of', form)], '1.21')

    def test_empty_value_is_rejected(self):
        self.assertRejected(BAD_UUID % '', 'member_of=')

    def test_key_without_value_is_an_empty_value(self):
        self.assertRejected(BAD_UUID % '', 'member_of')

    def test_empty_in_list_is_rejected(self):
        self.assertRejected(BAD_UUID % '', 'member_of=in:')

    def test_empty_item_of_in_list_is_rejected(self):
        self.assertRejected(BAD_UUID % '', 'member_of=in:%s,' % A)

    def test_forbidden_in_list_is_accepted_from_1_32(self):
        """Placement's "Support filtering by forbidden aggregate membership"
        spec: "we support ``!in:`` prefix"."""
        self.assertEqual({A, B}, mo.validate_member_of(
            'member_of=!in:%s,%s' % (A, B), '1.32')[''].forbidden)

    def test_forbidden_is_rejected_before_1_32(self):
        self.assertRejected('Forbidden member_of parameters are not '
                            'supported in the specified microversion',
                            'member_of=!' + A, '1.31')

    def test_forbidden_in_list_is_rejected_before_1_32(self):
        self.assertRaises(mo.MemberOfError, mo.validate_member_of,
                          'member_of=!in:%s,%s' % (A, B), '1.31')

    def test_forbidden_in_numbered_group_names_the_group(self):
        self.assertRejected('Forbidden member_of1 parameters are not '
                            'supported in the specified microversion',
                            'resources1=VCPU:1&member_of1=!' + A, '1.31')

    def test_malformed_uuid_is_reported_before_the_microversion(self):
        self.assertRejected(BAD_UUID % 'x', 'member_of=!x', '1.31')

    def test_same_aggregate_required_and_forbidden_is_accepted(self):
        """Placement's "Support filtering by forbidden aggregate membership"
        spec: "we do not return 400 for cases like
        ``&member_of=<agg1>&member_of=!<agg1>``"."""
        mo.validate_member_of('member_of=%s&member_of=!%s' % (A, A), '1.32')

    def test_repeated_member_of_is_rejected_before_1_24(self):
        self.assertRejected('Multiple member_of parameters are not supported',
                            'member_of=%s&member_of=%s' % (A, B), '1.23')

    def test_repeated_member_of_is_accepted_from_1_24(self):
        self.assertEqual([{A}, {B}], mo.validate_member_of(
            'member_of=%s&member_of=%s' % (A, B), '1.24')[''].required)

    def test_member_of_is_unknown_before_1_21(self):
        self.assertRejected("Invalid query string parameters: Additional "
                            "properties are not allowed ('member_of' was "
                            "unexpected)", 'member_of=' + A, '1.20')

    def test_numbered_group_is_unknown_before_1_25(self):
        self.assertRejected("Invalid query string parameters: Additional "
                            "properties are not allowed ('member_of1' was "
                            "unexpected)", 'member_of1=' + A, '1.24')

    def test_numbered_group_is_accepted_from_1_25(self):
        self.assertEqual({'1'}, set(mo.validate_member_of(
            'resources=VCPU:1&resources1=VCPU:1&member_of1=' + A, '1.25')))

    def test_group_number_zero_does_not_match_the_schema(self):
        self.assertRejected("Invalid query string parameters: 'member_of0' "
                            "does not match any of the regexes: "
                            + REGEXES_1_25, 'member_of0=' + A, '1.25')

    def test_schema_lists_every_unknown_group_key(self):
        self.assertRejected("Invalid query string parameters: 'member_of0', "
                            "'resources0' do not match any of the regexes: "
                            + REGEXES_1_25,
                            'resources0=VCPU:1&member_of0=' + A, '1.25')

    def test_suffixed_group_is_unknown_before_1_33(self):
        self.assertRaises(mo.MemberOfError, mo.validate_member_of,
                          'member_of_NET=' + A, '1.32')

    def test_suffixed_group_is_accepted_from_1_33(self):
        self.assertEqual({'_NET'}, set(mo.validate_member_of(
            'resources_NET=VCPU:1&member_of_NET=!' + A, '1.33')))

    def test_suffix_longer_than_64_characters_is_rejected(self):
        self.assertRaises(mo.MemberOfError, mo.validate_member_of,
                          'member_of_%s=%s' % ('x' * 64, A), '1.33')

    def test_orphaned_member_of_group_is_rejected_before_1_36(self):
        self.assertRejected('All member_of parameters must be associated '
                            'with resources. Found the following orphaned '
                            'member_of keys: member_of1',
                            'resources=VCPU:1&member_of1=' + A, '1.35')

    def test_resourceless_member_of_group_needs_same_subtree_from_1_36(self):
        self.assertRejected("Resourceless suffixed group request should be "
                            "specified in `same_subtree` query param: bad "
                            "group(s) - ['1'].",
                            'resources=VCPU:1&member_of1=' + A, '1.36')

    def test_resourceless_group_named_in_same_subtree_is_accepted(self):
        mo.validate_member_of('resources_C=VCPU:1&member_of_X=%s'
                              '&same_subtree=_C,_X&group_policy=none' % A,
                              '1.36')

    def test_two_suffixed_groups_need_group_policy(self):
        self.assertRejected('The "group_policy" parameter is required when '
                            'specifying more than one "resources{N}" '
                            'parameter.', 'resources1=VCPU:1&member_of1=%s'
                            '&resources2=VCPU:1' % A, '1.25')

    def test_fragment_without_resources_skips_group_rules(self):
        mo.validate_member_of('member_of1=%s&member_of2=!%s' % (A, B), '1.32')

    def test_other_parameters_are_ignored(self):
        mo.validate_member_of('limit=bogus&member_of=' + A, '1.21')

    def test_query_string_is_decoded_like_webob(self):
        self.assertEqual({A}, mo.validate_member_of(
            '?member_of=%21in%3A' + A, '1.32')[''].forbidden)

    def test_plus_decodes_to_a_space(self):
        self.assertRejected(BAD_UUID % (' ' + A), 'member_of=+' + A)

    def test_pairs_are_accepted_as_well_as_strings(self):
        self.assertEqual(
            mo.validate_member_of('member_of=in:%s,%s' % (A, B), '1.21'),
            mo.validate_member_of([('member_of', 'in:%s,%s' % (A, B))],
                                  (1, 21)))

    def test_latest_microversion_allows_everything(self):
        mo.validate_member_of('member_of_X=!' + A, 'latest')

    def test_malformed_microversion_is_a_plain_value_error(self):
        error = self.assertRaises(ValueError, mo.validate_member_of,
                                  'member_of=' + A, 'one.two')
        self.assertNotIsInstance(error, mo.MemberOfError)

    def test_error_is_a_value_error_carrying_the_detail(self):
        error = self.assertRaises(ValueError, mo.validate_member_of,
                                  'member_of=x', '1.21')
        self.assertEqual(BAD_UUID % 'x', str(error))

    def test_unknown_endpoint_is_refused(self):
        self.assertRaises(ValueError, mo.validate_member_of,
                          'member_of=' + A, '1.21', endpoint='usages')


class TestValidateMemberOfResourceProviders(testtools.TestCase):
    """``endpoint='resource_providers'``: ``member_of`` only, from 1.3."""

    def validate(self, query, microversion):
        return mo.validate_member_of(query, microversion,
                                     endpoint=mo.RESOURCE_PROVIDERS)

    def test_member_of_starts_at_1_3(self):
        self.assertRaises(mo.MemberOfError, self.validate,
                          'member_of=' + A, '1.2')
        self.validate('member_of=in:%s,%s' % (A, B), '1.3')

    def test_numbered_member_of_is_never_accepted(self):
        self.assertRaises(mo.MemberOfError, self.validate,
                          'member_of1=' + A, '1.39')

    def test_forbidden_starts_at_1_32(self):
        self.assertRaises(mo.MemberOfError, self.validate,
                          'member_of=!' + A, '1.31')
        self.validate('member_of=!' + A, '1.32')


class TestBuilders(testtools.TestCase):
    """:func:`required`, :func:`forbidden` and :class:`MemberOf`."""

    def test_required_of_one_aggregate_is_its_uuid(self):
        self.assertEqual(A, mo.required(A))

    def test_required_of_several_aggregates_is_an_in_list(self):
        self.assertEqual('in:%s,%s' % (A, B), mo.required(A, B))

    def test_forbidden_of_one_aggregate_is_bang_uuid(self):
        self.assertEqual('!' + A, mo.forbidden(A))

    def test_forbidden_of_several_aggregates_is_bang_in_list(self):
        """Placement's "Support filtering by forbidden aggregate membership"
        spec: ``!in:<agg1>,<agg2>,<agg3>``."""
        self.assertEqual('!in:%s,%s' % (A, B), mo.forbidden(A, B))

    def test_builders_drop_duplicate_aggregates(self):
        self.assertEqual(A, mo.required(A, A))

    def test_builders_refuse_no_aggregate(self):
        self.assertRaises(ValueError, mo.forbidden)

    def test_builders_refuse_malformed_uuids_with_placements_message(self):
        error = self.assertRaises(mo.MemberOfError, mo.required, A, '!' + B)
        self.assertEqual(BAD_UUID % ('!' + B), error.detail)

    def test_model_emits_one_param_per_required_set_then_one_forbidden(self):
        model = mo.MemberOf().require(A, B).require(C).forbid(A).forbid(B)
        self.assertEqual([('member_of', 'in:%s,%s' % (A, B)),
                          ('member_of', C),
                          ('member_of', '!in:%s,%s' % (A, B))],
                         model.to_params())

    def test_model_emits_numbered_group_keys(self):
        self.assertEqual([('member_of1', '!' + A)],
                         mo.MemberOf().forbid(A).to_params('1'))

    def test_model_emits_suffixed_group_keys(self):
        self.assertEqual([('member_of_NET', B)],
                         mo.MemberOf().require(B).to_params('_NET'))

    def test_empty_model_is_falsy_and_emits_nothing(self):
        self.assertFalse(mo.MemberOf())
        self.assertEqual([], mo.MemberOf().to_params())
        self.assertIsNone(mo.MemberOf().min_microversion())

    def test_model_needs_1_21_for_one_required_set(self):
        self.assertEqual((1, 21), mo.MemberOf().require(A).min_microversion())

    def test_model_needs_1_24_for_two_required_sets(self):
        self.assertEqual((1, 24), mo.MemberOf().require(A).require(B)
                         .min_microversion())

    def test_model_needs_1_32_for_forbidden_aggregates(self):
        self.assertEqual((1, 32), mo.MemberOf().forbid(A).min_microversion())

    def test_model_needs_1_3_on_resource_providers(self):
        self.assertEqual((1, 3), mo.MemberOf().require(A).min_microversion(
            mo.RESOURCE_PROVIDERS))

    def test_model_round_trips_through_the_validator(self):
        model = mo.MemberOf().require(A, B).require(C).forbid(A)
        self.assertEqual({'': model}, mo.validate_member_of(
            model.to_params(), model.min_microversion()))


class TestAllocationCandidatesQuery(testtools.TestCase):
    """:class:`AllocationCandidatesQuery` and the microversion it needs."""

    def test_resources_only_need_1_10(self):
        q = mo.AllocationCandidatesQuery()
        q.group(resources={'VCPU': 2, 'MEMORY_MB': 512})
        self.assertEqual([('resources', 'VCPU:2,MEMORY_MB:512')],
                         q.to_query())
        self.assertEqual((1, 10), q.min_microversion())

    def test_limit_needs_1_16(self):
        q = mo.AllocationCandidatesQuery(limit=3)
        q.group(resources={'VCPU': 1})
        self.assertEqual(('limit', '3'), q.to_query()[-1])
        self.assertEqual((1, 16), q.min_microversion())

    def test_required_traits_need_1_17(self):
        q = mo.AllocationCandidatesQuery()
        q.group(resources={'VCPU': 1}, required_traits=['HW_CPU_X86_AVX'])
        self.assertEqual((1, 17), q.min_microversion())

    def test_forbidden_traits_follow_required_with_a_bang_from_1_22(self):
        q = mo.AllocationCandidatesQuery()
        q.group(resources={'VCPU': 1}, required_traits=['A'],
                forbidden_traits=['B'])
        self.assertIn(('required', 'A,!B'), q.to_query())
        self.assertEqual((1, 22), q.min_microversion())

    def test_forbidden_aggregate_needs_1_32(self):
        q = mo.AllocationCandidatesQuery()
        q.group(resources={'VCPU': 1}).member_of.forbid(A)
        self.assertIn(('member_of', '!' + A), q.to_query())
        self.assertEqual((1, 32), q.min_microversion())

    def test_in_tree_needs_1_31(self):
        q = mo.AllocationCandidatesQuery()
        q.group(resources={'VCPU': 1}, in_tree=A)
        self.assertIn(('in_tree', A), q.to_query())
        self.assertEqual((1, 31), q.min_microversion())

    def test_numbered_group_needs_1_25(self):
        q = mo.AllocationCandidatesQuery()
        q.group('1', resources={'VCPU': 1}, member_of=mo.MemberOf().require(A))
        self.assertEqual([('resources1', 'VCPU:1'), ('member_of1', A)],
                         q.to_query())
        self.assertEqual((1, 25), q.min_microversion())

    def test_suffixed_group_needs_1_33(self):
        q = mo.AllocationCandidatesQuery()
        q.group('_NET', resources={'VCPU': 1})
        self.assertEqual((1, 33), q.min_microversion())

    def test_unsuffixed_group_comes_first(self):
        q = mo.AllocationCandidatesQuery()
        q.group('1', resources={'DISK_GB': 1})
        q.group(resources={'VCPU': 1})
        self.assertEqual(['resources', 'resources1'],
                         [key for key, _ in q.to_query()])

    def test_calling_group_again_adds_to_the_same_group(self):
        q = mo.AllocationCandidatesQuery()
        q.group(resources={'VCPU': 1})
        q.group(resources={'MEMORY_MB': 64}, member_of=mo.MemberOf().forbid(A))
        self.assertEqual([('resources', 'VCPU:1,MEMORY_MB:64'),
                          ('member_of', '!' + A)], q.to_query())

    def test_two_suffixed_groups_without_group_policy_are_refused(self):
        q = mo.AllocationCandidatesQuery()
        q.group('1', resources={'VCPU': 1})
        q.group('2', resources={'VCPU': 1})
        self.assertRaises(ValueError, q.to_query)

    def test_group_without_resources_is_refused(self):
        q = mo.AllocationCandidatesQuery()
        q.group('1', member_of=mo.MemberOf().require(A))
        self.assertRaises(ValueError, q.to_query)

    def test_invalid_suffix_is_refused(self):
        self.assertRaises(ValueError, mo.AllocationCandidatesQuery().group,
                          '.x')

    def test_invalid_group_policy_and_limit_are_refused(self):
        self.assertRaises(ValueError, mo.AllocationCandidatesQuery,
                          group_policy='bogus')
        self.assertRaises(ValueError, mo.AllocationCandidatesQuery, limit=0)

    def test_querystring_is_the_url_encoded_query(self):
        q = mo.AllocationCandidatesQuery(limit=2)
        q.group(resources={'VCPU': 1}).member_of.require(A, B)
        self.assertEqual(q.to_query(), parse.parse_qsl(q.to_querystring()))

    def test_output_is_accepted_at_its_min_microversion(self):
        q = mo.AllocationCandidatesQuery(group_policy='isolate', limit=5)
        q.group(resources={'VCPU': 1}).member_of.forbid(A, B)
        q.group('1', resources={'DISK_GB': 1},
                member_of=mo.MemberOf().require(B, C).require(A))
        q.group('_NET', resources={'CUSTOM_BW': 1}, in_tree=C)
        parsed = mo.validate_member_of(q.to_querystring(),
                                       q.min_microversion())
        self.assertEqual({'': {A, B}}, {s: m.forbidden
                                        for s, m in parsed.items()
                                        if m.forbidden})
        self.assertEqual([{B, C}, {A}], parsed['1'].required)

    def test_output_with_forbidden_aggregate_is_rejected_below_1_32(self):
        q = mo.AllocationCandidatesQuery()
        q.group(resources={'VCPU': 1}).member_of.forbid(A)
        self.assertRaises(mo.MemberOfError, mo.validate_member_of,
                          q.to_querystring(), (1, 31))

    def test_output_with_numbered_groups_is_rejected_below_1_25(self):
        q = mo.AllocationCandidatesQuery()
        q.group('1', resources={'VCPU': 1}).member_of.require(A)
        self.assertRaises(mo.MemberOfError, mo.validate_member_of,
                          q.to_query(), (1, 24))
