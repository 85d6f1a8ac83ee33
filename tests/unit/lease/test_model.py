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
"""The payload model of Blazar's "Flexible Reservation Usage Enforcement" spec:
what is accepted, and what is refused."""

import datetime
import json

import testtools

from placement_quota.lease import model
from placement_quota.lease import schema as lease_schema
from tests import spec_examples as spec


def parse(kind, document):
    return model.parse_body(kind, json.dumps(document))


class TestSpecExamples(testtools.TestCase):
    """Every request example of Blazar's "Flexible Reservation Usage
    Enforcement" spec parses as the spec means it."""

    def test_check_create_example_parses_with_both_reservations(self):
        request = parse('check-create', spec.check_create())
        self.assertEqual(['virtual:floatingip', 'physical:host'],
                         [r.resource_type for r in request.lease.reservations])

    def test_check_create_example_keeps_the_context(self):
        request = parse('check-create', spec.check_create())
        self.assertEqual(spec.CONTEXT['project_id'],
                         request.context.project_id)
        self.assertEqual(spec.CONTEXT['user_id'], request.context.user_id)
        self.assertEqual('RegionOne', request.context.region_name)

    def test_check_create_example_end_time_is_the_end_date(self):
        request = parse('check-create', spec.check_create())
        self.assertEqual(datetime.datetime(2020, 5, 14, 23, 59),
                         request.lease.end_date)

    def test_check_create_example_keeps_allocations(self):
        request = parse('check-create', spec.check_create())
        host = request.lease.reservations_of(model.HOST)[0]
        self.assertEqual(spec.HOST_1,
                         host.allocations[0]['hypervisor_hostname'])
        self.assertEqual({'availability_zone': 'az1'},
                         host.allocations[0]['extra'])

    def test_check_update_example_has_current_and_new_lease(self):
        request = parse('check-update', spec.check_update())
        self.assertEqual(1, len(
            request.current_lease.reservations[0].allocations))
        self.assertEqual(2, len(request.lease.reservations[0].allocations))
        self.assertEqual(3, request.lease.reservations[0].count('max'))

    def test_on_end_example_parses(self):
        request = parse('on-end', spec.on_end())
        self.assertEqual(datetime.timedelta(days=1, hours=23, minutes=59),
                         request.lease.duration)


class TestDates(testtools.TestCase):

    def _lease(self, start, end):
        return model.Lease.coerce(spec.lease(start, end))

    def test_spec_format_without_seconds_is_accepted(self):
        self.assertEqual(datetime.datetime(2020, 5, 13),
                         self._lease('2020-05-13 00:00',
                                     '2020-05-14 00:00').start_date)

    def test_blazar_isoformat_with_microseconds_is_accepted(self):
        lease = self._lease('2020-05-13T00:00:00.123456',
                            '2020-05-14T00:00:00')
        self.assertEqual(123456, lease.start_date.microsecond)

    def test_offset_is_converted_to_naive_utc(self):
        lease = self._lease('2020-05-13T02:00:00+02:00',
                            '2020-05-14T00:00:00Z')
        self.assertEqual(datetime.datetime(2020, 5, 13),
                         lease.start_date)
        self.assertIsNone(lease.end_date.tzinfo)

    def test_datetime_objects_from_blazar_in_process_are_accepted(self):
        lease = model.Lease.coerce({
            'start_date': datetime.datetime(2020, 5, 13),
            'end_date': datetime.datetime(2020, 5, 14),
            'reservations': []})
        self.assertEqual(datetime.timedelta(days=1), lease.duration)

    def test_date_only_is_refused(self):
        error = self.assertRaises(model.PayloadError, self._lease,
                                  '2020-05-13', '2020-05-14 00:00')
        self.assertEqual('lease.start_date', error.field)

    def test_impossible_day_is_refused_naming_field_and_value(self):
        error = self.assertRaises(model.PayloadError, self._lease,
                                  '2020-02-30 00:00', '2020-03-01 00:00')
        self.assertEqual('lease.start_date', error.field)
        self.assertEqual('2020-02-30 00:00', error.value)
        self.assertIn('day is out of range', str(error))

    def test_out_of_range_hour_is_refused(self):
        error = self.assertRaises(model.PayloadError, self._lease,
                                  '2020-05-13 00:00', '2020-05-14 25:00')
        self.assertEqual('lease.end_date', error.field)

    def test_date_out_of_range_after_utc_conversion_is_refused(self):
        error = self.assertRaises(model.PayloadError, self._lease,
                                  '0001-01-01 00:00+01:00',
                                  '2020-05-14 00:00')
        self.assertIn('out of range', str(error))

    def test_end_date_before_start_date_is_refused(self):
        error = self.assertRaises(model.PayloadError, self._lease,
                                  '2020-05-14 00:00', '2020-05-13 00:00')
        self.assertEqual('lease.end_date', error.field)
        self.assertIn('must be after lease.start_date', str(error))

    def test_end_date_equal_to_start_date_is_refused(self):
        self.assertRaises(model.PayloadError, self._lease,
                          '2020-05-14 00:00', '2020-05-14 00:00')

    def test_end_time_and_end_date_that_agree_are_accepted(self):
        lease = model.Lease.coerce(spec.lease(end='2020-05-14 00:00',
                                              end_time='2020-05-14T00:00:00'))
        self.assertEqual(datetime.datetime(2020, 5, 14), lease.end_date)

    def test_end_time_and_end_date_that_differ_are_refused(self):
        error = self.assertRaises(
            model.PayloadError, model.Lease.coerce,
            spec.lease(end='2020-05-14 00:00', end_time='2020-05-15 00:00'))
        self.assertEqual('lease.end_time', error.field)

    def test_missing_end_is_refused_naming_both_spellings(self):
        document = spec.lease()
        del document['end_date']
        error = self.assertRaises(model.PayloadError, model.Lease.coerce,
                                  document)
        self.assertEqual('lease.end_date', error.field)
        self.assertIn('end_time', str(error))

    def test_number_as_date_is_refused_as_wrong_type(self):
        error = self.assertRaises(model.PayloadError, self._lease,
                                  1589328000, '2020-05-14 00:00')
        self.assertIn('must be of type string', str(error))


class TestReservations(testtools.TestCase):

    def _reservation(self, **values):
        return model.Lease.coerce(spec.lease(reservations=[values]))

    def test_unknown_type_passes_through_untouched(self):
        lease = self._reservation(resource_type='custom:gpu', anything=[1])
        self.assertEqual([1], lease.reservations[0].get('anything'))

    def test_instance_amount_as_digit_string_counts_as_integer(self):
        lease = self._reservation(resource_type=model.INSTANCE,
                                  amount='3', vcpus=2, memory_mb=4096,
                                  disk_gb=10, affinity='false')
        self.assertEqual(3, lease.reservations[0].count('amount'))

    def test_instance_amount_zero_is_refused(self):
        error = self.assertRaises(model.PayloadError, self._reservation,
                                  resource_type=model.INSTANCE, amount=0)
        self.assertEqual('lease.reservations[0].amount', error.field)
        self.assertEqual(0, error.value)

    def test_instance_amount_word_is_refused(self):
        error = self.assertRaises(model.PayloadError, self._reservation,
                                  resource_type=model.INSTANCE, amount='two')
        self.assertIn('whole number', str(error))

    def test_amount_beyond_blazar_database_is_refused(self):
        self.assertRaises(model.PayloadError, self._reservation,
                          resource_type=model.FLOATINGIP, network_id='n',
                          amount=model.MAX_INT + 1)

    def test_affinity_word_is_refused(self):
        error = self.assertRaises(model.PayloadError, self._reservation,
                                  resource_type=model.INSTANCE, amount=1,
                                  affinity='maybe')
        self.assertEqual('lease.reservations[0].affinity', error.field)

    def test_host_min_greater_than_max_is_refused(self):
        error = self.assertRaises(model.PayloadError, self._reservation,
                                  resource_type=model.HOST, min=3, max=2)
        self.assertEqual('lease.reservations[0].min', error.field)

    def test_floatingip_network_id_must_be_a_string(self):
        error = self.assertRaises(model.PayloadError, self._reservation,
                                  resource_type=model.FLOATINGIP,
                                  network_id=5, amount=1)
        self.assertEqual('lease.reservations[0].network_id', error.field)

    def test_network_reservation_fields_are_accepted(self):
        lease = self._reservation(
            resource_type=model.NETWORK, network_name='my-network-1',
            network_description='', resource_properties='',
            network_properties='')
        self.assertEqual('my-network-1',
                         lease.reservations[0].get('network_name'))

    def test_reservation_without_type_is_refused(self):
        error = self.assertRaises(model.PayloadError, self._reservation,
                                  amount=1)
        self.assertEqual('lease.reservations[0].resource_type', error.field)

    def test_allocations_must_be_objects(self):
        error = self.assertRaises(model.PayloadError, self._reservation,
                                  resource_type=model.HOST, allocations=[1])
        self.assertEqual('lease.reservations[0].allocations[0]',
                         error.field)

    def test_reservations_must_be_a_list(self):
        error = self.assertRaises(model.PayloadError, model.Lease.coerce,
                                  spec.lease(reservations={}))
        self.assertEqual('lease.reservations', error.field)


class TestBody(testtools.TestCase):

    def test_non_json_body_is_refused(self):
        error = self.assertRaises(model.PayloadError, model.parse_body,
                                  'check-create', b'not json')
        self.assertEqual('body', error.field)
        self.assertIn('not valid JSON', str(error))

    def test_non_utf8_body_is_refused(self):
        error = self.assertRaises(model.PayloadError, model.parse_body,
                                  'check-create', b'\xff\xfe')
        self.assertIn('not UTF-8', str(error))

    def test_nan_is_refused(self):
        self.assertRaises(model.PayloadError, model.parse_body,
                          'check-create', b'{"a": NaN}')

    def test_deeply_nested_json_is_refused_not_crashed(self):
        body = b'[' * 100000 + b']' * 100000
        self.assertRaises(model.PayloadError, model.parse_body,
                          'check-create', body)

    @staticmethod
    def _nested_body(depth):
        return ('{"context": {"project_id": "p", "user_id": %s%s}, '
                '"lease": {}}' % ('[' * depth, ']' * depth))

    def test_nesting_deeper_than_the_limit_is_refused_before_validation(self):
        error = self.assertRaises(model.PayloadError, model.parse_body,
                                  'check-create', self._nested_body(100))
        self.assertIn('nested deeper than %d levels' % lease_schema.MAX_DEPTH,
                      str(error))

    def test_nesting_near_pythons_recursion_limit_is_refused(self):
        # Deep enough to exhaust the stack of a recursive validator: refused
        # by our limit or by json.loads' own guard, never a crash.
        error = self.assertRaises(model.PayloadError, model.parse_body,
                                  'check-create', self._nested_body(960))
        self.assertEqual('body', error.field)

    def test_blazar_payload_depth_is_well_within_the_limit(self):
        document = spec.check_create()
        document['lease']['reservations'][1]['allocations'][0]['extra'] = {
            'a': {'b': {'c': [1]}}}
        parse('check-create', document)

    def test_json_array_is_refused(self):
        error = self.assertRaises(model.PayloadError, parse, 'check-create',
                                  [spec.check_create()])
        self.assertIn('must be a JSON object', str(error))

    def test_missing_lease_is_refused(self):
        document = spec.check_create()
        del document['lease']
        error = self.assertRaises(model.PayloadError, parse, 'check-create',
                                  document)
        self.assertEqual('lease', error.field)

    def test_missing_context_is_refused(self):
        document = spec.check_create()
        del document['context']
        error = self.assertRaises(model.PayloadError, parse, 'check-create',
                                  document)
        self.assertEqual('context', error.field)

    def test_update_without_current_lease_is_refused(self):
        error = self.assertRaises(model.PayloadError, parse, 'check-update',
                                  spec.check_create())
        self.assertEqual('current_lease', error.field)

    def test_context_without_project_is_refused(self):
        document = spec.check_create()
        del document['context']['project_id']
        error = self.assertRaises(model.PayloadError, parse, 'check-create',
                                  document)
        self.assertEqual('context.project_id', error.field)

    def test_context_user_id_of_wrong_type_is_refused(self):
        document = spec.check_create()
        document['context']['user_id'] = 42
        error = self.assertRaises(model.PayloadError, parse, 'check-create',
                                  document)
        self.assertEqual('context.user_id', error.field)
        self.assertEqual(42, error.value)

    def test_error_value_is_shortened_in_the_message(self):
        document = spec.check_create()
        document['context']['user_id'] = ['x' * 1000]
        error = self.assertRaises(model.PayloadError, parse, 'check-create',
                                  document)
        self.assertLess(len(str(error)), 300)


class TestSerialisation(testtools.TestCase):

    def test_to_dict_sends_end_date_in_isoformat_like_blazar(self):
        lease = parse('check-create', spec.check_create()).lease
        body = lease.to_dict()
        self.assertEqual('2020-05-14T23:59:00', body['end_date'])
        self.assertNotIn('end_time', body)

    def test_to_dict_keeps_unknown_fields(self):
        lease = model.Lease.coerce(spec.lease(name='my-lease'))
        self.assertEqual('my-lease', lease.to_dict()['name'])

    def test_to_dict_round_trips(self):
        lease = parse('check-create', spec.check_create()).lease
        self.assertEqual(lease, model.Lease.coerce(lease.to_dict()))
