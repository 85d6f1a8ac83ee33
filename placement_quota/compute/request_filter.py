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
placement_quota.scheduler.request_filter.

The functions are those of :mod:`placement_quota.scheduler.request_filter`
(one request filter, registered once in Nova's list whichever path
imported it).
"""

from placement_quota.scheduler.request_filter import MARKER  # noqa: F401
from placement_quota.scheduler.request_filter import apply  # noqa: F401
from placement_quota.scheduler.request_filter import decide  # noqa: F401
from placement_quota.scheduler.request_filter import (  # noqa: F401
    get_request_filter)
from placement_quota.scheduler.request_filter import (  # noqa: F401
    load_aggregates)
from placement_quota.scheduler.request_filter import nova_conf  # noqa: F401
from placement_quota.scheduler.request_filter import (  # noqa: F401
    request_inputs)
from placement_quota.scheduler.request_filter import (  # noqa: F401
    reservation_aggregates)
