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
"""How ``openstack reservation quota show``, ``quote`` and the dashboard's
credits section show credit pools (from the documents the project API
answers)."""

import testtools

from placement_quota.dashboard import present
from placement_quota.osc import selfservice

POOL = {'resource_class': 'VCPU',
        'allocation': {'id': 2, 'amount': 100.0, 'start_date': None,
                       'end_date': None},
        'spent': 80.0, 'balance': 20.0}


class TestPoolRows(testtools.TestCase):

    def test_quota_show_has_a_row_per_pool(self):
        rows = selfservice.QuotaShow._credit_rows({
            'allocation': {'id': 1, 'amount': 50.0}, 'spent': 10.0,
            'balance': 40.0, 'user': None, 'pools': [POOL]})
        self.assertEqual(
            [('CreditFilter', 'credits', 'project', 50, 10, '', '',
              'credits'),
             ('CreditFilter', 'VCPU pool', 'project', 100, 80, '', '',
              'VCPU-hours')], rows)

    def test_quota_show_of_pools_alone_has_no_credits_row(self):
        rows = selfservice.QuotaShow._credit_rows({
            'allocation': None, 'spent': None, 'balance': None,
            'user': None, 'pools': [POOL]})
        self.assertEqual(['VCPU pool'], [row[1] for row in rows])

    def test_quote_shows_each_pools_charge_and_balance_after(self):
        flat = selfservice.Quote._flat({
            'allowed': True, 'filters': [], 'lease': {},
            'credits': {'cost': 2.0, 'pools': [
                {'resource_class': 'VCPU', 'charge': 80.0,
                 'balance_after': 20.0},
                {'resource_class': 'CUSTOM_GPU', 'charge': 4.0,
                 'balance_after': None}]}})
        self.assertEqual(
            (2, '80 VCPU-hours, 20 left after', '4 CUSTOM_GPU-hours, no '
             'pool'),
            (flat['credits_cost'], flat['credits_pool_VCPU'],
             flat['credits_pool_CUSTOM_GPU']))


class TestDashboardPools(testtools.TestCase):

    def test_the_credits_section_lists_each_pool_in_hours(self):
        summary = present.credit_summary({
            'allocation': None, 'spent': None, 'balance': None,
            'user': None, 'pools': [POOL]})
        self.assertEqual(
            (False, [{'resource_class': 'VCPU', 'amount': '100.00',
                      'spent': '80.00', 'balance': '20.00'}]),
            (summary['has_allocation'], summary['pools']))
