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
"""Registration helper shared by the option modules."""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg


#: Default ``timeout`` (seconds) of our keystoneauth sessions.
SESSION_TIMEOUT = 10


def register(conf, group, opts):
    """Register ``opts`` in a fresh copy of ``group`` on ``conf``.

    oslo.config copies a registered OptGroup shallowly, so one module-level
    OptGroup registered on two ConfigOpts would share their overrides and
    defaults; a new OptGroup per ConfigOpts keeps them apart.
    """
    fresh = cfg.OptGroup(group.name, title=group.title, help=group.help)
    conf.register_group(fresh)
    conf.register_opts(opts, group=group.name)


def register_with_keystoneauth(conf, group, opts):
    """Register ``opts`` plus keystoneauth's session and auth options."""
    register(conf, group, opts)
    ks_loading.register_session_conf_options(conf, group.name)
    ks_loading.register_auth_conf_options(conf, group.name)
    # keystoneauth waits forever by default; a hung Keystone or Placement
    # must not hang the requests we serve.
    conf.set_default('timeout', SESSION_TIMEOUT, group=group.name)


def list_with_keystoneauth(group, opts):
    """``{group: opts}`` plus keystoneauth's options, for the sample config
    (with the password plugin's, the one most deployments use)."""
    return {group: (opts + ks_loading.get_session_conf_options() +
                    ks_loading.get_auth_common_conf_options() +
                    ks_loading.get_auth_plugin_conf_options('password'))}


def register_service_client(conf, group, opts, service_type):
    """Register ``opts`` plus keystoneauth's session, auth and adapter
    options, with ``service_type`` as the adapter's default: the options
    of a client of one OpenStack service (``[placement]``, ``[nova]``)."""
    register_with_keystoneauth(conf, group, opts)
    ks_loading.register_adapter_conf_options(conf, group.name)
    conf.set_default('service_type', service_type, group=group.name)


def list_service_client(group, opts):
    """:func:`list_with_keystoneauth` plus the adapter options."""
    listed = list_with_keystoneauth(group, opts)
    listed[group] = listed[group] + ks_loading.get_adapter_conf_options()
    return listed
