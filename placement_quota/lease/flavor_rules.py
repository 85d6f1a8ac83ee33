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
"""What one instance of a Nova flavor takes, by two rules (pure code).

A ``flavor:instance`` reservation names a Nova flavor; two different
amounts come out of it:

* :func:`placement_resources`: what Blazar reserves in Placement for one
  instance, the rule of Blazar's ``FlavorPlugin._estimate_flavor_resources``:
  ``VCPU`` = vcpus, ``MEMORY_MB`` = ram, ``DISK_GB`` = root + ephemeral
  (the root disk even for an instance that will boot from volume), ``PCPU``
  = vcpus and ``VCPU`` = 0 with ``hw:cpu_policy=dedicated``, then every
  ``resources:<CLASS>`` extra spec overriding its class, and
  ``trait:<NAME>`` = ``required`` / ``forbidden``. Used by
  ``PlacementCapacityFilter`` and ``CreditFilter``.
* :func:`nova_resources`: what Nova counts once the instances boot, the
  rule of Nova's ``nova.scheduler.utils.resources_from_flavor`` (unified
  limits count these): ``resources[<group>]:<CLASS>`` of every request
  group added together, ``PCPU`` = vcpus (+1 with
  ``hw:emulator_threads_policy=isolate``) for ``hw:cpu_policy=dedicated``,
  ``VCPU`` = vcpus when neither ``VCPU`` nor ``PCPU`` is asked,
  ``MEMORY_MB`` = ram, ``DISK_GB`` = ephemeral + swap in GiB rounded up +
  root (not for boot from volume) unless overridden, zeros left out. Used by
  ``NovaQuotaFilter`` (and so by the ledger's ``class:*`` amounts).

They differ on: swap (Nova counts it in ``DISK_GB``, Blazar does not);
granular groups ``resources<N>:<CLASS>`` (Nova adds them, Blazar ignores
them); ``hw:emulator_threads_policy=isolate`` (one more ``PCPU`` for Nova);
``hw:cpu_policy=dedicated`` with a ``resources:PCPU`` override (Nova
counts ``vcpus``, Blazar the override); a ``resources:<CLASS>=0`` (Blazar
reserves no such class, Nova then adds its default ``VCPU``, ``MEMORY_MB``
or ``DISK_GB`` only when the class is absent, so a zero override stays
zero for both); boot from volume (Nova leaves the root disk out; a
reservation does not know, so :func:`nova_resources` counts it, as for an
image-backed instance).

Where the two services disagree about a malformed extra spec (Nova skips
it with a warning, Blazar fails or reserves it as written), both rules here
raise :class:`MalformedFlavor` naming the extra spec: a flavor is never
counted as less than it takes. Extra specs that make Nova ask for more
resources in ways not modelled here (``hw:cpu_policy=mixed``,
``hw:mem_encryption``, ``hw:pmem``) raise it too.
"""

import dataclasses
import math
import re
import types
from typing import Mapping

import os_resource_classes as orc

#: Nova's ``ResourceRequest.XS_KEYPAT``: resources or trait, an optional
#: group suffix, the class or trait.
EXTRA_SPEC_KEY = re.compile(r"^(resources|trait)([a-zA-Z0-9_-]{1,64})?:(.*)$")
#: A custom resource class (Placement's rule).
CUSTOM_CLASS = re.compile(r'^CUSTOM_[A-Z0-9_]+$')
#: The largest amount of one resource class of one instance.
MAX_AMOUNT = 2 ** 31 - 1

CPU_POLICIES = ('shared', 'dedicated', 'mixed')
EMULATOR_THREADS_POLICIES = ('share', 'isolate')
TRAIT_VALUES = ('required', 'forbidden')
_FALSE = ('0', 'false', 'no', 'off', 'n', 'f')


class MalformedFlavor(ValueError):
    """A flavor whose resources cannot be counted; names the flavor and
    the extra spec (or field) at fault."""

    def __init__(self, flavor_id, field, reason, value=None):
        self.flavor_id = flavor_id
        self.field = field
        self.reason = reason
        self.value = value
        super().__init__('Flavor %s: %s %s (%r).'
                         % (flavor_id, field, reason, value))


@dataclasses.dataclass(frozen=True)
class Flavor:
    """The fields of a Nova flavor the rules read."""

    id: str
    vcpus: int
    ram: int
    disk: int
    ephemeral: int = 0
    swap: int = 0
    name: str = None
    extra_specs: Mapping = dataclasses.field(default_factory=dict)

    @classmethod
    def from_dict(cls, body):
        """From Nova's flavor JSON (``OS-FLV-EXT-DATA:ephemeral``, ``swap``
        as ``""`` for none, ``extra_specs``) or an openstacksdk flavor's
        ``to_dict()``; raises :class:`MalformedFlavor` for a field that
        is not a whole number from 0 to 2147483647."""
        flavor_id = str(body.get('id'))

        def number(name, *keys):
            for key in keys:
                value = body.get(key)
                if value is not None and value != '':
                    break
            else:
                return 0
            try:
                if isinstance(value, bool) or int(value) != value and (
                        not isinstance(value, str)):
                    raise ValueError
                found = int(value)
            except (TypeError, ValueError):
                raise MalformedFlavor(flavor_id, name, 'is not a whole '
                                      'number', value)
            if not 0 <= found <= MAX_AMOUNT:
                raise MalformedFlavor(flavor_id, name, 'is not from 0 to '
                                      '%d' % MAX_AMOUNT, value)
            return found

        specs = body.get('extra_specs') or {}
        if not isinstance(specs, Mapping):
            raise MalformedFlavor(flavor_id, 'extra_specs', 'is not an '
                                  'object', specs)
        return cls(id=flavor_id, name=body.get('name'),
                   vcpus=number('vcpus', 'vcpus'),
                   ram=number('ram', 'ram'),
                   disk=number('disk', 'disk'),
                   ephemeral=number('ephemeral', 'OS-FLV-EXT-DATA:ephemeral',
                                    'ephemeral'),
                   swap=number('swap', 'swap'),
                   extra_specs=types.MappingProxyType(
                       {str(k): v for k, v in specs.items()}))

    def bad_spec(self, key, reason):
        return MalformedFlavor(self.id, 'extra spec %s' % key, reason,
                               self.extra_specs.get(key))


def _amount(flavor, key, value):
    """An extra spec's resource amount: a whole number >= 0."""
    try:
        if isinstance(value, bool):
            raise ValueError
        amount = int(value)
    except (TypeError, ValueError):
        raise flavor.bad_spec(key, 'is not a whole number')
    if not 0 <= amount <= MAX_AMOUNT:
        raise flavor.bad_spec(key, 'is not from 0 to %d' % MAX_AMOUNT)
    return amount


def _check_specs(flavor):
    """Refuse what either rule would miscount; ``(resource specs, traits)``
    as ``[(group, class, amount)]`` and ``{trait: value}`` (unsuffixed)."""
    specs = flavor.extra_specs
    resources = []
    traits = {}
    for key, value in specs.items():
        match = EXTRA_SPEC_KEY.match(key)
        if not match:
            if key.startswith(('resources', 'trait')) and ':' in key:
                raise flavor.bad_spec(key, 'has a malformed group suffix')
            continue
        prefix, group, name = match.groups()
        if prefix == 'resources':
            if not (name in orc.STANDARDS or CUSTOM_CLASS.match(name)):
                raise flavor.bad_spec(key, 'names no valid resource class')
            resources.append((group, name, _amount(flavor, key, value)))
        else:
            if value not in TRAIT_VALUES:
                raise flavor.bad_spec(key, 'must be "required" or '
                                      '"forbidden"')
            if group is None:
                traits[name] = value
    policy = specs.get('hw:cpu_policy')
    if policy is not None and policy not in CPU_POLICIES:
        raise flavor.bad_spec('hw:cpu_policy', 'must be one of %s'
                              % ', '.join(CPU_POLICIES))
    if policy == 'mixed':
        raise flavor.bad_spec('hw:cpu_policy', 'is "mixed", whose split '
                              'between VCPU and PCPU is not counted here')
    emulator = specs.get('hw:emulator_threads_policy')
    if emulator is not None and emulator not in EMULATOR_THREADS_POLICIES:
        raise flavor.bad_spec('hw:emulator_threads_policy', 'must be one '
                              'of %s' % ', '.join(EMULATOR_THREADS_POLICIES))
    if emulator is not None and policy != 'dedicated':
        raise flavor.bad_spec('hw:emulator_threads_policy', 'needs '
                              'hw:cpu_policy=dedicated')
    if policy == 'dedicated' and any(
            rc in ('VCPU', 'PCPU') for _, rc, _ in resources):
        raise flavor.bad_spec('hw:cpu_policy', 'is "dedicated" and a '
                              'resources:VCPU or resources:PCPU extra spec '
                              'asks for CPUs too (Nova refuses the mix)')
    for key in ('hw:mem_encryption', 'hw:pmem'):
        value = specs.get(key)
        if value is not None and str(value).strip().lower() not in _FALSE:
            raise flavor.bad_spec(key, 'asks for resources that are not '
                                  'counted here')
    return resources, traits


def placement_resources(flavor):
    """``({class: amount}, {trait: 'required'|'forbidden'})`` Blazar
    reserves in Placement for one instance of ``flavor`` (zero amounts
    left in, as Blazar keeps them)."""
    resources, traits = _check_specs(flavor)
    request = {'VCPU': flavor.vcpus, 'MEMORY_MB': flavor.ram,
               'DISK_GB': flavor.disk + flavor.ephemeral}
    if flavor.extra_specs.get('hw:cpu_policy') == 'dedicated':
        request['PCPU'] = flavor.vcpus
        request['VCPU'] = 0
    for group, rc, amount in resources:
        if group is None:
            request[rc] = amount
    return request, traits


def nova_resources(flavor, is_bfv=False):
    """``{class: amount}`` Nova counts for one instance of ``flavor``
    (zero amounts left out)."""
    resources, _ = _check_specs(flavor)
    groups = {}
    for group, rc, amount in resources:
        groups.setdefault(group, {})[rc] = amount
    specs = flavor.extra_specs
    if specs.get('hw:cpu_policy') == 'dedicated':
        pcpus = flavor.vcpus
        if specs.get('hw:emulator_threads_policy') == 'isolate':
            pcpus += 1
        groups.setdefault(None, {})['PCPU'] = pcpus
    merged = {}
    for group in groups.values():
        for rc, amount in group.items():
            merged[rc] = merged.get(rc, 0) + amount
    if 'VCPU' not in merged and 'PCPU' not in merged:
        merged['VCPU'] = flavor.vcpus
    if 'MEMORY_MB' not in merged:
        merged['MEMORY_MB'] = flavor.ram
    if 'DISK_GB' not in merged:
        merged['DISK_GB'] = (flavor.ephemeral + math.ceil(flavor.swap / 1024)
                             + (0 if is_bfv else flavor.disk))
    return {rc: amount for rc, amount in merged.items() if amount}
