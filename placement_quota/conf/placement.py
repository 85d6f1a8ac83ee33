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
"""``[placement]``: how placement-quota reaches Placement.

The standard keystoneauth options (``auth_type``, ``auth_url``...), the
session's TLS options and the adapter's (``region_name``,
``valid_interfaces``, ``endpoint_override``...). With no ``auth_type`` and no
``endpoint_override``, placement-quota runs the embedded default: the real
openstack-placement code, in-process, on a SQLite file in
``embedded_state_dir``.
"""

import os

from oslo_config import cfg

from placement_quota.conf import _util

GROUP = cfg.OptGroup(
    'placement', title='Placement client',
    help='Where Placement is and how placement-quota authenticates to it.')


def _default_state_dir():
    base = os.environ.get('XDG_STATE_HOME') or os.path.join(
        os.path.expanduser('~'), '.local', 'state')
    return os.path.join(base, 'placement-quota')


opts = [
    cfg.StrOpt(
        'embedded_state_dir', default=_default_state_dir(),
        sample_default='$XDG_STATE_HOME/placement-quota',
        help='Directory of the embedded Placement\'s SQLite database, used '
             'when neither auth_type nor endpoint_override is set.'),
    cfg.IntOpt(
        'conflict_retries', default=5, min=0, max=50,
        help='How many times a write refused with a generation conflict '
             '(409 placement.concurrent_update) is retried after re-reading '
             'the provider.'),
    cfg.IntOpt(
        'max_concurrency', default=8, min=1, max=64,
        help='Concurrent requests when a change must be written provider by '
             'provider (when POST /reshaper is not allowed to our user).'),
]


def register_opts(conf):
    _util.register_service_client(conf, GROUP, opts, 'placement')


def list_opts():
    return _util.list_service_client(GROUP, opts)
