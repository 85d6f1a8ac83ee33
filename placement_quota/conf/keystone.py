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
"""``[keystone]``: how placement-quota itself talks to Keystone.

Standard keystoneauth options (``auth_type``, ``auth_url``, ``username``...
and the session's TLS options), used to resolve the ``name@domain`` entries
of ``[enforcement] exempted_projects`` with openstacksdk.
"""

from oslo_config import cfg

from placement_quota.conf import _util

GROUP = cfg.OptGroup(
    'keystone', title='Keystone client',
    help='Credentials and endpoint placement-quota uses to read projects '
         'from Keystone.')

opts = [
    cfg.StrOpt('region_name', help='Keystone region to use.'),
    cfg.StrOpt('interface', default='public',
               choices=['public', 'internal', 'admin'],
               help='Which Keystone endpoint interface to use.'),
]


def register_opts(conf):
    _util.register_with_keystoneauth(conf, GROUP, opts)


def list_opts():
    return _util.list_with_keystoneauth(GROUP, opts)
