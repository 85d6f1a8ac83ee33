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
``endpoint_override`` no cloud Placement is configured: ``serve`` then runs
on the embedded Placement (the real openstack-placement code, in-process, on
a SQLite file in ``embedded_state_dir``); every other command uses it only
when it is chosen (``embedded = true``, or the command's ``--embedded``) and
otherwise refuses to run.
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
    cfg.BoolOpt(
        'embedded', default=False,
        help='Use the embedded Placement (the real openstack-placement code, '
             'in-process, on SQLite in embedded_state_dir) instead of a '
             'cloud\'s. Without it, only "placement-quota serve" falls back '
             'to the embedded Placement when neither auth_type nor '
             'endpoint_override is set; every other command that reads '
             'Placement then exits 2 (or give it --embedded). Setting it '
             'together with auth_type or endpoint_override is an error.'),
    cfg.StrOpt(
        'embedded_state_dir', default=_default_state_dir(),
        sample_default='$XDG_STATE_HOME/placement-quota',
        help='Directory of the embedded Placement\'s SQLite database (see '
             'embedded); created when missing.'),
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


def configured(conf):
    """Which Placement ``[placement]`` names, without loading anything:
    ``'endpoint'`` (``endpoint_override``), ``'catalog'`` (auth options,
    Placement from the service catalog), ``'embedded'`` (``embedded =
    true``) or None (none: the embedded default of ``serve``)."""
    group = conf[GROUP.name]
    if group.endpoint_override:
        return 'endpoint'
    if group.auth_type:
        return 'catalog'
    if group.embedded:
        return 'embedded'
    return None


def describe(conf):
    """Which Placement a command of ``conf`` uses, for logs and banners
    (the embedded one when none is configured, as ``serve`` does)."""
    group = conf[GROUP.name]
    kind = configured(conf)
    if kind == 'endpoint':
        return '%s ([placement] endpoint_override)' % group.endpoint_override
    if kind == 'catalog':
        return ('the Placement of the service catalog ([placement] '
                'auth_type = %s, region %s)'
                % (group.auth_type, group.region_name or 'any'))
    return ('the embedded Placement (SQLite in %s; %s)'
            % (group.embedded_state_dir,
               '[placement] embedded = true' if kind else
               'no [placement] configured'))


def register_opts(conf):
    _util.register_service_client(conf, GROUP, opts, 'placement')


def list_opts():
    return _util.list_service_client(GROUP, opts)
