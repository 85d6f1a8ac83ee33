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
"""Our Blazar plugins in Blazar's own manager, against Blazar's.

Blazar's manager (``ManagerService``, PyPI's ``blazar``) loads the plugins
by name from ``blazar.resource.plugins`` and runs, on the same 4 compute
hosts (registered by Blazar's host plugin; Nova services and compute nodes
seeded through Nova's objects, their Placement providers as Nova makes
them), first with ``virtual.instance.placement_quota`` and
``flavor.instance.placement_quota``, then with Blazar's
``virtual.instance.plugin`` and ``flavor.instance.plugin``, the same
scenario (:mod:`.scenario`): an instance reservation created (2 instances,
anti-affinity), its amount lowered to 1, started, raised to 3 while
active, ended; a flavor reservation created (2 instances), started, its
end date moved, an amount change refused, ended. Real Keystone (trusts),
nova-api, Placement.

The manager is driven in a subprocess, step by step, calling the methods
its RPC server and event loop call (``create_lease``, ``update_lease``,
``_exec_event`` for ``start_lease`` / ``end_lease``): deterministic and
fast, where the API with the event loop would wait for due events. Every
step's Placement calls are counted on the wire.

One scenario run serves every test (about 80 s on 2 cores).
"""

import json

import testtools

from tests.fixtures import blazar_cloud
from tests.fixtures import blazar_manager
from tests.functional.blazar_plugins import scenario

HOSTS = ['pq-bp-%03d' % i for i in range(4)]
EVENTS = ('start I', 'start F', 'I amount 1->3 (active)', 'end I', 'end F')


class TestPluginsInBlazarManager(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.cloud = cloud = blazar_cloud.BlazarCloud()
        try:
            cloud.add_hosts(HOSTS)
            cls.result = blazar_manager.run(
                cloud.keystone.auth_url, cloud.blazar_user,
                cloud.scenario(HOSTS, scenario.steps(cloud.flavor_id)))
        except BaseException:
            cloud.close()
            raise
        cls.ours, cls.stock = scenario.phases(cls.result)

    @classmethod
    def tearDownClass(cls):
        cls.cloud.close()
        super().tearDownClass()

    def step(self, steps, label):
        found, = [s for s in steps if s['label'] == label]
        return found

    def test_blazar_loads_our_plugins_by_name(self):
        self.assertEqual({
            'physical:host':
                'blazar.plugins.oshosts.host_plugin:PhysicalHostPlugin',
            'virtual:instance':
                'placement_quota.blazar.instance_plugin:VirtualInstancePlugin',
            'flavor:instance':
                'placement_quota.blazar.flavor_plugin:FlavorPlugin'},
            self.ours[0]['plugins'])
        self.assertEqual(
            'blazar.plugins.instances.instance_plugin:VirtualInstancePlugin',
            self.stock[0]['plugins']['virtual:instance'])

    def test_every_step_leaves_what_blazars_plugins_leave(self):
        """Placement (providers, inventories with every field, aggregates,
        traits, classes), Nova (aggregates, reservation flavors and their
        access) and Blazar (statuses, instances per host) after each step
        are the stock plugins' exactly, and so is each step's outcome."""
        self.assertEqual([s['label'] for s in self.stock],
                         [s['label'] for s in self.ours])
        for ours, stock in zip(self.ours, self.stock):
            self.assertEqual(
                stock['error'] and stock['error'].split(':')[0],
                ours['error'] and ours['error'].split(':')[0], ours['label'])
            if ours['op'] != 'use_plugins':
                self.assertEqual(
                    json.dumps(stock['snapshot'], indent=1, sort_keys=True),
                    json.dumps(ours['snapshot'], indent=1, sort_keys=True),
                    'after %r' % ours['label'])

    def test_each_lease_event_is_at_most_three_placement_calls(self):
        for label in EVENTS:
            step = self.step(self.ours, label)
            self.assertLessEqual(step['placement_calls'], 3,
                                 (label, step['placement_requests']))
            writes = [r for r in step['placement_requests']
                      if r.startswith(('PUT /resource_providers',
                                       'DELETE /resource_providers'))]
            self.assertEqual([], writes, label)
        # Blazar's own: one or more calls per host and per write.
        self.assertGreater(self.step(self.stock, 'I amount 1->3 (active)')[
            'placement_calls'], 3)

    def test_start_update_end_of_the_instance_reservation(self):
        def inventories(label):
            snapshot = self.step(self.ours, label)['snapshot']['placement']
            return {name: rp['inventories'].get('CUSTOM_RESERVATION_I#0')
                    for name, rp in snapshot.items()
                    if name.startswith('blazar_')}

        started = inventories('start I')
        # Lowered to 1 before the start: one host, one instance.
        self.assertEqual([1], [i['total'] for i in started.values() if i])
        self.assertEqual({'total': 1, 'reserved': 0, 'min_unit': 1,
                          'max_unit': 1, 'step_size': 1,
                          'allocation_ratio': 1.0},
                         [i for i in started.values() if i][0])
        raised = inventories('I amount 1->3 (active)')
        # Anti-affinity: three hosts with one instance each.
        self.assertEqual([1, 1, 1], [i['total'] for i in raised.values()
                                     if i])
        self.assertEqual({None}, set(inventories('end I').values()))
        self.assertNotIn('CUSTOM_RESERVATION_I#0', self.step(
            self.ours, 'end I')['snapshot']['placement']['resource_classes'])

    def previous(self, label):
        labels = [s['label'] for s in self.ours]
        return self.ours[labels.index(label) - 1]['snapshot']

    def test_flavor_reservation_date_change_and_refused_amount(self):
        started = self.step(self.ours, 'start F')['snapshot']
        moved = self.step(self.ours, 'F end date later (active)')
        self.assertIsNone(moved['error'])
        before = self.previous('F end date later (active)')
        self.assertEqual(before['placement'], moved['snapshot']['placement'])
        self.assertEqual(before['nova'], moved['snapshot']['nova'])
        self.assertEqual(0, moved.get('placement_calls', 0))
        totals = [rp['inventories']['CUSTOM_RESERVATION_F#0']['total']
                  for name, rp in started['placement'].items()
                  if name != 'resource_classes' and
                  'CUSTOM_RESERVATION_F#0' in rp['inventories']]
        self.assertEqual(2, sum(totals))

        refused = self.step(self.ours, 'F amount 2->3 (refused)')
        self.assertTrue(refused['error'].startswith('NotImplemented'),
                        refused['error'])
        before = self.previous('F amount 2->3 (refused)')
        after = refused['snapshot']
        self.assertEqual(before['placement'], after['placement'])
        self.assertEqual(before['nova'], after['nova'])
        self.assertEqual(0, refused.get('placement_calls', 0))
        self.assertEqual(
            {'status': 'active', 'instances': {'host-000': 2}},
            after['blazar']['F']['reservations']['F#0'])

    def test_nothing_is_left_after_the_leases_end(self):
        end = self.step(self.ours, 'end F')['snapshot']
        self.assertEqual([], end['placement']['resource_classes'])
        for name, rp in end['placement'].items():
            if name.startswith('blazar_'):
                self.assertEqual({}, rp['inventories'], name)
        self.assertEqual({}, end['nova']['flavors'])
        self.assertEqual(['freepool'], sorted(end['nova']['aggregates']))
