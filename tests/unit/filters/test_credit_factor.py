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
"""CreditFilter and the host factor Blazar sends in the request: a
factor that is not a finite number from 0 to ``[enforcement]
max_su_factor`` is a bad request, never priced."""

from placement_quota.filters import credit
from placement_quota.lease import model as lease_model
from tests.builders import day
from tests.builders import hosts
from tests.builders import lease
from tests.unit.filters import base

FIELD = 'lease.reservations[0].allocations[0].extra.su_factor'


class TestHostFactor(base.LedgerTestCase):

    filter_class = credit.CreditFilter
    options = {('enforcement', 'credit_host_rate'): 1.0}

    def refused(self, factor, call=None):
        """The PayloadError of a one-day lease of a host of ``factor``."""
        return self.assertRaises(
            lease_model.PayloadError, call or self.create,
            lease(day(2), day(3), hosts('a', su_factor=factor)))

    def test_negative_factor_is_refused_naming_field_and_value(self):
        self.give_credits(100)
        error = self.refused(-1000)
        self.assertEqual(FIELD, error.field)
        self.assertEqual(-1000, error.value)
        self.assertIn('finite number from 0 to 100', str(error))

    def test_negative_factor_charges_nothing_and_records_nothing(self):
        allocation = self.give_credits(100)
        self.refused(-1000)
        self.assertEqual(0.0, self.spent(allocation))
        self.assertEqual([], self.entries())

    def test_nan_string_factor_is_refused(self):
        self.give_credits(100)
        self.assertEqual('nan', self.refused('nan').value)

    def test_infinite_string_factor_is_refused(self):
        self.give_credits(100)
        for factor in ('inf', '-inf', 'Infinity', '1e309'):
            self.assertEqual(factor, self.refused(factor).value)

    def test_factor_above_the_maximum_is_refused(self):
        self.give_credits(100)
        for factor in (1e308, 100.5, '101'):
            self.assertEqual(FIELD, self.refused(factor).field)

    def test_integer_too_large_for_a_float_is_refused(self):
        self.give_credits(100)
        self.assertEqual(FIELD, self.refused(10 ** 400).field)

    def test_word_factor_is_refused(self):
        self.give_credits(100)
        self.assertEqual('high', self.refused('high').value)

    def test_boolean_factor_is_refused(self):
        self.give_credits(100)
        self.assertEqual(True, self.refused(True).value)

    def test_list_factor_is_refused(self):
        self.give_credits(100)
        self.assertEqual([2], self.refused([2]).value)

    def test_factor_as_a_digit_string_is_priced(self):
        # Blazar keeps extra capabilities as strings.
        allocation = self.give_credits(100)
        self.create(lease(day(2), day(3), hosts('a', su_factor='2.5')))
        self.assertEqual(60.0, self.spent(allocation))

    def test_zero_factor_is_free(self):
        self.create(lease(day(2), day(3), hosts('a', su_factor=0)))

    def test_factor_at_the_maximum_is_priced(self):
        allocation = self.give_credits(10000)
        self.create(lease(day(2), day(3), hosts('a', su_factor=100)))
        self.assertEqual(2400.0, self.spent(allocation))

    def test_maximum_is_configurable(self):
        self.set(max_su_factor=2.0)
        self.give_credits(100)
        error = self.refused(2.5)
        self.assertIn('from 0 to 2 ', str(error))

    def test_factor_key_configured_is_the_one_checked(self):
        self.set(credit_host_factor_key='weight')
        self.give_credits(100)
        error = self.assertRaises(
            lease_model.PayloadError, self.create,
            lease(day(2), day(3), hosts('a', weight=-1, su_factor=-1)))
        self.assertEqual(
            'lease.reservations[0].allocations[0].extra.weight', error.field)

    def test_factor_outside_extra_is_named_where_it_is(self):
        self.give_credits(100)
        body = lease(day(2), day(3), hosts('a'))
        body['reservations'][0]['allocations'][0]['su_factor'] = 'nan'
        error = self.assertRaises(lease_model.PayloadError, self.create,
                                  body)
        self.assertEqual('lease.reservations[0].allocations[0].su_factor',
                         error.field)

    def test_factor_of_a_later_allocation_is_named_by_its_index(self):
        self.give_credits(100)
        body = lease(day(2), day(3), hosts('a', 'b', su_factor=1))
        body['reservations'][0]['allocations'][1]['extra']['su_factor'] = -1
        error = self.assertRaises(lease_model.PayloadError, self.create,
                                  body)
        self.assertEqual(
            'lease.reservations[0].allocations[1].extra.su_factor',
            error.field)

    def test_negative_factor_in_an_update_is_refused(self):
        allocation = self.give_credits(100)
        current = lease(day(2), day(3), hosts('a'))
        self.create(current)
        error = self.assertRaises(
            lease_model.PayloadError, self.update, current,
            lease(day(2), day(4), hosts('a', su_factor=-1000)))
        self.assertEqual(FIELD, error.field)
        self.assertEqual(24.0, self.spent(allocation))

    def test_chain_passes_the_refusal_on_and_records_nothing(self):
        # The API answers a PayloadError with 400; a denial would be kept
        # in the ledger, a bad request is not.
        allocation = self.give_credits(100)
        chain = self.chain()
        error = self.refused(-1000, call=lambda body: self.create(
            body, via=chain))
        self.assertEqual(FIELD, error.field)
        self.assertEqual([], self.entries())
        self.assertEqual(0.0, self.spent(allocation))

    def test_max_su_factor_option_has_help_and_a_default(self):
        opts = {o.name: o for o in credit.CreditFilter.enforcement_opts}
        self.assertEqual(100.0, opts['max_su_factor'].default)
        self.assertIn('finite number', opts['max_su_factor'].help)
