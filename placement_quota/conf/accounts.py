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
"""``[accounts]``: accounts of the admin API ("Multi-Tenant Accounting in
OpenStack")."""

from oslo_config import cfg

from placement_quota.conf import _util

GROUP = cfg.OptGroup(
    'accounts', title='Accounts',
    help='Accounts of the account admin API: their deletion, recovery and '
         'moves.')

opts = [
    cfg.IntOpt(
        'recovery_period', default=7 * 86400, min=0,
        help='Seconds a deleted account stays recoverable: it answers 410 '
             'Gone and POST /v1/{account}/action/recover brings it back. '
             'After it, the account answers 404 and its record is purged. '
             '0 purges at once.'),
    cfg.IntOpt(
        'move_list_max', default=1000, min=0,
        help='A move action (GET .../action/move) lists the consumers and '
             'leases that would move when there are at most this many; '
             'above it, only their tag, count and totals '
             '("Multi-Tenant Accounting in OpenStack", "tagged" move '
             'action).'),
    cfg.IntOpt(
        'placement_workers', default=8, min=1, max=64,
        help='Concurrent Placement reads when listing the consumers of an '
             'account (Placement lists no consumers by project: one read '
             'per resource provider, then one per consumer).'),
    cfg.StrOpt(
        'consumers_from', default='auto',
        choices=[
            ('auto', 'nova when [nova] names a Nova (auth_type, '
                     'auth_section or endpoint_override), else scan'),
            ('nova', 'the account\'s servers in Nova, then the IDs of its '
                     'open leases in the ledger, checked against its '
                     'Placement usage; scan when they do not add up, when '
                     'Nova cannot be read or when [nova] names no Nova'),
            ('scan', 'every consumer of Placement')],
        help='Where a move of everything an account holds finds its '
             'Placement consumers. Placement lists no consumers by '
             'project; Nova lists a project\'s servers in one call '
             '(GET /servers?all_tenants=1&project_id=..., an admin\'s '
             'right) whose UUIDs are the consumers of its instances. Each '
             'candidate is read from Placement (GET /allocations/{uuid}), '
             'and when those of the account add up exactly to its '
             'Placement usage (GET /usages) they are all of them: 1 + n '
             'Placement calls instead of one per resource provider and '
             'one per consumer of the cloud. A consumer Nova does not '
             'list (a migration\'s, another service\'s) makes the sums '
             'differ: the move then reads every consumer, saying why at '
             'INFO.'),
]


def register_opts(conf):
    _util.register(conf, GROUP, opts)


def register_opts_once(conf):
    try:
        conf.accounts
    except cfg.NoSuchOptError:
        register_opts(conf)


def list_opts():
    return {GROUP: opts}
