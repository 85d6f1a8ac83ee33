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
"""A quote: what each filter would answer to a create, its price, and
nothing recorded."""

from placement_quota.lease import model as lease_model
from placement_quota.selfservice import service
from tests.builders import at
from tests.builders import day
from tests.builders import hosts
from tests.builders import lease
from tests.unit.selfservice import test_view


class TestQuote(test_view.ViewTestCase):

    def quote(self, body, user='u'):
        """A quote of ``body``, named as Blazar's create needs."""
        return self.selfservice.quote(
            {'project_id': self.project, 'user_id': user},
            dict({'name': 'quoted'}, **body))

    def test_allowed_lease_is_priced_with_the_balance_after(self):
        self.give_credits(100)
        found = self.quote(lease(day(2), day(3), hosts('a')))
        self.assertTrue(found['allowed'])
        self.assertEqual({'cost': 24.0, 'hourly_rate': 1.0, 'hours': 24.0,
                          'charge': 24.0, 'balance': 100.0,
                          'balance_after': 76.0, 'allocation_id': 1},
                         found['credits'])

    def test_quote_records_nothing(self):
        allocation = self.give_credits(100)
        self.quote(lease(day(2), day(3), hosts('a')))
        self.assertEqual(0.0, self.spent(allocation))
        self.assertEqual([], self.selfservice.leases(self.project)['leases'])

    def test_denied_lease_names_the_first_filter_the_chain_would_stop_at(
            self):
        self.give_credits(10)
        body = lease(day(2), day(12), hosts('a', 'b', 'c'))
        found = self.quote(body)
        self.assertEqual((False, 'MaximumReservationLengthFilter'),
                         (found['allowed'], found['denied_by']))
        message = self.assertDenied(self.service_chain.check_create,
                                    self.context(), body)
        self.assertEqual(message, found['message'])

    def test_every_filter_is_asked_after_a_denial(self):
        self.give_credits(10)
        found = self.quote(lease(day(2), day(12), hosts('a', 'b', 'c')))
        self.assertEqual(
            [('LeaseCountFilter', True), ('UserLimitFilter', True),
             ('MaximumReservationLengthFilter', False),
             ('ReservationSizeFilter', False), ('CreditFilter', False)],
            [(f['name'], f['allowed']) for f in found['filters']])

    def test_denied_by_credits_still_gives_the_price(self):
        self.give_credits(10)
        found = self.quote(lease(day(2), day(3), hosts('a')))
        self.assertEqual('CreditFilter', found['denied_by'])
        self.assertEqual((24.0, 10.0, -14.0),
                         (found['credits']['cost'],
                          found['credits']['balance'],
                          found['credits']['balance_after']))

    def test_the_quote_agrees_with_the_create_that_follows(self):
        self.give_credits(100)
        body = lease(day(2), day(3), hosts('a'))
        found = self.quote(body)
        allocation = 1
        self.service_chain.check_create(self.context(), body)
        self.assertEqual(found['credits']['cost'], self.spent(allocation))

    def test_start_now_is_now_to_the_minute(self):
        self.give_credits(100)
        self.now = at(1, 10).replace(minute=7, second=30)
        found = self.quote(dict(lease(day(2), day(3), hosts('a')),
                                start_date='now'))
        self.assertEqual('2026-06-01T10:07:00Z',
                         found['lease']['start_date'])

    def test_bad_body_names_the_field(self):
        error = self.assertRaises(
            lease_model.PayloadError, self.quote,
            dict(lease(day(2), day(3), hosts('a')), end_date='tomorrow'))
        self.assertEqual('lease.end_date', error.field)

    def test_exempt_project_is_allowed_by_every_filter(self):
        chain = self.chain(*test_view.ALL, exempted=[self.project])
        found = service.SelfService(chain).quote(
            self.context(), lease(day(2), day(30), hosts('a', 'b', 'c'),
                                  name='l'))
        self.assertTrue(found['allowed'])
        self.assertEqual({True}, {f['allowed'] for f in found['filters']})


class TestWhatBlazarRefusesFirst(test_view.ViewTestCase):
    """A quote refuses what Blazar's lease create refuses before asking
    any filter, rather than saying "allowed" of a lease never created."""

    def quote(self, body):
        return self.selfservice.quote(self.context(), body)

    def test_a_lease_without_a_name_names_the_field(self):
        body = lease(day(2), day(3), hosts('a'))
        body.pop('name', None)
        error = self.assertRaises(lease_model.PayloadError, self.quote, body)
        self.assertEqual('lease.name', error.field)

    def test_resource_properties_that_are_not_json_name_the_field(self):
        reservation = dict(hosts('a'), resource_properties='[not json')
        error = self.assertRaises(
            lease_model.PayloadError, self.quote,
            lease(day(2), day(3), reservation, name='l'))
        self.assertEqual(('lease.reservations[0].resource_properties',
                          '[not json'), (error.field, error.value))
