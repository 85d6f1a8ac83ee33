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
"""The body of an account PUT, and the strict validator behind it."""

import testtools

from placement_quota.accounts import errors
from placement_quota.accounts import schema
from placement_quota import schemas


class TestParseBody(testtools.TestCase):

    def refused(self, body, account_id='acct'):
        return self.assertRaises(errors.Invalid, schema.parse_body,
                                 account_id, body)

    def test_parse_body_gives_parent_limits_and_metadata(self):
        self.assertEqual(
            ('root', {'VCPU': 4}, {'owner': 'me'}),
            schema.parse_body('acct', {'parent_id': 'root',
                                       'limits': {'VCPU': 4},
                                       'metadata': {'owner': 'me'}}))

    def test_parse_body_of_an_empty_body_is_a_root_without_limits(self):
        self.assertEqual((None, {}, {}), schema.parse_body('acct', {}))

    def test_parse_body_refuses_a_boolean_limit(self):
        error = self.refused({'limits': {'VCPU': True}})
        self.assertEqual(('limits/VCPU', True),
                         (error.body['field'], error.body['value']))

    def test_parse_body_refuses_a_float_limit(self):
        error = self.refused({'limits': {'VCPU': 10.0}})
        self.assertEqual('limits/VCPU', error.body['field'])

    def test_parse_body_refuses_a_limit_below_minus_one(self):
        error = self.refused({'limits': {'VCPU': -2}})
        self.assertEqual(('limits/VCPU', -2),
                         (error.body['field'], error.body['value']))

    def test_parse_body_accepts_minus_one_as_unlimited(self):
        _, limits, _ = schema.parse_body('acct', {'limits': {'VCPU': -1}})
        self.assertEqual({'VCPU': -1}, limits)

    def test_parse_body_ignores_the_read_only_fields_of_a_get(self):
        got = {'id': 'acct', 'parent_id': None, 'limits': {'VCPU': 1},
               'metadata': {}, 'children': ['c'], 'usage': {},
               'generation': 3, 'created_at': 'x', 'updated_at': None}
        self.assertEqual((None, {'VCPU': 1}, {}),
                         schema.parse_body('acct', got))

    def test_parse_body_refuses_an_id_other_than_the_one_of_the_url(self):
        error = self.refused({'id': 'other'})
        self.assertEqual(('id', 'other'),
                         (error.body['field'], error.body['value']))

    def test_parse_body_refuses_an_unknown_field_naming_the_body(self):
        error = self.refused({'colour': 'blue'})
        self.assertEqual('body', error.body['field'])

    def test_parse_body_refuses_a_body_that_is_not_an_object(self):
        error = self.refused(['limits'])
        self.assertEqual(('body', 'The body must be a JSON object, not list'),
                         (error.body['field'], error.message))

    def test_parse_body_refuses_the_account_as_its_own_parent(self):
        error = self.refused({'parent_id': 'acct'})
        self.assertEqual('parent_id', error.body['field'])

    def test_parse_body_refuses_a_parent_id_with_a_slash(self):
        error = self.refused({'parent_id': 'a/b'})
        self.assertEqual(('parent_id', 'a/b'),
                         (error.body['field'], error.body['value']))

    def test_parse_body_reports_the_first_bad_field_in_path_order(self):
        error = self.refused({'metadata': {'k': 1}, 'limits': {'VCPU': 'x'}})
        self.assertEqual('limits/VCPU', error.body['field'])


class TestStrictValidator(testtools.TestCase):

    SCHEMA = {'type': 'object', 'additionalProperties': {'type': 'integer'}}

    def test_strict_validator_refuses_true_as_an_integer(self):
        self.assertFalse(schemas.StrictValidator(self.SCHEMA).is_valid(
            {'a': True}))

    def test_strict_validator_refuses_an_integral_float(self):
        self.assertFalse(schemas.StrictValidator(self.SCHEMA).is_valid(
            {'a': 1.0}))

    def test_strict_validator_accepts_an_int(self):
        self.assertTrue(schemas.StrictValidator(self.SCHEMA).is_valid(
            {'a': 1}))

    def test_first_error_of_a_valid_document_is_none(self):
        self.assertIsNone(schemas.first_error(self.SCHEMA, {'a': 1}))

    def test_first_error_is_the_one_whose_path_sorts_first(self):
        error = schemas.first_error(self.SCHEMA, {'b': 'x', 'a': 'y'})
        self.assertEqual(['a'], list(error.absolute_path))
