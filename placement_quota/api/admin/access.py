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
"""Policy rules of the account admin API (oslo.policy).

Every rule defaults to ``rule:admin_api`` (the ``admin`` role). Operators
override them in the policy file (``[oslo_policy] policy_file``); the
sample, ``etc/placement-quota/policy.yaml.sample``, is generated with
``oslopolicy-sample-generator --config-file
etc/placement-quota/placement-quota-policy-generator.conf``.
"""

from oslo_policy import policy

from placement_quota import conf as pq_conf

ADMIN_API = 'admin_api'
SHOW = 'placement_quota:account:show'
SET = 'placement_quota:account:set'
DELETE = 'placement_quota:account:delete'
RECOVER = 'placement_quota:account:recover'
MOVE = 'placement_quota:account:move'

_ACCOUNT = '/v1/{account_id}'

rules = [
    policy.RuleDefault(
        ADMIN_API, 'role:admin',
        description='Who may use the account admin API at all: the rule '
                    'every other rule defaults to.'),
    policy.DocumentedRuleDefault(
        SHOW, 'rule:admin_api',
        'Show an account with its usage and children, its metadata as '
        'headers, and one of its consumers or leases.',
        [{'method': 'GET', 'path': _ACCOUNT},
         {'method': 'HEAD', 'path': _ACCOUNT},
         {'method': 'GET', 'path': _ACCOUNT + '/consumers/{consumer_uuid}'},
         {'method': 'GET', 'path': _ACCOUNT + '/leases/{lease_id}'}]),
    policy.DocumentedRuleDefault(
        SET, 'rule:admin_api',
        'Create or change an account: its parent, limits and metadata.',
        [{'method': 'PUT', 'path': _ACCOUNT}]),
    policy.DocumentedRuleDefault(
        DELETE, 'rule:admin_api',
        'Delete an account (recoverable for [accounts] recovery_period).',
        [{'method': 'DELETE', 'path': _ACCOUNT}]),
    policy.DocumentedRuleDefault(
        RECOVER, 'rule:admin_api',
        'Recover a deleted account within its recovery period.',
        [{'method': 'POST', 'path': _ACCOUNT + '/action/recover'}]),
    policy.DocumentedRuleDefault(
        MOVE, 'rule:admin_api',
        'Get a move action, or move resources (one Placement consumer, one '
        'lease, or all) to another account.',
        [{'method': 'GET', 'path': _ACCOUNT + '/action/move'},
         {'method': 'POST', 'path': _ACCOUNT + '/action/move'},
         {'method': 'GET',
          'path': _ACCOUNT + '/consumers/{consumer_uuid}/action/move'},
         {'method': 'POST',
          'path': _ACCOUNT + '/consumers/{consumer_uuid}/action/move'},
         {'method': 'GET',
          'path': _ACCOUNT + '/leases/{lease_id}/action/move'},
         {'method': 'POST',
          'path': _ACCOUNT + '/leases/{lease_id}/action/move'}]),
]


def list_rules():
    """The rules, for oslopolicy-sample-generator."""
    return rules


def enforcer(conf):
    """An Enforcer of ``conf`` with our default rules registered."""
    found = policy.Enforcer(conf)
    found.register_defaults(rules)
    return found


def get_enforcer():
    """For oslopolicy-checker and oslopolicy-policy-generator."""
    return enforcer(pq_conf.new_config([]))
