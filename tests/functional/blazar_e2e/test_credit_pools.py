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
"""Credit pools per resource class through stock Blazar 18 and
python-blazarclient: a project's VCPU pool pays its leases' VCPU-hours,
exactly to its balance, and gets them back when a lease is deleted.

Each lease is :func:`~tests.functional.blazar_e2e.base.
instance_reservation`'s one instance of 2 VCPUs: 2 VCPU-hours an hour
from the pool, and 1 credit an hour (the instance rate) from the general
allocation; the VCPU rate is not charged in credits.
"""

from placement_quota.ledger import store
from tests.functional.blazar_e2e import base


class TestCreditPools(base.BlazarE2ETestCase):

    def setUp(self):
        super().setUp()
        self.use_chain(['CreditFilter'], {
            'credit_pool_classes': 'VCPU', 'credit_instance_rate': 1.0,
            'credit_class_rates': {'VCPU': 1.0}})
        self.general = self.give_credits(100)

    def give_pool(self, hours):
        with self.env.ledger.transaction() as txn:
            return txn.add_allocation(self.project, store.to_micro(hours),
                                      resource_class='VCPU')

    def test_a_lease_using_exactly_the_pool_is_allowed(self):
        pool = self.give_pool(4)
        lease = self.create_lease(hours=2)
        self.bound_entry(lease['id'])
        self.assertEqual((4.0, 2.0), (self.spent(pool),
                                      self.spent(self.general)))

    def test_a_minute_past_the_pool_is_denied_naming_the_pool(self):
        pool = self.give_pool(4)
        message = self.assertDenied(lambda: self.create_lease(
            hours=121 / 60))
        self.assertIn('The lease uses 4.03 VCPU-hours (2 for 2.02 hours); '
                      'project %s has 4.00 left of its VCPU pool of 4.00.'
                      % self.project, message)
        self.assertEqual(0.0, self.spent(pool))

    def test_deleting_a_lease_refunds_its_pool(self):
        pool = self.give_pool(4)
        lease = self.create_lease(hours=2)
        self.bound_entry(lease['id'])
        self.client.lease.delete(lease['id'])
        base.wait_for('the refund of the VCPU pool',
                      lambda: self.spent(pool) == 0.0)
        self.assertEqual(0.0, self.spent(self.general))
