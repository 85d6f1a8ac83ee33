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
"""Trees drawn in the notation of Keystone's "Strict Two-Level Limits
Enforcement Model" (text and Graphviz DOT)."""

import html
import os
import shutil
import subprocess

import fixtures
import testtools

from placement_quota.limits import errors
from placement_quota.limits import render
from placement_quota.limits import tree as tree_mod

CORES = 'cores'
RED = 'fontcolor="#FF0000"'


def spec_tree(root_limit=20, usage=None, children=('B', 'C'), limits=None,
              names=None):
    """A (l=root_limit) with ``children``, registered default cores=10."""
    limits = dict(limits or {})
    names = names or {}
    projects = {'A': tree_mod.Project(
        'A', name=names.get('A'),
        limits={CORES: limits.pop('A', root_limit)})}
    for child in children:
        child_limits = {CORES: limits[child]} if child in limits else {}
        projects[child] = tree_mod.Project(child, 'A', names.get(child),
                                           child_limits)
    data = tree_mod.LimitData(
        registered_limits={CORES: 10}, projects=projects,
        usage={p: {CORES: n} for p, n in (usage or {}).items()})
    return tree_mod.ProjectTree.from_data(data, strict=False)


def node_line(dot_text, project_id):
    [line] = [line for line in dot_text.splitlines()
              if line.strip().startswith('"%s" [' % project_id)]
    return line


class TestText(testtools.TestCase):

    def test_spec_first_diagram(self):
        tree = spec_tree(usage={'A': 4})
        self.assertEqual(
            'cores (default l=10)\n'
            'A (l=20, u=4)  tree u=4/20  <--\n'
            '├── B (u=0)\n'
            '└── C (u=0)\n',
            render.text(tree, 'A', [CORES]))

    def test_spec_b_and_c_use_8_cores_each(self):
        tree = spec_tree(usage={'A': 4, 'B': 8, 'C': 8})
        self.assertEqual(
            'cores (default l=10)\n'
            'A (l=20, u=4)  tree u=20/20\n'
            '├── B (u=8)  <--\n'
            '└── C (u=8)\n',
            render.text(tree, 'B', [CORES]))

    def test_explicit_child_limit_is_shown(self):
        tree = spec_tree(limits={'B': 12}, usage={'A': 4, 'B': 8, 'C': 8})
        self.assertEqual(
            'cores (default l=10)\n'
            'A (l=20, u=4)  tree u=20/20\n'
            '├── B (l=12, u=8)\n'
            '└── C (u=8)  <--\n',
            render.text(tree, 'C', [CORES]))

    def test_default_capped_by_the_parent_shows_the_effective_limit(self):
        # Keystone's "Strict Two-Level Limits Enforcement Model": with A at 6,
        # B does not assume the default of 10.
        tree = spec_tree(root_limit=6, children=('B',))
        self.assertEqual(
            'cores (default l=10)\n'
            'A (l=6, u=0)  tree u=0/6  <--\n'
            '└── B (l=6, u=0)\n',
            render.text(tree, 'A', [CORES]))

    def test_root_alone(self):
        tree = spec_tree(root_limit=6, children=())
        self.assertEqual('cores (default l=10)\n'
                         'A (l=6, u=0)  tree u=0/6  <--\n',
                         render.text(tree, 'A', [CORES]))

    def test_violations_are_said_on_their_line(self):
        tree = spec_tree(limits={'B': 30}, children=('B', 'C', 'D'),
                         usage={'A': 4, 'B': 8, 'C': 8, 'D': 12})
        self.assertEqual(
            'cores (default l=10)\n'
            'A (l=20, u=4)  tree u=32/20  ! tree usage over limit 20\n'
            '├── B (l=30, u=8)  ! limit above A\'s 20\n'
            '├── C (u=8)\n'
            '└── D (u=12)  ! usage over limit 10  <--\n',
            render.text(tree, 'D', [CORES]))

    def test_one_block_per_resource(self):
        data = tree_mod.LimitData(
            registered_limits={CORES: 10, 'ram_mb': -1},
            projects={'A': tree_mod.Project('A', limits={CORES: 20}),
                      'B': tree_mod.Project('B', 'A')},
            usage={'B': {CORES: 2, 'ram_mb': 512, 'gpus': 1}})
        tree = tree_mod.ProjectTree.from_data(data)
        self.assertEqual(
            'cores (default l=10)\n'
            'A (l=20, u=0)  tree u=2/20\n'
            '└── B (u=2)  <--\n'
            '\n'
            'ram_mb (default l=unlimited)\n'
            'A (l=unlimited, u=0)  tree u=512/unlimited\n'
            '└── B (u=512)  <--\n'
            '\n'
            'gpus (not registered: default l=0)\n'
            'A (l=0, u=0)  tree u=1/0  ! tree usage over limit 0\n'
            '└── B (u=1)  ! usage over limit 0  <--\n',
            render.text(tree, 'B', [CORES, 'ram_mb', 'gpus']))

    def test_names_and_ids(self):
        tree = spec_tree(names={'A': 'prod', 'B': 'B'})
        self.assertEqual(
            'cores (default l=10)\n'
            'prod [A] (l=20, u=0)  tree u=0/20\n'
            '├── B (u=0)\n'
            '└── C (u=0)  <--\n',
            render.text(tree, 'C', [CORES]))

    def test_without_resources_only_the_shape(self):
        tree = spec_tree(children=('B', 'C', 'D'))
        self.assertEqual('A\n├── B\n├── C  <--\n└── D\n',
                         render.text(tree, 'C', []))

    def test_unknown_project(self):
        self.assertRaises(errors.UnknownProject, render.text, spec_tree(),
                          'Z', [CORES])


class TestDot(testtools.TestCase):

    def test_spec_diagram(self):
        tree = spec_tree(usage={'A': 4, 'B': 8, 'C': 8})
        self.assertEqual(
            'digraph "A" {\n'
            '  graph [label="cores (default l=10)", labelloc=t];\n'
            '  node [shape=box];\n'
            '  "A" [label="A (l=20, u=4)\\ntree u=20/20", penwidth=2];\n'
            '  "B" [label="B (u=8)"];\n'
            '  "C" [label="C (u=8)"];\n'
            '  "A" -> "B";\n'
            '  "A" -> "C";\n'
            '}\n',
            render.dot(tree, 'A', [CORES]))

    def test_quote_escapes_quotes_backslashes_and_line_breaks(self):
        self.assertEqual(r'"say \"hi\"\\n \\ end\\"',
                         render.quote('say "hi"\\n \\ end\\'))
        self.assertEqual(r'"two\nlines"', render.quote('two\nlines'))

    def test_name_with_a_quote_is_escaped(self):
        tree = spec_tree(names={'A': 'team "blue" \\ ops'})
        dot_text = render.dot(tree, 'B', [CORES])
        self.assertIn(
            '"A" [label="team \\"blue\\" \\\\ ops [A] (l=20, u=0)\\n'
            'tree u=0/20"];', dot_text)

    def test_id_with_a_quote_and_a_backslash_is_escaped(self):
        data = tree_mod.LimitData(projects={
            'a"b\\': tree_mod.Project('a"b\\'),
            'c': tree_mod.Project('c', 'a"b\\')})
        tree = tree_mod.ProjectTree.from_data(data)
        dot_text = render.dot(tree, 'c', [])
        self.assertIn('  "a\\"b\\\\" [label="a\\"b\\\\"];\n', dot_text)
        self.assertIn('  "a\\"b\\\\" -> "c";\n', dot_text)

    def test_graphviz_draws_the_escaped_name_as_is(self):
        if shutil.which('dot') is None:
            self.skipTest('Graphviz is not installed')
        name = 'team "blue" \\ ops\\'
        tree = spec_tree(names={'A': name})
        result = subprocess.run(['dot', '-Tsvg'], capture_output=True,
                                input=render.dot(tree, 'A', [CORES]),
                                text=True, timeout=60)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertIn(name + ' [A] (l=20, u=0)',
                      html.unescape(result.stdout))

    def test_over_limit_usage_is_red(self):
        # Keystone's "Strict Two-Level Limits Enforcement Model": D (u=2)
        # claims while the tree is at its limit.
        tree = spec_tree(children=('B', 'C', 'D'),
                         usage={'A': 4, 'B': 8, 'C': 8, 'D': 12})
        dot_text = render.dot(tree, 'D', [CORES])
        self.assertIn(RED, node_line(dot_text, 'D'))
        self.assertIn(RED, node_line(dot_text, 'A'))  # tree 32/20
        self.assertNotIn(RED, node_line(dot_text, 'B'))
        self.assertNotIn(RED, node_line(dot_text, 'C'))
        self.assertIn('penwidth=2', node_line(dot_text, 'D'))

    def test_root_over_its_tree_limit_is_red(self):
        # Keystone's "Strict Two-Level Limits Enforcement Model": A (l=20, u=6)
        # with B (u=8) and C (u=8).
        tree = spec_tree(usage={'A': 6, 'B': 8, 'C': 8})
        dot_text = render.dot(tree, 'A', [CORES])
        self.assertIn('"A" [label="A (l=20, u=6)\\ntree u=22/20", %s'
                      % RED, dot_text)
        self.assertNotIn(RED, node_line(dot_text, 'B'))

    def test_child_limit_above_the_parents_is_red(self):
        # Keystone's "Strict Two-Level Limits Enforcement Model": B (l=30, u=0)
        # under A (l=20).
        tree = spec_tree(limits={'B': 30})
        dot_text = render.dot(tree, 'A', [CORES])
        self.assertIn('"B" [label="B (l=30, u=0)", %s' % RED, dot_text)
        self.assertNotIn(RED, node_line(dot_text, 'A'))

    def test_at_the_limit_is_not_red(self):
        tree = spec_tree(limits={'B': 12}, root_limit=20,
                         usage={'A': 2, 'B': 12, 'C': 6})
        self.assertNotIn(RED, render.dot(tree, 'A', [CORES]))

    def test_several_resources_one_line_each(self):
        data = tree_mod.LimitData(
            registered_limits={CORES: 10, 'ram_mb': 2048},
            projects={'A': tree_mod.Project('A'),
                      'B': tree_mod.Project('B', 'A', limits={CORES: 4})},
            usage={'B': {'ram_mb': 4096}})
        dot_text = render.dot(tree_mod.ProjectTree.from_data(data), 'A',
                              [CORES, 'ram_mb'])
        self.assertIn('"A" [label="A\\ncores: l=10, u=0; tree u=0/10\\n'
                      'ram_mb: l=2048, u=0; tree u=4096/2048", %s' % RED,
                      dot_text)
        self.assertIn('"B" [label="B\\ncores: l=4, u=0\\nram_mb: u=4096", '
                      '%s' % RED, dot_text)


class TestPng(testtools.TestCase):

    def test_without_graphviz_says_to_install_it(self):
        self.useFixture(fixtures.EnvironmentVariable(
            'PATH', self.useFixture(fixtures.TempDir()).path))
        error = self.assertRaises(render.GraphvizNotFound, render.png,
                                  'digraph {}', '/nonexistent.png')
        self.assertIn('graphviz', str(error))

    def test_draws_a_png(self):
        if shutil.which('dot') is None:
            self.skipTest('Graphviz is not installed')
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'tree.png')
        render.png(render.dot(spec_tree(), 'A', [CORES]), path)
        with open(path, 'rb') as f:
            self.assertEqual(b'\x89PNG\r\n\x1a\n', f.read(8))

    def test_bad_dot_text_is_a_render_error(self):
        if shutil.which('dot') is None:
            self.skipTest('Graphviz is not installed')
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'tree.png')
        error = self.assertRaises(render.RenderError, render.png,
                                  'digraph {', path)
        self.assertIn('Graphviz could not draw', str(error))
