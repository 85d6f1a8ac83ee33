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
"""What the commands share beyond their configuration: the Services.

Kept out of :mod:`placement_quota.cmd.main` so that ``placement-quota
--help`` does not import the ledger, Placement and Keystone code.
"""

from placement_quota.cmd import main
from placement_quota import services as services_mod


def services(command):
    """The :class:`~placement_quota.services.Services` of the running
    command: one per ``placement-quota`` run, or per ``openstack`` shell
    (with the shell's credentials for Placement when ``[placement]``
    configures none)."""
    holder = main.holder(command)
    if holder.services is None:
        holder.services = services_mod.Services(
            main.config(command),
            placement_fallback=holder.placement_fallback)
    return holder.services
