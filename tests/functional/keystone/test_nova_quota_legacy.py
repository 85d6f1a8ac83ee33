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
"""Nova's legacy quota sets from the real Nova API (with the real
Keystone): the reader, and NovaQuotaFilter through our HTTP service."""

import testtools

from placement_quota.nova import quotas
from placement_quota import conf as pq_conf
from tests.builders import day
from tests.builders import hosts
from tests.builders import instances
from tests.builders import lease
from tests.fixtures import nova
from tests.functional.ledger import base


def nova_conf(fixture, conf=None, endpoint=None):
    """A configuration whose [nova] is the admin on ``fixture``'s API."""
    conf = conf or pq_conf.new_config([], config_files=[])
    fixture.keystone.set_admin_options(conf, 'nova')
    conf.set_override('endpoint_override', endpoint or fixture.endpoint,
                      'nova')
    return conf


class TestLegacyQuotas(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.nova = self.useFixture(nova.NovaAPIFixture())
        self.project = self.nova.keystone.create_project().id
        self.reader = quotas.LegacyQuotas.from_conf(nova_conf(self.nova))

    def test_limits_set_in_nova_are_read_back_with_usage(self):
        self.nova.set_quotas(self.project, instances=3, cores=8, ram=4096)
        found = self.reader.limits_and_usage(self.project)
        self.assertEqual({'instances': (3, 0), 'cores': (8, 0),
                          'ram': (4096, 0)},
                         {k: found[k] for k in ('instances', 'cores',
                                                'ram')})

    def test_unlimited_is_minus_one(self):
        self.nova.set_quotas(self.project, cores=-1)
        self.assertEqual((-1, 0),
                         self.reader.limits_and_usage(self.project)['cores'])

    def test_one_call_per_read(self):
        self.reader.limits_and_usage(self.project)
        self.assertEqual(1, self.reader.calls)

    def test_unreachable_nova_names_the_project_and_the_endpoint(self):
        reader = quotas.LegacyQuotas.from_conf(nova_conf(
            self.nova, endpoint='http://127.0.0.1:9/v2.1'))
        error = self.assertRaises(quotas.QuotaSourceError,
                                  reader.limits_and_usage, self.project)
        self.assertIn(self.project, str(error))
        self.assertIn('http://127.0.0.1:9/v2.1', str(error))

    def test_unconfigured_nova_says_which_options_to_set(self):
        error = self.assertRaises(quotas.QuotaSourceError,
                                  quotas.LegacyQuotas.from_conf,
                                  pq_conf.new_config([], config_files=[]))
        self.assertIn('[nova]', str(error))


class TestNovaQuotaFilterLegacy(base.PolicyTestCase):

    placement = False
    filters = ['NovaQuotaFilter']
    options = {('enforcement', 'nova_quota_source'): 'legacy'}

    def setUp(self):
        super().setUp()
        self.nova = self.useFixture(nova.NovaAPIFixture())
        nova_conf(self.nova, self.conf)
        self.project = self.nova.keystone.create_project().id
        self.nova.set_quotas(self.project, instances=4, cores=8)

    def test_lease_within_the_quota_is_allowed(self):
        self.assertAllowed(self.create(lease(day(2), day(3),
                                             instances(2, vcpus=4))))

    def test_lease_over_the_cores_quota_is_denied(self):
        self.assertDenied(self.create(lease(day(2), day(3),
                                            instances(3, vcpus=4))),
                          'for cores', 'asks for 12', 'the quota is 8')

    def test_overlapping_reservations_add_up(self):
        self.create(lease(day(2), day(4), instances(1, vcpus=4), name='a'))
        self.assertDenied(self.create(lease(day(3), day(5),
                                            instances(2, vcpus=4),
                                            name='b')),
                          '4 already reserved at the peak')

    def test_reserved_hosts_count_against_instances(self):
        self.assertDenied(self.create(lease(day(2), day(3),
                                            hosts(*'abcde'))),
                          'for instances', 'asks for 5', 'the quota is 4')
