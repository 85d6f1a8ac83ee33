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
"""What runs inside Blazar's processes.

Blazar resource plugins whose Placement writes go through
:class:`placement_quota.placement.reservations.Transitions`.
Blazar loads them by name from the stevedore namespace
``blazar.resource.plugins`` (``[manager] plugins`` in ``blazar.conf``):
``virtual.instance.placement_quota`` and ``flavor.instance.placement_quota``.

Our enforcement filters in blazar-manager (:mod:`.enforcement`) and the
``placement-quota-blazar-manager`` command that runs them (:mod:`.manager`).

The modules of this package import Blazar (``pip install
placement-quota[blazar]``); nothing else in placement_quota imports them,
so placement_quota works without Blazar installed. This ``__init__``
imports nothing.
"""
