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
"""Flavors for tests that do not run nova-api: a catalog of
:class:`~placement_quota.lease.flavor_rules.Flavor` with the interface
of :class:`~placement_quota.nova.flavors.FlavorReader` (``get``,
``prefetch``, ``reads``), answering an unknown ID as Nova does (the same
:class:`~placement_quota.nova.flavors.FlavorNotFound`). Tests against the
real Nova API use ``FlavorReader`` on the nova-api fixture instead."""

from placement_quota.lease import flavor_rules
from placement_quota.nova import flavors as flavors_mod

#: 4 VCPU, 8 GiB, 40 GiB root + 10 ephemeral, 2 GiB swap.
MEDIUM = flavor_rules.Flavor(id='medium', name='m1.medium', vcpus=4,
                             ram=8192, disk=40, ephemeral=10, swap=2048)
#: 2 dedicated CPUs (PCPU), 4 GiB, 20 GiB, one GPU.
PINNED_GPU = flavor_rules.Flavor(
    id='pinned-gpu', name='pinned.gpu', vcpus=2, ram=4096, disk=20,
    extra_specs={'hw:cpu_policy': 'dedicated', 'resources:CUSTOM_GPU': '1',
                 'trait:HW_CPU_X86_AVX2': 'required'})
#: MEDIUM's size on a host with AVX-512 (a required trait).
NEEDS_AVX512 = flavor_rules.Flavor(
    id='needs-avx512', name='m1.avx512', vcpus=4, ram=8192, disk=40,
    ephemeral=10, extra_specs={'trait:HW_CPU_X86_AVX512F': 'required'})
#: MEDIUM's size on a host without SGX (a forbidden trait).
NO_SGX = flavor_rules.Flavor(
    id='no-sgx', name='m1.nosgx', vcpus=4, ram=8192, disk=40, ephemeral=10,
    extra_specs={'trait:HW_CPU_X86_SGX': 'forbidden'})
#: An extra spec that is not a whole number.
MALFORMED = flavor_rules.Flavor(
    id='malformed', name='bad', vcpus=1, ram=512, disk=1,
    extra_specs={'resources:VCPU': 'lots'})


class StaticFlavors:
    """A fixed flavor catalog, read like Nova."""

    def __init__(self, *flavors):
        self.flavors = {f.id: f for f in flavors or (MEDIUM, PINNED_GPU,
                                                     MALFORMED)}
        self.reads = 0

    def get(self, flavor_id):
        self.reads += 1
        try:
            return self.flavors[flavor_id]
        except KeyError:
            raise flavors_mod.FlavorNotFound(
                'Flavor %s does not exist in Nova (GET /flavors/%s answered '
                '404); a flavor:instance reservation needs a flavor Nova '
                'knows.' % (flavor_id, flavor_id), flavor_id) from None

    def prefetch(self, flavor_ids):
        return flavors_mod.Prefetched({i: self.get(i)
                                       for i in sorted(set(flavor_ids))})


def set_traits(client, provider_uuid, *traits):
    """Give a Placement resource provider exactly these traits."""
    path = '/resource_providers/%s' % provider_uuid
    generation = client.get(path)['generation']
    client.put(path + '/traits', json={
        'traits': list(traits), 'resource_provider_generation': generation})


def flavor_instances(amount, flavor_id='medium', hosts=()):
    """A ``flavor:instance`` reservation as Blazar's flavor plugin sends
    it: ``amount`` instances of ``flavor_id``, one host allocation per
    instance."""
    return {'resource_type': 'flavor:instance', 'amount': amount,
            'flavor_id': flavor_id, 'affinity': None,
            'allocations': [{'id': h, 'hypervisor_hostname': h}
                            for h in hosts]}
