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
"""doc/source/warnings.rst names every [warnings] option, every kind's
facts and every template placeholder."""

import os
import re

import testtools

from placement_quota.conf import warnings as warnings_conf
from placement_quota.warning import model
from placement_quota.warning import render

PAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'doc', 'source', 'warnings.rst')


def _page():
    with open(PAGE, encoding='utf-8') as f:
        return f.read()


def _section(text, title):
    """The text of the section titled ``title`` (to the next title of its
    level)."""
    found = re.search(r'^%s\n(=+)\n(.*?)(?=^\S[^\n]*\n=+\n|\Z)'
                      % re.escape(title), text, re.M | re.S)
    return found.group(2)


def _row(table, kind):
    """The cell text of ``kind``'s row in a table of the page (its
    continuation lines included)."""
    found = re.search(r'^``%s``\s+(.*?)(?=^``|^=)' % re.escape(kind),
                      table, re.M | re.S)
    return found.group(1) if found else ''


class TestWarningsPage(testtools.TestCase):

    def test_every_option_is_in_the_options_table(self):
        table = _section(_page(), 'Options')
        missing = [opt.name for opt in warnings_conf.opts
                   if not re.search(r'^``%s``\s' % opt.name, table, re.M)]
        self.assertEqual([], missing)

    def test_every_kind_has_its_notification_event_type(self):
        text = _page()
        missing = [kind for kind in model.KINDS
                   if '...%s``' % kind not in text and
                   'placement_quota.warning.%s' % kind not in text]
        self.assertEqual([], missing)

    def test_every_fact_of_every_kind_is_listed(self):
        table = _section(_page(), 'Channels')
        missing = ['%s: %s' % (kind, fact)
                   for kind, facts in model.FACTS.items() for fact in facts
                   if '``%s``' % fact not in _row(table, kind)]
        self.assertEqual([], missing)

    def test_every_placeholder_of_every_kind_is_listed(self):
        table = _section(_page(), 'Templates')
        missing = ['%s: $%s' % (kind, name)
                   for kind, names in render.PLACEHOLDERS.items()
                   for name in names
                   if name not in render.COMMON and
                   '``$%s``' % name not in _row(table, kind)]
        self.assertEqual([], missing)
        for name in render.COMMON:
            self.assertIn('``$%s``' % name, table)
