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
"""``[enforcement_external]``: the ExternalServiceFilter of Blazar's "Flexible
Reservation Usage Enforcement" spec."""

from oslo_config import cfg

from placement_quota.conf import _util

GROUP = cfg.OptGroup(
    'enforcement_external', title='External enforcement service',
    help='Where ExternalServiceFilter sends each lease, how long it waits, '
         'and what it does when the service cannot answer. Authenticate '
         'with the standard keystoneauth options of this group (the token '
         'of the blazar service user), or with a static ``token``.')

opts = [
    cfg.URIOpt(
        'endpoint_url', schemes=['http', 'https'],
        help='Base URL of the external enforcement service, for example '
             '``http://usage.example.com:9000/v1``; ``check-create``, '
             '``check-update`` and ``on-end`` are appended to it (a trailing '
             'slash makes no difference). Unset disables the filter.'),
    cfg.BoolOpt(
        'allow_on_error', default=False,
        help='Allow the request when the service cannot be reached, times '
             'out, or answers anything but 2xx or 403. A 403 always '
             'denies.'),
    cfg.FloatOpt(
        'connect_timeout', default=3.0, min=0.01,
        help='Seconds to wait for a TCP connection to the service.'),
    cfg.FloatOpt(
        'read_timeout', default=10.0, min=0.01,
        help='Seconds to wait for the service to answer once connected. A '
             'read timeout is not retried: the service may have acted on '
             'the request.'),
    cfg.IntOpt(
        'retries', default=2, min=0, max=10,
        help='How many times a request is retried after a connection error '
             'or a 5xx answer. Never after a 403 or another 4xx.'),
    cfg.FloatOpt(
        'retry_backoff', default=0.2, min=0,
        help='Seconds before the first retry; doubled for each next one '
             '(capped at 5 seconds).'),
    cfg.StrOpt(
        'token', secret=True,
        help='A static token sent as X-Auth-Token, when no keystoneauth '
             'plugin is configured in this group. Prefer keystoneauth '
             'credentials: a static token expires.'),
]


def register_opts(conf):
    _util.register_with_keystoneauth(conf, GROUP, opts)


def list_opts():
    return _util.list_with_keystoneauth(GROUP, opts)
