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
"""Keystone unified limits and project parents as a limits source.

Which source a configuration uses (Keystone, the embedded file, the
accounts of the admin API) is decided by
:func:`placement_quota.services.limits_source`."""

import contextlib

from keystoneauth1 import exceptions as ks_exceptions
from openstack import exceptions as sdk_exceptions
from oslo_log import log as logging

from placement_quota.identity import projects
from placement_quota.limits import sources
from placement_quota.limits import tree as tree_mod
from placement_quota import sessions

LOG = logging.getLogger(__name__)


class KeystoneLimitSource(sources.LimitSource):
    """Keystone unified limits and project parents, read with openstacksdk.

    What is read, and how it maps to the strict two-level model:

    * the model: ``GET /v3/limits/model`` (``strict_two_level``, the
      ``strict-two-level`` spelling of Keystone's "Strict Two-Level Limits
      Enforcement Model", or ``flat``);
    * the projects: ``GET /v3/projects``, projects acting as domains left
      out. A top-level project, whose parent in Keystone is its domain, is
      a root: domains are not part of the tree;
    * the registered limits and the project limits of one service:
      ``service_id``, or else the single service of type ``service_type``
      (resolved once, then kept: a service ID does not change);
    * of one region: with ``region_id`` None, only limits without a region;
      with a region, that region's limits and those without a region, the
      region's winning for the same resource (and project).

    Domain-level limits (a limit with a ``domain_id`` instead of a
    ``project_id``) are ignored: the tree holds projects only.

    Nothing is cached but the service ID and, for :meth:`refresh`, the
    parents and names of projects already seen (Keystone refuses to change
    a project's parent). Every failure to read Keystone (unreachable,
    credentials refused, not allowed) raises
    :class:`~placement_quota.limits.sources.SourceError` saying what was
    being read and why.

    HTTP calls (besides keystoneauth's token request): :meth:`load` 4
    (model, registered limits, project limits, projects); :meth:`refresh`
    1 + one per project (registered limits, then the limits of each
    project: 2 for a root, 3 for a child and its root); :meth:`project` 2.
    Resolving ``service_type`` adds one call, the first time only. One
    ``GET /v3/limits`` of the whole service would save :meth:`refresh` a
    call for a child, but Keystone's answer slows with the number of limits
    (0.7 s for 900 limits against 0.05 s for one project's, on the test
    Keystone), and refresh runs before every check.

    The ``[keystone]`` user needs the ``admin`` role (or a system-scoped
    ``reader``) to list projects and services. Beware that Keystone answers
    a mere project member's ``GET /v3/limits`` with that project's limits
    only, without an error.
    """

    local = False

    def __init__(self, conn, service_id=None, service_type='reservation',
                 region_id=None):
        self.conn = conn
        self.service_type = service_type
        self.region_id = region_id
        self._service_id = service_id
        #: The model read by the last load (refresh reuses it: Keystone
        #: only changes it when restarted with another configuration).
        self._model = None
        #: project ID -> (parent ID, name), as last seen.
        self._seen = {}

    @classmethod
    def from_conf(cls, conf):
        """The source ``[limits]`` and the ``[keystone]`` credentials
        describe (KeystoneNotConfigured without credentials)."""
        group = conf.limits
        return cls(projects.connection(conf), service_id=group.service_id,
                   service_type=group.service_type,
                   region_id=group.region_id)

    # -- LimitSource -------------------------------------------------------

    def load(self):
        model = self._read_model()
        service_id = self.service_id
        registered = self._registered_limits(service_id)
        limits = self._project_limits(service_id)
        with self._reading('the projects'):
            found = list(self.conn.identity.projects())
        data_projects = {}
        for project in found:
            if project.is_domain:
                continue
            data_projects[project.id] = self._project(project)
        for project_id, project_limits in limits.items():
            project = data_projects.get(project_id)
            if project is None:
                LOG.debug('Ignoring the limits of project %s, not in the '
                          'project list (created or deleted meanwhile)',
                          project_id)
                continue
            project.limits = project_limits
        LOG.debug('Read from Keystone: model %s, %d projects, registered '
                  'limits %s, %d projects with limits (service %s, region '
                  '%s)', model, len(data_projects), registered, len(limits),
                  service_id, self.region_id)
        return tree_mod.LimitData(model=model, registered_limits=registered,
                                  projects=data_projects)

    def refresh(self, project_ids):
        """Fresh registered limits and the limits of ``project_ids``.

        The model is the one the last :meth:`load` read (read now if there
        was none). Each project's parent and name are those last seen by
        :meth:`load` or :meth:`project`, None if never seen: a refresh
        re-reads limits, not the hierarchy.
        """
        model = self._model or self._read_model()
        service_id = self.service_id
        registered = self._registered_limits(service_id)
        data_projects = {}
        for project_id in dict.fromkeys(project_ids):
            parent_id, name = self._seen.get(project_id, (None, None))
            data_projects[project_id] = tree_mod.Project(
                project_id, parent_id, name,
                self._project_limits(service_id, project_id).get(
                    project_id, {}))
        return tree_mod.LimitData(model=model, registered_limits=registered,
                                  projects=data_projects)

    def project(self, project_id):
        """The project with its limits, or None if Keystone has no such
        project (or it is a domain)."""
        with self._reading('project %s' % project_id):
            try:
                found = self.conn.identity.get_project(project_id)
            except sdk_exceptions.NotFoundException:
                return None
        if found.is_domain:
            return None
        project = self._project(found)
        project.limits = self._project_limits(
            self.service_id, project_id).get(project_id, {})
        return project

    # -- reading -----------------------------------------------------------

    @property
    def service_id(self):
        """The ID of the service whose limits are read (resolved from
        ``service_type`` on first use)."""
        if self._service_id is None:
            self._service_id = self._resolve_service()
        return self._service_id

    def _resolve_service(self):
        what = 'the services of type %r' % self.service_type
        with self._reading(what):
            found = [s for s in self.conn.identity.services(
                type=self.service_type) if s.type == self.service_type]
        if not found:
            raise sources.SourceError(
                'Keystone has no service of type %r, whose limits would '
                'apply: register it, or set [limits] service_id or '
                'service_type.' % self.service_type)
        if len(found) > 1:
            raise sources.SourceError(
                'Keystone has %d services of type %r (%s): set [limits] '
                'service_id to the one whose limits apply.' % (
                    len(found), self.service_type, ', '.join(
                        '%s (%s)' % (s.id, s.name)
                        for s in sorted(found, key=lambda s: s.id))))
        LOG.debug('Limits of service %s (%s), type %s', found[0].id,
                  found[0].name, self.service_type)
        return found[0].id

    def _read_model(self):
        with self._reading('the limits enforcement model'):
            response = self.conn.identity.get('/limits/model')
            sdk_exceptions.raise_from_response(response)
            try:
                body = response.json()
            except ValueError:
                body = None
        self._model = model_from_body(body)
        return self._model

    def _registered_limits(self, service_id):
        with self._reading('the registered limits of service %s'
                           % service_id):
            found = list(self.conn.identity.registered_limits(
                service_id=service_id))
        return self._of_region(
            (rl.region_id, rl.resource_name, rl.default_limit)
            for rl in found if rl.service_id == service_id)

    def _project_limits(self, service_id, project_id=None):
        """``{project ID: {resource: limit}}`` of the service and region,
        of every project or only of ``project_id``."""
        query = {'service_id': service_id}
        what = 'the project limits of service %s' % service_id
        if project_id is not None:
            query['project_id'] = project_id
            what += ' for project %s' % project_id
        with self._reading(what):
            found = list(self.conn.identity.limits(**query))
        by_project = {}
        for limit in found:
            if not limit.project_id:
                LOG.debug('Ignoring the limit of domain %s for %s: domains '
                          'are not part of the project tree',
                          limit.domain_id, limit.resource_name)
                continue
            if limit.service_id != service_id or (
                    project_id is not None and limit.project_id != project_id):
                continue
            by_project.setdefault(limit.project_id, []).append(
                (limit.region_id, limit.resource_name, limit.resource_limit))
        return {p: self._of_region(items) for p, items in by_project.items()}

    def _of_region(self, items):
        """``{resource: value}`` from ``(region, resource, value)``: the
        limits without a region, overridden by the configured region's."""
        general, regional = {}, {}
        for region_id, resource, value in items:
            if region_id is None:
                general[resource] = value
            elif region_id == self.region_id:
                regional[resource] = value
        general.update(regional)
        return general

    def _project(self, found):
        parent_id = found.parent_id
        if parent_id is not None and parent_id == found.domain_id:
            # A top-level project: its parent is its domain.
            parent_id = None
        self._seen[found.id] = (parent_id, found.name)
        return tree_mod.Project(found.id, parent_id, found.name)

    @contextlib.contextmanager
    def _reading(self, what):
        """Turn a failure to read ``what`` into a SourceError."""
        try:
            yield
        except (sdk_exceptions.SDKException, ks_exceptions.ClientException) \
                as exc:
            where = getattr(getattr(self.conn.session, 'auth', None),
                            'auth_url', None)
            raise read_error(what, where, exc) from exc


def read_error(what, where, exc):
    """The SourceError of failing to read ``what`` from the Keystone at
    ``where`` (None: unknown) because of keystoneauth's or openstacksdk's
    ``exc``: :class:`~placement_quota.limits.sources.SourceUnavailable`
    when Keystone is down (:func:`~placement_quota.sessions.is_outage`)."""
    cls = (sources.SourceUnavailable if sessions.is_outage(exc)
           else sources.SourceError)
    return cls('Cannot read %s from Keystone%s: %s' % (
        what, ' at %s' % where if where else '', _reason(exc)))


def model_from_body(body):
    """Our model name from the body of ``GET /v3/limits/model``, or
    SourceError."""
    try:
        name = body['model']['name']
    except (KeyError, TypeError):
        raise sources.SourceError(
            'Keystone answered GET /v3/limits/model without a model name: '
            '%r' % (body,)) from None
    try:
        return tree_mod.normalize_model(name)
    except ValueError as exc:
        raise sources.SourceError(
            'Keystone enforces limits with a model placement-quota does not '
            'implement: %s' % exc) from None


def _reason(exc):
    """Why reading Keystone failed, in a sentence."""
    if isinstance(exc, ks_exceptions.ConnectionError):
        return 'Keystone is unreachable (%s)' % exc
    status = getattr(exc, 'status_code', None) or getattr(
        exc, 'http_status', None)
    details = getattr(exc, 'details', None) or getattr(
        exc, 'message', None) or str(exc)
    if status == 401:
        return 'the [keystone] credentials were refused (HTTP 401)'
    if status == 403:
        return ('the [keystone] user is not allowed to read it; it needs '
                'the admin role or a system-scoped reader role (HTTP 403: '
                '%s)' % details)
    if status is not None:
        return 'HTTP %s: %s' % (status, details)
    return str(exc)
