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
"""Capacity arithmetic and usage parsing, without Placement.

``tests.functional.placement.test_usage_room`` checks the same rules
against a real Placement (it accepts exactly the computed number of
instances).
"""

import testtools

from placement_quota.placement import usage_room as cap
from placement_quota.placement import capacity_view

Cap = cap.ClassCapacity


class TestClassCapacity(testtools.TestCase):

    def test_capacity_is_total_with_placements_defaults(self):
        self.assertEqual(16, Cap(total=16).capacity)

    def test_reserved_is_taken_off_the_total(self):
        self.assertEqual(14, Cap(total=16, reserved=2).capacity)

    def test_allocation_ratio_above_one_overcommits(self):
        self.assertEqual(64, Cap(total=16, allocation_ratio=4.0).capacity)

    def test_allocation_ratio_below_one_undercommits(self):
        self.assertEqual(8, Cap(total=16, allocation_ratio=0.5).capacity)

    def test_ratio_applies_after_reserved(self):
        self.assertEqual(21, Cap(total=16, reserved=2,
                                 allocation_ratio=1.5).capacity)

    def test_fractional_capacity_is_rounded_down(self):
        self.assertEqual(13, Cap(total=9, allocation_ratio=1.5).capacity)

    def test_free_is_capacity_less_used(self):
        self.assertEqual(10, Cap(total=16, reserved=2, used=4).free)

    def test_free_is_negative_when_over_capacity(self):
        self.assertEqual(-2, Cap(total=4, used=6).free)

    def test_as_dict_adds_capacity_and_free(self):
        values = Cap(total=10, reserved=1, used=3).as_dict()
        self.assertEqual((9, 6), (values['capacity'], values['free']))
        self.assertEqual(10, values['total'])


class TestCombine(testtools.TestCase):

    def test_inventory_and_usage_are_joined_by_class(self):
        inventories = {'VCPU': {
            'total': 8, 'reserved': 1, 'allocation_ratio': 2.0,
            'min_unit': 1, 'max_unit': 4, 'step_size': 1}}
        self.assertEqual(
            {'VCPU': Cap(total=8, reserved=1, allocation_ratio=2.0,
                         max_unit=4, used=3)},
            cap.combine(inventories, {'VCPU': 3}))

    def test_class_without_usage_entry_has_used_zero(self):
        inventories = {'DISK_GB': {
            'total': 100, 'reserved': 0, 'allocation_ratio': 1.0,
            'min_unit': 1, 'max_unit': 100, 'step_size': 1}}
        self.assertEqual(0, cap.combine(inventories, {})['DISK_GB'].used)


class TestInstancesThatFit(testtools.TestCase):

    def test_free_capacity_divided_by_the_amount(self):
        self.assertEqual(3, cap.instances_that_fit(
            {'VCPU': Cap(total=8, used=1)}, {'VCPU': 2}))

    def test_reserved_counts_against_the_fit(self):
        self.assertEqual(2, cap.instances_that_fit(
            {'VCPU': Cap(total=8, reserved=3)}, {'VCPU': 2}))

    def test_allocation_ratio_above_one_fits_more(self):
        self.assertEqual(12, cap.instances_that_fit(
            {'VCPU': Cap(total=8, allocation_ratio=3.0)}, {'VCPU': 2}))

    def test_allocation_ratio_below_one_fits_fewer(self):
        self.assertEqual(1, cap.instances_that_fit(
            {'DISK_GB': Cap(total=100, allocation_ratio=0.5)},
            {'DISK_GB': 40}))

    def test_instance_larger_than_max_unit_fits_nowhere(self):
        self.assertEqual(0, cap.instances_that_fit(
            {'VCPU': Cap(total=64, max_unit=4)}, {'VCPU': 8}))

    def test_instance_at_max_unit_fits(self):
        self.assertEqual(16, cap.instances_that_fit(
            {'VCPU': Cap(total=64, max_unit=4)}, {'VCPU': 4}))

    def test_instance_below_min_unit_fits_nowhere(self):
        self.assertEqual(0, cap.instances_that_fit(
            {'MEMORY_MB': Cap(total=65536, min_unit=1024)},
            {'MEMORY_MB': 512}))

    def test_amount_off_the_step_size_fits_nowhere(self):
        self.assertEqual(0, cap.instances_that_fit(
            {'MEMORY_MB': Cap(total=65536, step_size=256)},
            {'MEMORY_MB': 1000}))

    def test_amount_on_the_step_size_fits(self):
        self.assertEqual(64, cap.instances_that_fit(
            {'MEMORY_MB': Cap(total=65536, step_size=256)},
            {'MEMORY_MB': 1024}))

    def test_class_the_provider_lacks_fits_nowhere(self):
        self.assertEqual(0, cap.instances_that_fit(
            {'VCPU': Cap(total=64)}, {'VCPU': 1, 'VGPU': 1}))

    def test_tightest_of_several_classes_wins(self):
        capacities = {'VCPU': Cap(total=32),
                      'MEMORY_MB': Cap(total=16384, reserved=512),
                      'DISK_GB': Cap(total=500)}
        request = {'VCPU': 2, 'MEMORY_MB': 4096, 'DISK_GB': 20}
        self.assertEqual({'VCPU': 16, 'MEMORY_MB': 3, 'DISK_GB': 25},
                         cap.fit_by_class(capacities, request))
        self.assertEqual(3, cap.instances_that_fit(capacities, request))

    def test_zero_amounts_are_ignored(self):
        self.assertEqual(4, cap.instances_that_fit(
            {'VCPU': Cap(total=8)}, {'VCPU': 2, 'VGPU': 0}))

    def test_over_capacity_provider_fits_nothing(self):
        self.assertEqual(0, cap.instances_that_fit(
            {'VCPU': Cap(total=4, used=6)}, {'VCPU': 1}))

    def test_negative_amount_is_refused_naming_class_and_value(self):
        error = self.assertRaises(ValueError, cap.instances_that_fit,
                                  {'VCPU': Cap(total=8)}, {'VCPU': -2})
        self.assertIn('VCPU', str(error))
        self.assertIn('-2', str(error))

    def test_fractional_amount_is_refused_naming_class_and_value(self):
        error = self.assertRaises(ValueError, cap.instances_that_fit,
                                  {'MEMORY_MB': Cap(total=8)},
                                  {'MEMORY_MB': 1.5})
        self.assertIn('MEMORY_MB', str(error))
        self.assertIn('1.5', str(error))

    def test_string_amount_is_refused(self):
        error = self.assertRaises(ValueError, cap.instances_that_fit,
                                  {'VCPU': Cap(total=8)}, {'VCPU': '2'})
        self.assertIn("VCPU", str(error))
        self.assertIn("'2'", str(error))

    def test_boolean_amount_is_refused(self):
        self.assertRaises(ValueError, cap.instances_that_fit,
                          {'VCPU': Cap(total=8)}, {'VCPU': True})

    def test_request_of_nothing_is_refused(self):
        self.assertRaises(ValueError, cap.instances_that_fit,
                          {'VCPU': Cap(total=8)}, {'VCPU': 0})


class TestParseUsages(testtools.TestCase):

    def test_flat_answer_below_1_38(self):
        usages = cap.parse_usages({'usages': {'VCPU': 4, 'DISK_GB': 20}},
                                  per_consumer_type=False)
        self.assertEqual({'VCPU': 4, 'DISK_GB': 20}, usages.resources)
        self.assertIsNone(usages.consumer_types)
        self.assertIsNone(usages.consumer_counts)

    def test_per_consumer_type_answer_from_1_38(self):
        usages = cap.parse_usages({'usages': {
            'INSTANCE': {'consumer_count': 2, 'VCPU': 4, 'MEMORY_MB': 2048},
            'MIGRATION': {'consumer_count': 1, 'VCPU': 2}}},
            per_consumer_type=True)
        self.assertEqual({'VCPU': 6, 'MEMORY_MB': 2048}, usages.resources)
        self.assertEqual({'INSTANCE': 2, 'MIGRATION': 1},
                         usages.consumer_counts)
        self.assertEqual({'VCPU': 2},
                         usages.consumer_types['MIGRATION'].resources)

    def test_empty_answer(self):
        usages = cap.parse_usages({'usages': {}}, per_consumer_type=True)
        self.assertEqual({}, usages.resources)
        self.assertEqual({}, usages.consumer_counts)


class TestUsagesUrl(testtools.TestCase):

    def test_project_only(self):
        self.assertEqual('/usages?project_id=p1', cap.usages_url('p1'))

    def test_all_filters_are_encoded(self):
        self.assertEqual(
            '/usages?project_id=p+1&user_id=u%2F1&consumer_type=INSTANCE',
            cap.usages_url('p 1', 'u/1', 'INSTANCE'))


class _FakeListingClient:
    """Stands for Placement answering only the provider listing (a fake:
    the view's reads are tested against the real Placement in
    ``tests.functional.placement.test_capacity_view``)."""

    def __init__(self, providers):
        self.providers = providers

    def get(self, url):
        assert url == '/resource_providers', url
        return {'resource_providers': self.providers}

    def get_items(self, url, key, pick=None):
        return [(pick or (lambda item: item))(item)
                for item in self.get(url)[key]]


def _view(*states):
    """A view holding ``states`` as if read at their generations."""
    view = capacity_view.CapacityView(_FakeListingClient([
        {'uuid': s.uuid, 'name': s.uuid, 'generation': s.generation,
         'root_provider_uuid': s.root,
         'parent_provider_uuid': s.parent} for s in states]))
    view._snapshot = capacity_view.Snapshot(
        {s.uuid: s for s in states}, {s.uuid: s.uuid for s in states},
        view._snapshot.as_of)
    return view


def _state(uuid, parent=None, root=None, traits=(), **classes):
    return capacity_view.ProviderState(
        uuid, root or uuid, parent, 1,
        {rc: Cap(total=total) for rc, total in classes.items()},
        frozenset(traits))


class TestViewRoom(testtools.TestCase):

    def test_root_with_room_is_a_candidate_with_its_tree(self):
        view = _view(_state('a', VCPU=8),
                     _state('b', parent='a', root='a', CUSTOM_R=1))
        self.assertEqual({'a': {'VCPU': 8}, 'b': {'CUSTOM_R': 1}},
                         view.room({'VCPU': 2}))

    def test_required_trait_must_be_on_the_root(self):
        view = _view(_state('a', VCPU=8),
                     _state('b', parent='a', root='a', traits=['GOLD']))
        self.assertEqual({}, view.room({'VCPU': 2}, {'GOLD': 'required'}))

    def test_forbidden_trait_on_the_root_excludes_its_tree(self):
        view = _view(_state('a', traits=['GOLD'], VCPU=8))
        self.assertEqual({}, view.room({'VCPU': 2}, {'GOLD': 'forbidden'}))

    def test_only_the_trees_asked_for_are_answered(self):
        view = _view(_state('a', VCPU=8), _state('b', VCPU=8))
        self.assertEqual(['b'], list(view.room({'VCPU': 1}, among={'b'})))

    def test_nested_provider_of_a_requested_class_means_read_live(self):
        view = _view(_state('a', VCPU=8),
                     _state('b', parent='a', root='a', VCPU=8))
        self.assertIsNone(view.room({'VCPU': 1}))

    def test_nested_provider_outside_the_trees_asked_for_does_not(self):
        view = _view(_state('a', VCPU=8), _state('c', VCPU=8),
                     _state('b', parent='a', root='a', VCPU=8))
        self.assertEqual({'c': {'VCPU': 8}},
                         view.room({'VCPU': 1}, among={'c'}))

    def test_sharing_provider_of_a_requested_class_means_read_live(self):
        view = _view(_state('a', VCPU=8), _state(
            's', traits=[capacity_view.SHARING_TRAIT], DISK_GB=100))
        self.assertIsNone(view.room({'VCPU': 1, 'DISK_GB': 1},
                                    among={'a'}))

    def test_unchanged_generations_need_no_read(self):
        view = _view(_state('a', VCPU=8))
        view.resync_batch = 0
        view.refresh()
        self.assertEqual((0, {'a': {'VCPU': 8}}),
                         (view.reads, view.room({'VCPU': 1})))


class TestNearLimit(testtools.TestCase):

    def test_fewer_than_twice_the_asked_instances_is_near(self):
        self.assertTrue(capacity_view.near_limit(
            {'a': {'VCPU': 7}}, {'VCPU': 2}, 2))

    def test_twice_the_asked_instances_is_not_near(self):
        self.assertFalse(capacity_view.near_limit(
            {'a': {'VCPU': 4}, 'b': {'VCPU': 4}}, {'VCPU': 2}, 2))


class _SlowListingClient(_FakeListingClient):
    """The listing takes ``seconds`` of the view's clock to answer."""

    def __init__(self, clock, seconds):
        super().__init__([])
        self.clock, self.seconds = clock, seconds

    def get(self, url):
        self.clock[0] += self.seconds
        return super().get(url)


class TestBackgroundRefreshSchedule(testtools.TestCase):

    def view(self, listing_seconds):
        now = [1000.0]
        view = capacity_view.CapacityView(
            _SlowListingClient(now, listing_seconds), clock=lambda: now[0])
        view.interval = 2.5
        return view, now

    def test_next_refresh_is_due_interval_after_the_listing_was_asked(self):
        view, now = self.view(0.2)
        view.refresh()
        now[0] += 1.0
        self.assertAlmostEqual(1.3, view.next_refresh_in())

    def test_after_a_refresh_longer_than_interval_the_next_is_due_now(self):
        view, now = self.view(4.0)  # a large cloud's first, whole, read
        view.refresh()
        self.assertEqual(0.0, view.next_refresh_in())

    def test_before_any_refresh_the_next_is_due_after_interval(self):
        view, _ = self.view(0.2)
        self.assertEqual(2.5, view.next_refresh_in())
