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
"""The audit log: one line per change an administrator makes.

Every account change (create, change, delete, recover), every move of
consumers or leases between accounts and every credit allocation added
is logged at INFO on the logger ``placement_quota.audit``, by the service
layer, so the admin API and the CLI log alike::

    account-delete account=physics by user=u1 project=p1: live -> deleted

After ``by`` comes who asked: the Keystone user and project of an admin
API request (those of the token keystonemiddleware validated); without
Keystone (``[admin_api] auth_strategy = noauth``) ``noauth``, followed by
the user and project the request's headers claim, if any; or ``cli`` and
the operating-system user for the command line. Route the logger with
oslo.log's ``log_config_append`` to keep the audit trail in a file of its
own.
"""

import contextlib
import contextvars
import getpass

from oslo_log import log as logging

LOG = logging.getLogger('placement_quota.audit')

_ACTOR = contextvars.ContextVar('placement_quota_audit_actor', default=None)


def actor():
    """Who the current change is made by (``unknown`` when not said)."""
    return _ACTOR.get() or 'unknown'


def set_actor(who):
    """Every change of this context (a command-line process) is made by
    ``who``."""
    _ACTOR.set(who)


@contextlib.contextmanager
def acting(who):
    """Changes made in the block are made by ``who``."""
    token = _ACTOR.set(who)
    try:
        yield
    finally:
        _ACTOR.reset(token)


def cli_actor():
    """``cli user=<the operating-system user>``."""
    try:
        user = getpass.getuser()
    except Exception:   # no user name in the environment or passwd
        user = 'unknown'
    return 'cli user=%s' % user


def request_actor(user_id, project_id, authenticated=True):
    """Who an API request is made by, from its credentials:
    ``user=<id> project=<id>``, after ``noauth`` when nothing
    ``authenticated`` them (they are what the request's headers claim)."""
    who = [] if authenticated else ['noauth']
    if user_id:
        who.append('user=%s' % user_id)
    if project_id:
        who.append('project=%s' % project_id)
    return ' '.join(who) or 'unknown'


def record(action, target, before=None, after=None, **details):
    """One audit line: ``action target by WHO details: before -> after``
    (``details`` as ``key=value``; before and after when either is
    given)."""
    line = '%s %s by %s' % (action, target, actor())
    if details:
        line += ' ' + ' '.join('%s=%s' % (key, details[key])
                               for key in sorted(details))
    if before is not None or after is not None:
        line += ': %s -> %s' % (before, after)
    LOG.info('%s', line)
