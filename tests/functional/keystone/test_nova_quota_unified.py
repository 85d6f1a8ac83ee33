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
"""NovaQuotaFilter with Nova's unified limits: limits from the real
Keystone, usage from the real Placement, through our HTTP service."""

from tests.builders import day
from tests.builders import hosts
from tests.builders import instances
from tests.builders import lease
from tests.fixtures import keystone
from tests.functional.ledger import base


class TestNovaQuotaUnifiedLimits(base.PolicyTestCase):

    filters = ['NovaQuotaFilter']

    def setUp(self):
        super().setUp()
        self.keystone = self.useFixture(keystone.KeystoneFixture())
        self.keystone.set_admin_options(self.conf, 'keystone')
        identity = self.keystone.admin_conn.identity
        # A service of our own, so that tests sharing Keystone never read
        # each other's limits.
        service = identity.create_service(
            name=keystone.unique_name('pq-nova'), type='compute')
        self.addCleanup(identity.delete_service, service.id,
                        ignore_missing=True)
        self.conf.set_override('nova_quota_source', 'unified',
                               'enforcement')
        self.conf.set_override('nova_quota_service_id', service.id,
                               'enforcement')
        self.project = self.keystone.create_project().id
        for resource, default in (('servers', 5), ('class:VCPU', 16)):
            registered = identity.create_registered_limit(
                service_id=service.id, resource_name=resource,
                default_limit=default)
            self.addCleanup(identity.delete_registered_limit, registered.id,
                            ignore_missing=True)
        # Keystone's strict two-level model: a top-level project's limit
        # may not exceed the registered one (its domain's).
        created = identity.create_limit(
            service_id=service.id, project_id=self.project,
            resource_name='class:VCPU', resource_limit=12)
        self.addCleanup(identity.delete_limit, created.id,
                        ignore_missing=True)

    def test_lease_within_the_project_limit_is_allowed(self):
        self.assertAllowed(self.create(lease(day(2), day(3),
                                             instances(3, vcpus=4))))

    def test_lease_over_the_project_limit_is_denied(self):
        self.assertDenied(self.create(lease(day(2), day(3),
                                            instances(4, vcpus=4))),
                          'for class:VCPU', 'asks for 16',
                          'the quota is 12')

    def test_project_without_its_own_limit_gets_the_registered_one(self):
        other = self.keystone.create_project().id
        self.assertDenied(self.create(lease(day(2), day(3),
                                            instances(5, vcpus=4)),
                                      project=other),
                          'the quota is 16')

    def test_placement_usage_counts_against_the_limit(self):
        name, uuid = self.compute_node(vcpus=64)
        self.allocate(uuid, self.project, VCPU=6)
        self.assertDenied(self.create(lease(day(2), day(3),
                                            instances(2, vcpus=4))),
                          '6 in use now', 'the quota is 12')

    def test_reserved_hosts_count_against_the_servers_limit(self):
        self.assertDenied(self.create(lease(day(2), day(3),
                                            hosts(*'abcdef'))),
                          'for servers', 'asks for 6', 'the quota is 5')
