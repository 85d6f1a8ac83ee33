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
"""The lease scenario run with Blazar's plugins, then with ours, on the
same hosts (:mod:`tests.fixtures.blazar_manager`)."""

from tests.fixtures import blazar_manager

INSTANCE = {'resource_type': 'virtual:instance', 'amount': 2, 'vcpus': 1,
            'memory_mb': 512, 'disk_gb': 1, 'affinity': False,
            'resource_properties': ''}


def phase(plugins, flavor_id):
    """Steps of one phase: an instance reservation (I) and a flavor
    reservation (F) created, updated, started, updated, ended."""
    flavor = {'resource_type': 'flavor:instance', 'flavor_id': flavor_id,
              'amount': 2, 'affinity': None}
    return [
        {'op': 'use_plugins', 'plugins': list(plugins)},
        {'op': 'create_lease', 'label': 'create I', 'lease': 'I',
         'reservations': [dict(INSTANCE)]},
        # Later than I: Blazar's flavor plugin refuses hosts holding
        # instance reservations of the other type at the same time.
        {'op': 'create_lease', 'label': 'create F', 'lease': 'F',
         'start': 300, 'end': 360, 'reservations': [flavor]},
        {'op': 'update_lease', 'label': 'I amount 2->1 (pending)',
         'lease': 'I', 'reservations': {'0': {'amount': 1}}},
        {'op': 'start', 'label': 'start I', 'lease': 'I'},
        {'op': 'start', 'label': 'start F', 'lease': 'F'},
        {'op': 'update_lease', 'label': 'I amount 1->3 (active)',
         'lease': 'I', 'reservations': {'0': {'amount': 3}}},
        # Dates only: Blazar 18 reads the reservation's own flavor as the
        # lease owner, who gets access to it at the start (before, stock
        # Blazar fails with Nova's 404).
        {'op': 'update_lease', 'label': 'F end date later (active)',
         'lease': 'F', 'end': 390},
        {'op': 'update_lease', 'label': 'F amount 2->3 (refused)',
         'lease': 'F', 'reservations': {'0': {'amount': 3}},
         'may_fail': True},
        {'op': 'end', 'label': 'end I', 'lease': 'I'},
        {'op': 'end', 'label': 'end F', 'lease': 'F'},
    ]


def steps(flavor_id):
    """Hosts added (Blazar's host plugin), then our phase, then the
    stock one (ours first: its reservation providers are then as the host
    plugin made them, and every event shows the steady state)."""
    return ([{'op': 'use_plugins',
              'plugins': list(blazar_manager.STOCK_PLUGINS)},
             {'op': 'add_hosts'}] +
            phase(blazar_manager.OUR_PLUGINS, flavor_id) +
            phase(blazar_manager.STOCK_PLUGINS, flavor_id))


def phases(result):
    """``(ours, stock)``: the step records of each phase."""
    steps = result['steps'][2:]
    half = len(steps) // 2
    return steps[:half], steps[half:]
