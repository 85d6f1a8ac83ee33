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
"""Usage for the limits enforcer read from a real Placement."""

import uuid

from placement_quota.limits import enforcer as enforcer_mod
from placement_quota.limits import errors
from placement_quota.limits import sources
from placement_quota.limits import tree as tree_mod
from placement_quota.placement import usage
from tests.functional.placement import test_usage_room


class TestPlacementUsage(test_usage_room.PlacementTestCase):

    def setUp(self):
        super().setUp()
        self.rp = self.host(VCPU={'total': 64}, MEMORY_MB={'total': 65536})
        self.child = 'child-%s' % uuid.uuid4().hex
        self.source = usage.PlacementUsage(self.client)

    def test_class_names_read_the_resource_class_usage(self):
        self.allocate({self.rp: {'VCPU': 3, 'MEMORY_MB': 512}})
        self.assertEqual(
            {self.project: {'class:VCPU': 3, 'MEMORY_MB': 512}},
            self.source.get_usage([self.project],
                                  ['class:VCPU', 'MEMORY_MB']))

    def test_servers_counts_the_instance_consumers(self):
        self.allocate({self.rp: {'VCPU': 1}})
        self.allocate({self.rp: {'VCPU': 1}})
        self.allocate({self.rp: {'VCPU': 1}}, consumer_type='MIGRATION')
        self.assertEqual({self.project: {'servers': 2}},
                         self.source.get_usage([self.project], ['servers']))

    def test_a_name_placement_does_not_count_is_zero(self):
        self.allocate({self.rp: {'VCPU': 3}})
        self.assertEqual({self.project: {'cores': 0}},
                         self.source.get_usage([self.project], ['cores']))

    def test_every_project_is_read_once(self):
        self.client.version
        before = self.client.calls
        self.source.get_usage([self.project, self.child], ['class:VCPU'])
        self.assertEqual(2, self.client.calls - before)

    def test_the_naive_enforcer_refuses_over_the_tree_usage(self):
        self.allocate({self.rp: {'VCPU': 6}})
        self.allocate({self.rp: {'VCPU': 3}}, project=self.child)
        data = tree_mod.LimitData(
            registered_limits={'class:VCPU': 10},
            projects={self.project: tree_mod.Project(self.project),
                      self.child: tree_mod.Project(self.child,
                                                   self.project)})
        enforcer = enforcer_mod.Enforcer(sources.EmbeddedSource(data),
                                         usage=self.source, aggregate=False)
        enforcer.enforce(self.child, {'class:VCPU': 1})
        error = self.assertRaises(errors.ProjectOverLimit, enforcer.enforce,
                                  self.child, {'class:VCPU': 2})
        self.assertEqual(('tree', 9), (error.over_limits[0].scope,
                                       error.over_limits[0].tree_usage))
