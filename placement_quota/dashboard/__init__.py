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
"""Quota and Credits, a Horizon panel in the project dashboard: the
project's reservation limits, credits, leases and usage, and a quote of
a lease before it is created, from the self-service project API
(service type ``reservation-quota``).

Installed with ``pip install placement-quota[dashboard]`` (Horizon and
blazar-dashboard); enabled by copying
``placement_quota/dashboard/enabled/_92_project_reservation_quota_panel.py``
into Horizon's ``openstack_dashboard/local/enabled/``. The panel joins
blazar-dashboard's Reservations group of the project dashboard.
"""
