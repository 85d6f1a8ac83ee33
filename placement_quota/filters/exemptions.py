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
"""``[enforcement] exempted_projects``: the projects no filter checks."""

import threading
import time

from oslo_log import log as logging

from placement_quota.identity import projects

LOG = logging.getLogger(__name__)

# A failed name@domain resolution is retried at most this often.
_RETRY_FAILED_RESOLUTION = 10


class Exemptions:
    """``[enforcement] exempted_projects``: IDs, or ``name@domain``.

    Names are resolved lazily (the service starts even when Keystone does
    not answer yet), refreshed every ``exempted_projects_refresh`` seconds,
    and a failed resolution keeps the last good answer.
    """

    def __init__(self, conf, resolver_factory=None):
        self.conf = conf
        entries = [e.strip() for e in conf.enforcement.exempted_projects
                   if e.strip()]
        self.ids = frozenset(e for e in entries if '@' not in e)
        self.names = tuple(tuple(e.rsplit('@', 1)) for e in entries
                           if '@' in e)
        for name, domain in self.names:
            if not name or not domain:
                raise ValueError(
                    '[enforcement] exempted_projects entry %r must be a '
                    'project ID or name@domain with both parts'
                    % ('%s@%s' % (name, domain)))
        self._resolver_factory = resolver_factory or _keystone_resolver
        self._resolver = None
        self._resolved = None
        self._next_resolution = 0.0
        self._attempted = False
        self._lock = threading.Lock()

    def __contains__(self, project_id):
        if project_id in self.ids:
            return True
        if not self.names:
            return False
        return project_id in self._resolved_ids()

    def _resolved_ids(self):
        if time.monotonic() < self._next_resolution:
            # None until a resolution succeeded: nobody is exempted by
            # name then.
            return self._resolved or frozenset()
        # The first attempt is waited for; later ones (a refresh, or a
        # retry after a failure) are made by one thread while the others
        # go on with the last known answer: a Keystone that does not
        # answer holds back one request per retry, not all of them.
        if self._lock.acquire(blocking=not self._attempted):
            try:
                if time.monotonic() >= self._next_resolution:
                    self._resolve()
            finally:
                self._lock.release()
        return self._resolved or frozenset()

    def _resolve(self):
        self._attempted = True
        refresh = self.conf.enforcement.exempted_projects_refresh
        try:
            if self._resolver is None:
                self._resolver = self._resolver_factory(self.conf)
            resolved = set()
            for name, domain in self.names:
                project_id = self._resolver(name, domain)
                if project_id is None:
                    LOG.warning('Exempted project %s@%s does not exist in '
                                'Keystone; it is not exempted.', name, domain)
                else:
                    resolved.add(project_id)
        except Exception as exc:
            LOG.error('Cannot resolve exempted projects %s through Keystone '
                      '(%s); retrying in %d seconds.',
                      ', '.join('@'.join(n) for n in self.names), exc,
                      _RETRY_FAILED_RESOLUTION)
            self._next_resolution = (time.monotonic() +
                                     _RETRY_FAILED_RESOLUTION)
            return
        self._resolved = frozenset(resolved)
        self._next_resolution = (time.monotonic() + refresh if refresh
                                 else float('inf'))
        LOG.info('Exempted projects resolved: %s',
                 ', '.join(sorted(self._resolved)) or 'none')


def _keystone_resolver(conf):
    return projects.ProjectResolver(conf).project_id
