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
"""oslo.config option groups, one module per group.

The options of the enforcement filters live next to each filter class
(``enforcement_opts``) and are registered by the filter chain for every
available filter (:func:`placement_quota.filters.chain.load_filters`).
"""

import os

from oslo_config import cfg
from oslo_log import log as logging

from placement_quota.conf import accounts
from placement_quota.conf import admin_api
from placement_quota.conf import api
from placement_quota.conf import enforcement
from placement_quota.conf import external
from placement_quota.conf import keystone
from placement_quota.conf import ledger
from placement_quota.conf import lifecycle
from placement_quota.conf import limits
from placement_quota.conf import nova
from placement_quota.conf import placement
from placement_quota.conf import reconcile
from placement_quota.conf import self_service
from placement_quota.conf import warnings

MODULES = (accounts, admin_api, api, enforcement, external, keystone,
           ledger, lifecycle, limits, nova, placement, reconcile,
           self_service, warnings)


def register_opts(conf):
    """Register every option group of placement-quota on ``conf``."""
    for module in MODULES:
        module.register_opts(conf)


def register_missing(conf):
    """Register each of our groups that ``conf`` lacks (our filters run
    inside blazar-manager get Blazar's configuration object)."""
    for module in MODULES:
        try:
            conf[module.GROUP.name]
        except (cfg.NoSuchOptError, KeyError):
            module.register_opts(conf)


def new_config(args=(), config_files=None, use_stderr=False):
    """A fresh ConfigOpts with our options and oslo.log's, parsed.

    ``config_files=None`` searches the usual places for
    ``placement-quota.conf`` (``/etc/placement-quota/`` and so on);
    ``use_stderr`` makes logs default to stderr (command-line tools).
    """
    conf = cfg.ConfigOpts()
    register_opts(conf)
    logging.register_options(conf)
    if use_stderr:
        conf.set_default('use_stderr', True)
    conf(list(args), project='placement-quota',
         default_config_files=config_files)
    return conf


#: The environment variable naming the WSGI apps' configuration files.
CONFIG_FILES_VARIABLE = 'PLACEMENT_QUOTA_CONFIG_FILES'


def wsgi_config(environ=None):
    """The configuration of a WSGI entry point, logging set up.

    Its files come from ``PLACEMENT_QUOTA_CONFIG_FILES`` (paths separated
    by ``;``), else from the usual places. Running on no file at all is
    logged as a warning: under pyuwsgi, ``--env`` (or ``env =`` in the ini
    file) is applied after Python has read its environment, and the
    variable then never arrives; set it in the process's environment
    (systemd's ``Environment=``) instead.
    """
    environ = os.environ if environ is None else environ
    files = [f for f in environ.get(CONFIG_FILES_VARIABLE, '').split(';')
             if f.strip()]
    conf = new_config([], files or None)
    logging.setup(conf, 'placement-quota')
    log = logging.getLogger(__name__)
    if conf.config_file:
        log.info('Configuration files: %s', ', '.join(conf.config_file))
    else:
        log.warning('No configuration file found (%s is %s): running on '
                    'the defaults.', CONFIG_FILES_VARIABLE,
                    'set to no file' if files else 'not set')
    return conf
