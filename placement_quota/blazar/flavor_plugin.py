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
"""Blazar's flavor-based reservation plugin (``flavor:instance``), with its
Placement writes made by :class:`~placement_quota.placement.reservations.
Transitions`: entry point ``flavor.instance.placement_quota``.

Blazar's ``FlavorPlugin`` unchanged, except that the instance plugin it
delegates lease start and end to is ours
(:class:`placement_quota.blazar.instance_plugin.VirtualInstancePlugin`) and
its reservation class is created through the same batching client.
"""

from blazar.plugins import base as blazar_base
from blazar.plugins.flavor import flavor_plugin
from blazar.plugins.oshosts import host_plugin

from placement_quota.blazar import instance_plugin
from placement_quota.blazar import placement


class FlavorPlugin(flavor_plugin.FlavorPlugin):
    """``flavor:instance`` with batched, atomic Placement writes."""

    title = ('Plugin for Nova flavor-based server reservations '
             '(placement-quota)')

    def __init__(self):
        # FlavorPlugin.__init__ less its stock instance plugin (whose
        # constructor registers a healing handler): ours instead.
        blazar_base.BasePlugin.__init__(self)
        self._placement_client = placement.BatchingPlacementClient()
        self._host_plugin = host_plugin.PhysicalHostPlugin()
        self._instance_plugin = instance_plugin.VirtualInstancePlugin()

    def _create_resources(self, instance_reservation):
        reservation_id = instance_reservation['reservation_id']
        with self._placement_client.batch():
            self._placement_client.prepare(
                reservation_id, instance_plugin.hostnames(reservation_id))
            return super()._create_resources(instance_reservation)
