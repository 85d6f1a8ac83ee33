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
"""Where limits and the project hierarchy come from.

A source answers three questions: the whole picture (:meth:`LimitSource.load`),
fresh limits for a few projects (:meth:`LimitSource.refresh`, what the
enforcer asks before each check) and one project (:meth:`LimitSource.project`,
for a project created since the last load).

:class:`EmbeddedSource` holds the data in this process (from a YAML or JSON
file and the configuration): the embedded default, without Keystone. The
Keystone source lives in :mod:`placement_quota.identity.limits`.

Limits are not cached by default: Keystone's "Strict Two-Level Limits
Enforcement Model" shows how a cached limit lets a request through minutes
after an administrator lowered it. Wrapping a source in :class:`CachingSource`
trades that accuracy for fewer Keystone calls.
"""

import copy
import json
import threading
import time

import yaml

from placement_quota import errors as pq_errors
from placement_quota.limits import tree as tree_mod
from placement_quota import schemas


class SourceError(pq_errors.DependencyError):
    """The source could not be read, or holds malformed data."""


class SourceUnavailable(SourceError, pq_errors.DependencyUnavailable):
    """The source's service (Keystone) is down or did not answer in time:
    an outage (503)."""

    service = 'keystone'


class LimitSource:
    """Base class of limit sources."""

    #: True when this process holds the authoritative data (nothing to
    #: re-read before a check).
    local = False

    def load(self):
        """Everything: a :class:`~placement_quota.limits.tree.LimitData`."""
        raise NotImplementedError

    def version(self):
        """A value that changes whenever the data changes, or None when the
        source cannot tell (then :attr:`local` and cache rules apply)."""
        return None

    def refresh(self, project_ids):
        """Fresh registered limits and the limits of ``project_ids``.

        Returns a LimitData holding only those projects. The default reads
        everything with :meth:`load`; remote sources read less.
        """
        data = self.load()
        wanted = set(project_ids)
        data.projects = {p: v for p, v in data.projects.items()
                         if p in wanted}
        data.usage = {}
        return data

    def project(self, project_id):
        """The :class:`~placement_quota.limits.tree.Project`, or None."""
        return self.load().projects.get(project_id)


_NAME = {'type': 'string', 'minLength': 1, 'maxLength': 255}
_LIMITS = {'type': 'object', 'propertyNames': _NAME,
           'additionalProperties': {'type': 'integer', 'minimum': -1}}
_USAGE = {'type': 'object', 'propertyNames': _NAME,
          'additionalProperties': {'type': 'integer', 'minimum': 0}}
FILE_SCHEMA = {
    'type': 'object',
    'additionalProperties': False,
    'properties': {
        'model': {'enum': sorted(tree_mod._MODEL_NAMES)},
        'registered_limits': _LIMITS,
        'projects': {
            'type': 'object', 'propertyNames': _NAME,
            'additionalProperties': {
                'type': ['object', 'null'], 'additionalProperties': False,
                'properties': {'parent': {'oneOf': [_NAME,
                                                    {'type': 'null'}]},
                               'name': _NAME, 'limits': _LIMITS}}},
        'usage': {'type': 'object', 'propertyNames': _NAME,
                  'additionalProperties': _USAGE},
    },
}


def data_from_dict(document, where='limits data'):
    """A LimitData from the file format (see :class:`EmbeddedSource`).

    Raises SourceError naming the field and the value that is wrong.
    """
    # JSON Schema calls 10.0 an integer; a limit of 10.0 is a typo here.
    error = schemas.first_error(FILE_SCHEMA, document)
    if error is not None:
        field = '/'.join(str(p) for p in error.absolute_path) or '(top)'
        raise SourceError('%s: field %s: %s' % (where, field, error.message))
    projects = {}
    for project_id, spec in (document.get('projects') or {}).items():
        spec = spec or {}
        projects[project_id] = tree_mod.Project(
            project_id, spec.get('parent'), spec.get('name'),
            dict(spec.get('limits') or {}))
    return tree_mod.LimitData(
        model=tree_mod.normalize_model(
            document.get('model', tree_mod.STRICT_TWO_LEVEL)),
        registered_limits=dict(document.get('registered_limits') or {}),
        projects=projects,
        usage={p: dict(u) for p, u in (document.get('usage') or {}).items()})


def read_file(path):
    """Parse a limits file (YAML, of which JSON is a subset)."""
    try:
        with open(path, encoding='utf-8') as f:
            document = yaml.safe_load(f)
    except OSError as exc:
        raise SourceError('Cannot read limits file %s: %s'
                          % (path, exc.strerror or exc))
    except yaml.YAMLError as exc:
        raise SourceError('Limits file %s is not valid YAML or JSON: %s'
                          % (path, exc))
    return data_from_dict(document if document is not None else {},
                          where=path)


class EmbeddedSource(LimitSource):
    """Limits held in this process: the embedded default.

    The data has the shape of the limits file::

        model: strict_two_level          # or flat
        registered_limits: {cores: 10}
        projects:
          A: {limits: {cores: 20}}
          B: {parent: A}
        usage:                           # optional
          A: {cores: 4}

    With ``implicit_projects`` (the default), a project the data does not
    name is a root with the registered limits, so that a cloud without
    Keystone limits every project by the defaults.
    """

    local = True

    def __init__(self, data=None, implicit_projects=True):
        self._data = data or tree_mod.LimitData()
        self.implicit_projects = implicit_projects

    @classmethod
    def from_file(cls, path, registered_limits=None, **kwargs):
        data = read_file(path)
        for resource, value in (registered_limits or {}).items():
            data.registered_limits.setdefault(resource, value)
        return cls(data, **kwargs)

    def load(self):
        return copy.deepcopy(self._data)

    def refresh(self, project_ids):
        return tree_mod.LimitData(
            model=self._data.model,
            registered_limits=dict(self._data.registered_limits),
            projects={p: copy.deepcopy(self._data.projects[p])
                      for p in project_ids if p in self._data.projects})

    def project(self, project_id):
        found = self._data.projects.get(project_id)
        if found is None and self.implicit_projects:
            return tree_mod.Project(project_id)
        return copy.deepcopy(found)


class CachingSource(LimitSource):
    """Answers from ``source`` kept for ``ttl`` seconds (opt-in).

    A limit lowered in the source is seen here up to ``ttl`` seconds late.
    """

    def __init__(self, source, ttl, clock=time.monotonic):
        if ttl <= 0:
            raise ValueError('cache ttl must be positive, not %r' % (ttl,))
        self.source = source
        self.ttl = ttl
        self.local = source.local
        self._clock = clock
        self._lock = threading.Lock()
        self._loaded = None
        self._refreshed = {}
        self._projects = {}

    def _fresh(self, stamp):
        return stamp is not None and self._clock() - stamp < self.ttl

    def load(self):
        with self._lock:
            if self._loaded is not None and self._fresh(self._loaded[0]):
                return copy.deepcopy(self._loaded[1])
        data = self.source.load()
        with self._lock:
            self._loaded = (self._clock(), data)
        return copy.deepcopy(data)

    def refresh(self, project_ids):
        key = tuple(sorted(project_ids))
        with self._lock:
            cached = self._refreshed.get(key)
            if cached is not None and self._fresh(cached[0]):
                return copy.deepcopy(cached[1])
        data = self.source.refresh(project_ids)
        with self._lock:
            self._refreshed[key] = (self._clock(), data)
        return copy.deepcopy(data)

    def project(self, project_id):
        with self._lock:
            cached = self._projects.get(project_id)
            if cached is not None and self._fresh(cached[0]):
                return copy.deepcopy(cached[1])
        found = self.source.project(project_id)
        with self._lock:
            self._projects[project_id] = (self._clock(), found)
        return copy.deepcopy(found)


def dump(data):
    """``data`` in the limits file format (a dict, for YAML or JSON)."""
    document = {'model': data.model,
                'registered_limits': dict(data.registered_limits),
                'projects': {}}
    for project_id, project in sorted(data.projects.items()):
        spec = {}
        if project.parent_id is not None:
            spec['parent'] = project.parent_id
        if project.name:
            spec['name'] = project.name
        if project.limits:
            spec['limits'] = dict(project.limits)
        document['projects'][project_id] = spec
    if data.usage:
        document['usage'] = {p: dict(u) for p, u in data.usage.items()}
    return json.loads(json.dumps(document))


def limits_now(source, project_ids, resources):
    """``{project: {resource: limit}}``: what ``source`` holds now for
    each of ``project_ids`` -- its own limit, else the registered one,
    for a child capped at its parent's (Keystone's "Strict Two-Level
    Limits Enforcement Model"). A resource without a limit (neither
    explicit nor registered, or -1) is left out.

    One :meth:`LimitSource.load`: a few calls to Keystone whatever the
    number of projects, where :meth:`LimitSource.refresh` makes one per
    project. Raises what the source raises (:class:`SourceError`).
    """
    tree = tree_mod.ProjectTree.from_data(source.load(), strict=False,
                                          unregistered_limit=-1)
    found = {}
    for project_id in project_ids:
        limits = {}
        for resource in resources:
            value = (tree.effective_limit(project_id, resource)
                     if project_id in tree else tree.default_limit(resource))
            if value is not None and value >= 0:
                limits[resource] = value
        found[project_id] = limits
    return found
