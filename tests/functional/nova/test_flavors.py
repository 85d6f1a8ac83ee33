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
"""flavor:instance reservations against the real Nova API (the noauth2
nova-api fixture): flavors created in Nova, read through openstacksdk by
the enforcement service (its WSGI app called in-process), the flavor cache
and its TTL, and the answers to bad input (400 naming the field, 403
naming the flavor, never 500 and never a zero count)."""

import json
import uuid

import webob

from placement_quota.api.enforcement import app as api_app
from placement_quota.nova import flavors
from placement_quota.conf import nova as nova_conf
from placement_quota import sessions
from tests.builders import day
from tests.builders import lease
from tests.fixtures import nova
from tests.flavor_helpers import flavor_instances
from tests.unit.filters import base

LIMITS = """\
model: flat
registered_limits: {servers: 100, class:VCPU: 16, class:DISK_GB: 1000}
"""


class TestFlavorsFromNova(base.LedgerTestCase):

    options = {('enforcement', 'nova_quota_source'): 'file',
               ('enforcement', 'nova_quota_include_usage'): False,
               ('enforcement', 'max_instances_per_lease'): 50}

    def setUp(self):
        super().setUp()
        self.nova = self.useFixture(nova.NovaAPIServer())
        self.clock = [0.0]
        self.reader = flavors.FlavorReader.from_endpoint(
            self.nova.endpoint, self.nova.headers, ttl=60)
        self.reader.clock = lambda: self.clock[0]
        self.services._flavors = self.reader
        path = self.tmp + '/nova.yaml'
        with open(path, 'w') as f:
            f.write(LIMITS)
        self.set(nova_quota_limits_file=path)
        self.app = api_app.make_app(self.conf, self.chain(
            'ReservationSizeFilter', 'NovaQuotaFilter'))

    def test_a_reader_from_the_configuration_keeps_64_connections(self):
        try:
            self.conf.nova.flavor_cache_ttl
        except Exception:
            nova_conf.register_opts(self.conf)
        self.set('nova', endpoint_override=self.nova.endpoint)
        reader = flavors.FlavorReader.from_conf(self.conf)
        adapter = reader.compute.session.session.adapters['http://']
        self.assertEqual(sessions.POOL_SIZE,
                         adapter.poolmanager.connection_pool_kw['maxsize'])

    def flavor(self, vcpus=4, ram=2048, disk=20, swap=0, **specs):
        url = self.nova.endpoint + '/flavors'
        body = {'flavor': {'name': 'f-%s' % uuid.uuid4().hex[:8],
                           'vcpus': vcpus, 'ram': ram, 'disk': disk,
                           'swap': swap}}
        found = self.nova.session.post(url, json=body,
                                       headers=self.nova.headers).json()
        flavor_id = found['flavor']['id']
        self.addCleanup(self.nova.session.delete, '%s/%s' % (url, flavor_id),
                        headers=self.nova.headers, raise_exc=False)
        if specs:
            self.set_specs(flavor_id, **specs)
        return flavor_id

    def set_specs(self, flavor_id, **specs):
        self.nova.session.post(
            '%s/flavors/%s/os-extra_specs' % (self.nova.endpoint, flavor_id),
            json={'extra_specs': specs}, headers=self.nova.headers)

    def post(self, body):
        body = {'lease': body, 'context': {'project_id': self.project,
                                           'user_id': 'u'}}
        req = webob.Request.blank('/v1/check-create', method='POST',
                                  body=json.dumps(body).encode('utf-8'),
                                  content_type='application/json')
        response = req.get_response(self.app)
        return response.status_int, (response.json if response.body
                                     else None)

    def test_flavor_is_resolved_and_counted(self):
        flavor_id = self.flavor(vcpus=4, ram=2048, disk=20, swap=1024)
        status, _ = self.post(lease(day(2), day(3),
                                    flavor_instances(3, flavor_id)))
        self.assertEqual(204, status)
        entry, = self.entries()
        self.assertEqual({'instances': 3, 'class:VCPU': 12,
                          'class:MEMORY_MB': 6144, 'class:DISK_GB': 63},
                         entry.amounts)
        status, body = self.post(lease(day(2), day(3), flavor_instances(
            2, flavor_id), name='b'))
        self.assertEqual(403, status)
        self.assertIn('for class:VCPU: the lease asks for 8', body['message'])

    def test_unknown_flavor_is_denied_naming_it(self):
        status, body = self.post(lease(day(2), day(3),
                                       flavor_instances(1, 'no-such')))
        self.assertEqual(403, status)
        self.assertIn('lease.reservations[0].flavor_id: Flavor no-such does '
                      'not exist in Nova', body['message'])
        self.assertIn('answered 404', body['message'])
        self.assertEqual([], self.live_entries())

    def test_malformed_extra_spec_is_denied_naming_it(self):
        flavor_id = self.flavor(**{'hw:cpu_policy': 'mixed',
                                   'hw:cpu_dedicated_mask': '^0'})
        status, body = self.post(lease(day(2), day(3),
                                       flavor_instances(1, flavor_id)))
        self.assertEqual(403, status)
        self.assertIn('extra spec hw:cpu_policy', body['message'])

    def test_cache_keeps_a_flavor_for_its_ttl_then_reads_it_again(self):
        flavor_id = self.flavor(vcpus=2)
        self.assertEqual(2, self.reader.get(flavor_id).vcpus)
        self.set_specs(flavor_id, **{'resources:VCPU': '6'})
        self.clock[0] = 59
        self.assertEqual({}, dict(self.reader.get(flavor_id).extra_specs))
        self.assertEqual(1, self.reader.reads)
        self.clock[0] = 61
        self.assertEqual('6', self.reader.get(flavor_id).extra_specs[
            'resources:VCPU'])
        self.assertEqual(2, self.reader.reads)

    def test_a_miss_reads_nova_and_not_found_is_never_cached(self):
        self.assertRaises(flavors.FlavorNotFound, self.reader.get, 'later')
        self.assertRaises(flavors.FlavorNotFound, self.reader.get, 'later')
        self.assertEqual(2, self.reader.reads)

    def test_bad_amounts_are_400_naming_the_field(self):
        flavor_id = self.flavor()
        for amount in (0, 2 ** 31, '2147483648', -1):
            status, body = self.post(lease(day(2), day(3), dict(
                flavor_instances(1, flavor_id), amount=amount)))
            self.assertEqual(400, status, amount)
            self.assertEqual('lease.reservations[0].amount', body['field'])

    def test_missing_flavor_id_is_400(self):
        reservation = flavor_instances(1)
        del reservation['flavor_id']
        status, body = self.post(lease(day(2), day(3), reservation))
        self.assertEqual(400, status)
        self.assertEqual('lease.reservations[0].flavor_id', body['field'])

    def test_size_limit_applies_to_flavor_instances(self):
        status, body = self.post(lease(day(2), day(3),
                                       flavor_instances(500, self.flavor())))
        self.assertEqual(403, status)
        self.assertIn('500 instances in all; at most 50', body['message'])
