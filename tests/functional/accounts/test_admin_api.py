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
"""The account admin API over HTTP (a real WSGI server, so the raw URL reaches
it as a client encoded it), with a real Placement holding the consumers and a
SQLite ledger: the account ID table of "Multi-Tenant Accounting in OpenStack",
moves that meet concurrent changes, lease moves and their limits."""

import datetime
import os
import shutil
import tempfile
from urllib import parse
import uuid

import requests
import testtools

from placement_quota.accounts import errors
from placement_quota.accounts import service
from placement_quota.api.admin import app as admin
from placement_quota import conf as pq_conf
from placement_quota.ledger import models
from placement_quota.placement import client as placement_client
from placement_quota import services as services_mod
from placement_quota.httpserver import server as wsgi_server
from tests.fixtures import placement as placement_fixtures
from tests.functional.api import test_admin_gabbi as seeds

#: "Multi-Tenant Accounting in OpenStack", "Example accounts IDs": (account ID,
#: valid).
SPEC_ACCOUNT_IDS = [
    ('12345', True),
    ("Bob's Account", True),
    ('\u03a3\u221e\u0394\u03a0', True),      # Σ∞ΔΠ
    ('resel:sub:acct', True),
    ('resel\\sub\\acct', True),
    ('resel/sub/acct', False),
    ('', False),
]


class AdminAPITestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.placement = self.useFixture(
            placement_fixtures.PlacementServer())
        self.dir = tempfile.mkdtemp(prefix='pq-admin-')
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.conf = pq_conf.new_config([], config_files=[])
        self.conf.set_override('connection', 'sqlite:///%s' % os.path.join(
            self.dir, 'ledger.sqlite'), 'ledger')
        self.conf.set_override('registered_limits', {'hosts': '10'},
                               'limits')
        self.client = placement_client.PlacementClient.from_endpoint(
            self.placement.endpoint, self.placement.headers)
        self.services = services_mod.Services(self.conf,
                                              placement=self.client)
        self.addCleanup(self.services.close)
        self.accounts = service.Accounts(
            self.services.ledger, self.client, self.services.limits_source)
        server = wsgi_server.WSGIServer(admin.make_admin_app(
            self.conf, accounts=self.accounts), threads=4).start()
        self.addCleanup(server.stop)
        self.url = server.url + '/v1/'
        self.run_id = uuid.uuid4().hex[:8]
        self.node = seeds.seed_provider(
            self.client, 'cn-admin-%s' % self.run_id,
            {'VCPU': 64, 'MEMORY_MB': 131072})

    def name(self, prefix):
        return '%s-%s' % (prefix, self.run_id)

    def account_url(self, account_id, *rest):
        return self.url + '/'.join(
            [parse.quote(account_id, safe='')] + list(rest))

    def put(self, account_id, body=None):
        return requests.put(self.account_url(account_id), json=body or {})

    def consumer(self, project_id, vcpu):
        return seeds.seed_consumer(self.client, self.node, project_id,
                                   {'VCPU': vcpu})

    def project_of(self, consumer):
        return self.client.get('/allocations/%s' % consumer).get(
            'project_id')


class TestAccountIds(AdminAPITestCase):
    """The table of account IDs of "Multi-Tenant Accounting in OpenStack",
    each sent percent-encoded."""

    def test_every_valid_id_of_the_spec_is_created_and_read_back(self):
        for account_id, valid in SPEC_ACCOUNT_IDS:
            if not valid:
                continue
            created = self.put(account_id)
            self.assertEqual(201, created.status_code, (account_id,
                                                        created.text))
            got = requests.get(self.account_url(account_id))
            self.assertEqual(200, got.status_code, account_id)
            self.assertEqual(account_id, got.json()['id'])

    def test_an_encoded_path_separator_is_refused_with_400(self):
        response = self.put('resel/sub/acct')
        self.assertEqual(400, response.status_code, response.text)
        self.assertEqual('account_id', response.json()['field'])
        self.assertEqual('resel/sub/acct', response.json()['value'])

    def test_a_literal_path_separator_is_refused_with_400(self):
        response = requests.put(self.url + 'resel/sub/acct', json={})
        self.assertEqual(400, response.status_code, response.text)
        self.assertEqual('resel/sub/acct', response.json()['value'])

    def test_an_empty_id_is_refused_with_400(self):
        response = requests.put(self.url + '/action/move?dest=x')
        self.assertEqual(400, response.status_code, response.text)
        self.assertEqual('account_id', response.json()['field'])

    def test_255_characters_are_accepted_and_256_refused(self):
        self.assertEqual(201, self.put('\u03a3' * 255).status_code)
        response = self.put('\u03a3' * 256)
        self.assertEqual(400, response.status_code)
        self.assertIn('at most 255', response.json()['message'])

    def test_a_segment_that_is_not_utf8_is_refused_with_400(self):
        response = requests.put(self.url + 'bad%FF', json={})
        self.assertEqual(400, response.status_code, response.text)
        self.assertIn('UTF-8', response.json()['message'])

    def test_a_unicode_id_holds_placement_consumers(self):
        account_id = '\u03a3\u221e\u0394\u03a0-' + self.run_id
        self.consumer(account_id, 3)
        self.put(account_id)
        got = requests.get(self.account_url(account_id))
        self.assertEqual(3, got.json()['usage']['placement']['resources'][
            'VCPU'])
        self.assertEqual(parse.quote(account_id, safe=''),
                         got.headers['X-Account-Id'])


class TestConditionalMoves(AdminAPITestCase):

    def setUp(self):
        super().setUp()
        self.source = self.name('src')
        self.dest = self.name('dst')
        self.put(self.source)
        self.put(self.dest)

    def move_url(self, *consumer):
        path = ['consumers', consumer[0]] if consumer else []
        return '%s?dest=%s' % (self.account_url(
            self.source, *(path + ['action', 'move'])),
            parse.quote(self.dest, safe=''))

    def test_an_allocation_changed_after_get_makes_the_post_412(self):
        consumer = self.consumer(self.source, 2)
        etag = requests.get(self.move_url(consumer)).headers['ETag']
        # Another service (Nova resizing the server) changes the consumer.
        body = self.client.get('/allocations/%s' % consumer)
        self.client.put('/allocations/%s' % consumer, {
            'allocations': {self.node: {'resources': {'VCPU': 3}}},
            'project_id': self.source, 'user_id': 'u',
            'consumer_generation': body['consumer_generation'],
            'consumer_type': 'INSTANCE'})
        response = requests.post(self.move_url(consumer),
                                 headers={'If-Match': etag},
                                 allow_redirects=False)
        self.assertEqual(412, response.status_code, response.text)
        self.assertEqual(self.source, self.project_of(consumer))

    def test_a_new_consumer_after_get_makes_a_move_all_412(self):
        first = self.consumer(self.source, 1)
        etag = requests.get(self.move_url()).headers['ETag']
        self.consumer(self.source, 1)
        response = requests.post(self.move_url(), headers={'If-Match': etag},
                                 allow_redirects=False)
        self.assertEqual(412, response.status_code, response.text)
        self.assertEqual(self.source, self.project_of(first))

    def test_a_consumer_swapped_after_get_makes_a_move_all_412(self):
        # The same usage, other consumers: the POST reads the listed ones
        # again, sees one gone, and looks at every consumer.
        gone = self.consumer(self.source, 1)
        kept = self.consumer(self.source, 1)
        etag = requests.get(self.move_url()).headers['ETag']
        self.client.delete('/allocations/%s' % gone)
        self.consumer(self.source, 1)
        response = requests.post(self.move_url(), headers={'If-Match': etag},
                                 allow_redirects=False)
        self.assertEqual(412, response.status_code, response.text)
        self.assertEqual(self.source, self.project_of(kept))

    def test_a_conditional_move_all_rereads_only_what_it_listed(self):
        consumers = [self.consumer(self.source, 1) for _ in range(3)]
        self.consumer(self.name('other'), 1)
        etag = requests.get(self.move_url()).headers['ETag']
        before = self.client.calls
        response = requests.post(self.move_url(), headers={'If-Match': etag},
                                 allow_redirects=False)
        self.assertEqual(303, response.status_code, response.text)
        # GET /usages, the 3 consumers again, one POST /allocations.
        self.assertEqual(1 + 3 + 1, self.client.calls - before)
        self.assertEqual([self.dest] * 3,
                         [self.project_of(c) for c in consumers])

    def test_a_move_all_of_an_account_without_consumers_reads_its_usage(self):
        before = self.client.calls
        response = requests.get(self.move_url())
        self.assertEqual(200, response.status_code, response.text)
        self.assertEqual(0, response.json()['move']['resources']['consumers'])
        self.assertEqual(1, self.client.calls - before)

    def test_an_unchanged_move_all_moves_every_consumer(self):
        consumers = [self.consumer(self.source, 1) for _ in range(3)]
        etag = requests.get(self.move_url()).headers['ETag']
        response = requests.post(self.move_url(), headers={'If-Match': etag},
                                 allow_redirects=False)
        self.assertEqual(303, response.status_code, response.text)
        self.assertEqual([self.dest] * 3,
                         [self.project_of(c) for c in consumers])

    def test_a_consumer_changed_during_the_write_moves_nothing(self):
        # Placement's own generation check: the write carries the
        # generations the move action read, so a change between the read
        # and the write refuses every consumer of the POST /allocations.
        a = self.consumer(self.source, 1)
        b = self.consumer(self.source, 1)
        action = self.accounts.move_action(self.source, self.dest)
        body = self.client.get('/allocations/%s' % b)
        self.client.put('/allocations/%s' % b, {
            'allocations': {self.node: {'resources': {'VCPU': 2}}},
            'project_id': self.source, 'user_id': 'u',
            'consumer_generation': body['consumer_generation'],
            'consumer_type': 'INSTANCE'})
        self.assertRaises(errors.PreconditionFailed, self.accounts._apply,
                          self.source, self.dest, action)
        self.assertEqual([self.source, self.source],
                         [self.project_of(a), self.project_of(b)])


class TestLeaseMoves(AdminAPITestCase):

    def setUp(self):
        super().setUp()
        self.source = self.name('src')
        self.dest = self.name('dst')
        self.put(self.source)
        self.put(self.dest, {'limits': {'hosts': 3}})
        self.ledger = self.services.ledger

    def lease(self, project_id, hosts, lease_id=None):
        now = self.ledger.clock()
        start = now + datetime.timedelta(hours=1)
        end = start + datetime.timedelta(hours=2)
        lease_id = lease_id or str(uuid.uuid4())
        with self.ledger.transaction([project_id]) as txn:
            txn.insert(project_id=project_id, lease_id=lease_id,
                       provisional_key=lease_id[:32], start_date=start,
                       end_date=end, state=models.PENDING,
                       amounts={'hosts': hosts}, lease={}, hourly_rate=0,
                       charged=0)
        return lease_id

    def move_url(self, lease_id):
        return '%s?dest=%s' % (self.account_url(
            self.source, 'leases', lease_id, 'action', 'move'),
            parse.quote(self.dest, safe=''))

    def test_a_lease_moves_to_the_destination_in_the_ledger(self):
        lease_id = self.lease(self.source, 2)
        response = requests.post(self.move_url(lease_id),
                                 allow_redirects=False)
        self.assertEqual(303, response.status_code, response.text)
        self.assertTrue(response.headers['Location'].endswith(
            '/leases/%s' % lease_id))
        moved = requests.get(
            self.account_url(self.dest, 'leases', lease_id))
        self.assertEqual(self.dest, moved.json()['lease']['project_id'])

    def test_a_lease_over_the_reserved_limit_is_refused_with_the_peak(self):
        self.lease(self.dest, 2)
        lease_id = self.lease(self.source, 2)
        response = requests.post(self.move_url(lease_id),
                                 allow_redirects=False)
        self.assertEqual(409, response.status_code, response.text)
        over = response.json()['over_limits'][0]
        self.assertEqual(('hosts', 3, 2, 2, 'reserved'),
                         (over['resource'], over['limit'], over['usage'],
                          over['moving'], over['kind']))
        self.assertEqual(4, over['peak']['amount'])
        still = requests.get(self.account_url(self.source, 'leases',
                                              lease_id))
        self.assertEqual(200, still.status_code)

    def test_the_account_usage_counts_its_open_leases(self):
        self.lease(self.dest, 2)
        got = requests.get(self.account_url(self.dest)).json()
        self.assertEqual(1, got['usage']['reservations']['pending'])
        self.assertEqual(2, got['usage']['reservations']['peak']['hosts'][
            'amount'])


class TestReportLimits(AdminAPITestCase):
    """The report by project of ``GET /v1/{account}/report``: the limit
    of a resource the account does not limit is the one ``[limits]``
    holds now (here the registered ``hosts`` limit, 10)."""

    def report(self, account_id):
        response = requests.get(self.account_url(account_id, 'report'),
                                params={'start': '2026-06-01',
                                        'end': '2026-07-01'})
        self.assertEqual(200, response.status_code, response.text)
        return response.json()['rows']

    def test_a_resource_the_account_does_not_limit_has_the_sources_limit(
            self):
        account = self.name('open')
        self.assertEqual(201, self.put(account).status_code)
        row, = self.report(account)
        self.assertEqual((10, 'now'), (row['limit_hosts'],
                                       row['limit_hosts_as_of']))

    def test_the_accounts_own_limit_wins_over_the_sources(self):
        account = self.name('closed')
        self.assertEqual(201, self.put(account, {'limits': {'hosts': 4}})
                         .status_code)
        row, = self.report(account)
        self.assertEqual(4, row['limit_hosts'])
