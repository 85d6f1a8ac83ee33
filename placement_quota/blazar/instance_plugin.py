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
"""Blazar's instance reservation plugin (``virtual:instance``), with its
Placement writes made by :class:`~placement_quota.placement.reservations.
Transitions`: entry point ``virtual.instance.placement_quota``.

Everything else is Blazar's ``VirtualInstancePlugin`` unchanged: host
selection, flavors, server groups, aggregates, updates, healing. Each lease
event (reservation creation, update, start, end, healing) runs the stock
method inside one batch of :class:`~placement_quota.blazar.placement.
BatchingPlacementClient`: the class, providers and inventories it writes
reach Placement together at the end, in at most three calls whatever the
number of hosts, or not at all when the event fails.
"""

from blazar.db import api as db_api
from blazar.plugins.instances import instance_plugin

from placement_quota.blazar import placement


def hostnames(reservation_id):
    """The hypervisor host names of a reservation's host allocations."""
    return [db_api.host_get(a['compute_host_id'])['hypervisor_hostname']
            for a in db_api.host_allocation_get_all_by_values(
                reservation_id=reservation_id)]


class VirtualInstancePlugin(instance_plugin.VirtualInstancePlugin):
    """``virtual:instance`` with batched, atomic Placement writes."""

    title = 'Virtual Instance Plugin (placement-quota)'

    def __init__(self):
        super().__init__()
        self.placement_client = placement.BatchingPlacementClient(
            self.placement_client)

    def _create_resources(self, inst_reservation):
        reservation_id = inst_reservation['reservation_id']
        with self.placement_client.batch():
            self.placement_client.prepare(reservation_id,
                                          hostnames(reservation_id))
            return super()._create_resources(inst_reservation)

    def update_resources(self, reservation_id):
        with self.placement_client.batch():
            return super().update_resources(reservation_id)

    def on_start(self, resource_id):
        with self.placement_client.batch():
            return super().on_start(resource_id)

    def on_end(self, resource_id):
        with self.placement_client.batch():
            return super().on_end(resource_id)

    def heal_reservations(self, failed_resources, interval_begin,
                          interval_end):
        with self.placement_client.batch():
            return super().heal_reservations(failed_resources,
                                             interval_begin, interval_end)
