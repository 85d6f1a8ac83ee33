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
"""The enforcer: ``enforce(project_id, deltas)`` and claims (Keystone's "Strict
Two-Level Limits Enforcement Model").

Shaped like oslo.limit's ``Enforcer`` — the service gives usage, the library
decides — but it implements the strict two-level model, and it can keep
usage itself: with ``aggregate=True`` each project's aggregate (own usage
plus its children's) is updated as claims land, so a check reads the root's
aggregate instead of the usage of every project of the tree.

::

    enforcer = Enforcer(EmbeddedSource(data))
    enforcer.enforce('B', {'cores': 2})          # raises ProjectOverLimit
    with enforcer.claim('B', {'cores': 2}):      # checks, then counts it
        create_the_servers()

Usage comes from the tracked counts, from a callback
``usage(project_id, resource_names) -> {resource: amount}`` (oslo.limit's
signature), or from an object with ``get_usage(project_ids,
resource_names) -> {project_id: {resource: amount}}``.
"""

import threading

from oslo_log import log as logging

from placement_quota.limits import errors
from placement_quota.limits import tree as tree_mod

LOG = logging.getLogger(__name__)


def _bulk_reader(usage):
    """``usage`` as ``f(project_ids, resources) -> {project: {r: n}}``."""
    if usage is None:
        return None
    get_usage = getattr(usage, 'get_usage', None)
    if get_usage is not None:
        return get_usage
    if not callable(usage):
        raise TypeError('usage must be a callable or have get_usage(), not '
                        '%r' % (usage,))

    def read(project_ids, resources):
        return {p: usage(p, resources) for p in project_ids}
    return read


def check_project_id(project_id):
    """``project_id`` if it is a non-empty string, else ValueError."""
    if not isinstance(project_id, str) or not project_id:
        raise ValueError('project ID must be a non-empty string, not %r'
                         % (project_id,))
    return project_id


def check_deltas(deltas):
    """``deltas`` as a dict of resource name to integer, or ValueError."""
    if not isinstance(deltas, dict):
        raise ValueError('deltas must be a mapping of resource name to '
                         'amount, not %r' % (deltas,))
    for resource, delta in deltas.items():
        if not isinstance(resource, str) or not resource:
            raise ValueError('resource name %r is not a non-empty string'
                             % (resource,))
        if isinstance(delta, bool) or not isinstance(delta, int):
            raise ValueError('delta for %s must be an integer, not %r'
                             % (resource, delta))
    return deltas


class ProjectClaim:
    """A quantity of one resource for one project (the name Keystone's "Strict
    Two-Level Limits Enforcement Model" gives it)."""

    def __init__(self, resource_name, project_id, quantity=1):
        self.resource_name = resource_name
        self.project_id = project_id
        self.quantity = quantity


class Claim:
    """A context manager: check on enter, verify and count on exit.

    On enter the claim is checked and reserved, so that a concurrent claim
    in this process sees it. If the block raises, the reservation is
    dropped. If it ends normally and ``verify`` is on, limits (and usage,
    when a usage source is given) are read again and the claim is refused
    with :class:`~placement_quota.limits.errors.ProjectOverLimit` if the
    tree is over its limit — the caller must then undo its work. If the
    verification itself fails (the limits source cannot be read), the
    claim, which passed its check on enter, is kept and a warning logged.
    """

    def __init__(self, enforcer, project_id, deltas, verify):
        self.enforcer = enforcer
        self.project_id = check_project_id(project_id)
        self.deltas = dict(check_deltas(deltas))
        negative = sorted(r for r, d in self.deltas.items() if d < 0)
        if negative:
            raise ValueError('a claim takes amounts of at least 0, not %s; '
                             'give usage back with release()'
                             % ', '.join('%s=%s' % (r, self.deltas[r])
                                         for r in negative))
        self.verify = verify
        self._held = False

    def __enter__(self):
        self.enforcer._begin(self.project_id, self.deltas)
        self._held = True
        return self

    def __exit__(self, exc_type, exc, tb):
        if not self._held:
            return False
        self._held = False
        if exc_type is not None:
            self.enforcer._abort(self.project_id, self.deltas)
            return False
        if self.verify:
            try:
                self.enforcer._verify(self.project_id, self.deltas)
            except errors.ProjectOverLimit:
                self.enforcer._abort(self.project_id, self.deltas)
                raise
            except Exception as error:
                LOG.warning('Could not verify the claim of project %s for '
                            '%s after its work was done; keeping it: %s',
                            self.project_id, self.deltas, error)
        self.enforcer._commit(self.project_id, self.deltas)
        return False


class Enforcer:
    """Checks claims against the limits of a source.

    :param source: a :class:`~placement_quota.limits.sources.LimitSource`.
        Unless it is local, the limits of the project and of its root are
        re-read before each check (wrap it in a CachingSource to trade
        accuracy for speed).
    :param usage: where usage comes from (a callback or an object with
        ``get_usage``); None to count only what claims add.
    :param aggregate: True (default): read the root's aggregate, kept up to
        date as claims land; usage is read from ``usage`` for every project
        and resource once (at start, when a project or a resource is first
        seen, and on :meth:`rebuild`). False: read the usage of every
        project of the tree from ``usage`` at every check (needs ``usage``).
    :param verify: default of :meth:`claim`'s ``verify``.
    :param unregistered_limit: limit of a resource nobody registered.
    """

    def __init__(self, source, usage=None, aggregate=True, verify=True,
                 unregistered_limit=0):
        self.source = source
        self.aggregate = aggregate
        self.verify = verify
        self._read_usage = _bulk_reader(usage)
        if not aggregate and self._read_usage is None:
            raise ValueError('The naive usage calculation (aggregate=False) '
                             'reads usage from a callback; give usage=.')
        data = source.load()
        self.model = tree_mod.normalize_model(data.model)
        if self.model == tree_mod.FLAT:
            # The flat model ignores the hierarchy: every project is a root.
            for project in data.projects.values():
                project.parent_id = None
        self.tree = tree_mod.ProjectTree.from_data(
            data, strict=False, unregistered_limit=unregistered_limit,
            on_violation=lambda v: LOG.warning('Limits source: %s', v))
        #: Claims in flight in this process (entered, not yet exited).
        self._inflight = {}
        self._inflight_lock = threading.Lock()
        #: Naive path: one lock per tree, held from the usage read to the
        #: reservation, and by the end of a claim.
        self._root_locks = {}
        #: Serializes adoption of projects first seen at a check.
        self._adopt_lock = threading.Lock()
        #: Aggregate path with a usage source: the resources whose usage
        #: was read for every project.
        self._resources_read = set()
        if aggregate and self._read_usage is not None:
            self.rebuild()

    # -- public API --------------------------------------------------------

    def enforce(self, project_id, deltas):
        """Raise ProjectOverLimit if adding ``deltas`` to the project's
        usage would exceed its limit or its tree's; count nothing."""
        check_project_id(project_id)
        check_deltas(deltas)
        self._prepare(project_id, deltas)
        if self.aggregate:
            with self.tree.lock:
                over = self._over_tracked(project_id, deltas)
        else:
            with self._root_lock(project_id):
                over = self._over_read(project_id, deltas)
        if over:
            self._raise(project_id, over)

    def claim(self, project_id, deltas, verify=None):
        """A :class:`Claim` for ``deltas`` on ``project_id``."""
        return Claim(self, project_id, deltas,
                     self.verify if verify is None else verify)

    def project_claim(self, *claims, verify=None):
        """A Claim made of :class:`ProjectClaim` objects of one project."""
        projects = {c.project_id for c in claims}
        if len(projects) != 1:
            raise ValueError('claims must all be for one project, not %s'
                             % sorted(projects, key=str))
        deltas = {}
        for c in claims:
            deltas[c.resource_name] = deltas.get(c.resource_name, 0) + \
                c.quantity
        return self.claim(projects.pop(), deltas, verify)

    def release(self, project_id, amounts):
        """Aggregate path: the project gave ``amounts`` back.

        An amount above what the project is counted for is cut to it (and
        logged): usage never goes below 0.
        """
        check_project_id(project_id)
        check_deltas(amounts)
        negative = sorted(r for r, d in amounts.items() if d < 0)
        if negative:
            raise ValueError('release() takes amounts of at least 0, not %s'
                             % ', '.join('%s=%s' % (r, amounts[r])
                                         for r in negative))
        self._prepare(project_id, amounts, refresh_limits=False)
        with self.tree.lock:
            given = {}
            for resource, amount in amounts.items():
                used = self.tree.usage(project_id, resource)
                if amount > used:
                    LOG.warning('Project %s releases %s %s but is counted '
                                'for %s; releasing %s', project_id, amount,
                                resource, used, used)
                    amount = used
                given[resource] = -amount
            self.tree.add_usage(project_id, given)

    def rebuild(self, resources=None):
        """Re-read every project's usage from the usage source and
        recompute the aggregates (after drift, or at start).

        Only ``resources`` (default: every resource with a limit or read
        before) are replaced; claims in flight stay counted. Best run when
        quiet: a claim that ends while the usage is read may be counted
        twice or not at all until the next rebuild.
        """
        if self._read_usage is None:
            raise ValueError('No usage source to rebuild from.')
        resources = sorted(set(resources or ()) or (
            set(self.tree.resources()) | self._resources_read))
        projects = list(self.tree)
        read = self._read_usage(projects, resources)
        with self.tree.lock:
            with self._inflight_lock:
                inflight = {p: dict(d) for p, d in self._inflight.items()}
            for project_id in projects:
                if project_id not in self.tree:
                    continue
                node = self.tree._node(project_id)
                found = read.get(project_id) or {}
                pending = inflight.get(project_id, {})
                for resource in resources:
                    node.usage[resource] = (found.get(resource, 0) +
                                            pending.get(resource, 0))
            self.tree.rebuild_aggregates()
            self._resources_read.update(resources)

    def calculate_usage(self, project_id, resources):
        """``{resource: (project usage, tree usage)}`` by the configured
        path (in the naive one, in-flight claims are not included)."""
        check_project_id(project_id)
        self._prepare(project_id, dict.fromkeys(resources, 0))
        if self.aggregate:
            with self.tree.lock:
                return {r: (self.tree.usage(project_id, r),
                            self._tree_usage_tracked(project_id, r))
                        for r in resources}
        family = self._family(project_id)
        read = self._read_usage(family, list(resources))
        return {r: ((read.get(project_id) or {}).get(r, 0),
                    sum((read.get(p) or {}).get(r, 0) for p in family))
                for r in resources}

    def limits(self, project_id, resources):
        """``{resource: (project limit, tree limit)}``."""
        check_project_id(project_id)
        self._prepare(project_id, {})
        return {r: (self._project_limit(project_id, r),
                    self._tree_limit(project_id, r)) for r in resources}

    # -- claims ------------------------------------------------------------

    def _begin(self, project_id, deltas):
        self._prepare(project_id, deltas)
        if self.aggregate:
            with self.tree.lock:
                over = self._over_tracked(project_id, deltas)
                if not over:
                    self.tree.add_usage(project_id, deltas)
                    self._track(project_id, deltas, 1)
        else:
            with self._root_lock(project_id):
                over = self._over_read(project_id, deltas)
                if not over:
                    self._track(project_id, deltas, 1)
        if over:
            self._raise(project_id, over)

    def _abort(self, project_id, deltas):
        if self.aggregate:
            with self.tree.lock:
                self.tree.add_usage(project_id,
                                    {r: -d for r, d in deltas.items()})
                self._track(project_id, deltas, -1)
        else:
            with self._root_lock(project_id):
                self._track(project_id, deltas, -1)

    def _commit(self, project_id, deltas):
        if self.aggregate:
            with self.tree.lock:
                self._track(project_id, deltas, -1)
        else:
            with self._root_lock(project_id):
                self._track(project_id, deltas, -1)

    def _track(self, project_id, deltas, sign):
        with self._inflight_lock:
            mine = self._inflight.setdefault(project_id, {})
            for r, d in deltas.items():
                mine[r] = mine.get(r, 0) + sign * d
                if not mine[r]:
                    del mine[r]
            if not mine:
                del self._inflight[project_id]

    def _verify(self, project_id, deltas):
        """Refuse if the tree is now over its limits (our claim counted)."""
        resources = [r for r, d in deltas.items() if d > 0]
        if not resources:
            return
        self._prepare(project_id, deltas)
        if self._read_usage is not None:
            # What the usage source says now: the claim's own resources
            # (created by the block) and whatever other requests added.
            # Tracked aggregates are left alone; rebuild() resyncs them.
            family = self._family(project_id)
            read = self._read_usage(family, resources)
            project = read.get(project_id) or {}
            over = self._over(project_id, dict.fromkeys(resources, 0),
                              lambda r: project.get(r, 0),
                              lambda r: sum((read.get(p) or {}).get(r, 0)
                                            for p in family),
                              strict_zero=True)
        else:
            with self.tree.lock:
                over = self._over_tracked(project_id, dict.fromkeys(
                    resources, 0), strict_zero=True)
        if over:
            raise self._error(project_id, over)

    def _root_lock(self, project_id):
        root = project_id if self.model == tree_mod.FLAT else \
            self.tree.root(project_id)
        with self._adopt_lock:
            lock = self._root_locks.get(root)
            if lock is None:
                lock = self._root_locks[root] = threading.RLock()
        return lock

    # -- checks ------------------------------------------------------------

    def _prepare(self, project_id, deltas, refresh_limits=True):
        """Make sure the project is in the tree, its usage known for the
        resources of ``deltas``, and its limits fresh."""
        if project_id not in self.tree:
            self._adopt(project_id)
        if self.aggregate and self._read_usage is not None:
            unread = set(deltas) - self._resources_read
            if unread:
                self.rebuild(sorted(unread))
        if refresh_limits and not self.source.local:
            ids = [project_id]
            root = self.tree.root(project_id)
            if root != project_id:
                ids.append(root)
            fresh = self.source.refresh(ids)
            with self.tree.lock:
                self.tree.registered_limits = {
                    r: v for r, v in fresh.registered_limits.items()
                    if tree_mod._valid_limit(v)}
                for p in ids:
                    project = fresh.projects.get(p)
                    limits = {} if project is None else project.limits
                    self.tree._node(p).limits = {
                        r: v for r, v in limits.items()
                        if tree_mod._valid_limit(v)}

    def _adopt(self, project_id):
        """Add a project first seen now (and its parent if new too), with
        its usage when the enforcer tracks it."""
        with self._adopt_lock:
            if project_id in self.tree:
                return
            chain = self._ancestry(project_id)
            added = [p.id for p in chain]
            usage = {}
            if self.aggregate and self._read_usage is not None and \
                    self._resources_read:
                usage = self._read_usage(added, sorted(self._resources_read))
            with self.tree.lock:
                for project in reversed(chain):
                    parent = project.parent_id
                    if parent is not None:
                        grandparent = self.tree.parent(parent)
                        if grandparent is not None:
                            raise errors.DepthExceeded(project.id, parent,
                                                       grandparent)
                    self.tree._add(project.id, parent, project.name)
                    self.tree._node(project.id).limits = {
                        r: v for r, v in project.limits.items()
                        if tree_mod._valid_limit(v)}
                    found = usage.get(project.id) or {}
                    self.tree.set_usage(project.id, {
                        r: found.get(r, 0) for r in self._resources_read
                        if found.get(r, 0)})

    def _ancestry(self, project_id):
        """The new project and its ancestors not yet in the tree, from the
        source: at most two (a child and its new root)."""
        chain = []
        current = project_id
        while current is not None and current not in self.tree:
            if any(p.id == current for p in chain):
                raise errors.HierarchyCycle([p.id for p in chain])
            if len(chain) == 2:
                raise errors.DepthExceeded(chain[0].id, chain[1].id, current)
            project = self.source.project(current)
            if project is None:
                if chain:
                    raise errors.UnknownParent(chain[-1].id, current)
                raise errors.UnknownProject(current)
            if self.model == tree_mod.FLAT:
                project.parent_id = None
            parent = project.parent_id
            if parent is not None and parent not in self.tree and \
                    self.source.local:
                # A local source was loaded whole: an unknown parent is
                # not a project created since.
                raise errors.UnknownParent(project.id, parent)
            chain.append(project)
            current = parent
        return chain

    def _family(self, project_id):
        if self.model == tree_mod.FLAT:
            return [project_id]
        return self.tree.family(project_id)

    def _project_limit(self, project_id, resource):
        if self.model == tree_mod.FLAT:
            return self.tree.flat_limit(project_id, resource)
        return self.tree.effective_limit(project_id, resource)

    def _tree_limit(self, project_id, resource):
        if self.model == tree_mod.FLAT:
            return self.tree.flat_limit(project_id, resource)
        return self.tree.effective_limit(self.tree.root(project_id),
                                         resource)

    def _tree_usage_tracked(self, project_id, resource):
        if self.model == tree_mod.FLAT:
            return self.tree.usage(project_id, resource)
        return self.tree.tree_usage(project_id, resource)

    def _over_tracked(self, project_id, deltas, strict_zero=False):
        tree = self.tree
        return self._over(
            project_id, deltas,
            lambda r: tree.usage(project_id, r),
            lambda r: self._tree_usage_tracked(project_id, r),
            strict_zero)

    def _over_read(self, project_id, deltas):
        """Naive check (the caller holds the tree's root lock)."""
        family = self._family(project_id)
        resources = [r for r, d in deltas.items() if d > 0]
        if not resources:
            return []
        read = self._read_usage(family, resources)
        with self._inflight_lock:
            pending = {p: dict(self._inflight.get(p, {})) for p in family}

        def project_usage(r):
            return ((read.get(project_id) or {}).get(r, 0) +
                    pending[project_id].get(r, 0))

        def tree_usage(r):
            return sum((read.get(p) or {}).get(r, 0) + pending[p].get(r, 0)
                       for p in family)

        return self._over(project_id, deltas, project_usage, tree_usage)

    def _over(self, project_id, deltas, project_usage, tree_usage,
              strict_zero=False):
        """OverLimitInfo for every resource whose positive delta (or, with
        ``strict_zero``, current usage) breaks a limit."""
        over = []
        for resource, delta in deltas.items():
            if delta < 0 or (delta == 0 and not strict_zero):
                continue
            project_limit = self._project_limit(project_id, resource)
            tree_limit = self._tree_limit(project_id, resource)
            used = project_usage(resource)
            if project_limit != tree_mod.UNLIMITED and \
                    used + delta > project_limit:
                over.append(errors.OverLimitInfo(
                    resource, 'project', project_limit, tree_limit, used,
                    tree_usage(resource), delta))
                continue
            if tree_limit == tree_mod.UNLIMITED:
                continue
            total = tree_usage(resource)
            if total + delta > tree_limit:
                over.append(errors.OverLimitInfo(
                    resource, 'tree', project_limit, tree_limit, used, total,
                    delta))
        return over

    def _error(self, project_id, over):
        parent = (None if self.model == tree_mod.FLAT
                  else self.tree.parent(project_id))
        root = (project_id if self.model == tree_mod.FLAT
                else self.tree.root(project_id))
        return errors.ProjectOverLimit(project_id, parent, root, over)

    def _raise(self, project_id, over):
        raise self._error(project_id, over)
