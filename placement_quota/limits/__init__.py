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
"""Strict two-level project limits (Keystone's "Strict Two-Level Limits
Enforcement Model"): tree, enforcer, sources.

A pure core: it depends on networkx and nothing else of ours, so that the
Keystone and usage adapters plug in from outside.
"""

from placement_quota.limits.enforcer import Claim  # noqa: F401
from placement_quota.limits.enforcer import Enforcer  # noqa: F401
from placement_quota.limits.enforcer import ProjectClaim  # noqa: F401
from placement_quota.limits.errors import ProjectOverLimit  # noqa: F401
from placement_quota.limits.sources import CachingSource  # noqa: F401
from placement_quota.limits.sources import EmbeddedSource  # noqa: F401
from placement_quota.limits.tree import LimitData  # noqa: F401
from placement_quota.limits.tree import Project  # noqa: F401
from placement_quota.limits.tree import ProjectTree  # noqa: F401
