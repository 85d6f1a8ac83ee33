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
"""The panel: shown when the catalog has the self-service API."""

from django.utils.translation import gettext_lazy as _
import horizon

from placement_quota.dashboard import client


class ReservationQuota(horizon.Panel):
    name = _('Quota and Credits')
    slug = 'reservation_quota'

    @property
    def permissions(self):
        """Horizon's permission for "the catalog has the service type",
        unless the endpoint is set in the settings."""
        if client.configured_endpoint():
            return ()
        return ('openstack.services.%s' % client.SERVICE_TYPE,)
