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
"""``[nova]``: how placement-quota reaches the Nova API.

Used for Nova's legacy quota sets (``NovaQuotaFilter`` with
``nova_quota_source = legacy``), for reading the flavors of
``flavor:instance`` reservations, and for reading aggregates outside
nova-scheduler (``schedule explain``). The standard keystoneauth options,
session options and adapter options (``region_name``, ``valid_interfaces``,
``endpoint_override``...).
"""

from oslo_config import cfg

from placement_quota.conf import _util

GROUP = cfg.OptGroup(
    'nova', title='Nova API client',
    help='Where the Nova API is and how placement-quota authenticates to '
         'it (an admin, or a user allowed to read every project\'s quota '
         'sets).')

opts = [
    cfg.IntOpt(
        'flavor_cache_ttl', default=300, min=0,
        help='Seconds a Nova flavor read for a flavor:instance reservation '
             '(GET /flavors/{id} with its extra specs) is reused by later '
             'decisions. A flavor not in the cache, or older than this, is '
             'read again; a flavor Nova does not know is never cached. '
             'Nova flavors are immutable except for their extra specs, '
             'which an admin may change: those changes count after at most '
             'this long. 0 reads the flavor for every decision.'),
]


def register_opts(conf):
    _util.register_service_client(conf, GROUP, opts, 'compute')


def list_opts():
    return _util.list_service_client(GROUP, opts)
