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
"""Options for oslo-config-generator (entry point ``oslo.config.opts``,
namespace ``placement_quota``).

The options the enforcement filters declare (``enforcement_opts``) are
listed by :mod:`placement_quota.filters.opts`, namespace
``placement_quota.filters``: conf imports nothing above it.
"""

from placement_quota.conf import accounts
from placement_quota.conf import admin_api
from placement_quota.conf import api
from placement_quota.conf import enforcement
from placement_quota.conf import external
from placement_quota.conf import keystone
from placement_quota.conf import ledger
from placement_quota.conf import lifecycle
from placement_quota.conf import limits
from placement_quota.conf import nova
from placement_quota.conf import placement
from placement_quota.conf import reconcile
from placement_quota.conf import self_service
from placement_quota.conf import warnings
from placement_quota.conf import scheduler


def list_opts():
    """Every option of placement-quota's option groups, by group, for the
    sample config (the filters' own: :mod:`placement_quota.filters.opts`).
    """
    groups = {}
    for module in (accounts, admin_api, api, enforcement, external,
                   keystone, ledger, lifecycle, limits, nova, placement,
                   reconcile, self_service, warnings):
        groups.update(module.list_opts())
    groups.update(scheduler.list_opts())
    return [(group, opts) for group, opts in groups.items()]
