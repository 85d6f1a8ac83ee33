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
"""The ``placement-quota`` command (cliff)."""

import logging as std_logging
import sys

from cliff import app
from cliff import commandmanager
from oslo_config import cfg
from oslo_log import log as logging
import pbr.version

from placement_quota import audit
from placement_quota import conf as pq_conf
from placement_quota.conf import validate
from placement_quota.filters import chain
from placement_quota.filters import no_ops

LOG = logging.getLogger(__name__)

#: Exit status of a command that could not answer: bad input or
#: configuration, authentication, a service that cannot be reached (0: done;
#: 1: the answer is "no": denied, drift, violations).
BAD_INPUT = 2

#: The API name of the ``openstack`` client plugin
#: (:data:`placement_quota.osc.plugin.API_NAME`): under the ``openstack``
#: shell, ``client_manager.reservation_quota`` is the plugin's client.
OSC_API_NAME = 'reservation_quota'


def fail(message):
    """Stop the command with ``message`` on stderr and exit status 2."""
    sys.stderr.write('placement-quota: %s\n' % message)
    raise SystemExit(BAD_INPUT)


def warn(message):
    """A WARNING in the log, and on stderr when the log goes elsewhere."""
    LOG.warning('%s', message)
    if not any(isinstance(handler, std_logging.StreamHandler) and
               getattr(handler, 'stream', None) is sys.stderr
               for handler in std_logging.getLogger().handlers):
        sys.stderr.write('placement-quota: warning: %s\n' % message)
        sys.stderr.flush()


def check_config_files(conf, strict=False):
    """Report the unknown sections and options of the files ``conf``
    read: a warning each, or exit 2 naming them all when ``strict``."""
    # The filters' options are registered when a chain is built: known
    # here too, or a file setting them would look unknown (and the slow
    # search through every library's options would run for nothing).
    chain.register_filter_opts(
        conf, chain.available_filter_classes(conf).values())
    found = [validate.describe(u) for u in validate.unknown(conf)]
    if found and strict:
        fail('unknown configuration (--strict-config): %s'
             % '; '.join(found))
    for line in found:
        warn('%s; ignored' % line)


def strict(command):
    """Whether the running ``command`` was given ``--strict-config`` (the
    ``openstack`` client plugin has no such option: False)."""
    options = getattr(holder(command), 'options', None)
    return bool(getattr(options, 'strict_config', False))


def check_no_ops(conf, filters=None, strict=False):
    """Warn about each option set for a filter that is not enabled and,
    given the enabled ``filters`` (instances), each of them that can never
    deny a lease (:mod:`placement_quota.filters.no_ops`); exit 2 naming
    them all when ``strict``."""
    available = chain.available_filter_classes(conf)
    if filters is None:
        found = no_ops.option_warnings(conf, available,
                                       conf.enforcement.enabled_filters)
    else:
        found = no_ops.warnings(conf, available, filters)
    if found and strict:
        fail('configuration that does nothing (--strict-config): %s'
             % ' '.join(found))
    for line in found:
        warn(line)


def config(command):
    """The oslo.config ``ConfigOpts`` of the running ``command``.

    Every command reads its configuration through this function, so the
    same command classes run under ``placement-quota`` (whose app parses
    ``--config-file``) and under the ``openstack`` client plugin (whose
    shell has a ``client_manager``: the configuration is the plugin's,
    read once per shell from ``--os-placement-quota-config-file``).
    """
    return holder(command).conf


def holder(command):
    """What keeps the running command's configuration and services: the
    ``placement-quota`` app, or the ``openstack`` client plugin's client
    (:class:`placement_quota.osc.plugin.PlacementQuotaClient`)."""
    app = command.app
    manager = getattr(app, 'client_manager', None)
    if manager is not None:
        return getattr(manager, OSC_API_NAME)
    return app


def version():
    return pbr.version.VersionInfo('placement-quota').version_string()


class PlacementQuotaApp(app.App):
    """Usage enforcement for Blazar reservations."""

    def __init__(self):
        super().__init__(
            description=__doc__.strip(), version=version(),
            command_manager=commandmanager.CommandManager(
                'placement_quota.cli'),
            deferred_help=True)
        self.conf = None
        #: The :class:`~placement_quota.services.Services` of this run,
        #: made by :func:`placement_quota.cmd.common.services` when a
        #: command first needs the ledger or Placement.
        self.services = None
        self.placement_fallback = None

    def build_option_parser(self, description, version, argparse_kwargs=None):
        parser = super().build_option_parser(description, version,
                                             argparse_kwargs)
        parser.add_argument(
            '--config-file', action='append', dest='config_files',
            metavar='PATH',
            help='Configuration file; may be given several times, later '
                 'files override earlier ones. Default: '
                 'placement-quota.conf in ~/.placement-quota, ~/, '
                 '/etc/placement-quota or /etc.')
        parser.add_argument(
            '--config-dir', metavar='DIR',
            help='Directory of *.conf files, read after --config-file.')
        parser.add_argument(
            '--strict-config', action='store_true',
            help='Exit with status 2 when a configuration file has a '
                 'section or an option placement-quota does not know '
                 '(a misspelling), and, for serve, listen and check, when '
                 'an option is set for a filter that is not enabled or an '
                 'enabled filter can never deny a lease; without it, each '
                 'one is a warning.')
        return parser

    def configure_logging(self):
        """Parse the configuration and set up oslo.log from it.

        Log lines go to stderr (or ``[DEFAULT] log_file``): stdout is left
        to the commands' output.
        """
        args = []
        if self.options.config_dir:
            args += ['--config-dir', self.options.config_dir]
        try:
            self.conf = pq_conf.new_config(args, self.options.config_files,
                                           use_stderr=True)
        except (cfg.Error, ValueError) as exc:
            fail('configuration error: %s' % exc)
        if self.options.debug:
            self.conf.set_override('debug', True)
        logging.setup(self.conf, 'placement-quota')
        if self.options.verbose_level < 2 and not self.conf.debug:
            # Offline commands print their result; say more only with -v,
            # ``--debug`` or ``debug = true``. ``serve`` and ``listen``
            # raise this back to INFO.
            std_logging.getLogger().setLevel(std_logging.WARNING)
        check_config_files(self.conf, self.options.strict_config)
        if self.conf.log_file or self.conf.log_config_append:
            # Changes made from the command line are audited wherever the
            # configuration sends the log (not on the terminal).
            std_logging.getLogger(audit.LOG.logger.name).setLevel(
                std_logging.INFO)
        audit.set_actor(audit.cli_actor())


def main(argv=None):
    return PlacementQuotaApp().run(sys.argv[1:] if argv is None else argv)


if __name__ == '__main__':
    sys.exit(main())
