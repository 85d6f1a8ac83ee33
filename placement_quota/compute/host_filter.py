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
"""Deprecated path kept because nova.conf names it: use
placement_quota.scheduler.host_filter.

``[filter_scheduler] available_filters`` or ``enabled_filters`` may name
``placement_quota.compute.host_filter.ReservationHostFilter``; it is the
class of :mod:`placement_quota.scheduler.host_filter`.
"""

from placement_quota.scheduler.host_filter import CACHE_SIZE  # noqa: F401
from placement_quota.scheduler.host_filter import (  # noqa: F401
    ReservationHostFilter)
