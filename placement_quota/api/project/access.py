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
"""Policy rules of the self-service project API (oslo.policy).

In the style of Keystone's and Blazar's secure-RBAC defaults: a reader
of a project (or a member, or an admin of it: Keystone's default roles
imply reader) reads that project's limits, usage and leases and asks for
quotes; the ``admin`` role reads any project. The target is the project
of the path (``%(project_id)s``). Asking for the limits of a user other
than the caller (``?user_id=``) is one more rule, ``role:admin`` by
default.

Operators override the rules in the policy file (``[oslo_policy]
policy_file``); the sample, ``etc/placement-quota/policy.yaml.sample``,
is generated with ``oslopolicy-sample-generator --config-file
etc/placement-quota/placement-quota-policy-generator.conf``.
"""

from oslo_policy import policy

from placement_quota import conf as pq_conf

PROJECT_READER_OR_ADMIN = 'project_reader_or_admin'
SHOW = 'placement_quota:project:show'
QUOTE = 'placement_quota:project:quote'
EXTENSION = 'placement_quota:project:lease:extension'
LEASES = 'placement_quota:project:lease:list'
USAGE = 'placement_quota:project:usage'
OTHER_USER = 'placement_quota:project:other_user'

_PROJECT = '/v1/projects/{project_id}'
_SCOPE = ['project']

rules = [
    policy.RuleDefault(
        PROJECT_READER_OR_ADMIN,
        '(role:reader and project_id:%(project_id)s) or role:admin',
        description='A reader of the project of the path (members and '
                    'admins of it are readers too), or an admin: the rule '
                    'the self-service rules default to.'),
    policy.DocumentedRuleDefault(
        SHOW, 'rule:' + PROJECT_READER_OR_ADMIN,
        'Show the limits of a project and of the caller in it, their '
        'usage now and at the peak of the window, and the credits left.',
        [{'method': 'GET', 'path': _PROJECT + '/limits'}],
        scope_types=_SCOPE),
    policy.DocumentedRuleDefault(
        QUOTE, 'rule:' + PROJECT_READER_OR_ADMIN,
        'Ask whether a lease would be allowed, and what it would cost, '
        'without creating it.',
        [{'method': 'POST', 'path': _PROJECT + '/quote'}],
        scope_types=_SCOPE),
    policy.DocumentedRuleDefault(
        EXTENSION, 'rule:' + PROJECT_READER_OR_ADMIN,
        'Show how far a lease of the project could be extended, and what '
        'would refuse more.',
        [{'method': 'GET',
          'path': _PROJECT + '/leases/{lease_id}/extension'}],
        scope_types=_SCOPE),
    policy.DocumentedRuleDefault(
        LEASES, 'rule:' + PROJECT_READER_OR_ADMIN,
        'List the leases of the project in the ledger, with what each was '
        'charged and refunded.',
        [{'method': 'GET', 'path': _PROJECT + '/leases'}],
        scope_types=_SCOPE),
    policy.DocumentedRuleDefault(
        USAGE, 'rule:' + PROJECT_READER_OR_ADMIN,
        'Show the amounts the project has reserved over a window of days.',
        [{'method': 'GET', 'path': _PROJECT + '/usage'}],
        scope_types=_SCOPE),
    policy.DocumentedRuleDefault(
        OTHER_USER, 'role:admin',
        'Show the limits of a user other than the caller '
        '(``?user_id=``); checked after the rule of the call.',
        [{'method': 'GET', 'path': _PROJECT + '/limits?user_id={user_id}'}],
        scope_types=_SCOPE),
]


def list_rules():
    """The rules, for oslopolicy-sample-generator."""
    return rules


def enforcer(conf):
    """An Enforcer of ``conf`` with the project API's rules registered."""
    found = policy.Enforcer(conf)
    found.register_defaults(rules)
    return found


def get_enforcer():
    """For oslopolicy-checker and oslopolicy-policy-generator."""
    return enforcer(pq_conf.new_config([]))
