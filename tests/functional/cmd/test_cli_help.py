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
"""The ``--help`` of every ``placement-quota`` command reads as plain
text: no reStructuredText markup, no sentence cut in the one-line summary
of ``placement-quota --help``, every help text ending as a sentence does.

Each command's parser is built as ``placement-quota help COMMAND`` builds
it, from the commands of the ``placement_quota.cli`` entry points, in this
process."""

import inspect
import re

from cliff import commandmanager
import testtools

from placement_quota.cmd import main

#: reStructuredText that argparse prints as is: inline literals, roles,
#: hyperlink references, literal-block markers and directives.
RST = re.compile(r'``|:[a-z:]+:`|`[^`]+`_|::(\s|$)|^\s*\.\. ', re.M)
#: How a sentence (or a summary like "... (check-create)") ends.
ENDED = re.compile(r'[.?!)]$')


def commands():
    """``[(name, command)]`` of every command of placement_quota.cli."""
    app = main.PlacementQuotaApp()
    return [(name, entry.load()(app, None, cmd_name=name)) for name, entry
            in sorted(commandmanager.CommandManager('placement_quota.cli'))]


def own_texts(name, command):
    """``[(where, text)]``: the description, the epilog and the help of
    each option the command adds (cliff's formatter options aside)."""
    parser = command.get_parser('placement-quota %s' % name)
    texts = [('description', parser.description),
             ('epilog', parser.epilog)]
    for group in parser._action_groups:
        if 'formatter' in (group.title or '').lower():
            continue
        for action in group._group_actions:
            if action.help and action.dest != 'help':
                texts.append(((action.option_strings or [action.dest])[0],
                              action.help))
    return [(where, text) for where, text in texts if text]


class TestHelpTexts(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.commands = commands()

    def test_every_command_is_checked(self):
        names = [name for name, _ in self.commands]
        self.assertIn('db purge', names)
        self.assertGreaterEqual(len(names), 20)

    def test_no_help_has_restructuredtext_markup(self):
        found = ['%s %s: %s' % (name, where, RST.findall(text))
                 for name, command in self.commands
                 for where, text in own_texts(name, command)
                 if RST.search(text)]
        self.assertEqual([], found)

    def test_every_help_ends_as_a_sentence(self):
        found = ['%s %s: ...%s' % (name, where, text[-40:])
                 for name, command in self.commands
                 for where, text in own_texts(name, command)
                 if not ENDED.search(' '.join(text.split()))]
        self.assertEqual([], found)

    def test_summaries_are_not_cut_sentences(self):
        # placement-quota --help lists the first line of each docstring.
        found = ['%s: %s' % (name, summary) for name, summary in
                 ((name, inspect.getdoc(type(command)).splitlines()[0])
                  for name, command in self.commands)
                 if not ENDED.search(summary)]
        self.assertEqual([], found)
