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
"""The scheduler decision, pure: no Nova, no Placement.

The cloud below is what stock Blazar 18 writes into Nova (see the module
docstring of :mod:`placement_quota.scheduler.decision`), plus one
aggregate in the style of Placement's "Support filtering by forbidden
aggregate membership" spec and one aggregate Blazar has nothing to do with.
"""

import types

import testtools

from placement_quota.scheduler import decision as dec

OWNER = 'a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1'       # owns both reservations
OTHER = 'b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2'       # another project
GUEST = 'c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3'       # added with add_project

HOST_RSV = '11111111-aaaa-4aaa-8aaa-111111111111'  # physical:host
INST_RSV = '22222222-bbbb-4bbb-8bbb-222222222222'  # virtual:instance
# In the style of Placement's "Support filtering by forbidden aggregate
# membership" spec:
SPEC_RSV = 'resv-33'

FREEPOOL = '0f0f0f0f-0000-4000-8000-000000000001'
AGG_HOST = '0f0f0f0f-0000-4000-8000-000000000002'
AGG_INST = '0f0f0f0f-0000-4000-8000-000000000003'
AGG_SPEC = '0f0f0f0f-0000-4000-8000-000000000004'
AGG_SSD = '0f0f0f0f-0000-4000-8000-000000000005'

CUSTOM_CLASS = 'CUSTOM_RESERVATION_22222222_BBBB_4BBB_8BBB_222222222222'


def stock_cloud():
    return [
        # Created by the operator; Blazar only moves hosts in and out.
        dec.Aggregate(FREEPOOL, 'freepool', {}, ('free1', 'inst1')),
        # host_plugin.reserve_resource: name = id, AZ blazar_<id>,
        # ReservationPool.create adds blazar:owner.
        dec.Aggregate(AGG_HOST, HOST_RSV, {
            'availability_zone': 'blazar_' + HOST_RSV,
            'blazar:owner': OWNER}, ('resv1',)),
        # instance_plugin._create_resources.
        dec.Aggregate(AGG_INST, INST_RSV, {
            'reservation': INST_RSV, 'filter_tenant_id': OWNER,
            'blazar:owner': OWNER}, ('inst1',)),
        # Placement's "Support filtering by forbidden aggregate membership"
        # spec step 2.
        dec.Aggregate(AGG_SPEC, 'spec-pool', {
            'reservation:' + SPEC_RSV: 'true'}, ('spec1',)),
        dec.Aggregate(AGG_SSD, 'ssd', {'ssd': 'true'}, ('plain2',)),
    ]


BLAZAR_AGGS = {FREEPOOL, AGG_HOST, AGG_INST, AGG_SPEC}


def instance_flavor(rid=INST_RSV):
    """The extra specs of Blazar's reserved flavor (_create_flavor)."""
    return {'aggregate_instance_extra_specs:reservation': rid,
            'resources:CUSTOM_RESERVATION_' + rid.upper().replace('-', '_'):
            '1'}


class _Base(testtools.TestCase):

    aggregates = staticmethod(stock_cloud)

    def decide(self, extra_specs=None, image=None, hints=None,
               project=OWNER, aggregates=None, settings=None):
        return dec.decide(extra_specs or {}, image or {}, hints or {},
                          project, self.aggregates() if aggregates is None
                          else aggregates, settings)

    def assertRefused(self, decision, *fragments):
        self.assertTrue(decision.refused, decision)
        self.assertIsNone(dec.to_query(decision))
        text = '; '.join(decision.errors)
        for fragment in fragments:
            self.assertIn(fragment, text)
        self.assertTrue(decision.reason.startswith('refused (no valid host)'))


class TestRegularRequests(_Base):

    def test_regular_request_forbids_every_blazar_aggregate(self):
        d = self.decide({'hw:cpu_policy': 'shared'})
        self.assertEqual(dec.REGULAR, d.kind)
        self.assertEqual([], d.required)
        self.assertEqual(BLAZAR_AGGS, d.forbidden)
        self.assertEqual([], d.errors)

    def test_free_pool_is_fenced_by_name_even_without_metadata(self):
        self.assertIn(FREEPOOL, self.decide().forbidden)

    def test_aggregate_foreign_to_blazar_is_not_fenced(self):
        self.assertNotIn(AGG_SSD, self.decide().forbidden)

    def test_query_is_one_forbidden_in_list_sorted(self):
        self.assertEqual('member_of=!in:' + ','.join(sorted(BLAZAR_AGGS)),
                         dec.to_query(self.decide()))

    def test_no_blazar_aggregate_means_no_member_of(self):
        d = self.decide(aggregates=[dec.Aggregate(AGG_SSD, 'ssd',
                                                  {'ssd': 'true'})])
        self.assertEqual('', dec.to_query(d))

    def test_owner_key_alone_fences(self):
        d = self.decide(aggregates=[dec.Aggregate(
            AGG_HOST, 'x', {'blazar:owner': OWNER})])
        self.assertEqual({AGG_HOST}, d.forbidden)

    def test_legacy_blazar_colon_availability_zone_fences(self):
        d = self.decide(aggregates=[dec.Aggregate(
            AGG_HOST, HOST_RSV, {'availability_zone': 'blazar:' + HOST_RSV})])
        self.assertEqual({AGG_HOST}, d.forbidden)

    def test_every_configured_forbidden_prefix_fences(self):
        settings = dec.Settings(forbidden_prefixes=('reservation:', 'lic:'))
        d = self.decide(settings=settings, aggregates=[
            dec.Aggregate(AGG_SSD, 'windows', {'lic:windows': 'true'})])
        self.assertEqual({AGG_SSD}, d.forbidden)

    def test_metadata_key_set_to_none_is_absent(self):
        """Nova's set_metadata with None removes a key (remove_project)."""
        d = self.decide(aggregates=[dec.Aggregate(
            AGG_HOST, 'x', {'blazar:owner': None})])
        self.assertEqual(set(), d.forbidden)


class TestHostReservation(_Base):

    def test_hint_requires_the_reservation_aggregate_for_its_owner(self):
        d = self.decide(hints={'reservation': [HOST_RSV]})
        self.assertEqual(dec.HOST_RESERVATION, d.kind)
        self.assertEqual([[AGG_HOST]], d.required)
        self.assertEqual(set(), d.forbidden)
        self.assertEqual([HOST_RSV], d.reservation_ids)
        self.assertEqual('member_of=in:' + AGG_HOST, dec.to_query(d))

    def test_hint_as_a_bare_string_works_too(self):
        self.assertEqual([[AGG_HOST]],
                         self.decide(hints={'reservation': HOST_RSV}).required)

    def test_hint_in_upper_case_matches(self):
        self.assertEqual([[AGG_HOST]], self.decide(
            hints={'reservation': [HOST_RSV.upper()]}).required)

    def test_other_project_is_refused_and_told_why(self):
        d = self.decide(hints={'reservation': [HOST_RSV]}, project=OTHER)
        self.assertRefused(d, 'project %s is not admitted to reservation %s'
                           % (OTHER, HOST_RSV), 'owner %s' % OWNER)

    def test_project_added_by_blazar_add_project_is_admitted(self):
        aggs = stock_cloud()
        aggs[1].metadata[GUEST] = 'blazar:project'
        d = self.decide(hints={'reservation': [HOST_RSV]}, project=GUEST,
                        aggregates=aggs)
        self.assertEqual([[AGG_HOST]], d.required)

    def test_request_without_project_is_refused_on_an_owned_pool(self):
        self.assertRefused(self.decide(hints={'reservation': [HOST_RSV]},
                                       project=None), 'not admitted')

    def test_several_hinted_reservations_are_alternatives(self):
        aggs = stock_cloud() + [dec.Aggregate(
            AGG_SSD, 'r2', {'availability_zone': 'blazar_r2',
                            'blazar:owner': OWNER})]
        d = self.decide(hints={'reservation': [HOST_RSV, 'r2']},
                        aggregates=aggs)
        self.assertEqual([[AGG_HOST, AGG_SSD]], d.required)

    def test_reservation_without_aggregate_is_refused(self):
        self.assertRefused(self.decide(hints={'reservation': ['gone']}),
                           'reservation gone has no aggregate')

    def test_free_pool_name_as_hint_is_no_reservation(self):
        self.assertRefused(self.decide(hints={'reservation': ['freepool']}),
                           'reservation freepool has no aggregate')

    def test_aggregate_of_the_hint_with_custom_az_prefix(self):
        settings = dec.Settings(az_prefixes=('rsv-',))
        d = self.decide(hints={'reservation': ['x1']}, settings=settings,
                        aggregates=[dec.Aggregate(AGG_HOST, 'x1', {
                            'availability_zone': 'rsv-x1',
                            'blazar:owner': OWNER})])
        self.assertEqual([[AGG_HOST]], d.required)


class TestInstanceReservation(_Base):

    def test_blazar_reserved_flavor_requires_its_aggregate(self):
        d = self.decide(instance_flavor())
        self.assertEqual(dec.INSTANCE_RESERVATION, d.kind)
        self.assertEqual([[AGG_INST]], d.required)
        self.assertEqual(set(), d.forbidden)
        self.assertEqual([INST_RSV], d.reservation_ids)

    def test_custom_reservation_class_alone_names_the_reservation(self):
        """Blazar: id.upper().replace('-', '_'); back: '_' -> '-', lower."""
        d = self.decide({'resources:' + CUSTOM_CLASS: '1'})
        self.assertEqual([INST_RSV], d.reservation_ids)
        self.assertEqual([[AGG_INST]], d.required)

    def test_custom_reservation_class_in_a_granular_group(self):
        for key in ('resources1:', 'resources_RSV:'):
            d = self.decide({key + CUSTOM_CLASS: '1'})
            self.assertEqual([[AGG_INST]], d.required, key)

    def test_zero_amount_of_the_class_is_no_request(self):
        d = self.decide({'resources:' + CUSTOM_CLASS: '0'})
        self.assertEqual(dec.REGULAR, d.kind)

    def test_aggregate_extra_spec_alone_names_the_reservation(self):
        d = self.decide({'aggregate_instance_extra_specs:reservation':
                         INST_RSV})
        self.assertEqual([[AGG_INST]], d.required)

    def test_class_and_extra_spec_naming_two_reservations_are_refused(self):
        specs = instance_flavor()
        specs['aggregate_instance_extra_specs:reservation'] = HOST_RSV
        self.assertRefused(self.decide(specs),
                           'the request names several reservations')

    def test_filter_tenant_id_lists_admit_each_project(self):
        aggs = stock_cloud()
        aggs[2].metadata['filter_tenant_id2'] = '%s,%s' % (OTHER, GUEST)
        self.assertEqual([[AGG_INST]], self.decide(
            instance_flavor(), project=GUEST, aggregates=aggs).required)

    def test_other_project_is_refused(self):
        self.assertRefused(self.decide(instance_flavor(), project=OTHER),
                           'project %s is not admitted' % OTHER)

    def test_hint_naming_the_same_reservation_keeps_it(self):
        d = self.decide(instance_flavor(), hints={'reservation': [INST_RSV]})
        self.assertEqual(dec.HOST_RESERVATION, d.kind)  # hint first
        self.assertEqual([[AGG_INST]], d.required)

    def test_hint_naming_another_reservation_is_refused(self):
        self.assertRefused(
            self.decide(instance_flavor(), hints={'reservation': [HOST_RSV]}),
            'but the scheduler hint reservation=%s names another' % HOST_RSV)


class TestSpec004Style(_Base):
    """Placement's "Support filtering by forbidden aggregate membership" spec
    "Developer impact": ``reservation:<id>`` on both sides."""

    def test_flavor_key_requires_the_aggregate_with_the_same_key(self):
        d = self.decide({'reservation:' + SPEC_RSV: 'true'})
        self.assertEqual(dec.HOST_RESERVATION, d.kind)
        self.assertEqual([[AGG_SPEC]], d.required)
        self.assertEqual(set(), d.forbidden)  # "no forbidden aggregates"

    def test_image_property_works_like_the_flavor_key(self):
        d = self.decide(image={'reservation:' + SPEC_RSV: 'true'})
        self.assertEqual([[AGG_SPEC]], d.required)

    def test_aggregate_without_owner_admits_every_project(self):
        d = self.decide({'reservation:' + SPEC_RSV: 'x'}, project=OTHER)
        self.assertEqual([[AGG_SPEC]], d.required)

    def test_bare_prefix_names_no_reservation(self):
        self.assertRefused(self.decide({'reservation:': 'x'}),
                           "'reservation:' names no reservation")

    def test_free_pool_tagged_with_the_prefix_is_only_fenced(self):
        """Step 1: the free pool carries ``reservation:<random_id>`` so
        that the default forbidden prefix catches it; it is no
        reservation aggregate."""
        aggs = [dec.Aggregate(FREEPOOL, 'freepool', {'reservation:r0': '1'})]
        self.assertEqual({FREEPOOL}, self.decide(aggregates=aggs).forbidden)
        self.assertEqual([], self.decide(aggregates=aggs).warnings)
        self.assertRefused(self.decide({'reservation:r0': '1'},
                                       aggregates=aggs),
                           'reservation r0 has no aggregate')

    def test_other_required_prefix(self):
        settings = dec.Settings(required_prefix='blazar-rsv:',
                                forbidden_prefixes=('blazar-rsv:',))
        aggs = [dec.Aggregate(AGG_SPEC, 's', {'blazar-rsv:r9': '1'})]
        d = self.decide({'blazar-rsv:r9': '1'}, aggregates=aggs,
                        settings=settings)
        self.assertEqual([[AGG_SPEC]], d.required)
        self.assertEqual({AGG_SPEC},
                         self.decide(aggregates=aggs,
                                     settings=settings).forbidden)


class TestPreemptible(_Base):

    def test_preemptible_flavor_requires_the_free_pool_only(self):
        d = self.decide({'blazar:preemptible': 'true'})
        self.assertEqual(dec.PREEMPTIBLE, d.kind)
        self.assertEqual([[FREEPOOL]], d.required)
        self.assertEqual({AGG_HOST, AGG_INST, AGG_SPEC}, d.forbidden)
        self.assertEqual('member_of=in:%s&member_of=!in:%s' % (
            FREEPOOL, ','.join(sorted({AGG_HOST, AGG_INST, AGG_SPEC}))),
            dec.to_query(d))

    def test_truthy_strings_of_oslo_strutils(self):
        for value in ('true', 'True', '1', 'yes', 'on', 'y', 't', True):
            self.assertEqual(dec.PREEMPTIBLE,
                             self.decide({'blazar:preemptible': value}).kind,
                             value)

    def test_false_strings_are_regular(self):
        for value in ('false', '0', 'no', 'off', False):
            self.assertEqual(dec.REGULAR,
                             self.decide({'blazar:preemptible': value}).kind)

    def test_non_boolean_is_regular_with_a_warning(self):
        d = self.decide({'blazar:preemptible': 'maybe'})
        self.assertEqual(dec.REGULAR, d.kind)
        self.assertIn("blazar:preemptible='maybe' is not a boolean",
                      d.warnings[0])

    def test_image_property_makes_it_preemptible(self):
        self.assertEqual(dec.PREEMPTIBLE, self.decide(
            image={'blazar:preemptible': 'yes'}).kind)

    def test_preemptibles_not_allowed_are_regular(self):
        d = self.decide({'blazar:preemptible': 'true'},
                        settings=dec.Settings(allow_preemptibles=False))
        self.assertEqual(dec.REGULAR, d.kind)

    def test_reservation_wins_over_preemptible(self):
        specs = dict(instance_flavor(), **{'blazar:preemptible': 'true'})
        self.assertEqual(dec.INSTANCE_RESERVATION, self.decide(specs).kind)

    def test_no_free_pool_is_refused(self):
        self.assertRefused(self.decide({'blazar:preemptible': 'true'},
                                       aggregates=stock_cloud()[1:]),
                           "no free pool aggregate named 'freepool'")

    def test_other_free_pool_name(self):
        aggs = [dec.Aggregate(FREEPOOL, 'pool-of-free', {})]
        d = self.decide({'blazar:preemptible': 'true'}, aggregates=aggs,
                        settings=dec.Settings(freepool_name='pool-of-free'))
        self.assertEqual([[FREEPOOL]], d.required)


class TestBadMetadata(_Base):
    """Reported, never raised; refused when the answer depends on it."""

    def with_bad_uuid(self, index):
        aggs = stock_cloud()
        a = aggs[index]
        aggs[index] = dec.Aggregate('not-a-uuid', a.name, a.metadata, a.hosts)
        return aggs

    def test_malformed_uuid_of_a_fenced_aggregate_refuses_regular(self):
        """Fail closed: it cannot be forbidden, and Placement would 400."""
        d = self.decide(aggregates=self.with_bad_uuid(1))
        self.assertRefused(d, "aggregate %r has a malformed UUID "
                           "'not-a-uuid': cannot forbid it" % HOST_RSV)

    def test_malformed_uuid_of_a_required_aggregate_refuses(self):
        d = self.decide(hints={'reservation': [HOST_RSV]},
                        aggregates=self.with_bad_uuid(1))
        self.assertRefused(d, 'cannot require it')

    def test_malformed_uuid_elsewhere_does_not_matter(self):
        d = self.decide(aggregates=self.with_bad_uuid(4))
        self.assertFalse(d.refused)
        self.assertEqual(BLAZAR_AGGS, d.forbidden)

    def test_uuid_none_is_malformed_not_a_crash(self):
        aggs = [dec.Aggregate(None, 'freepool', {})]
        self.assertRefused(self.decide(aggregates=aggs), 'malformed UUID')

    def both(self):
        aggs = stock_cloud()
        aggs[0] = dec.Aggregate(FREEPOOL, 'freepool',
                                {'reservation': 'r-both'}, ('free1',))
        return aggs

    def test_free_pool_with_a_reservation_tag_warns_a_regular_request(self):
        d = self.decide(aggregates=self.both())
        self.assertFalse(d.refused)
        self.assertIn(FREEPOOL, d.forbidden)
        self.assertEqual(["aggregate 'freepool' (%s) is the free pool and is "
                          "also tagged as reservation aggregate "
                          "(reservation=r-both)" % FREEPOOL], d.warnings)

    def test_free_pool_with_a_reservation_tag_refuses_preemptible(self):
        self.assertRefused(self.decide({'blazar:preemptible': '1'},
                                       aggregates=self.both()),
                           'is the free pool and is also tagged')

    def test_free_pool_with_a_reservation_tag_refuses_that_reservation(self):
        self.assertRefused(self.decide(hints={'reservation': ['r-both']},
                                       aggregates=self.both()),
                           'is the free pool and is also tagged')

    def test_free_pool_in_a_blazar_zone_is_a_conflict(self):
        aggs = [dec.Aggregate(FREEPOOL, 'freepool',
                              {'availability_zone': 'blazar_x'})]
        self.assertIn('availability_zone=blazar_x',
                      self.decide(aggregates=aggs).warnings[0])

    def test_odd_values_do_not_raise(self):
        d = dec.decide({'resources:CUSTOM_RESERVATION_': '1'}, None,
                       {'reservation': None}, OWNER, [
                           types.SimpleNamespace(uuid=FREEPOOL, name=None,
                                                 metadata=None, hosts=None)])
        self.assertRefused(d, 'names no reservation')

    def test_values_of_other_types_do_not_raise(self):
        aggs = [dec.Aggregate(FREEPOOL, 7, {1: 2, 'blazar:owner': 3}),
                dec.Aggregate(AGG_SSD, None, ['not', 'a', 'mapping']),
                dec.Aggregate(AGG_HOST, HOST_RSV, {
                    'availability_zone': 'blazar_' + HOST_RSV,
                    'blazar:owner': 42})]
        d = self.decide(aggregates=aggs)
        self.assertEqual({FREEPOOL, AGG_HOST}, d.forbidden)
        self.assertRefused(self.decide(hints={'reservation': [HOST_RSV]},
                                       aggregates=aggs), 'owner 42')


class TestIndexAndHosts(_Base):

    def test_index_is_built_once_and_reused_for_every_request(self):
        classified = []

        class CountingIndex(dec.AggregateIndex):
            def _classify(self, agg):
                classified.append(agg.uuid)
                super()._classify(agg)

        index = CountingIndex(stock_cloud())
        for _ in range(3):
            dec.decide({}, {}, {}, OWNER, index)
            dec.decide({'blazar:preemptible': 'true'}, {}, {}, OWNER, index)
        self.assertEqual(5, len(classified))

    def test_index_with_other_settings_is_rejected(self):
        index = dec.AggregateIndex(stock_cloud())
        self.assertRaises(ValueError, dec.decide, {}, {}, {}, OWNER, index,
                          dec.Settings(freepool_name='x'))

    def test_admits_host_agrees_with_required_and_forbidden(self):
        index = dec.AggregateIndex(stock_cloud())
        hosts = ['free1', 'inst1', 'resv1', 'spec1', 'plain1', 'plain2']
        cases = {
            'regular': (dec.decide({}, {}, {}, OWNER, index),
                        {'plain1', 'plain2'}),
            'host': (dec.decide({}, {}, {'reservation': [HOST_RSV]}, OWNER,
                                index), {'resv1'}),
            'instance': (dec.decide(instance_flavor(), {}, {}, OWNER, index),
                         {'inst1'}),
            'preemptible': (dec.decide({'blazar:preemptible': 'true'}, {},
                                       {}, OWNER, index), {'free1'}),
            'refused': (dec.decide({}, {}, {'reservation': [HOST_RSV]},
                                   OTHER, index), set()),
        }
        for name, (d, expected) in cases.items():
            passing = {h for h in hosts
                       if d.admits_host(index.aggregates_of_host(h))}
            self.assertEqual(expected, passing, name)

    def test_aggregate_from_a_nova_like_object(self):
        obj = types.SimpleNamespace(uuid=AGG_HOST, name=HOST_RSV, metadata={
            'availability_zone': 'blazar_' + HOST_RSV}, hosts=['h'])
        agg = dec.Aggregate.from_object(obj)
        self.assertEqual(('h',), agg.hosts)
        self.assertEqual({AGG_HOST}, self.decide(aggregates=[obj]).forbidden)

    def test_settings_refuse_an_empty_prefix(self):
        self.assertRaises(ValueError, dec.Settings, forbidden_prefixes=('',))
        self.assertRaises(ValueError, dec.Settings, required_prefix='')

    def test_settings_accept_a_single_prefix_string(self):
        self.assertEqual(('x:',), dec.Settings(forbidden_prefixes='x:')
                         .forbidden_prefixes)
