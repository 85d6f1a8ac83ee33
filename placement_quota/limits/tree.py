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
"""The project tree of the strict two-level model (Keystone's "Strict Two-Level
Limits Enforcement Model"), on networkx.

Projects are nodes of a :class:`networkx.DiGraph` with an edge from each parent
to each child. Every project keeps its explicit limits, its own usage and its
*aggregate* (own usage plus its children's aggregates), so that the usage of a
whole tree is one read of the root's aggregate — the "optimized usage
calculation" of Keystone's "Strict Two-Level Limits Enforcement Model" —
instead of a sum over every project.

The rules of Keystone's "Strict Two-Level Limits Enforcement Model" hold at
every mutation:

* depth two at most: a child's parent is a root;
* a child's explicit limit may not exceed its parent's limit;
* a child without an explicit limit gets the registered default, capped at
  its parent's limit;
* the sum of the children's limits may exceed the parent's (overcommit).

Limits are integers of at least -1; -1 means unlimited (as in Keystone).
:func:`check` scans data that may break the rules (what a limits source
returned) and reports every violation instead of stopping at the first.
"""

import dataclasses
import threading
import typing

import networkx as nx

from placement_quota.limits import errors

#: A limit value meaning "no limit", as Keystone spells it.
UNLIMITED = -1

STRICT_TWO_LEVEL = 'strict_two_level'
FLAT = 'flat'
_MODEL_NAMES = {
    'strict_two_level': STRICT_TWO_LEVEL,
    # The spelling of Keystone's "Strict Two-Level Limits Enforcement Model"
    # and of oslo.limit; Keystone answers with the underscore one.
    'strict-two-level': STRICT_TWO_LEVEL,
    'flat': FLAT,
}


def normalize_model(name):
    """The model name ``name`` in our spelling; ValueError if unknown."""
    try:
        return _MODEL_NAMES[name]
    except (KeyError, TypeError):
        raise ValueError('Unknown limits enforcement model %r: expected one '
                         'of %s.' % (name, ', '.join(sorted(_MODEL_NAMES))))


def check_limit_value(value, project_id=None, resource=None):
    """``value`` if it is a valid limit, else InvalidLimitValue."""
    if (isinstance(value, bool) or not isinstance(value, int)
            or value < UNLIMITED):
        raise errors.InvalidLimitValue(project_id, resource, value)
    return value


def min_limit(a, b):
    """The stricter of two limits, where -1 is unlimited."""
    if a == UNLIMITED:
        return b
    if b == UNLIMITED:
        return a
    return a if a < b else b


def exceeds(value, limit):
    """Whether the limit ``value`` is above the limit ``limit``."""
    if limit == UNLIMITED:
        return False
    return value == UNLIMITED or value > limit


def over(usage, limit):
    """Whether ``usage`` (an amount, never unlimited) is above ``limit``."""
    return limit != UNLIMITED and usage > limit


@dataclasses.dataclass
class Project:
    """A project as a limits source describes it."""

    id: str
    parent_id: typing.Optional[str] = None
    name: typing.Optional[str] = None
    #: Explicit limits (Keystone "project limits"), by resource name.
    limits: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class LimitData:
    """A snapshot of a limits source: model, hierarchy, limits, usage."""

    model: str = STRICT_TWO_LEVEL
    #: Registered (default) limits by resource name.
    registered_limits: dict = dataclasses.field(default_factory=dict)
    #: :class:`Project` by ID.
    projects: dict = dataclasses.field(default_factory=dict)
    #: Optional usage by project ID, then resource name.
    usage: dict = dataclasses.field(default_factory=dict)


class _Node:
    __slots__ = ('id', 'name', 'parent', 'limits', 'usage', 'aggregate')

    def __init__(self, project_id, parent, name):
        self.id = project_id
        self.parent = parent
        self.name = name
        self.limits = {}
        self.usage = {}
        self.aggregate = {}


class ProjectTree:
    """Projects of depth two at most, their limits, usage and aggregates.

    Thread-safe: every mutation holds :attr:`lock` (re-entrant), which a
    caller may also hold to make a check and an update one atomic step.

    :param registered_limits: default limits by resource name.
    :param unregistered_limit: the limit of a resource that has neither a
        registered limit nor an explicit one. 0 refuses any use of it, as
        oslo.limit and Nova do; -1 leaves it unlimited.
    """

    def __init__(self, registered_limits=None, unregistered_limit=0):
        self.graph = nx.DiGraph()
        self.lock = threading.RLock()
        self._nodes = {}
        self.registered_limits = {}
        self.unregistered_limit = check_limit_value(unregistered_limit)
        for resource, value in (registered_limits or {}).items():
            self.set_registered_limit(resource, value)

    @classmethod
    def from_data(cls, data, strict=True, unregistered_limit=0,
                  on_violation=None):
        """Build a tree from a :class:`LimitData`.

        With ``strict``, the first violation of the rules is raised (usage
        above a limit is not one: limits may be lowered under usage).
        Otherwise each violation is passed to ``on_violation`` (if given)
        and the offending part is left out: a project in a bad position is
        not added, a child's limit above its parent's is kept but capped by
        :meth:`effective_limit`. Usage in ``data`` is loaded as each
        project's usage, with aggregates computed.
        """
        tree = cls(unregistered_limit=unregistered_limit)
        found = check(data, unregistered_limit)
        rule_breaks = [v for v in found
                       if not isinstance(v, errors.UsageOverLimit)]
        if rule_breaks and strict:
            raise rule_breaks[0]
        for violation in found:
            if on_violation is not None:
                on_violation(violation)
        tree.registered_limits.update(
            (r, v) for r, v in data.registered_limits.items()
            if _valid_limit(v))
        _populate(tree, data)
        return tree

    # -- structure ---------------------------------------------------------

    def __contains__(self, project_id):
        return project_id in self._nodes

    def __len__(self):
        return len(self._nodes)

    def __iter__(self):
        return iter(list(self._nodes))

    def _node(self, project_id):
        try:
            return self._nodes[project_id]
        except KeyError:
            raise errors.UnknownProject(project_id) from None

    def add_project(self, project_id, parent_id=None, name=None,
                    limits=None):
        """Add a root (no ``parent_id``) or a child of a root.

        Raises DuplicateProject, UnknownParent, DepthExceeded, or any error
        of :meth:`set_limit` for ``limits`` (then nothing is added).
        """
        if not isinstance(project_id, str) or not project_id:
            raise ValueError('project ID must be a non-empty string, not %r'
                             % (project_id,))
        with self.lock:
            if project_id in self._nodes:
                raise errors.DuplicateProject(project_id)
            if parent_id is not None:
                if parent_id not in self._nodes:
                    raise errors.UnknownParent(project_id, parent_id)
                grandparent = self._nodes[parent_id].parent
                if grandparent is not None:
                    raise errors.DepthExceeded(project_id, parent_id,
                                               grandparent)
            limits = dict(limits or {})
            for resource, value in limits.items():
                check_limit_value(value, project_id, resource)
                if parent_id is not None:
                    parent_limit = self.effective_limit(parent_id, resource)
                    if exceeds(value, parent_limit):
                        raise errors.ChildLimitExceedsParent(
                            project_id, parent_id, resource, parent_limit,
                            value)
            self._add(project_id, parent_id, name)
            self._nodes[project_id].limits.update(limits)

    def _add(self, project_id, parent_id, name):
        self._nodes[project_id] = _Node(project_id, parent_id, name)
        self.graph.add_node(project_id)
        if parent_id is not None:
            self.graph.add_edge(parent_id, project_id)

    def remove_project(self, project_id):
        """Remove a project without children; its usage leaves the tree."""
        with self.lock:
            node = self._node(project_id)
            children = list(self.graph.successors(project_id))
            if children:
                raise errors.HasChildren(project_id, children)
            if node.parent is not None:
                parent = self._nodes[node.parent]
                for resource, value in node.aggregate.items():
                    parent.aggregate[resource] = (
                        parent.aggregate.get(resource, 0) - value)
            del self._nodes[project_id]
            self.graph.remove_node(project_id)

    def parent(self, project_id):
        return self._node(project_id).parent

    def name(self, project_id):
        return self._node(project_id).name

    def root(self, project_id):
        node = self._node(project_id)
        return project_id if node.parent is None else node.parent

    def children(self, project_id):
        self._node(project_id)
        return list(self.graph.successors(project_id))

    def roots(self):
        return [p for p, node in self._nodes.items() if node.parent is None]

    def family(self, project_id):
        """The root of ``project_id``'s tree, then its children."""
        root = self.root(project_id)
        return [root] + list(self.graph.successors(root))

    # -- limits ------------------------------------------------------------

    def set_registered_limit(self, resource, value):
        """Set the default limit of ``resource`` for every project."""
        check_limit_value(value, None, resource)
        with self.lock:
            previous = self.registered_limits.get(resource)
            self.registered_limits[resource] = value
            try:
                for root in self.roots():
                    if self._nodes[root].limits.get(resource) is None:
                        self._check_children(root, resource)
            except errors.ChildLimitExceedsParent:
                if previous is None:
                    del self.registered_limits[resource]
                else:
                    self.registered_limits[resource] = previous
                raise

    def _check_children(self, project_id, resource):
        """ChildLimitExceedsParent if a child's explicit limit is above
        the project's limit."""
        limit = self.effective_limit(project_id, resource)
        for child in self.graph.successors(project_id):
            child_limit = self._nodes[child].limits.get(resource)
            if child_limit is not None and exceeds(child_limit, limit):
                raise errors.ChildLimitExceedsParent(
                    child, project_id, resource, limit, child_limit)

    def explicit_limit(self, project_id, resource):
        """The project's own override for ``resource``, or None."""
        return self._node(project_id).limits.get(resource)

    def set_limit(self, project_id, resource, value):
        """Give a project an explicit limit, keeping the tree valid.

        A child's limit may not exceed its parent's; a root's limit may not
        go below one of its children's explicit limits.
        """
        check_limit_value(value, project_id, resource)
        with self.lock:
            node = self._node(project_id)
            if node.parent is not None:
                parent_limit = self.effective_limit(node.parent, resource)
                if exceeds(value, parent_limit):
                    raise errors.ChildLimitExceedsParent(
                        project_id, node.parent, resource, parent_limit,
                        value)
            for child in self.graph.successors(project_id):
                child_limit = self._nodes[child].limits.get(resource)
                if child_limit is not None and exceeds(child_limit, value):
                    raise errors.ChildLimitExceedsParent(
                        child, project_id, resource, value, child_limit)
            node.limits[resource] = value

    def unset_limit(self, project_id, resource):
        """Drop a project's override: it falls back to the default (refused
        if that would put a child's explicit limit above it)."""
        with self.lock:
            limits = self._node(project_id).limits
            previous = limits.pop(resource, None)
            try:
                self._check_children(project_id, resource)
            except errors.ChildLimitExceedsParent:
                if previous is not None:
                    limits[resource] = previous
                raise

    def default_limit(self, resource):
        return self.registered_limits.get(resource, self.unregistered_limit)

    def effective_limit(self, project_id, resource):
        """The limit that applies to the project itself.

        Its explicit limit, else the registered default; for a child, capped at
        its parent's limit (Keystone's "Strict Two-Level Limits Enforcement
        Model": a child never assumes more than its parent).
        """
        node = self._node(project_id)
        own = node.limits.get(resource)
        if own is None:
            own = self.registered_limits.get(resource,
                                             self.unregistered_limit)
        if node.parent is None:
            return own
        return min_limit(own, self.effective_limit(node.parent, resource))

    def flat_limit(self, project_id, resource):
        """The project's limit when the hierarchy is ignored (flat model)."""
        own = self._node(project_id).limits.get(resource)
        if own is None:
            return self.registered_limits.get(resource,
                                              self.unregistered_limit)
        return own

    def resources(self):
        """Every resource name with a registered or an explicit limit."""
        names = set(self.registered_limits)
        for node in self._nodes.values():
            names.update(node.limits)
        return sorted(names)

    # -- usage -------------------------------------------------------------

    def usage(self, project_id, resource):
        """The project's own usage of ``resource``."""
        return self._node(project_id).usage.get(resource, 0)

    def aggregate(self, project_id, resource):
        """The project's usage plus its children's (kept up to date)."""
        return self._node(project_id).aggregate.get(resource, 0)

    def tree_usage(self, project_id, resource):
        """The usage of the whole tree of ``project_id``: its root's
        aggregate."""
        return self.aggregate(self.root(project_id), resource)

    def naive_tree_usage(self, project_id, resource):
        """The same as :meth:`tree_usage`, summed project by project."""
        return sum(self._nodes[p].usage.get(resource, 0)
                   for p in self.family(project_id))

    def add_usage(self, project_id, deltas):
        """Add ``deltas`` (resource -> amount, negative to release) to the
        project's usage, and bubble them up to the aggregates."""
        with self.lock:
            node = self._node(project_id)
            parent = (None if node.parent is None
                      else self._nodes[node.parent])
            for resource, delta in deltas.items():
                node.usage[resource] = node.usage.get(resource, 0) + delta
                node.aggregate[resource] = (
                    node.aggregate.get(resource, 0) + delta)
                if parent is not None:
                    parent.aggregate[resource] = (
                        parent.aggregate.get(resource, 0) + delta)

    def set_usage(self, project_id, usage):
        """Replace the project's usage of the given resources."""
        with self.lock:
            node = self._node(project_id)
            self.add_usage(project_id, {
                resource: value - node.usage.get(resource, 0)
                for resource, value in usage.items()})

    def rebuild_aggregates(self):
        """Recompute every aggregate from the projects' own usage."""
        with self.lock:
            for node in self._nodes.values():
                node.aggregate = dict(node.usage)
            for node in self._nodes.values():
                if node.parent is not None:
                    parent = self._nodes[node.parent]
                    for resource, value in node.usage.items():
                        parent.aggregate[resource] = (
                            parent.aggregate.get(resource, 0) + value)

    def to_data(self, model=STRICT_TWO_LEVEL):
        """A :class:`LimitData` snapshot of the tree (usage included)."""
        with self.lock:
            return LimitData(
                model=model,
                registered_limits=dict(self.registered_limits),
                projects={p: Project(p, n.parent, n.name, dict(n.limits))
                          for p, n in self._nodes.items()},
                usage={p: dict(n.usage) for p, n in self._nodes.items()
                       if n.usage})


def _parent_cycles(projects):
    """Each loop of parent links, as its members from the smallest ID.

    Every project has one parent at most, so following parents from each
    project in turn finds every loop in linear time.
    """
    walked = {}
    cycles = []
    for start in sorted(projects):
        path = []
        current = start
        while current in projects and current not in walked:
            walked[current] = start
            path.append(current)
            current = projects[current].parent_id
        if current in projects and walked[current] == start:
            members = path[path.index(current):]
            first = members.index(min(members))
            cycles.append(members[first:] + members[:first])
    return cycles


def _populate(tree, data):
    """Add to ``tree`` the projects of ``data`` that fit the two-level shape
    (roots, then children of roots), their valid limits and their usage."""
    projects = data.projects
    ordered = sorted(projects.values(), key=lambda p: p.id)
    for project in ordered:
        if project.parent_id is None:
            tree._add(project.id, None, project.name)
    for project in ordered:
        parent = tree._nodes.get(project.parent_id)
        if parent is not None and parent.parent is None:
            tree._add(project.id, project.parent_id, project.name)
    for project_id in sorted(data.usage):
        if project_id not in projects:
            # Usage of a project the data does not name: a root limited by
            # the registered limits, as the embedded source treats it.
            tree._add(project_id, None, None)
    for project_id, node in tree._nodes.items():
        if project_id in projects:
            node.limits.update((r, v) for r, v in
                               projects[project_id].limits.items()
                               if _valid_limit(v))
        usage = data.usage.get(project_id)
        if usage:
            node.usage.update(usage)
    tree.rebuild_aggregates()


def _valid_limit(value):
    try:
        check_limit_value(value)
    except errors.InvalidLimitValue:
        return False
    return True


def check(data, unregistered_limit=0):
    """Every violation of the strict two-level rules in ``data``.

    ``unregistered_limit`` is the limit of a resource with neither a
    registered nor an explicit limit (see :class:`ProjectTree`).

    Returns a list of errors (not raised), in a stable order: hierarchy
    (unknown parents, cycles, depth), then invalid limit values, then
    child limits above their parent's, then usage over a limit.
    """
    found = []
    projects = data.projects
    graph = nx.DiGraph()
    graph.add_nodes_from(projects)
    for project in sorted(projects.values(), key=lambda p: p.id):
        if project.parent_id is None:
            continue
        if project.parent_id not in projects:
            found.append(errors.UnknownParent(project.id, project.parent_id))
        else:
            graph.add_edge(project.parent_id, project.id)
    in_cycle = set()
    for members in _parent_cycles(projects):
        found.append(errors.HierarchyCycle(members))
        # Everything below a cycle has no root either.
        for member in members:
            in_cycle.add(member)
            in_cycle.update(nx.descendants(graph, member))
    for project_id in sorted(projects):
        if project_id in in_cycle:
            continue
        parent = projects[project_id].parent_id
        if parent is None or parent not in projects:
            continue
        grandparent = projects[parent].parent_id
        if grandparent is not None:
            found.append(errors.DepthExceeded(project_id, parent,
                                              grandparent))
    for resource, value in sorted(data.registered_limits.items()):
        if not _valid_limit(value):
            found.append(errors.InvalidLimitValue(None, resource, value))
    for project_id in sorted(projects):
        for resource, value in sorted(projects[project_id].limits.items()):
            if not _valid_limit(value):
                found.append(errors.InvalidLimitValue(project_id, resource,
                                                      value))
    tree = ProjectTree(registered_limits={
        r: v for r, v in data.registered_limits.items() if _valid_limit(v)},
        unregistered_limit=unregistered_limit)
    _populate(tree, data)
    for project_id in sorted(tree._nodes):
        node = tree._nodes[project_id]
        if node.parent is None:
            continue
        for resource, value in sorted(node.limits.items()):
            parent_limit = tree.effective_limit(node.parent, resource)
            if exceeds(value, parent_limit):
                found.append(errors.ChildLimitExceedsParent(
                    project_id, node.parent, resource, parent_limit, value))
    for project_id in sorted(tree._nodes):
        node = tree._nodes[project_id]
        for resource in sorted(set(node.usage) | set(node.aggregate)):
            limit = tree.effective_limit(project_id, resource)
            used = node.usage.get(resource, 0)
            if over(used, limit):
                found.append(errors.UsageOverLimit(
                    project_id, node.parent, resource, limit, used,
                    'project'))
            if node.parent is None and node.aggregate.get(resource, 0) \
                    != used:
                total = node.aggregate.get(resource, 0)
                if over(total, limit):
                    found.append(errors.UsageOverLimit(
                        project_id, None, resource, limit, total, 'tree'))
    return found
