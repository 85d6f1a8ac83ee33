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
"""The Quota and Credits panel (slug ``reservation_quota``) in
blazar-dashboard's Reservations group of the project dashboard.

Copy this file into Horizon's ``openstack_dashboard/local/enabled/``
(after blazar-dashboard's ``_90_project_reservations_panelgroup.py``,
which defines the group).
"""

# The name of the panel to be added to HORIZON_CONFIG. Required.
PANEL = 'reservation_quota'
# The name of the dashboard the PANEL associated with. Required.
PANEL_DASHBOARD = 'project'
# The name of the panel group the PANEL is associated with:
# blazar-dashboard's Reservations group.
PANEL_GROUP = 'reservations'

# Python panel class of the PANEL to be added.
ADD_PANEL = 'placement_quota.dashboard.panel.ReservationQuota'

ADD_INSTALLED_APPS = ['placement_quota.dashboard']
