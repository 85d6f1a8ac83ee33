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
"""What the payload model refuses because the ledger could not hold it, a
later query could not compute with it, or a log line could be forged with
it (dates, resource_type, surrogates, lengths and NUL, digit strings,
control characters, non-finite numbers)."""

import datetime
import json
import re

import fastjsonschema
import testtools

from placement_quota.lease import model
from placement_quota.lease import schema as lease_schema
from tests import builders

KINDS = ('check-create', 'check-update', 'on-end')


def document(kind='check-create', project='p', **lease_fields):
    """A valid body of ``kind``: a host lease of June 2026."""
    body = {'context': builders.context(project),
            'lease': builders.lease(builders.day(2), builders.day(3),
                                    builders.hosts('h1'), **lease_fields)}
    if kind == 'check-update':
        body['current_lease'] = builders.lease(
            builders.day(2), builders.day(3), builders.hosts('h1'))
    return body


def text(body):
    """The body as JSON text, lone surrogates escaped as Blazar (or an
    attacker) would send them."""
    return json.dumps(body)


class RefusalTestCase(testtools.TestCase):

    def refused(self, body, kind='check-create'):
        """The PayloadError of ``body`` (a document or JSON text); its
        ``to_dict()`` must be what a 400 answers: JSON, UTF-8 encodable."""
        if not isinstance(body, (str, bytes)):
            body = text(body)
        error = self.assertRaises(model.PayloadError, model.parse_body,
                                  kind, body)
        json.dumps(error.to_dict(), ensure_ascii=False).encode('utf-8')
        str(error).encode('utf-8')
        return error

    def accepted(self, body, kind='check-create'):
        if not isinstance(body, (str, bytes)):
            body = text(body)
        return model.parse_body(kind, body)


class TestResourceType(RefusalTestCase):
    """A resource_type that is not a string is a 400, not a 500."""

    def test_resource_type_as_a_list_is_refused_naming_the_field(self):
        body = document()
        body['lease']['reservations'][0]['resource_type'] = ['physical:host']
        error = self.refused(body)
        self.assertEqual('lease.reservations[0].resource_type', error.field)
        self.assertEqual(['physical:host'], error.value)
        self.assertIn('must be of type string', str(error))

    def test_resource_type_as_an_object_is_refused_naming_the_field(self):
        body = document()
        body['lease']['reservations'][0]['resource_type'] = {'a': 1}
        error = self.refused(body)
        self.assertEqual('lease.reservations[0].resource_type', error.field)

    def test_resource_type_as_a_list_is_refused_on_every_endpoint(self):
        for kind in KINDS:
            body = document(kind)
            body['lease']['reservations'][0]['resource_type'] = []
            error = self.refused(body, kind)
            self.assertEqual('lease.reservations[0].resource_type',
                             error.field, kind)

    def test_current_lease_resource_type_as_a_list_is_refused(self):
        body = document('check-update')
        body['current_lease']['reservations'][0]['resource_type'] = ['x']
        error = self.refused(body, 'check-update')
        self.assertEqual('current_lease.reservations[0].resource_type',
                         error.field)

    def test_resource_type_as_a_number_is_refused(self):
        body = document()
        body['lease']['reservations'][0]['resource_type'] = 3
        error = self.refused(body)
        self.assertEqual('lease.reservations[0].resource_type', error.field)


class TestUnstorableStrings(RefusalTestCase):
    """Lone surrogates and NUL, wherever they are."""

    def test_lone_surrogate_in_a_lease_name_is_refused_naming_the_field(self):
        error = self.refused(document(name='a\ud800b'))
        self.assertEqual('lease.name', error.field)
        self.assertIn('lone UTF-16 surrogate', str(error))

    def test_lone_surrogate_is_reported_as_an_escape(self):
        error = self.refused(document(name='a\udfffb'))
        self.assertEqual('a\\udfffb', error.value)

    def test_lone_surrogate_as_sent_in_json_text_is_refused(self):
        body = text(document()).replace('"u"', '"\\ud800"')
        self.assertIn('\\ud800', body)
        error = self.refused(body)
        self.assertEqual('context.user_id', error.field)

    def test_raw_lone_surrogate_in_a_str_body_is_refused(self):
        # In-process callers may hand a str holding the code point itself.
        body = json.dumps(document(name='a\ud800'), ensure_ascii=False)
        self.assertNotIn('\\u', body)
        self.assertEqual('lease.name', self.refused(body).field)

    def test_raw_utf8_body_without_escapes_is_accepted(self):
        body = json.dumps(document(name='réservation'),
                          ensure_ascii=False).encode('utf-8')
        request = self.accepted(body)
        self.assertEqual('réservation', request.lease.values['name'])

    def test_lone_surrogate_deep_in_an_allocation_is_refused(self):
        body = document()
        body['lease']['reservations'][0]['allocations'][0]['extra'] = {
            'zone': ['x', '\udc00']}
        error = self.refused(body)
        self.assertEqual(
            'lease.reservations[0].allocations[0].extra.zone[1]',
            error.field)

    def test_lone_surrogate_in_a_key_is_refused_naming_the_object(self):
        body = document()
        body['context']['k\ud800'] = 'v'
        error = self.refused(body)
        self.assertEqual('context', error.field)
        self.assertIn('key', str(error))
        self.assertEqual('k\\ud800', error.value)

    def test_lone_surrogate_in_every_endpoint_is_refused(self):
        for kind in KINDS:
            error = self.refused(document(kind, name='\ud800'), kind)
            self.assertEqual('lease.name', error.field, kind)

    def test_surrogate_pair_of_an_emoji_is_accepted(self):
        # "\ud83d\ude00" in JSON is one character outside the BMP.
        body = text(document(name='x')).replace('"x"',
                                                '"\\ud83d\\ude00"')
        request = self.accepted(body)
        self.assertEqual('\U0001F600', request.lease.values['name'])

    def test_nul_in_the_project_id_is_refused_naming_the_field(self):
        error = self.refused(document(project='p\x00'))
        self.assertEqual('context.project_id', error.field)
        self.assertEqual('p\x00', error.value)
        self.assertIn('NUL', str(error))

    def test_nul_in_free_text_is_refused(self):
        body = document()
        body['lease']['reservations'][0]['resource_properties'] = '["\x00"]'
        error = self.refused(body)
        self.assertEqual('lease.reservations[0].resource_properties',
                         error.field)

    def test_nul_in_a_key_is_refused(self):
        error = self.refused(document(**{'x\x00': 1}))
        self.assertEqual('lease', error.field)

    def test_nul_as_the_whole_body_is_refused(self):
        error = self.refused('"\\u0000"')
        self.assertEqual('body', error.field)


class TestLengths(RefusalTestCase):
    """What a String(255) column of the ledger cannot hold."""

    def test_project_id_of_255_characters_is_accepted(self):
        request = self.accepted(document(project='p' * 255))
        self.assertEqual(255, len(request.context.project_id))

    def test_project_id_of_256_characters_is_refused(self):
        error = self.refused(document(project='p' * 256))
        self.assertEqual('context.project_id', error.field)
        self.assertEqual('p' * 256, error.value)
        self.assertIn('at most 255 characters', str(error))

    def test_long_user_id_is_refused(self):
        body = document()
        body['context']['user_id'] = 'u' * 300
        self.assertEqual('context.user_id', self.refused(body).field)

    def test_long_lease_name_is_refused(self):
        error = self.refused(document(name='n' * 300))
        self.assertEqual('lease.name', error.field)

    def test_long_lease_id_is_refused(self):
        error = self.refused(document(lease_id='i' * 300))
        self.assertEqual('lease.id', error.field)

    def test_long_reservation_id_is_refused(self):
        body = document()
        body['lease']['reservations'][0]['id'] = 'r' * 300
        self.assertEqual('lease.reservations[0].id', self.refused(body).field)

    def test_long_host_name_is_refused(self):
        body = document()
        allocation = body['lease']['reservations'][0]['allocations'][0]
        allocation['hypervisor_hostname'] = 'h' * 300
        self.assertEqual(
            'lease.reservations[0].allocations[0].hypervisor_hostname',
            self.refused(body).field)

    def test_long_resource_type_is_refused(self):
        body = document()
        body['lease']['reservations'][0] = {'resource_type': 't' * 300}
        self.assertEqual('lease.reservations[0].resource_type',
                         self.refused(body).field)

    def test_long_current_lease_name_is_refused(self):
        body = document('check-update')
        body['current_lease']['name'] = 'n' * 300
        self.assertEqual('current_lease.name',
                         self.refused(body, 'check-update').field)

    def test_integer_allocation_id_is_accepted(self):
        # Blazar's host ids are integers in its database.
        body = document()
        body['lease']['reservations'][0]['allocations'][0]['id'] = 7
        self.accepted(body)


class TestControlCharacters(RefusalTestCase):
    """Ids and names with control characters would forge log lines."""

    def test_newline_in_the_project_id_is_refused_naming_field_and_value(
            self):
        project = 'p\n2026-11-23 INFO forged line'
        error = self.refused(document(project=project))
        self.assertEqual('context.project_id', error.field)
        self.assertEqual(project, error.value)
        self.assertIn('control characters', str(error))

    def test_trailing_newline_in_the_project_id_is_refused(self):
        # Python's "$" matches before a final newline: not a way around.
        error = self.refused(document(project='p\n'))
        self.assertEqual('context.project_id', error.field)

    def test_carriage_return_in_the_user_id_is_refused(self):
        body = document()
        body['context']['user_id'] = 'u\rforged'
        self.assertEqual('context.user_id', self.refused(body).field)

    def test_newline_in_the_lease_name_is_refused(self):
        self.assertEqual('lease.name',
                         self.refused(document(name='a\nb')).field)

    def test_escape_in_the_lease_id_is_refused(self):
        self.assertEqual('lease.id',
                         self.refused(document(lease_id='\x1b[2J')).field)

    def test_c1_next_line_in_the_project_id_is_refused(self):
        self.assertEqual('context.project_id',
                         self.refused(document(project='p\x85x')).field)

    def test_delete_character_in_the_project_id_is_refused(self):
        self.assertEqual('context.project_id',
                         self.refused(document(project='p\x7f')).field)

    def test_unicode_line_separator_in_the_lease_name_is_refused(self):
        for char in ('\u2028', '\u2029'):
            self.assertEqual('lease.name',
                             self.refused(document(name='a%sb' % char)).field)

    def test_tab_in_a_host_name_is_refused(self):
        body = document()
        body['lease']['reservations'][0]['allocations'][0][
            'hypervisor_hostname'] = 'h\t1'
        self.assertEqual(
            'lease.reservations[0].allocations[0].hypervisor_hostname',
            self.refused(body).field)

    def test_newline_in_a_floatingip_network_id_is_refused(self):
        body = document()
        body['lease']['reservations'] = [
            builders.floatingips(1, network_id='ext\nnet')]
        self.assertEqual('lease.reservations[0].network_id',
                         self.refused(body).field)

    def test_printable_unicode_name_is_accepted(self):
        request = self.accepted(document(name='réservation ü 予約 \U0001F600'))
        self.assertEqual('réservation ü 予約 \U0001F600',
                         request.lease.values['name'])

    def test_newline_in_free_text_properties_is_accepted(self):
        # Not an id: a pretty-printed resource_properties is fine.
        body = document()
        body['lease']['reservations'][0]['resource_properties'] = (
            '[\n  "==", "$zone", "az1"\n]')
        self.accepted(body)

    def test_control_character_in_process_is_refused_too(self):
        # Blazar's in-process filters hand dicts to Context.coerce.
        error = self.assertRaises(model.PayloadError, model.Context.coerce,
                                  {'project_id': 'p\nforged'})
        self.assertEqual('context.project_id', error.field)

    def test_both_schema_engines_refuse_control_characters(self):
        # fastjsonschema reads "$" as the end of the string, jsonschema
        # also before a final newline: the rule must hold in both.
        validator = lease_schema.CONTEXT_VALIDATOR
        for project in ('p\n', '\np', 'p\r\n', 'p\x85', 'p\u2029', '\x00'):
            context = {'project_id': project}
            self.assertRaises(fastjsonschema.JsonSchemaException,
                              validator.fast, context)
            self.assertEqual(1, len(list(validator.full.iter_errors(
                context))), repr(project))

    def test_both_schema_engines_accept_printable_ids(self):
        validator = lease_schema.CONTEXT_VALIDATOR
        for project in ('p', 'a b', 'é\u00a0x', '\U0001F600', 'x' * 255):
            context = {'project_id': project}
            validator.fast(context)
            self.assertEqual([], list(validator.full.iter_errors(context)))


class TestDateRange(RefusalTestCase):
    """Dates whose arithmetic could overflow are refused."""

    def lease(self, start, end, kind='check-create', **fields):
        body = document(kind)
        body['lease'].update(start_date=start, end_date=end, **fields)
        return body

    def test_end_in_year_9999_is_refused_naming_the_field(self):
        error = self.refused(self.lease('2026-06-02 00:00',
                                        '9999-12-31 00:00'))
        self.assertEqual('lease.end_date', error.field)
        self.assertEqual('9999-12-31 00:00', error.value)
        self.assertIn('1970-01-01 00:00 to 3000-01-01 00:00', str(error))

    def test_start_in_year_1_is_refused_naming_the_field(self):
        error = self.refused(self.lease('0001-01-01 00:00',
                                        '2026-06-02 00:00'))
        self.assertEqual('lease.start_date', error.field)

    def test_start_before_1970_is_refused(self):
        error = self.refused(self.lease('1969-12-31 23:59',
                                        '1970-01-02 00:00'))
        self.assertEqual('lease.start_date', error.field)

    def test_start_before_1970_once_converted_to_utc_is_refused(self):
        error = self.refused(self.lease('1970-01-01T00:30:00+01:00',
                                        '1970-01-02 00:00'))
        self.assertEqual('lease.start_date', error.field)

    def test_end_after_3000_is_refused(self):
        error = self.refused(self.lease('2999-12-31 00:00',
                                        '3000-01-01 00:01'))
        self.assertEqual('lease.end_date', error.field)

    def test_bounds_themselves_are_accepted(self):
        self.accepted(self.lease('1970-01-01 00:00', '1970-01-02 00:00'))
        self.accepted(self.lease('2999-12-31 00:00', '3000-01-01 00:00'))

    def test_end_time_out_of_range_is_refused_naming_end_time(self):
        body = self.lease('2026-06-02 00:00', None)
        del body['lease']['end_date']
        body['lease']['end_time'] = '9999-12-31 00:00'
        self.assertEqual('lease.end_time', self.refused(body).field)

    def test_lease_longer_than_the_ledger_holds_is_refused(self):
        error = self.refused(self.lease('2000-01-01 00:00',
                                        '2999-01-01 00:00'))
        self.assertEqual('lease.end_date', error.field)
        self.assertIn('at most %d seconds' % model.MAX_INT, str(error))

    def test_lease_of_exactly_the_longest_duration_is_accepted(self):
        start = datetime.datetime(2000, 1, 1)
        end = start + lease_schema.MAX_DURATION
        request = self.accepted(self.lease(start.isoformat(),
                                           end.isoformat()))
        self.assertEqual(lease_schema.MAX_DURATION, request.lease.duration)

    def test_lease_a_microsecond_longer_than_the_longest_is_refused(self):
        start = datetime.datetime(2000, 1, 1)
        end = start + lease_schema.MAX_DURATION + datetime.timedelta(
            microseconds=1)
        self.refused(self.lease(start.isoformat(), end.isoformat()))

    def test_duration_fits_the_ledgers_32_bit_column(self):
        self.assertLessEqual(lease_schema.MAX_DURATION.total_seconds(),
                             2 ** 31 - 1)

    def test_no_accepted_lease_can_overflow_start_minus_longest(self):
        # The ledger computes start - longest duration: the earliest
        # start minus the longest lease is still a date, and so is the
        # latest end plus it.
        self.assertLess(datetime.datetime.min + datetime.timedelta(
            days=365), lease_schema.MIN_DATE - lease_schema.MAX_DURATION)
        self.assertGreater(datetime.datetime.max - datetime.timedelta(
            days=365), lease_schema.MAX_DATE + lease_schema.MAX_DURATION)

    def test_current_lease_out_of_range_is_refused(self):
        body = document('check-update')
        body['current_lease']['end_date'] = '9999-12-31 00:00'
        error = self.refused(body, 'check-update')
        self.assertEqual('current_lease.end_date', error.field)

    def test_out_of_range_is_refused_on_every_endpoint(self):
        for kind in KINDS:
            error = self.refused(self.lease('2026-06-02 00:00',
                                            '9999-12-31 00:00', kind), kind)
            self.assertEqual('lease.end_date', error.field, kind)

    def test_datetime_out_of_range_in_process_is_refused(self):
        error = self.assertRaises(model.PayloadError, model.Lease.coerce, {
            'start_date': datetime.datetime(2026, 6, 2),
            'end_date': datetime.datetime(9999, 12, 31)})
        self.assertEqual('lease.end_date', error.field)

    def test_unbounded_parse_date_keeps_far_dates(self):
        # parse_date itself bounds only when asked (lease dates always).
        self.assertEqual(datetime.datetime(9999, 12, 31),
                         model.parse_date('9999-12-31 00:00', 'x'))


class TestCountBounds(RefusalTestCase):
    """Digit strings obey the bounds of integers."""

    def reservation(self, **values):
        body = document()
        body['lease']['reservations'] = [values]
        return body

    def test_digit_string_beyond_max_int_is_refused_like_the_integer(self):
        for amount in ('9999999999', model.MAX_INT + 1):
            error = self.refused(self.reservation(
                resource_type=model.INSTANCE, amount=amount))
            self.assertEqual('lease.reservations[0].amount', error.field)
            self.assertEqual(amount, error.value)

    def test_digit_string_of_max_int_is_accepted(self):
        request = self.accepted(self.reservation(
            resource_type=model.INSTANCE, amount=str(model.MAX_INT)))
        self.assertEqual(model.MAX_INT,
                         request.lease.reservations[0].count('amount'))

    def test_digit_string_just_beyond_max_int_is_refused(self):
        error = self.refused(self.reservation(
            resource_type=model.INSTANCE, amount=str(model.MAX_INT + 1)))
        self.assertIn('from 1 to %d' % model.MAX_INT, str(error))

    def test_every_count_field_bounds_its_digit_strings(self):
        cases = [(model.HOST, 'min'), (model.HOST, 'max'),
                 (model.INSTANCE, 'amount'), (model.INSTANCE, 'vcpus'),
                 (model.INSTANCE, 'memory_mb'), (model.INSTANCE, 'disk_gb'),
                 (model.FLOATINGIP, 'amount')]
        for rtype, key in cases:
            values = {'resource_type': rtype, key: '2147483648'}
            if rtype == model.FLOATINGIP:
                values['network_id'] = 'ext'
            error = self.refused(self.reservation(**values))
            self.assertEqual('lease.reservations[0].%s' % key, error.field,
                             (rtype, key))

    def test_zero_digit_string_is_accepted_where_zero_is(self):
        request = self.accepted(self.reservation(
            resource_type=model.INSTANCE, amount='1', vcpus='0',
            memory_mb='000'))
        self.assertEqual(0, request.lease.reservations[0].count('memory_mb'))

    def test_zero_digit_string_is_refused_where_one_is_the_least(self):
        self.refused(self.reservation(resource_type=model.INSTANCE,
                                      amount='0'))

    def test_digit_string_with_blanks_and_leading_zeros_is_accepted(self):
        request = self.accepted(self.reservation(
            resource_type=model.INSTANCE, amount=' 007 '))
        self.assertEqual(7, request.lease.reservations[0].count('amount'))

    def test_thousands_of_leading_zeros_are_refused_not_crashed(self):
        # int() refuses strings over 4300 digits: the schema stops them.
        error = self.refused(self.reservation(
            resource_type=model.INSTANCE, amount='0' * 5000 + '1'))
        self.assertEqual('lease.reservations[0].amount', error.field)

    def test_non_ascii_digits_are_refused(self):
        # int() reads Arabic-Indic digits; Blazar's database would not.
        self.refused(self.reservation(resource_type=model.INSTANCE,
                                      amount='\u0663'))

    def test_instances_adding_up_beyond_the_ledger_are_refused(self):
        # Each count is within MAX_INT; three products of them overflowed
        # the ledger's 64-bit columns (a 500).
        big = builders.instances(model.MAX_INT, vcpus=model.MAX_INT,
                                 memory_mb=1, disk_gb=1)
        body = document()
        body['lease']['reservations'] = [big, big, big]
        error = self.refused(body)
        self.assertEqual('lease.reservations[0].vcpus', error.field)
        self.assertIn('more than %d vcpus' % lease_schema.MAX_TOTAL,
                      str(error))

    def test_instance_totals_are_summed_over_reservations(self):
        half = builders.instances(2 ** 26, memory_mb=2 ** 26 - 1)
        body = document()
        body['lease']['reservations'] = [half, half]
        self.accepted(body)
        body['lease']['reservations'].append(half)
        self.assertEqual('lease.reservations[2].memory_mb',
                         self.refused(body).field)

    def test_instance_total_of_exactly_the_maximum_is_accepted(self):
        # 441650591 x 20394401 == 2 ** 53 - 1
        body = document()
        body['lease']['reservations'] = [builders.instances(
            441650591, vcpus=1, memory_mb=20394401, disk_gb=1)]
        request = self.accepted(body)
        reservation = request.lease.reservations[0]
        self.assertEqual(lease_schema.MAX_TOTAL, reservation.count('amount') *
                         reservation.count('memory_mb'))

    def test_digit_pattern_agrees_with_integer_comparison(self):
        pattern = re.compile('^%s$' % lease_schema._digits_up_to(
            model.MAX_INT))
        near = [10 ** n + d for n in range(11) for d in (-1, 0, 1)]
        edge = [model.MAX_INT + d for d in range(-12, 13)]
        digits = [int(str(model.MAX_INT)[:i] + '9' * (10 - i))
                  for i in range(11)]
        for number in sorted(set(near + edge + digits)):
            if number < 1:
                continue
            self.assertEqual(number <= model.MAX_INT,
                             bool(pattern.match(str(number))), number)

    def test_digit_pattern_is_exact_for_small_limits(self):
        for limit in (1, 9, 10, 19, 20, 100, 101, 305, 999, 1000):
            pattern = re.compile('^%s$' % lease_schema._digits_up_to(limit))
            self.assertEqual(
                list(range(1, limit + 1)),
                [n for n in range(0, 1200) if pattern.match(str(n))], limit)


class TestNonFiniteNumbers(RefusalTestCase):
    """NaN, Infinity and floats beyond the double range (1e400 parses to
    inf) are not JSON numbers anything can store."""

    def test_nan_literal_is_refused(self):
        error = self.refused('{"context": {"project_id": "p", "x": NaN}}')
        self.assertEqual('body', error.field)
        self.assertIn('NaN', str(error))

    def test_infinity_literal_is_refused(self):
        self.refused('{"context": {"project_id": "p", "x": Infinity}}')

    def test_negative_infinity_literal_is_refused(self):
        self.refused('{"context": {"project_id": "p", "x": -Infinity}}')

    def test_number_beyond_the_double_range_is_refused(self):
        error = self.refused('{"context": {"project_id": "p", '
                             '"x": 1e400}}')
        self.assertEqual('body', error.field)
        self.assertIn('1e400', str(error))

    def test_negative_number_beyond_the_double_range_is_refused(self):
        self.refused('{"context": {"project_id": "p", "x": -1e400}}')

    def test_large_finite_number_parses(self):
        body = document()
        body['lease']['reservations'][0]['allocations'][0]['w'] = 1e308
        request = self.accepted(body)
        self.assertEqual(
            1e308, request.lease.reservations[0].allocations[0]['w'])

    def test_huge_integer_literal_is_refused_not_crashed(self):
        self.refused('{"context": {"project_id": "p", "x": %s}}'
                     % ('9' * 5000))
