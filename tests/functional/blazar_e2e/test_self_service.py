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
"""A quote and an extension bound, then the lease through stock Blazar.

For each policy of the environment's chain, a quote that says "denied by
X" is followed by a create through python-blazarclient that Blazar
refuses with X's message, and a quote that says "allowed, costs C" by a
create that is charged C. The extension bound of a lease is the exact
end date Blazar's lease update is then allowed to, one minute more being
refused. The quote and the bound are asked of the project API of the
service Blazar's ExternalServiceFilter calls (the same process and
chain), over HTTP, as the project's member (the environment's service
runs without Keystone: the member's project, user and role are the
headers keystonemiddleware would set).
"""

import datetime
import urllib.parse
import uuid

import requests

from tests.functional.blazar_e2e import base

MINUTE = datetime.timedelta(minutes=1)


class SelfServiceTestCase(base.BlazarE2ETestCase):

    def project_api(self, method, path, **kwargs):
        """The project API's JSON answer (200) to ``method`` ``path``
        (under ``/v1/projects/{project}/``), as the member."""
        response = requests.request(
            method, '%s/v1/projects/%s/%s' % (
                self.env.front.url, urllib.parse.quote(self.project), path),
            headers={'X-Project-Id': self.project,
                     'X-User-Id': self.user.id, 'X-Roles': 'member'},
            timeout=60, **kwargs)
        self.assertEqual(200, response.status_code, response.text)
        return response.json()

    def body(self, reservations, hours=2):
        start = base.minute() + datetime.timedelta(hours=1)
        end = start + datetime.timedelta(hours=hours)
        return {'name': 'lease-%s' % uuid.uuid4().hex[:8],
                'start_date': base.api_date(start),
                'end_date': base.api_date(end),
                'reservations': reservations, 'events': []}

    def quote(self, body):
        return self.project_api('POST', 'quote', json=body)

    def extension(self, lease_id):
        return self.project_api('GET', 'leases/%s/extension' % lease_id)

    def create(self, body):
        lease = self.client.lease.create(
            body['name'], body['start_date'], body['end_date'],
            body['reservations'], body['events'])
        self.leases.append(lease['id'])
        return lease

    def assertQuoteDeniesAsBlazar(self, body, filter_name):
        found = self.quote(body)
        self.assertEqual((False, filter_name),
                         (found['allowed'], found['denied_by']),
                         found['filters'])
        self.assertDenied(lambda: self.create(body), found['message'])
        self.assertEqual([], [lease for lease in self.client.lease.list()
                              if lease['name'] == body['name']])


class TestQuoteAgreesWithBlazar(SelfServiceTestCase):

    def test_allowed_quote_costs_what_the_create_is_charged(self):
        allocation = self.give_credits(100)
        body = self.body([base.instance_reservation(amount=2, vcpus=2)],
                         hours=3)
        found = self.quote(body)
        self.assertTrue(found['allowed'], found['filters'])
        self.assertEqual(0, self.spent(allocation))

        self.create(body)
        # 2 instances x (1 + 2 VCPUs) x 3 hours.
        self.assertEqual(18.0, found['credits']['cost'])
        self.assertEqual(found['credits']['cost'], self.spent(allocation))
        self.assertEqual(found['credits']['balance_after'],
                         100 - self.spent(allocation))

    def test_maximum_length(self):
        self.give_credits(100000)
        self.assertQuoteDeniesAsBlazar(
            self.body([base.instance_reservation()], hours=8 * 24),
            'MaximumReservationLengthFilter')

    def test_lease_count(self):
        self.give_credits(1000)
        for _ in range(base.MAX_LEASES):
            self.create(self.body([base.instance_reservation()]))
        self.assertQuoteDeniesAsBlazar(
            self.body([base.instance_reservation()]), 'LeaseCountFilter')

    def test_credits(self):
        self.give_credits(5)
        self.assertQuoteDeniesAsBlazar(
            self.body([base.instance_reservation()]), 'CreditFilter')

    def test_reservation_size(self):
        self.give_credits(1000)
        self.assertQuoteDeniesAsBlazar(
            self.body([base.instance_reservation(
                amount=base.MAX_INSTANCES_PER_RESERVATION + 1, vcpus=1)]),
            'ReservationSizeFilter')

    def test_per_user_instances(self):
        self.give_credits(1000)
        self.assertQuoteDeniesAsBlazar(
            self.body([base.instance_reservation(amount=4, vcpus=1),
                       base.instance_reservation(amount=4, vcpus=1)]),
            'UserLimitFilter')

    def test_tree_limit(self):
        self.give_credits(1000)
        self.assertQuoteDeniesAsBlazar(
            self.body([base.instance_reservation(amount=3, vcpus=9)]),
            'ProjectTreeLimitFilter')

    def test_nova_quota(self):
        self.give_credits(1000)
        self.assertQuoteDeniesAsBlazar(
            self.body([base.instance_reservation(amount=2,
                                                 memory_mb=7000)]),
            'NovaQuotaFilter')


class TestExtensionThroughBlazar(SelfServiceTestCase):

    def test_update_to_the_bound_is_allowed_and_a_minute_later_refused(
            self):
        # 3 credits an hour; 30 credits: 10 hours in all, 2 taken.
        allocation = self.give_credits(30)
        lease = self.create(self.body([base.instance_reservation()]))
        self.bound_entry(lease['id'])
        found = self.extension(lease['id'])
        latest = datetime.datetime.strptime(found['latest_end_date'],
                                            '%Y-%m-%dT%H:%M:%SZ')
        end = datetime.datetime.fromisoformat(lease['end_date'])
        self.assertEqual((end + datetime.timedelta(hours=8),
                          'CreditFilter'), (latest, found['bound_by']))

        self.assertDenied(
            lambda: self.client.lease.update(
                lease['id'], end_date=base.api_date(latest + MINUTE)),
            'The update costs')
        self.client.lease.update(lease['id'],
                                 end_date=base.api_date(latest))
        self.assertEqual(30.0, self.spent(allocation))
        got = self.client.lease.get(lease['id'])
        self.assertEqual(latest, datetime.datetime.fromisoformat(
            got['end_date']))
