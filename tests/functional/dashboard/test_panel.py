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
"""The panel through Django's test client, logged in through
openstack_auth against the real Keystone: it shows exactly the numbers
the self-service API gives the user, and the quote form shows the API's
quote, and its 400 message next to the field.
"""

from placement_quota.dashboard import present
from tests.fixtures import horizon
from tests.fixtures import process as processes
from tests.functional.dashboard import base

#: The credits of the project and what its lease costs: 2 hosts for 5
#: hours at horizon.HOST_RATE credits per host-hour.
CREDITS = 100.0
LEASE_COST = 2 * 5 * horizon.HOST_RATE


def row(page, xpath):
    """The one element ``xpath`` finds."""
    found = page.xpath(xpath)
    if len(found) != 1:
        raise AssertionError('%d elements at %s' % (len(found), xpath))
    return found[0]


def cell(element, cls):
    return base.text(row(element, './/*[contains(concat(" ", '
                         'normalize-space(@class), " "), " %s ")]' % cls))


class TestPanel(base.DashboardTestCase):

    def setUp(self):
        super().setUp()
        self.allocation = self.give_credits(
            CREDITS, base.minute(-base.hours(24)),
            base.minute(base.hours(24 * 60)))
        self.lease_id = self.create_lease(
            'two-hosts', base.minute(base.hours(1)),
            base.minute(base.hours(6)), hosts=2)
        self.client = self.login()

    def test_limits_are_the_numbers_of_the_api(self):
        page = self.page(self.client, base.PANEL)
        view = self.api('GET', 'limits')
        self.assertNotEqual([], view['limits'])
        for limit in view['limits']:
            tr = row(page, '//table[@id="limits"]//tr[@data-filter="%s" and '
                     '@data-resource="%s" and @data-scope="%s"]' % (
                         limit['filter'], limit['resource'],
                         limit['scope']))
            self.assertEqual(present.number(limit['in_use']),
                             cell(tr, 'limit-in-use'))
            self.assertEqual(present.number(limit['limit']),
                             cell(tr, 'limit-limit').split(' ')[0])
            peak = limit.get('peak')
            self.assertEqual(present.number(peak['amount']) if peak else '-',
                             cell(tr, 'limit-peak').split(' ')[0])
        # The lease count, as the service is configured: 1 lease of 5.
        leases = row(page, '//tr[@data-filter="LeaseCountFilter"]')
        self.assertEqual(str(horizon.MAX_LEASES), cell(leases, 'limit-limit'))
        self.assertEqual('1', cell(leases, 'limit-in-use'))
        # And as Horizon's limit summary chart.
        charts = {base.text(chart.xpath('.//*[@class="quota_title"]')[0]):
                  base.text(chart.xpath('.//*[@class="quota_subtitle"]')[0])
                  for chart in page.xpath(
                      '//div[contains(@class, "d3_quota_bar")]')}
        self.assertEqual('Used 1 of %d' % horizon.MAX_LEASES,
                         charts['Leases'])

    def test_credits_are_the_numbers_of_the_api(self):
        page = self.page(self.client, base.PANEL)
        credits = self.api('GET', 'limits')['credits']
        self.assertEqual(self.allocation, credits['allocation']['id'])
        self.assertEqual(CREDITS - LEASE_COST, credits['balance'])
        dl = row(page, '//dl[@id="credits"]')
        self.assertEqual('%.2f credits' % credits['allocation']['amount'],
                         cell(dl, 'credits-allocation'))
        self.assertEqual('%.2f' % credits['spent'], cell(dl, 'credits-spent'))
        self.assertEqual('%.2f' % credits['balance'],
                         cell(dl, 'credits-balance'))
        self.assertEqual('from %s to %s' % (
            present.date(credits['allocation']['start_date']),
            present.date(credits['allocation']['end_date'])),
            cell(dl, 'credits-period'))

    def test_leases_show_what_each_was_charged_and_refunded(self):
        page = self.page(self.client, base.PANEL)
        leases = self.api('GET', 'leases')['leases']
        self.assertEqual([self.lease_id], [x['lease_id'] for x in leases])
        lease = leases[0]
        self.assertEqual(LEASE_COST, lease['charged'])
        tr = row(page, '//tr[@data-lease-id="%s"]' % self.lease_id)
        self.assertEqual('two-hosts', cell(tr, 'lease-name'))
        self.assertEqual(lease['state'], cell(tr, 'lease-state'))
        self.assertEqual(present.date(lease['start_date']),
                         cell(tr, 'lease-start'))
        self.assertEqual('%.2f' % lease['charged'], cell(tr, 'lease-charged'))
        self.assertEqual('%.2f' % lease['refunded'],
                         cell(tr, 'lease-refunded'))

    def test_an_ended_lease_shows_its_refund(self):
        ended = self.create_lease('ended', base.minute(base.hours(2)),
                                  base.minute(base.hours(3)))
        self.end_lease(ended)
        page = self.page(self.client, base.PANEL)
        lease = {x['lease_id']: x for x in self.api('GET', 'leases')[
            'leases']}[ended]
        self.assertEqual(horizon.HOST_RATE, lease['charged'])
        self.assertEqual(horizon.HOST_RATE, lease['refunded'])
        tr = row(page, '//tr[@data-lease-id="%s"]' % ended)
        self.assertEqual('%.2f' % lease['charged'], cell(tr, 'lease-charged'))
        self.assertEqual('%.2f' % lease['refunded'],
                         cell(tr, 'lease-refunded'))
        self.assertEqual('0.00', cell(tr, 'lease-net'))
        self.assertEqual(lease['state'], cell(tr, 'lease-state'))

    def test_usage_chart_draws_the_usage_of_the_api(self):
        page = self.page(self.client, base.PANEL)
        usage = self.api('GET', 'usage')
        self.assertIn('hosts', usage['resources'])
        figure = row(page, '//figure[@data-resource="hosts"]')
        highest = max(p['amount'] for p in usage['resources']['hosts'])
        self.assertEqual(2, highest)
        self.assertEqual(present.number(highest), figure.get('data-highest'))
        self.assertEqual(1, len(figure.xpath('.//*[local-name()="path" and '
                                             '@class="usage-line"]')))


class TestQuote(base.DashboardTestCase):

    def setUp(self):
        super().setUp()
        self.give_credits(CREDITS, base.minute(-base.hours(24)),
                          base.minute(base.hours(24 * 60)))
        self.client = self.login()

    def form(self, hosts=1, start=2, end=4, name='quoted'):
        return {'name': name,
                'start_date': base.minute(base.hours(start)).strftime(
                    base.BLAZAR_DATE),
                'end_date': base.minute(base.hours(end)).strftime(
                    base.BLAZAR_DATE),
                'resource_type': 'physical:host',
                'min_hosts': hosts, 'max_hosts': hosts,
                'hypervisor_properties': '', 'resource_properties': ''}

    def lease(self, form):
        """The lease body the form sends (as the API receives it)."""
        return {'name': form['name'], 'start_date': form['start_date'],
                'end_date': form['end_date'],
                'reservations': [{
                    'resource_type': 'physical:host',
                    'min': form['min_hosts'], 'max': form['max_hosts'],
                    'hypervisor_properties': '',
                    'resource_properties': ''}],
                'events': []}

    def test_form_is_there(self):
        page = self.page(self.client, base.QUOTE)
        for name in ('name', 'start_date', 'end_date', 'min_hosts',
                     'max_hosts'):
            row(page, '//form[@id="quote-form"]//*[@name="%s"]' % name)
        self.assertEqual([], page.xpath('//*[@id="quote"]'))

    def test_an_allowed_lease_shows_its_cost(self):
        form = self.form(hosts=1, start=2, end=4)
        page = self.page(self.client, base.QUOTE, form)
        quote = self.api('POST', 'quote', json=self.lease(form))
        self.assertTrue(quote['allowed'])
        self.assertEqual(2 * horizon.HOST_RATE, quote['credits']['cost'])
        result = row(page, '//*[@id="quote"]')
        self.assertEqual('true', result.get('data-allowed'))
        self.assertIn('Allowed', cell(result, 'alert-success'))
        self.assertEqual('%.2f credits' % quote['credits']['cost'],
                         cell(result, 'quote-cost'))
        self.assertEqual('%.2f' % quote['credits']['balance_after'],
                         cell(result, 'quote-balance-after'))
        self.assertEqual('%.2f' % quote['credits']['balance'],
                         cell(result, 'quote-balance'))
        for entry in quote['filters']:
            tr = row(result, './/tr[@data-filter="%s"]' % entry['name'])
            self.assertEqual({True: 'Allowed', False: 'Denied',
                              None: 'Not asked'}[entry['allowed']],
                             cell(tr, 'quote-filter-answer'))

    def test_a_denied_lease_says_by_what_and_why(self):
        # 10 hosts for 10 hours cost more than the project has.
        form = self.form(hosts=10, start=2, end=12)
        page = self.page(self.client, base.QUOTE, form)
        quote = self.api('POST', 'quote', json=self.lease(form))
        self.assertFalse(quote['allowed'])
        self.assertEqual('CreditFilter', quote['denied_by'])
        result = row(page, '//*[@id="quote"]')
        self.assertEqual('false', result.get('data-allowed'))
        verdict = base.text(row(result, './/*[@id="quote-verdict"]'))
        self.assertIn('Denied by CreditFilter', verdict)
        self.assertEqual(quote['message'],
                         base.text(row(result, './/*[@id="quote-message"]')))

    def test_bad_input_shows_the_api_message_next_to_the_field(self):
        # The end before the start.
        form = self.form(start=4, end=2)
        page = self.page(self.client, base.QUOTE, form)
        error = self.api('POST', 'quote', expect=400, json=self.lease(form))
        group = row(page, '//div[contains(@class, "form-group") and '
                    './/*[@name="end_date"]]')
        self.assertIn('has-error', group.get('class'))
        self.assertIn(' '.join(error['message'].split()), base.text(group))
        self.assertEqual([], page.xpath('//*[@id="quote"]'))

    def test_a_bad_host_count_shows_the_api_message_next_to_it(self):
        form = dict(self.form(), min_hosts=-1)
        page = self.page(self.client, base.QUOTE, form)
        error = self.api('POST', 'quote', expect=400, json=self.lease(form))
        group = row(page, '//div[contains(@class, "form-group") and '
                    './/*[@name="min_hosts"]]')
        self.assertIn('has-error', group.get('class'))
        self.assertIn(' '.join(error['message'].split()), base.text(group))


class TestServiceDown(base.DashboardTestCase):
    """The catalog names an endpoint where nothing listens."""

    def catalog_url(self):
        return 'http://127.0.0.1:%d' % processes.free_port('127.0.0.1')

    def test_the_panel_says_so_without_a_traceback(self):
        client = self.login()
        page = self.page(client, base.PANEL)
        messages = base.text(page)
        self.assertIn('Could not read the limits: The reservation quota '
                      'service could not be reached.', messages)
        self.assertEqual([], page.xpath('//table[@id="limits"]'))
