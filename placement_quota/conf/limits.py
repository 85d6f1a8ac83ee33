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
"""``[limits]``: strict two-level project limits (Keystone's "Strict Two-Level
Limits Enforcement Model").

Where the hierarchy and the limits come from (Keystone, or the embedded
source: a file plus the registered limits set here), and how the enforcer
counts usage.
"""

from oslo_config import cfg

from placement_quota.conf import _util

GROUP = cfg.OptGroup(
    'limits', title='Project limits',
    help='Strict two-level project limits: their source and enforcement.')

opts = [
    cfg.StrOpt(
        'source', default='embedded', choices=[
            ('embedded', 'The limits file and registered_limits below; '
                         'no Keystone needed.'),
            ('keystone', 'Keystone unified limits (GET /v3/limits, '
                         '/v3/registered_limits, /v3/limits/model) and '
                         'project parents, read with the [keystone] '
                         'credentials.')],
        help='Where the project hierarchy and the limits come from.'),
    cfg.StrOpt(
        'limits_file',
        help='Embedded source: a YAML or JSON file with the model, the '
             'registered limits, the projects (with their parent and '
             'explicit limits) and optionally their usage. See the limits '
             'guide for its format. Unset: every project is a root limited '
             'by registered_limits.'),
    cfg.DictOpt(
        'registered_limits', default={},
        help='Embedded source: default limits by resource name, as '
             'resource:limit pairs (e.g. "cores:10,ram_mb:20480"); -1 means '
             'unlimited. The limits file\'s own registered_limits win.'),
    cfg.BoolOpt(
        'accounts', default=True,
        help='Embedded source: lay the accounts of the account admin API '
             '(their parent and limits, kept in the ledger database) over '
             'the limits file; an account replaces the file\'s entry of '
             'the same project. Off: the file and registered_limits '
             'only.'),
    cfg.IntOpt(
        'unregistered_resource_limit', default=0, min=-1,
        help='The limit of a resource that has no registered and no '
             'explicit limit. 0 refuses any use of it (as oslo.limit and '
             'Nova do); -1 leaves it unlimited.'),
    cfg.IntOpt(
        'cache_ttl', default=0, min=0,
        help='Seconds a limit read from the source is reused. 0 (the '
             'default) re-reads limits before every check: Keystone\'s '
             '"Strict Two-Level Limits Enforcement Model" warns that '
             'a cached limit admits requests after an administrator '
             'lowered it.'),
    cfg.StrOpt(
        'usage_calculation', default='aggregate', choices=[
            ('aggregate', 'Read the root\'s aggregate usage, kept up to '
                          'date as claims land (one read per check).'),
            ('naive', 'Sum the usage of every project of the tree at every '
                      'check, as oslo.limit\'s callback design does.')],
        help='How the usage of a project tree is computed.'),
    cfg.BoolOpt(
        'verify_claims', default=True,
        help='After a claim\'s work is done, re-read limits and usage and '
             'refuse the claim if concurrent requests pushed the tree over '
             'its limit (Keystone\'s "Strict Two-Level Limits Enforcement '
             'Model").'),
    cfg.StrOpt(
        'service_id',
        help='Keystone source: the ID of the service whose limits apply. '
             'Unset: the service of type service_type.'),
    cfg.StrOpt(
        'service_type', default='reservation',
        help='Keystone source: the type of the service whose limits apply '
             '(Blazar registers "reservation"); used when service_id is '
             'unset.'),
    cfg.StrOpt(
        'region_id',
        help='Keystone source: only limits of this region (and limits '
             'without a region). Unset: limits without a region.'),
]


def register_opts(conf):
    _util.register(conf, GROUP, opts)


def list_opts():
    return {GROUP: opts}
