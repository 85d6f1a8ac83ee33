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
"""Who a warning is mailed to: Keystone users' ``email`` attributes.

A warning for a user (a lease's creator, a share's holder) goes to that
user; a project's warning (credits, allocations) to every user holding
one of ``[warnings] project_roles`` on the project, effective assignments
(through groups, implied roles, inherited ones) included. Users without
an e-mail address, or with one that is not an address, are left out.
What Keystone answered is kept for :data:`CACHE_SECONDS`.
"""

from email import utils as email_utils
import threading
import time

from keystoneauth1 import exceptions as ks_exceptions
from openstack import exceptions as sdk_exceptions
from oslo_log import log as logging

from placement_quota.identity import projects
from placement_quota.warning import channels

LOG = logging.getLogger(__name__)

#: How long Keystone's answers are kept (per process).
CACHE_SECONDS = 300


def address(value):
    """``value`` if it is an e-mail address (``user@domain``, nothing
    around it), else None."""
    if not isinstance(value, str) or not value.strip():
        return None
    value = value.strip()
    if any(c in value for c in '\r\n,;<>"') or value.count('@') != 1:
        return None
    local, _, domain = value.partition('@')
    if not local or not domain or ' ' in value:
        return None
    if email_utils.parseaddr(value)[1] != value:
        return None
    return value


class Recipients:
    """The ``(name, email)`` pairs a notice is mailed to, from Keystone
    (``conn``: an openstacksdk Connection; default one built from the
    ``[keystone]`` options)."""

    def __init__(self, conf, conn=None, ttl=CACHE_SECONDS,
                 clock=time.monotonic):
        self.roles = frozenset(conf.warnings.project_roles)
        self.conn = conn or projects.connection(conf)
        self.ttl = ttl
        self.clock = clock
        self._cache = {}
        self._lock = threading.Lock()

    def addresses(self, notice):
        """``[(name, email)]`` for ``notice``, sorted by address, each
        address once. Raises :class:`~placement_quota.warning.channels.
        SendError` (transient) when Keystone cannot be asked."""
        if notice.user_id:
            user_ids = [notice.user_id]
        else:
            user_ids = self.holders(notice.project_id)
        found = {}
        for user_id in user_ids:
            name, email = self.user(user_id)
            if email and email not in found:
                found[email] = name
        return sorted(((name, email) for email, name in found.items()),
                      key=lambda pair: pair[1])

    def describe(self, notice):
        """Whom ``notice`` is for, in words (for the logs)."""
        if notice.user_id:
            return 'user %s' % notice.user_id
        return 'the users with role %s on project %s' % (
            ' or '.join(sorted(self.roles)), notice.project_id)

    def holders(self, project_id):
        """The IDs of the users holding one of the roles on
        ``project_id`` (effective assignments), sorted."""
        def ask():
            found = set()
            for assignment in self.conn.identity.role_assignments(
                    scope_project_id=project_id, effective=True,
                    include_names=True):
                role = (assignment.role or {}).get('name')
                user = (assignment.user or {}).get('id')
                if user and role in self.roles:
                    found.add(user)
            return sorted(found)
        return self._cached(('project', project_id), ask,
                            'the role assignments of project %s'
                            % project_id)

    def user(self, user_id):
        """``(name, email)`` of ``user_id`` (email None when the user has
        none, or is gone)."""
        def ask():
            try:
                found = self.conn.identity.get_user(user_id)
            except sdk_exceptions.NotFoundException:
                LOG.info('Keystone has no user %s: no e-mail sent to it',
                         user_id)
                return user_id, None
            raw = getattr(found, 'email', None)
            email = address(raw)
            if raw and email is None:
                LOG.warning('Keystone user %s (%s) has an e-mail attribute '
                            'that is not an address: %r; left out',
                            found.name, user_id, raw)
            return found.name or user_id, email
        return self._cached(('user', user_id), ask, 'user %s' % user_id)

    def _cached(self, key, ask, what):
        now = self.clock()
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
        try:
            value = ask()
        except (sdk_exceptions.SDKException,
                ks_exceptions.ClientException) as exc:
            raise channels.SendError(
                'Keystone could not be asked for %s: %s' % (what, exc),
                permanent=False) from exc
        with self._lock:
            self._cache[key] = (now + self.ttl, value)
        return value
