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
"""Bodies that used to answer 500 or poison the ledger (dates,
resource types, surrogates, lengths, digit strings, control characters and
non-finite numbers), sent to the real service
with CreditFilter on a SQLite ledger in a temporary directory: each is a
JSON 400 naming the field, and the ledger holds nothing afterwards."""

import json
import logging
import os

import fixtures
import requests
import testtools

from tests import builders
from tests.fixtures import enforcement as service_fixture
from tests import ledger_helpers

KINDS = ('check-create', 'check-update', 'on-end')
PROJECT = 'project-a'


def _no_constant(name):
    raise ValueError('%s in an error body' % name)


class TestPayloadHardening(ledger_helpers.LedgerHelpers,
                           testtools.TestCase):

    project = PROJECT

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        conf = service_fixture.config(
            connection=('ledger', 'sqlite:///' + os.path.join(
                tmp, 'ledger.sqlite')),
            count_host_resources=('ledger', False),
            embedded_state_dir=('placement', os.path.join(tmp, 'placement')),
            enabled_filters=('enforcement', ['CreditFilter']),
            credit_host_rate=('enforcement', 1.0))
        self.logs = self.useFixture(fixtures.FakeLogger(level=logging.DEBUG))
        self.service = self.useFixture(
            service_fixture.EnforcementService(conf, threads=2))
        self.ledger = self.service.services.ledger
        self.ledger.clock = lambda: builders.NOW

    # --- calls ----------------------------------------------------------

    def body(self, kind='check-create', project=PROJECT, **lease_fields):
        lease = builders.lease(builders.day(2), builders.day(3),
                               builders.hosts('h1'), **lease_fields)
        body = {'context': builders.context(project), 'lease': lease}
        if kind == 'check-update':
            body['current_lease'] = builders.lease(
                builders.day(2), builders.day(3), builders.hosts('h1'))
        return body

    def post(self, kind, body):
        """POST ``body`` (a document, or JSON text sent as it is); the
        status and the decoded answer (None for 204)."""
        data = body if isinstance(body, str) else json.dumps(body)
        response = requests.post(
            self.service.url + '/v1/' + kind, data=data.encode('utf-8'),
            headers={'Content-Type': 'application/json'}, timeout=30)
        if response.status_code == 204:
            return 204, None
        self.assertEqual('application/json',
                         response.headers['Content-Type'].split(';')[0])
        # Strict JSON: no NaN or Infinity in an error body either.
        return response.status_code, json.loads(
            response.content.decode('utf-8'), parse_constant=_no_constant)

    def assertBadRequest(self, answer, field):
        status, body = answer
        self.assertEqual(400, status, body)
        self.assertEqual(field, body['field'], body)
        self.assertTrue(body['message'].startswith(field + ': '), body)
        return body

    def assertLedgerEmpty(self, *projects):
        for project in projects or (PROJECT,):
            self.assertEqual([], self.entries(project))

    # --- resource_type ----------------------------------------------------

    def test_resource_type_as_a_list_is_a_400_on_every_endpoint(self):
        for kind in KINDS:
            body = self.body(kind)
            body['lease']['reservations'][0]['resource_type'] = ['x']
            self.assertBadRequest(self.post(kind, body),
                                  'lease.reservations[0].resource_type')
        self.assertLedgerEmpty()

    def test_resource_type_as_an_object_is_a_400(self):
        body = self.body()
        body['lease']['reservations'][0]['resource_type'] = {'a': 'b'}
        answer = self.assertBadRequest(self.post('check-create', body),
                                       'lease.reservations[0].resource_type')
        self.assertEqual({'a': 'b'}, answer['value'])

    # --- surrogates, NUL and lengths --------------------------------------

    def test_lone_surrogate_is_a_400_on_every_endpoint(self):
        for kind in KINDS:
            text = json.dumps(self.body(kind, name='NAME')).replace(
                '"NAME"', '"\\ud800"')
            answer = self.assertBadRequest(self.post(kind, text),
                                           'lease.name')
            self.assertEqual('\\ud800', answer['value'])
        self.assertLedgerEmpty()

    def test_lone_surrogate_in_a_key_is_a_400(self):
        text = json.dumps(self.body()).replace('"user_id"',
                                               '"user_id\\udc80"')
        self.assertBadRequest(self.post('check-create', text), 'context')

    def test_nul_in_the_project_id_is_a_400_and_records_nothing(self):
        answer = self.assertBadRequest(
            self.post('check-create', self.body(project='p\x00')),
            'context.project_id')
        self.assertEqual('p\x00', answer['value'])
        self.assertLedgerEmpty('p\x00', 'p')

    def test_nul_in_the_lease_name_is_a_400(self):
        self.assertBadRequest(
            self.post('check-create', self.body(name='a\x00')),
            'lease.name')

    def test_300_character_name_is_a_400_naming_field_and_value(self):
        answer = self.assertBadRequest(
            self.post('check-create', self.body(name='n' * 300)),
            'lease.name')
        self.assertEqual('n' * 300, answer['value'])
        self.assertLedgerEmpty()

    def test_300_character_project_id_is_a_400(self):
        self.assertBadRequest(
            self.post('check-create', self.body(project='p' * 300)),
            'context.project_id')

    def test_300_character_lease_id_is_a_400_on_end(self):
        self.assertBadRequest(
            self.post('on-end', self.body('on-end', lease_id='i' * 300)),
            'lease.id')

    # --- dates ------------------------------------------------------------

    def test_end_in_year_9999_is_a_400_and_not_recorded(self):
        body = self.body()
        body['lease']['end_date'] = '9999-12-31 00:00'
        self.assertBadRequest(self.post('check-create', body),
                              'lease.end_date')
        # Denied leases are recorded; a bad request is not.
        self.assertLedgerEmpty()

    def test_leases_are_admitted_after_an_out_of_range_one(self):
        body = self.body()
        body['lease']['end_date'] = '9999-12-31 00:00'
        self.post('check-create', body)
        free = {'context': builders.context(PROJECT),
                'lease': builders.lease(builders.day(2), builders.day(3),
                                        builders.floatingips(1))}
        self.assertEqual((204, None), self.post('check-create', free))

    def test_start_in_year_1_is_a_400(self):
        body = self.body()
        body['lease']['start_date'] = '0001-01-01 00:00'
        self.assertBadRequest(self.post('check-create', body),
                              'lease.start_date')
        self.assertLedgerEmpty()

    def test_current_lease_out_of_range_is_a_400_on_update(self):
        body = self.body('check-update')
        body['current_lease']['end_date'] = '9999-12-31 00:00'
        self.assertBadRequest(self.post('check-update', body),
                              'current_lease.end_date')

    def test_lease_longer_than_the_ledger_holds_is_a_400(self):
        body = self.body()
        body['lease']['end_date'] = '2999-01-01 00:00'
        self.assertBadRequest(self.post('check-create', body),
                              'lease.end_date')

    # --- digit strings ----------------------------------------------------

    def test_digit_string_amount_beyond_max_int_is_a_400(self):
        body = self.body()
        body['lease']['reservations'] = [
            builders.instances('9999999999')]
        answer = self.assertBadRequest(self.post('check-create', body),
                                       'lease.reservations[0].amount')
        self.assertEqual('9999999999', answer['value'])

    def test_instances_adding_up_beyond_the_ledger_are_a_400(self):
        big = builders.instances(str(2 ** 31 - 1), vcpus=2 ** 31 - 1)
        body = self.body()
        body['lease']['reservations'] = [big, big, big]
        self.assertBadRequest(self.post('check-create', body),
                              'lease.reservations[0].vcpus')
        self.assertLedgerEmpty()

    # --- control characters -----------------------------------------------

    def test_newline_in_the_project_id_is_a_400_and_forges_no_log_line(
            self):
        forged = 'FORGED 2026-11-23 INFO placement_quota admitted'
        answer = self.assertBadRequest(
            self.post('check-create', self.body(project='p\n' + forged)),
            'context.project_id')
        self.assertEqual('p\n' + forged, answer['value'])
        for line in self.logs.output.splitlines():
            self.assertFalse(line.startswith('FORGED'), line)

    def test_newline_in_the_lease_name_is_a_400(self):
        self.assertBadRequest(
            self.post('check-create', self.body(name='a\nb')), 'lease.name')

    # --- non-finite numbers ----------------------------------------------

    def test_number_beyond_the_double_range_is_a_400(self):
        text = json.dumps(self.body()).replace('"h1"', '"h1", "w": 1e400',
                                               1)
        self.assertIn('1e400', text)
        status, body = self.post('check-create', text)
        self.assertEqual(400, status, body)
        self.assertEqual('body', body['field'])

    def test_nan_literal_is_a_400(self):
        text = json.dumps(self.body()).replace('"h1"', '"h1", "w": NaN', 1)
        status, body = self.post('check-create', text)
        self.assertEqual(400, status, body)
        self.assertEqual('body', body['field'])

    # --- host factor ------------------------------------------------------

    def test_negative_su_factor_is_a_400_and_charges_nothing(self):
        allocation = self.give_credits(100)
        body = {'context': builders.context(PROJECT),
                'lease': builders.lease(builders.day(2), builders.day(3),
                                        builders.hosts('h1', su_factor=-1000))}
        answer = self.assertBadRequest(
            self.post('check-create', body),
            'lease.reservations[0].allocations[0].extra.su_factor')
        self.assertEqual(-1000, answer['value'])
        self.assertEqual(0.0, self.spent(allocation))
        self.assertLedgerEmpty()
