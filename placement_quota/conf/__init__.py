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

MODULES = (accounts, admin_api, api, enforcement, external, keystone,
           ledger, lifecycle, limits, nova, placement, reconcile)


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
