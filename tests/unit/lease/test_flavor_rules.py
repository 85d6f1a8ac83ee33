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
"""The two flavor rules, each proven against its upstream source on
generated flavors: Blazar's ``FlavorPlugin._estimate_flavor_resources``
(what Blazar reserves in Placement) and Nova's
``nova.scheduler.utils.resources_from_flavor`` (what Nova counts), called
for real (Nova in a process of its own, tests/nova_rule_worker.py, on an
in-memory database with the instances' real root block device
mappings)."""

import json
import os
import subprocess
import sys
import uuid

from blazar.plugins.flavor import flavor_plugin
import hypothesis
from hypothesis import strategies as st
import testtools

from placement_quota.lease import flavor_rules

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

SETTINGS = hypothesis.settings(max_examples=150, deadline=None,
                               suppress_health_check=list(
                                   hypothesis.HealthCheck))

_CLASSES = ['VCPU', 'MEMORY_MB', 'DISK_GB', 'CUSTOM_GPU', 'CUSTOM_FPGA']


@st.composite
def flavors(draw):
    """Well-formed flavors: sizes, swap, CPU policies, emulator threads,
    resources[<group>]:<class> overrides and traits."""
    specs = {}
    policy = draw(st.sampled_from([None, 'shared', 'dedicated']))
    if policy:
        specs['hw:cpu_policy'] = policy
    if policy == 'dedicated' and draw(st.booleans()):
        specs['hw:emulator_threads_policy'] = draw(
            st.sampled_from(['share', 'isolate']))
    classes = _CLASSES if policy != 'dedicated' else _CLASSES[1:]
    for rc in draw(st.lists(st.sampled_from(classes), unique=True,
                            max_size=3)):
        specs['resources:%s' % rc] = str(draw(st.integers(0, 64)))
    if draw(st.booleans()):
        specs['resources1:CUSTOM_NIC'] = str(draw(st.integers(0, 4)))
    for trait in draw(st.lists(st.sampled_from(
            ['HW_CPU_X86_AVX2', 'CUSTOM_FAST']), unique=True, max_size=2)):
        specs['trait:%s' % trait] = draw(st.sampled_from(
            ['required', 'forbidden']))
    return flavor_rules.Flavor(
        id=str(uuid.uuid4()), vcpus=draw(st.integers(1, 64)),
        ram=draw(st.integers(1, 65536)), disk=draw(st.integers(0, 500)),
        ephemeral=draw(st.integers(0, 100)),
        swap=draw(st.sampled_from([0, 0, 512, 1024, 1500, 4096])),
        extra_specs=specs)


def blazar_flavor(flavor):
    """The flavor as Blazar's plugin sees it (novaclient's to_dict())."""
    return {'id': flavor.id, 'vcpus': flavor.vcpus, 'ram': flavor.ram,
            'disk': flavor.disk, 'OS-FLV-EXT-DATA:ephemeral':
            flavor.ephemeral, 'swap': flavor.swap or '',
            'extra_specs': dict(flavor.extra_specs)}


class TestBlazarRule(testtools.TestCase):

    @SETTINGS
    @hypothesis.given(flavors())
    def test_placement_resources_are_blazars(self, flavor):
        upstream = flavor_plugin.FlavorPlugin._estimate_flavor_resources(
            None, blazar_flavor(flavor))
        self.assertEqual(upstream, flavor_rules.placement_resources(flavor))

    def test_root_disk_counts_even_for_boot_from_volume(self):
        flavor = flavor_rules.Flavor(id='f', vcpus=1, ram=512, disk=20,
                                     ephemeral=5, swap=1024)
        self.assertEqual(25, flavor_rules.placement_resources(
            flavor)[0]['DISK_GB'])


class NovaRule:
    """The worker process running Nova's function."""

    def __init__(self):
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'tests.nova_rule_worker'], cwd=_ROOT,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True)
        ready = self.process.stdout.readline()
        if not ready:
            raise RuntimeError('the Nova worker did not start')

    def __call__(self, flavor, bfv=False):
        self.process.stdin.write(json.dumps(dict(
            vcpus=flavor.vcpus, ram=flavor.ram, disk=flavor.disk,
            ephemeral=flavor.ephemeral, swap=flavor.swap, bfv=bfv,
            extra_specs=dict(flavor.extra_specs))) + '\n')
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self):
        self.process.stdin.close()
        self.process.wait(30)


class TestNovaRule(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.nova = NovaRule()

    @classmethod
    def tearDownClass(cls):
        cls.nova.close()
        super().tearDownClass()

    @SETTINGS
    @hypothesis.given(flavors())
    def test_nova_resources_are_novas(self, flavor):
        self.assertEqual(self.nova(flavor),
                         flavor_rules.nova_resources(flavor))

    @SETTINGS
    @hypothesis.given(flavors())
    def test_boot_from_volume_leaves_the_root_disk_out(self, flavor):
        self.assertEqual(self.nova(flavor, bfv=True),
                         flavor_rules.nova_resources(flavor, is_bfv=True))


class TestWhereTheRulesDiffer(testtools.TestCase):
    """The flavors on which Blazar's reservation and Nova's count differ
    (doc/source/policies.rst lists them)."""

    def both(self, **specs):
        flavor = flavor_rules.Flavor(
            id='f', vcpus=2, ram=1024, disk=10, ephemeral=5,
            swap=specs.pop('swap', 0), extra_specs=specs)
        blazar, _ = flavor_rules.placement_resources(flavor)
        return ({rc: v for rc, v in blazar.items() if v},
                flavor_rules.nova_resources(flavor))

    def test_plain_flavor_is_the_same(self):
        blazar, nova = self.both()
        self.assertEqual(blazar, nova)

    def test_swap_counts_for_nova_only(self):
        blazar, nova = self.both(swap=1500)
        self.assertEqual((15, 17), (blazar['DISK_GB'], nova['DISK_GB']))

    def test_granular_groups_count_for_nova_only(self):
        blazar, nova = self.both(**{'resources1:CUSTOM_NIC': '2'})
        self.assertNotIn('CUSTOM_NIC', blazar)
        self.assertEqual(2, nova['CUSTOM_NIC'])

    def test_isolated_emulator_threads_take_one_more_pcpu_for_nova(self):
        blazar, nova = self.both(**{'hw:cpu_policy': 'dedicated',
                                    'hw:emulator_threads_policy':
                                    'isolate'})
        self.assertEqual((2, 3), (blazar['PCPU'], nova['PCPU']))


class TestMalformedFlavors(testtools.TestCase):
    """What either service would miscount is refused, naming the spec."""

    def assertMalformed(self, spec, value, fragment):
        flavor = flavor_rules.Flavor(id='f', vcpus=1, ram=1, disk=1,
                                     extra_specs={spec: value})
        for rule in (flavor_rules.placement_resources,
                     flavor_rules.nova_resources):
            error = self.assertRaises(flavor_rules.MalformedFlavor, rule,
                                      flavor)
            self.assertEqual('extra spec %s' % spec, error.field)
            self.assertIn(fragment, str(error))

    def test_amount_not_a_number(self):
        self.assertMalformed('resources:VCPU', 'two', 'not a whole number')

    def test_negative_amount(self):
        self.assertMalformed('resources:DISK_GB', '-1', 'from 0')

    def test_unknown_class(self):
        self.assertMalformed('resources:GPU', '1', 'no valid resource class')

    def test_trait_value(self):
        self.assertMalformed('trait:CUSTOM_X', 'preferred', '"required"')

    def test_cpu_policy(self):
        self.assertMalformed('hw:cpu_policy', 'fast', 'must be one of')

    def test_mixed_cpu_policy_is_not_counted(self):
        self.assertMalformed('hw:cpu_policy', 'mixed', 'not counted here')

    def test_memory_encryption_is_not_counted(self):
        self.assertMalformed('hw:mem_encryption', 'true', 'not counted')

    def test_sizes_must_be_whole_numbers(self):
        error = self.assertRaises(
            flavor_rules.MalformedFlavor, flavor_rules.Flavor.from_dict,
            {'id': 'f', 'vcpus': 'x', 'ram': 1, 'disk': 1})
        self.assertEqual('vcpus', error.field)
