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
"""Answers are strict JSON, and so are admin request bodies:
``json.dumps`` writes ``Infinity`` and ``NaN``, which no JSON parser
but Python's reads, and ``json.loads`` accepts them."""

import json

import testtools

from placement_quota.api.admin import http as admin_http
from placement_quota.api import util


def strict(text):
    def refuse(name):
        raise ValueError(name)
    return json.loads(text, parse_constant=refuse)


class TestStrictAnswers(testtools.TestCase):

    def test_an_infinite_value_is_written_as_a_string(self):
        self.assertEqual({'value': 'Infinity', 'low': '-Infinity'},
                         strict(util.dumps({'value': float('inf'),
                                            'low': float('-inf')})))

    def test_nan_is_written_as_a_string(self):
        self.assertEqual({'value': ['NaN']},
                         strict(util.dumps({'value': [float('nan')]})))

    def test_finite_values_are_written_unchanged(self):
        document = {'a': 1.5, 'b': [1, 'x', None], 'c': {'d': True}}
        self.assertEqual(json.dumps(document), util.dumps(document))

    def test_an_error_answer_with_an_infinite_value_is_strict_json(self):
        response = util.HTTPError(400, 'too big', field='amount',
                                  value=float('inf')).response()
        self.assertEqual('Infinity', strict(response.body)['value'])


class TestStrictAdminBodies(testtools.TestCase):

    def test_non_finite_literals_are_refused_naming_the_body(self):
        fields = []
        for literal in (b'NaN', b'Infinity', b'-Infinity'):
            error = self.assertRaises(util.HTTPError, admin_http.loads,
                                      b'{"a": %s}' % literal)
            fields.append((error.status, error.body['field']))
        self.assertEqual([(400, 'body')] * 3, fields)

    def test_a_number_that_overflows_a_double_is_refused(self):
        error = self.assertRaises(util.HTTPError, admin_http.loads,
                                  b'{"a": -1e400}')
        self.assertIn('-1e400', error.body['message'])

    def test_large_finite_numbers_are_read(self):
        self.assertEqual({'a': 1e308, 'b': 10 ** 30},
                         admin_http.loads(b'{"a": 1e308, "b": %d}' % 10 ** 30))

    def test_a_body_that_is_not_utf8_is_refused(self):
        error = self.assertRaises(util.HTTPError, admin_http.loads,
                                  b'{"a": "\xff"}')
        self.assertEqual(400, error.status)

    def test_a_body_nested_beyond_the_parsers_depth_is_refused(self):
        error = self.assertRaises(util.HTTPError, admin_http.loads,
                                  b'[' * 100000 + b']' * 100000)
        self.assertEqual((400, 'body'), (error.status, error.body['field']))


class TestPathSegments(testtools.TestCase):

    def test_a_nul_in_a_lease_id_segment_is_refused_naming_the_field(self):
        error = self.assertRaises(util.HTTPError, admin_http.segment, '%00',
                                  'lease_id')
        self.assertEqual((400, 'lease_id'),
                         (error.status, error.body['field']))

    def test_a_lease_id_longer_than_the_ledger_holds_is_refused(self):
        error = self.assertRaises(util.HTTPError, admin_http.segment,
                                  'a' * 256, 'lease_id')
        self.assertEqual(400, error.status)

    def test_an_ordinary_lease_id_is_decoded(self):
        self.assertEqual('lease 1', admin_http.segment('lease%201',
                                                       'lease_id'))
