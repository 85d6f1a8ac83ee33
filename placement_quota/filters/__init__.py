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
"""Enforcement filters: the protocol, the chain, and the filters we ship."""

from placement_quota.filters.base import BaseFilter  # noqa: F401
from placement_quota.filters.base import EnforcementDenied  # noqa: F401
from placement_quota.filters.placement_capacity import PlacementCapacityFilter
from placement_quota.filters.credit import CreditFilter
from placement_quota.filters.extension_window import ExtensionWindowFilter
from placement_quota.filters.external import ExternalServiceFilter
from placement_quota.filters.lease_count import LeaseCountFilter
from placement_quota.filters.max_length import MaxLeaseDurationFilter
from placement_quota.filters.max_length import \
    MaximumReservationLengthFilter
from placement_quota.filters.nova_quota import NovaQuotaFilter
from placement_quota.filters.size import ReservationSizeFilter
from placement_quota.filters.stacking import NoStackingFilter
from placement_quota.filters.tree_limit import ProjectTreeLimitFilter
from placement_quota.filters.user_limit import UserLimitFilter

#: What ``[enforcement] available_filters`` finds by default.
all_filters = [
    MaximumReservationLengthFilter,
    MaxLeaseDurationFilter,
    ExternalServiceFilter,
    ReservationSizeFilter,
    LeaseCountFilter,
    NovaQuotaFilter,
    PlacementCapacityFilter,
    CreditFilter,
    ProjectTreeLimitFilter,
    UserLimitFilter,
    ExtensionWindowFilter,
    NoStackingFilter,
]
