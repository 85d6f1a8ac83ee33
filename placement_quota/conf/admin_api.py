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
"""``[admin_api]``: the account admin API's own endpoint (specs/003)."""

from oslo_config import cfg

from placement_quota.conf import _util

GROUP = cfg.OptGroup(
    'admin_api', title='Account admin API',
    help='The account admin API of specs/003, served on its own port by '
         '``placement-quota serve --admin-port`` (or its own WSGI app, '
         '``placement_quota.api.admin_wsgi``). It must not be exposed on a '
         'public endpoint.')

opts = [
    cfg.StrOpt(
        'auth_strategy', default='noauth', choices=[
            ('noauth', 'No authentication; every caller is an '
                       'administrator. Only for the embedded default on '
                       'loopback.'),
            ('keystone', 'keystonemiddleware auth_token validates the '
                         'X-Auth-Token of each request (the '
                         '[keystone_authtoken] section), and the policy '
                         'rules (default: the admin role) decide.')],
        help='How callers of the admin API are authenticated.'),
    cfg.HostAddressOpt(
        'bind_host', default='127.0.0.1',
        help='Address the admin API listens on.'),
    cfg.PortOpt(
        'bind_port',
        help='Port the admin API listens on with ``placement-quota serve``; '
             'unset: the admin API is not served (``--admin-port`` on the '
             'command line serves it too).'),
    cfg.IntOpt(
        'threads', default=4, min=1, max=256,
        help='Worker threads of the admin API server.'),
    cfg.IntOpt(
        'max_request_body_size', default=65536, min=1024,
        help='Largest request body the admin API accepts, in bytes (413 '
             'above it).'),
]


def register_opts(conf):
    _util.register(conf, GROUP, opts)


def list_opts():
    return {GROUP: opts}
