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
"""An account's servers in Nova: the candidate consumers of a move.

Placement lists no consumers by project, Nova lists servers by project:
``GET /servers?all_tenants=1&project_id=<account>`` (the short list, IDs
only, ``limit``/``marker`` pages of :attr:`NovaServers.page_size`) answers
the UUIDs of the account's servers, which are the Placement consumers of
its instances. :func:`placement_quota.accounts.consumers.of_account` then
reads each one from Placement and checks that they add up to the
account's Placement usage; this module only lists.

Nova is reached through ``[nova]`` as for its quota sets
(:mod:`placement_quota.nova.quotas`): keystoneauth's auth, session and
adapter options. Listing every project's servers is an admin's right
(``os_compute_api:servers:index:get_all_tenants``). The request asks for
compute microversion 2.69, so that servers of a cell that is down are
listed too (with their ID only).

Everything Nova answers is checked: a failure, a status other than 200, a
body that is not a server list, an ID that is not a UUID or pages that do
not end raise :class:`NovaServersError` (the caller then reads every
consumer of Placement instead).
"""

from urllib import parse

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
from oslo_log import log as logging

from placement_quota.accounts import consumers
from placement_quota.conf import _util
from placement_quota.conf import nova as nova_conf
from placement_quota import metrics

LOG = logging.getLogger(__name__)

#: Compute microversion of the listing (2.69: servers of a down cell are
#: listed with their ID).
MICROVERSION = '2.69'


class NovaServersError(consumers.CandidatesUnavailable):
    """Nova's server list of a project cannot be had; says why."""


def configured(conf):
    """True when ``[nova]`` names a Nova: keystoneauth options
    (``auth_type`` or ``auth_section``) or ``endpoint_override``."""
    try:
        conf.nova
    except Exception:
        nova_conf.register_opts(conf)
    group = conf.nova
    return bool(group.auth_type or group.auth_section or
                group.endpoint_override)


class NovaServers:
    """``of_project(project_id)``: the UUIDs of a project's servers.

    :param adapter: a keystoneauth adapter of the compute API
        (``raise_exc=False``).
    :param description: where Nova is, for messages.
    :param page_size: servers asked per request (``limit``); Nova answers
        at most its ``[api] max_limit`` (1000 by default) whatever this is.
    """

    #: Requests of one listing at most (a Nova whose pages never end).
    MAX_PAGES = 10000

    def __init__(self, adapter, description, page_size=1000):
        self.adapter = adapter
        self.description = description
        self.page_size = page_size
        #: Requests sent to Nova.
        self.calls = 0

    @classmethod
    def from_conf(cls, conf):
        """From ``[nova]``; None when it names no Nova (see
        :func:`configured`).

        :raises NovaServersError: ``[nova]`` is set but its options cannot
            make a client (a plugin missing a required option...).
        """
        if not configured(conf):
            return None
        group = nova_conf.GROUP.name
        try:
            auth = ks_loading.load_auth_from_conf_options(conf, group)
            session = ks_loading.load_session_from_conf_options(
                conf, group, auth=auth)
            adapter = ks_loading.load_adapter_from_conf_options(
                conf, group, session=session, auth=auth, raise_exc=False)
        except (ks_exceptions.ClientException, ValueError, TypeError) as exc:
            raise NovaServersError('The [nova] options make no Nova client: '
                                   '%s' % exc)
        return cls(adapter, conf.nova.endpoint_override or
                   'Nova of the service catalog (%s)'
                   % (conf.nova.region_name or 'any region'))

    @classmethod
    def from_endpoint(cls, url, headers=None, session=None,
                      timeout=_util.SESSION_TIMEOUT, page_size=1000):
        """Straight to the compute endpoint ``url`` (``.../v2.1``), with
        ``headers`` on every request and no Keystone (tests, tools)."""
        sess = ks_session.Session(session=session, timeout=timeout,
                                  additional_headers=dict(headers or {}))
        return cls(ks_adapter.Adapter(sess, endpoint_override=url,
                                      raise_exc=False), url,
                   page_size=page_size)

    def _where(self, path):
        endpoint = self.adapter.endpoint_override
        if endpoint:
            return endpoint.rstrip('/') + path
        return '%s of %s' % (path, self.description)

    def of_project(self, project_id):
        """The sorted UUIDs of ``project_id``'s servers in Nova.

        :raises NovaServersError: Nova cannot be read or answers something
            that is not a server list.
        """
        with metrics.timed_call(metrics.NOVA_SECONDS, 'servers'):
            return self._of_project(project_id)

    def _of_project(self, project_id):
        found = []
        seen = set()
        marker = None
        for _page in range(self.MAX_PAGES):
            query = [('all_tenants', '1'), ('project_id', project_id),
                     ('limit', str(self.page_size))]
            if marker is not None:
                query.append(('marker', marker))
            servers, more = self._page('/servers?' + parse.urlencode(query),
                                       project_id)
            new = [s for s in servers if s not in seen]
            if servers and not new:
                raise NovaServersError(
                    'Nova answered the same servers again after marker %s '
                    '(GET %s)' % (marker, self._where('/servers')))
            seen.update(new)
            found.extend(new)
            if not more or not servers:
                return sorted(found)
            marker = servers[-1]
        raise NovaServersError('Nova\'s server list of project %r did not '
                               'end after %d pages'
                               % (project_id, self.MAX_PAGES))

    def _page(self, path, project_id):
        """``(server UUIDs, more pages)`` of one ``GET``."""
        where = self._where(path)
        self.calls += 1
        try:
            response = self.adapter.get(
                path, headers={'Accept': 'application/json',
                               'OpenStack-API-Version':
                                   'compute %s' % MICROVERSION,
                               'X-OpenStack-Nova-API-Version':
                                   MICROVERSION})
        except ks_exceptions.ClientException as exc:
            raise NovaServersError('Cannot list the servers of project %r: '
                                   'GET %s failed: %s'
                                   % (project_id, where, exc))
        if response.status_code != 200:
            raise NovaServersError(
                'Cannot list the servers of project %r: GET %s answered '
                '%d: %s' % (project_id, where, response.status_code,
                            ' '.join(response.text.split())[:300]))
        try:
            return parse_page(response.json())
        except ValueError as exc:
            raise NovaServersError('Cannot list the servers of project %r: '
                                   'the answer to GET %s is %s'
                                   % (project_id, where, exc))


def parse_page(body):
    """``(server UUIDs, more pages)`` of one answer of ``GET /servers``:
    its ``servers`` (each with a UUID ``id``) and whether ``servers_links``
    has a ``next``.

    :raises ValueError: ``body`` is not such a page.
    """
    if not isinstance(body, dict) or not isinstance(body.get('servers'),
                                                    list):
        raise ValueError('not a server list (no "servers" list)')
    uuids = []
    for server in body['servers']:
        uuid = server.get('id') if isinstance(server, dict) else None
        if not consumers.is_uuid(uuid):
            raise ValueError('a server ID that is not a UUID: %r'
                             % (str(uuid)[:80],))
        uuids.append(uuid)
    links = body.get('servers_links') or []
    if not isinstance(links, list):
        raise ValueError('"servers_links" is not a list')
    more = any(isinstance(link, dict) and link.get('rel') == 'next'
               for link in links)
    return uuids, more
