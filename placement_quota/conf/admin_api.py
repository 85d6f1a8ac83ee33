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
"""``[admin_api]``: the account admin API's own endpoint ("Multi-Tenant
Accounting in OpenStack")."""

from oslo_config import cfg

from placement_quota.conf import _util

GROUP = cfg.OptGroup(
    'admin_api', title='Account admin API',
    help='The account admin API of "Multi-Tenant Accounting in '
         'OpenStack", served on its own port by '
         '``placement-quota serve --admin-port`` (or its own WSGI app, '
         '``placement_quota.api.admin.wsgi``). It must not be exposed on a '
         'public endpoint.')

opts = [
    cfg.StrOpt(
        'auth_strategy', default='noauth', choices=[
            ('noauth', 'No authentication; every caller has the roles '
                       'of noauth_roles (by default admin). Only for the '
                       'embedded default on loopback.'),
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
    cfg.ListOpt(
        'noauth_roles', default=['admin'],
        help='With auth_strategy = noauth: the roles of a request, which '
             'the policy rules then check (the rules default to the admin '
             'role). An X-Roles header can lower them, never raise them: '
             'a role it names counts only when these roles grant it or a '
             'role implying it (as Keystone\'s default roles do: admin '
             'implies member, member implies reader). Set it to reader, '
             'for example, to make a noauth admin API read-only.'),
    cfg.ListOpt(
        'allowed_hosts', default=[],
        help='Host names the admin API answers to: a request whose Host '
             'header names another host is refused with 400, so that a web '
             'page cannot reach the API through a name of its own that it '
             'points at this host (DNS rebinding). An entry may carry a '
             'port (admin.example.org:8791) to allow that port only; * '
             'allows any host. Empty (the default): bind_host, localhost, '
             'and this host\'s name. An IP address is always accepted (a '
             'page cannot rebind one), and /healthcheck is not checked.'),
    cfg.ListOpt(
        'allowed_origins', default=[],
        help='Web origins (scheme://host[:port]) allowed to send '
             'state-changing calls (PUT, POST, DELETE): such a call '
             'carrying another Origin header, as a browser adds to a '
             'cross-site request, is refused with 403. Empty (the '
             'default): no browser page may change accounts; clients that '
             'send no Origin (the CLI, curl, SDKs) are not affected.'),
    cfg.IntOpt(
        'request_read_timeout', default=10, min=1,
        help='Seconds within which a request (its line, headers and body) '
             'must have arrived; see [api] request_read_timeout.'),
    cfg.IntOpt(
        'request_queue_size', default=32, min=1,
        help='The listen backlog of the admin API, and how many complete '
             'requests may wait for a free thread (503 beyond).'),
]


def register_opts(conf):
    _util.register(conf, GROUP, opts)


def list_opts():
    return {GROUP: opts}
