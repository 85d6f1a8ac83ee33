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
"""A project tree drawn in the notation of Keystone's "Strict Two-Level Limits
Enforcement Model", as text or Graphviz.

Keystone's "Strict Two-Level Limits Enforcement Model" labels each project ``A
(l=20, u=4)``: ``l`` its limit, ``u`` its own usage. We follow it:

* a root always shows ``l=``: its explicit limit, else the registered
  default that applies to it;
* a child shows ``l=`` when it has an explicit limit (its value, even when
  it breaks the rules, like the spec's red ``B (l=30, u=0)``), or when its
  parent's limit caps the default (the effective limit, like the spec's
  ``B (l=6, u=0)`` under ``A (l=6)``); a child without ``l=`` has the
  registered default, shown once in the header line of the resource
  (``cores (default l=10)``);
* the root's line adds the usage of the whole tree against its limit
  (``tree u=20/20``);
* ``-1`` (unlimited) reads ``unlimited``.

Text draws one block per resource, each a tree in the spec's notation::

    cores (default l=10)
    A (l=20, u=4)  tree u=20/20
    ├── B (u=8)  <--
    └── C (u=8)

``<--`` marks the project asked for; a line breaking a rule ends with
``! ...`` saying what is wrong (usage over the limit, a child's limit above
its parent's, the tree over the root's limit) — what the spec draws in red,
and what :func:`dot` draws in red. A project known by a name other than its
ID reads ``name [ID]``.
"""

import shutil
import subprocess

from placement_quota.limits import tree as tree_mod

#: The red of the spec's diagrams.
RED = '#FF0000'
#: Seconds Graphviz may take to draw a tree.
DOT_TIMEOUT = 60

_MARK = '<--'


class RenderError(Exception):
    """A tree could not be drawn (Graphviz failed)."""


class GraphvizNotFound(RenderError):
    """Graphviz's ``dot`` command is not installed."""


def _show(limit):
    return 'unlimited' if limit == tree_mod.UNLIMITED else str(limit)


def project_label(tree, project_id):
    """``name [ID]`` for a project with a name of its own, else its ID."""
    name = tree.name(project_id)
    if name and name != project_id:
        return '%s [%s]' % (name, project_id)
    return project_id


def _ordered(tree, project_id):
    """The root of ``project_id``'s tree, then its children by ID."""
    root = tree.root(project_id)
    return root, sorted(tree.children(root))


class _Facts:
    """The numbers of one project for one resource, and what is wrong."""

    def __init__(self, tree, project_id, resource):
        parent = tree.parent(project_id)
        self.is_root = parent is None
        self.usage = tree.usage(project_id, resource)
        self.limit = tree.effective_limit(project_id, resource)
        explicit = tree.explicit_limit(project_id, resource)
        if self.is_root:
            shown = self.limit
        elif explicit is not None:
            shown = explicit
        elif self.limit != tree.default_limit(resource):
            shown = self.limit
        else:
            shown = None
        self.fields = [] if shown is None else ['l=%s' % _show(shown)]
        self.fields.append('u=%s' % self.usage)
        self.problems = []
        if not self.is_root and explicit is not None:
            parent_limit = tree.effective_limit(parent, resource)
            if tree_mod.exceeds(explicit, parent_limit):
                self.problems.append('limit above %s\'s %s' % (
                    parent, _show(parent_limit)))
        if tree_mod.over(self.usage, self.limit):
            self.problems.append('usage over limit %s' % _show(self.limit))
        self.tree = None
        if self.is_root:
            total = tree.aggregate(project_id, resource)
            self.tree = 'tree u=%s/%s' % (total, _show(self.limit))
            if tree_mod.over(total, self.limit):
                self.problems.append('tree usage over limit %s'
                                     % _show(self.limit))

    @property
    def notation(self):
        """``l=20, u=4`` (or ``u=8``)."""
        return ', '.join(self.fields)


def _header(tree, resource):
    default = tree.default_limit(resource)
    if resource in tree.registered_limits:
        return '%s (default l=%s)' % (resource, _show(default))
    return '%s (not registered: default l=%s)' % (resource, _show(default))


def _text_line(tree, project_id, resource, asked):
    label = project_label(tree, project_id)
    parts = []
    if resource is None:
        parts.append(label)
    else:
        facts = _Facts(tree, project_id, resource)
        parts.append('%s (%s)' % (label, facts.notation))
        if facts.tree is not None:
            parts.append(facts.tree)
        if facts.problems:
            parts.append('! ' + '; '.join(facts.problems))
    if project_id == asked:
        parts.append(_MARK)
    return '  '.join(parts)


def text(tree, project_id, resources):
    """The tree of ``project_id``'s root as text, one block per resource.

    Without resources, only the shape of the tree (names, no numbers).
    Returns lines ending with a newline. UnknownProject if the tree does
    not hold ``project_id``.
    """
    root, children = _ordered(tree, project_id)
    blocks = []
    for resource in list(resources) or [None]:
        lines = [] if resource is None else [_header(tree, resource)]
        lines.append(_text_line(tree, root, resource, project_id))
        for index, child in enumerate(children):
            branch = '└── ' if index == len(children) - 1 else '├── '
            lines.append(branch + _text_line(tree, child, resource,
                                             project_id))
        blocks.append('\n'.join(lines) + '\n')
    return '\n'.join(blocks)


def quote(value):
    """``value`` as a double-quoted DOT string (an ID or a label line).

    Backslashes and double quotes are escaped, so that a name never ends
    the string or starts an escape sequence; line breaks become ``\\n``.
    """
    value = str(value)
    value = value.replace('\\', '\\\\').replace('"', '\\"')
    value = value.replace('\r\n', '\n').replace('\r', '\n')
    return '"%s"' % value.replace('\n', '\\n')


def _dot_label(tree, project_id, resources):
    """The lines of a node's label, and whether it breaks a rule."""
    label = project_label(tree, project_id)
    if not resources:
        return [label], False
    all_facts = [(r, _Facts(tree, project_id, r)) for r in resources]
    red = any(facts.problems for _, facts in all_facts)
    if len(all_facts) == 1:
        [(_, facts)] = all_facts
        lines = ['%s (%s)' % (label, facts.notation)]
        if facts.tree is not None:
            lines.append(facts.tree)
        return lines, red
    lines = [label]
    for resource, facts in all_facts:
        line = '%s: %s' % (resource, facts.notation)
        if facts.tree is not None:
            line += '; ' + facts.tree
        lines.append(line)
    return lines, red


def dot(tree, project_id, resources):
    """The tree of ``project_id``'s root as a Graphviz DOT digraph.

    Labels use the notation of :func:`text`; a project that breaks a rule
    (usage over its limit, a limit above its parent's, a root whose tree
    is over its limit) is drawn in the spec's red. The project asked for
    has a thick border. The graph's label names the resources and their
    defaults.
    """
    resources = list(resources)
    root, children = _ordered(tree, project_id)
    out = ['digraph %s {' % quote(root)]
    if resources:
        out.append('  graph [label=%s, labelloc=t];' % quote(
            ', '.join(_header(tree, r) for r in resources)))
    out.append('  node [shape=box];')
    for node in [root] + children:
        lines, red = _dot_label(tree, node, resources)
        attributes = ['label="%s"' % '\\n'.join(quote(line)[1:-1]
                                                for line in lines)]
        if red:
            attributes.append('fontcolor="%s"' % RED)
            attributes.append('color="%s"' % RED)
        if node == project_id:
            attributes.append('penwidth=2')
        out.append('  %s [%s];' % (quote(node), ', '.join(attributes)))
    for child in children:
        out.append('  %s -> %s;' % (quote(root), quote(child)))
    out.append('}')
    return '\n'.join(out) + '\n'


def png(dot_text, path, timeout=DOT_TIMEOUT):
    """Draw ``dot_text`` into the PNG file ``path`` with Graphviz.

    Raises GraphvizNotFound when ``dot`` is not installed, RenderError when
    it fails or takes more than ``timeout`` seconds.
    """
    missing = GraphvizNotFound(
        'Graphviz\'s "dot" command is needed to draw a PNG and was not '
        'found: install Graphviz (Debian/Ubuntu package "graphviz": '
        'apt-get install graphviz), or write DOT text instead.')
    binary = shutil.which('dot')
    if binary is None:
        raise missing
    try:
        result = subprocess.run([binary, '-Tpng', '-o', str(path)],
                                input=dot_text.encode('utf-8'),
                                capture_output=True, timeout=timeout)
    except FileNotFoundError:
        raise missing from None
    except subprocess.TimeoutExpired:
        raise RenderError('Graphviz took more than %s seconds to draw %s.'
                          % (timeout, path)) from None
    if result.returncode != 0:
        raise RenderError('Graphviz could not draw %s (exit status %s): %s'
                          % (path, result.returncode,
                             result.stderr.decode('utf-8', 'replace')
                             .strip()))
