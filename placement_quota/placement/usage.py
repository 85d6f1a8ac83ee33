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
"""Project usage from Placement, in the names of Keystone limits.

A usage source for :class:`placement_quota.limits.Enforcer` and
``placement-quota tree show|check --usage-from placement``: one
``GET /usages?project_id=`` per project, concurrently (bounded).

Resource names follow Nova's unified limits: ``class:VCPU`` is the usage of
the resource class ``VCPU``; ``servers`` is the number of consumers of type
``INSTANCE`` (Placement 1.38+). A bare resource class name (``VCPU``,
``CUSTOM_RESERVATION_X``) is read as its class too. Any other name (``cores``,
``hosts``: counted by other services) has no usage in Placement: 0.
"""

import re

from oslo_log import log as logging

from placement_quota.placement import usage_room

LOG = logging.getLogger(__name__)

CLASS_PREFIX = 'class:'
SERVERS = 'servers'
_RESOURCE_CLASS = re.compile(r'^[A-Z0-9_]+$')


def placement_class(resource):
    """The Placement resource class a limit resource name counts, or None.
    """
    if resource.startswith(CLASS_PREFIX):
        return resource[len(CLASS_PREFIX):]
    if _RESOURCE_CLASS.match(resource):
        return resource
    return None


def amounts(usages, resources):
    """``{resource: amount}`` from a :class:`capacity.ProjectUsages`."""
    found = {}
    for resource in resources:
        if resource == SERVERS:
            counts = usages.consumer_counts or {}
            found[resource] = counts.get('INSTANCE', 0)
            continue
        rc = placement_class(resource)
        found[resource] = 0 if rc is None else usages.resources.get(rc, 0)
    return found


class PlacementUsage:
    """``get_usage(project_ids, resources)`` read from Placement."""

    def __init__(self, client, max_workers=8):
        self.client = client
        self.max_workers = max_workers

    def get_usage(self, project_ids, resources):
        resources = list(resources)
        uncounted = [r for r in resources
                     if r != SERVERS and placement_class(r) is None]
        if uncounted:
            LOG.debug('Placement counts no usage of %s', ', '.join(uncounted))
        project_ids = list(project_ids)
        if not project_ids:
            return {}
        read = usage_room.read_all(
            lambda p: usage_room.project_usages(self.client, p), project_ids,
            self.max_workers)
        return {p: amounts(u, resources) for p, u in zip(project_ids, read)}
