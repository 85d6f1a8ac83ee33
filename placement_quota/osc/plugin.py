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
"""The ``openstack`` client plugin: ``openstack reservation ...``.

python-openstackclient loads this module from the
``openstack.cli.extension`` entry point and reads its attributes
(:data:`API_NAME`, :data:`API_VERSION_OPTION`, :data:`API_VERSIONS`,
:func:`build_option_parser`, :func:`make_client`). The commands are the
``placement-quota`` command classes themselves, registered a second time
in the ``openstack.reservation_quota.v1`` entry-point group under names
that read ``reservation ...`` (``reservation_tree_check``...). The API name
is ``reservation_quota``, not ``reservation``: python-blazarclient's
plugin owns that one (``openstack reservation lease list``...).

Configuration: :func:`placement_quota.cmd.main.config` gives a command,
under the ``openstack`` shell, the ``ConfigOpts`` of
:attr:`PlacementQuotaClient.conf`, read once per shell from
``--os-placement-quota-config-file`` (or ``OS_PLACEMENT_QUOTA_CONFIG_FILE``,
or ``placement_quota_config_file`` of the cloud in clouds.yaml), and
``--os-placement-quota-config-dir``; without them, the files
``placement-quota`` itself finds (``/etc/placement-quota/...``).

The self-service commands (``reservation quota show``, ``reservation
quote``, ``reservation lease extension``: :mod:`placement_quota.osc.
selfservice`) call the project API with the shell's session (the user's
own token): the endpoint of type :data:`SERVICE_TYPE` in the catalog, or
``--os-reservation-quota-url``.

Placement: ``[placement]`` of that configuration when it has auth options
or an ``endpoint_override``; otherwise, when the shell has credentials
(``OS_AUTH_URL``..., ``--os-cloud``), the shell's keystoneauth session
(Placement of its service catalog, its region and interface); otherwise
the embedded Placement, as ``placement-quota`` does.

This module is imported by every ``openstack`` command: it imports
nothing heavy until a ``reservation`` command runs.
"""

import os

API_NAME = 'reservation_quota'
API_VERSION_OPTION = 'os_reservation_quota_api_version'
DEFAULT_API_VERSION = '1'
API_VERSIONS = ('1',)

CONFIG_FILE_ENV = 'OS_PLACEMENT_QUOTA_CONFIG_FILE'
CONFIG_DIR_ENV = 'OS_PLACEMENT_QUOTA_CONFIG_DIR'
URL_ENV = 'OS_RESERVATION_QUOTA_URL'

#: The catalog service type of the self-service project API.
SERVICE_TYPE = 'reservation-quota'


def build_option_parser(parser):
    """Add the plugin's global options to the ``openstack`` parser."""
    parser.add_argument(
        '--os-placement-quota-config-file', action='append',
        dest='os_placement_quota_config_file', metavar='<path>',
        help='placement-quota configuration file for the "reservation" '
             'commands of placement-quota; may be repeated, later files '
             'override earlier ones (Env: %s, paths separated by ";"). '
             'Default: the placement-quota.conf that placement-quota '
             'finds.' % CONFIG_FILE_ENV)
    parser.add_argument(
        '--os-placement-quota-config-dir',
        dest='os_placement_quota_config_dir', metavar='<dir>',
        help='Directory of *.conf files of placement-quota, read after '
             'the configuration files (Env: %s).' % CONFIG_DIR_ENV)
    parser.add_argument(
        '--os-reservation-quota-url', dest='os_reservation_quota_url',
        metavar='<url>', default=os.environ.get(URL_ENV),
        help='URL of the placement-quota service (its self-service '
             'project API) for "reservation quota show", "reservation '
             'quote" and "reservation lease extension", instead of the '
             'endpoint of type %s in the service catalog (Env: %s).'
             % (SERVICE_TYPE, URL_ENV))
    return parser


def make_client(instance):
    """The plugin's "client": what the ``openstack`` shell's
    ClientManager ``instance`` gives as ``instance.reservation_quota``."""
    config = instance._cli_options.config
    return PlacementQuotaClient(
        instance,
        config_files=_paths(config.get('placement_quota_config_file')
                            or os.environ.get(CONFIG_FILE_ENV)),
        config_dir=(config.get('placement_quota_config_dir')
                    or os.environ.get(CONFIG_DIR_ENV) or None))


def _paths(value):
    """``a;b`` strings (or a list of them) as a list of paths."""
    if not value:
        return []
    if isinstance(value, str):
        value = [value]
    return [path.strip() for item in value for path in str(item).split(';')
            if path.strip()]


def _auth_configured(client_manager):
    """Whether the shell was given credentials (without loading them)."""
    settings = client_manager._cli_options.config
    if settings.get('auth_type') in (None, 'none'):
        return False
    # Before validation (our commands have auth_required = False), the
    # auth options are still top-level keys; after it, under "auth".
    auth = settings.get('auth') or {}
    return any(auth.get(key) or settings.get(key)
               for key in ('auth_url', 'endpoint'))


class PlacementQuotaClient:
    """The configuration of the shell's ``reservation`` commands, and the
    shell's session for Placement."""

    def __init__(self, client_manager, config_files=(), config_dir=None):
        self.client_manager = client_manager
        self.config_files = list(config_files)
        self.config_dir = config_dir
        self._conf = None
        #: The Services of this shell (see
        #: :func:`placement_quota.cmd.common.services`), made on first use
        #: with :meth:`placement_adapter` as the Placement fallback.
        self.services = None
        self.placement_fallback = self.placement_adapter

    @property
    def conf(self):
        """The ``ConfigOpts``, read on first use; exits with status 2
        and the reason when a file is missing or invalid."""
        if self._conf is None:
            # Imported here, not at the top: this module is imported by
            # every ``openstack`` command, and these cost about 0.3 s.
            from oslo_config import cfg

            from placement_quota import audit
            from placement_quota.cmd import main
            from placement_quota import conf as pq_conf

            args = []
            if self.config_dir:
                args += ['--config-dir', self.config_dir]
            try:
                conf = pq_conf.new_config(args, self.config_files or None,
                                          use_stderr=True)
            except (cfg.Error, ValueError) as exc:
                main.fail('configuration error: %s' % exc)
            main.check_config_files(conf)
            # Changes made through the ``openstack`` shell are audited as
            # the command line's are.
            audit.set_actor(audit.cli_actor())
            self._conf = conf
        return self._conf

    def project_api(self):
        """A keystoneauth Adapter for the self-service project API, on
        the shell's session: ``--os-reservation-quota-url`` (or
        ``reservation_quota_endpoint_override`` of clouds.yaml), else the
        endpoint of type :data:`SERVICE_TYPE` of the catalog, in the
        shell's region and interface."""
        from keystoneauth1 import adapter

        manager = self.client_manager
        endpoint = (manager._cli_options.config.get('reservation_quota_url')
                    or manager._override_for(SERVICE_TYPE))
        return adapter.Adapter(
            manager.session, service_type=SERVICE_TYPE,
            region_name=manager.region_name or None,
            interface=manager.interface, endpoint_override=endpoint,
            raise_exc=False)

    def placement_adapter(self):
        """``(Adapter, description)`` for Placement with the shell's
        credentials, or None when the shell has none."""
        manager = self.client_manager
        if not _auth_configured(manager):
            return None
        # See conf: not imported by every ``openstack`` command.
        from keystoneauth1 import adapter

        from placement_quota.cmd import main

        try:
            # What the shell does before a command with auth_required (our
            # commands do not need Keystone unless they reach Placement).
            manager._auth_required = True
            manager.setup_auth()
        except Exception as exc:
            main.fail('cannot use the openstack client credentials for '
                      'Placement: %s' % exc)
        region = manager.region_name or None
        endpoint = manager._override_for('placement')
        return (adapter.Adapter(
            manager.session, service_type='placement', region_name=region,
            interface=manager.interface, endpoint_override=endpoint,
            raise_exc=False),
            endpoint or 'Placement of the service catalog of the openstack '
            'client credentials (%s)' % (region or 'any region'))
