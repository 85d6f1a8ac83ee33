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
"""Typed errors of the limits model.

Every error keeps the facts a user or an operator needs as attributes (project,
parent, resource, limit, value...) and says them in its message: Keystone's
"Strict Two-Level Limits Enforcement Model" wants an over-limit answer to carry
what a support ticket needs.
"""


class LimitsError(Exception):
    """Base class of every error of :mod:`placement_quota.limits`."""

    #: A short stable name of the rule, for tables and JSON.
    rule = 'limits'

    def as_dict(self):
        """The facts of the error as a dict (for JSON and cliff tables)."""
        facts = {'rule': self.rule, 'message': str(self)}
        facts.update((k, v) for k, v in vars(self).items()
                     if not k.startswith('_'))
        return facts


class UnknownProject(LimitsError):
    """A project the hierarchy does not know."""

    rule = 'unknown-project'

    def __init__(self, project_id):
        self.project_id = project_id
        super().__init__('Project %s is unknown to the limits source.'
                         % project_id)


class HierarchyError(LimitsError):
    """The project hierarchy breaks the strict two-level shape."""

    rule = 'hierarchy'


class DuplicateProject(HierarchyError):
    rule = 'duplicate-project'

    def __init__(self, project_id):
        self.project_id = project_id
        super().__init__('Project %s is already in the tree.' % project_id)


class UnknownParent(HierarchyError):
    rule = 'unknown-parent'

    def __init__(self, project_id, parent_id):
        self.project_id = project_id
        self.parent_id = parent_id
        super().__init__('Project %s names parent %s, which does not exist.'
                         % (project_id, parent_id))


class DepthExceeded(HierarchyError):
    """A grandchild: the project's parent already has a parent."""

    rule = 'depth'

    def __init__(self, project_id, parent_id, grandparent_id):
        self.project_id = project_id
        self.parent_id = parent_id
        self.grandparent_id = grandparent_id
        super().__init__(
            'Project %s cannot be a child of %s: %s is itself a child of %s '
            'and the strict two-level model allows a depth of two at most.'
            % (project_id, parent_id, parent_id, grandparent_id))


class HierarchyCycle(HierarchyError):
    rule = 'cycle'

    def __init__(self, project_ids):
        self.project_ids = list(project_ids)
        self.project_id = self.project_ids[0]
        super().__init__('Projects %s are each other\'s ancestors; a tree '
                         'needs a single root.' % ' -> '.join(
                             self.project_ids + self.project_ids[:1]))


class HasChildren(HierarchyError):
    rule = 'has-children'

    def __init__(self, project_id, children):
        self.project_id = project_id
        self.children = sorted(children)
        super().__init__('Project %s still has children (%s); remove them '
                         'first.' % (project_id, ', '.join(self.children)))


class InvalidLimitValue(LimitsError, ValueError):
    """A limit that is not an integer of at least -1 (-1 = unlimited)."""

    rule = 'invalid-limit'

    def __init__(self, project_id, resource, value):
        self.project_id = project_id
        self.resource = resource
        self.value = value
        where = ('registered limit' if project_id is None
                 else 'limit of project %s' % project_id)
        super().__init__('The %s for %s must be an integer of at least -1 '
                         '(-1 means unlimited), not %r.'
                         % (where, resource, value))


class ChildLimitExceedsParent(LimitsError):
    """A child's explicit limit is above its parent's limit."""

    rule = 'child-limit'

    def __init__(self, project_id, parent_id, resource, limit, value):
        self.project_id = project_id
        self.parent_id = parent_id
        self.resource = resource
        #: The parent's limit.
        self.limit = limit
        #: The child's explicit limit.
        self.value = value
        super().__init__(
            'The limit of project %s for %s (%s) exceeds the limit of its '
            'parent %s (%s): no child limit may exceed its parent\'s.'
            % (project_id, resource, _show(value), parent_id, _show(limit)))


class UsageOverLimit(LimitsError):
    """Usage already recorded is above a limit (found by a tree check)."""

    rule = 'usage'

    def __init__(self, project_id, parent_id, resource, limit, value,
                 scope):
        self.project_id = project_id
        self.parent_id = parent_id
        self.resource = resource
        self.limit = limit
        self.value = value
        #: ``project``: the project's own usage against its limit;
        #: ``tree``: the usage of its whole tree against the root's limit.
        self.scope = scope
        what = ('The usage of project %s' if scope == 'project'
                else 'The usage of the tree of %s') % project_id
        super().__init__('%s for %s is %s, over its limit of %s.'
                         % (what, resource, value, _show(limit)))


class OverLimitInfo:
    """One resource of a refused request, with every number of the check."""

    __slots__ = ('resource', 'scope', 'limit', 'project_limit', 'tree_limit',
                 'project_usage', 'tree_usage', 'delta')

    def __init__(self, resource, scope, project_limit, tree_limit,
                 project_usage, tree_usage, delta):
        self.resource = resource
        #: ``project`` (the project's own limit was hit) or ``tree`` (the
        #: root's limit on the usage of the whole tree was hit).
        self.scope = scope
        self.project_limit = project_limit
        self.tree_limit = tree_limit
        self.limit = project_limit if scope == 'project' else tree_limit
        self.project_usage = project_usage
        self.tree_usage = tree_usage
        self.delta = delta

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __repr__(self):
        return 'OverLimitInfo(%s)' % ', '.join(
            '%s=%r' % item for item in self.as_dict().items())


class ProjectOverLimit(LimitsError):
    """A claim would take a project or its tree over a limit.

    ``over_limits`` lists an :class:`OverLimitInfo` per refused resource.
    """

    rule = 'over-limit'

    def __init__(self, project_id, parent_id, root_id, over_limits):
        self.project_id = project_id
        self.parent_id = parent_id
        self.root_id = root_id
        self.over_limits = list(over_limits)
        super().__init__(self._message())

    def _message(self):
        who = 'Project %s' % self.project_id
        if self.parent_id is not None:
            who += ' (parent %s)' % self.parent_id
        parts = []
        for info in self.over_limits:
            text = ('%s: requested %s, project usage %s of limit %s'
                    % (info.resource, info.delta, info.project_usage,
                       _show(info.project_limit)))
            if self.parent_id is not None or info.scope == 'tree':
                text += ', usage of the tree of %s %s of limit %s' % (
                    self.root_id, info.tree_usage, _show(info.tree_limit))
            parts.append(text)
        return '%s is over its limit for %s.' % (who, '; '.join(parts))

    def as_dict(self):
        return {'rule': self.rule, 'message': str(self),
                'project_id': self.project_id, 'parent_id': self.parent_id,
                'root_id': self.root_id,
                'over_limits': [i.as_dict() for i in self.over_limits]}


def _show(limit):
    return 'unlimited' if limit == -1 else limit
