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
"""The documented commands, run verbatim on the inputs of doc/examples.

Every ``$ placement-quota ...`` or ``$ openstack ...`` line of README.md
and doc/source/*.rst that names a file of ``doc/examples`` (and is not a
synopsis with ``[optional]`` or ``a|b`` placeholders), and every
``$ ../../tools/example_lease.py ...`` line (which writes the dated request
bodies the others read), runs from that directory -- a copy of it, with
``tools`` beside it as in the repository, so what the commands write stays
in the test's own directory -- through a shell (for ``< update.json``),
with the venv's commands first on PATH and a private HOME. The output the
documentation shows under it must be what the command prints: text lines
in order (a table cell or a JSON string ending in ``...`` is a prefix;
table borders are not compared), JSON by value. A ``# exit N`` comment on
the command gives its exit status; otherwise it must be 0 or 1 (an
answer), never 2.

``check create|update|end`` records nothing unless given ``--record``; a
document's commands from its first ``--record`` on depend on what was
recorded, so they run, with the whole of that document, in a test of
their own.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import testtools

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, 'doc', 'examples')
DOCS = [os.path.join(ROOT, 'README.md')] + sorted(
    os.path.join(ROOT, 'doc', 'source', name)
    for name in os.listdir(os.path.join(ROOT, 'doc', 'source'))
    if name.endswith('.rst'))
TIMEOUT = 120

_PROMPT = re.compile(r'^(\s*)\$ ((?:placement-quota|openstack|'
                     r'\.\./\.\./tools/example_lease\.py) .*)$')
_GENERATOR = '../../tools/example_lease.py '


def _example_files():
    # Files only: the files of a directory under it (real-cloud/) are a
    # guide's literalincludes, checked by that guide's own test.
    return sorted(name for name in os.listdir(EXAMPLES)
                  if not name.startswith('.')
                  and os.path.isfile(os.path.join(EXAMPLES, name)))


def documented_commands():
    """``(doc, line number, command, exit status or None, output lines)``
    of every documented command that reads a file of doc/examples."""
    files = _example_files()
    found = []
    for path in DOCS:
        with open(path, encoding='utf-8') as f:
            lines = f.read().split('\n')
        i = 0
        while i < len(lines):
            m = _PROMPT.match(lines[i])
            if not m:
                i += 1
                continue
            start, indent, command = i, m.group(1), m.group(2)
            while command.endswith('\\') and i + 1 < len(lines):
                i += 1
                command = command[:-1].rstrip() + ' ' + lines[i].strip()
            i += 1
            output = []
            while (i < len(lines) and lines[i].strip()
                   and lines[i].startswith(indent)
                   and not lines[i].startswith('```')
                   and not _PROMPT.match(lines[i])):
                output.append(lines[i][len(indent):])
                i += 1
            status = None
            if '  #' in command:
                command, comment = command.split('  #', 1)
                command = command.rstrip()
                m_exit = re.search(r'exit (\d)\b', comment)
                status = int(m_exit.group(1)) if m_exit else None
            words = re.split(r'[\s<>]+', command)
            if (not command.startswith(_GENERATOR)
                    and not any(name in words for name in files)):
                continue
            if '[' in command or '|' in command or 'PROJECT' in command:
                continue   # a synopsis, not an example
            found.append((os.path.relpath(path, ROOT), start + 1, command,
                          status, output))
    return found


def _records(command):
    return '--record' in command.split()


def without_recording(commands):
    """The commands that do not depend on ``check ... --record``: those
    before the first ``--record`` of their document."""
    recording = {doc for doc, _l, command, _s, _o in commands
                 if _records(command)}
    kept, seen = [], set()
    for entry in commands:
        doc, command = entry[0], entry[2]
        if doc in recording and (doc in seen or _records(command)):
            seen.add(doc)
            continue
        kept.append(entry)
    return kept


def of_recording_documents(commands):
    """Every command of the documents that record with ``--record``, in
    order."""
    recording = {doc for doc, _l, command, _s, _o in commands
                 if _records(command)}
    return [entry for entry in commands if entry[0] in recording]


def _cells(line):
    return [c.strip() for c in line.strip().strip('|').split('|')]


def _same_line(doc, actual):
    if doc.strip().startswith('|'):
        want, got = _cells(doc), _cells(actual)
        if len(want) != len(got):
            return False
        return all(g.startswith(w[:-3].rstrip()) if w.endswith('...')
                   else g == w for w, g in zip(want, got))
    return doc.rstrip() == actual.rstrip()


def _same_json(doc, actual):
    if isinstance(doc, str) and doc.endswith('...'):
        return isinstance(actual, str) and actual.startswith(doc[:-3])
    if isinstance(doc, dict):
        return (isinstance(actual, dict) and doc.keys() == actual.keys()
                and all(_same_json(doc[k], actual[k]) for k in doc))
    if isinstance(doc, list):
        return (isinstance(actual, list) and len(doc) == len(actual)
                and all(_same_json(d, a) for d, a in zip(doc, actual)))
    return doc == actual


class TestDocExamples(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.commands = documented_commands()
        self.home = tempfile.mkdtemp(prefix='pq-doc-examples-')
        self.addCleanup(shutil.rmtree, self.home, True)
        # doc/examples and tools as in the repository, in the test's own
        # directory: what the commands write (lease.json) stays there.
        tree = os.path.join(self.home, 'tree')
        self.workdir = os.path.join(tree, 'doc', 'examples')
        shutil.copytree(EXAMPLES, self.workdir)
        os.symlink(os.path.join(ROOT, 'tools'), os.path.join(tree, 'tools'))

    def run_documented(self, command):
        env = dict(os.environ)
        for key in list(env):
            if key.startswith('OS_'):
                del env[key]
        env.update(HOME=self.home,
                   PATH=os.path.dirname(sys.executable) + os.pathsep
                   + env.get('PATH', ''),
                   XDG_CONFIG_HOME=os.path.join(self.home, '.config'),
                   XDG_CACHE_HOME=os.path.join(self.home, '.cache'),
                   XDG_DATA_HOME=os.path.join(self.home, '.local', 'share'),
                   XDG_STATE_HOME=os.path.join(self.home, '.local', 'state'))
        return subprocess.run(['bash', '-c', command], cwd=self.workdir,
                              env=env,
                              capture_output=True, text=True,
                              timeout=TIMEOUT)

    def test_every_example_file_is_used_by_a_documented_command(self):
        used = set()
        for _doc, _line, command, _status, _out in self.commands:
            used.update(re.split(r'[\s<>]+', command))
        self.assertEqual([], [name for name in _example_files()
                              if name not in used])

    def test_documented_commands(self):
        commands = without_recording(self.commands)
        self.assertGreaterEqual(len(commands), 7)
        self.run_all(commands)

    def test_documented_commands_that_record(self):
        commands = of_recording_documents(self.commands)
        self.assertGreaterEqual(len([c for c in commands
                                     if _records(c[2])]), 2)
        self.run_all(commands)

    def test_every_documented_request_body_is_generated_from_now(self):
        # A static body has dates that pass: every check example reads
        # one that a documented example_lease.py command writes first.
        written = set()
        for _doc, _line, command, _status, _out in self.commands:
            if command.startswith(_GENERATOR):
                written.add(command.rsplit('>', 1)[1].strip())
            elif re.search(r'\bcheck (create|update|end)\b', command):
                body = [w for w in re.split(r'[\s<>]+', command)
                        if w.endswith('.json')]
                self.assertTrue(body and set(body) <= written, command)
        self.assertEqual(set(), written & set(_example_files()))

    def run_all(self, commands):
        for doc, line, command, status, output in commands:
            where = '%s:%d: %s' % (doc, line, command)
            result = self.run_documented(command)
            detail = '%s\nexit %d\nstdout:\n%s\nstderr:\n%s' % (
                where, result.returncode, result.stdout, result.stderr)
            if status is not None:
                self.assertEqual(status, result.returncode, detail)
            else:
                self.assertIn(result.returncode, (0, 1), detail)
            if not output:
                continue
            if output[0].startswith('{') or output[0].startswith('['):
                self.assertTrue(_same_json(json.loads('\n'.join(output)),
                                           json.loads(result.stdout)),
                                detail)
                continue
            actual = (result.stdout + result.stderr).split('\n')
            pos = 0
            for want in output:
                if re.match(r'^\s*\+[-+]*\+\s*$', want):
                    continue   # a table border: widths differ
                while pos < len(actual) and not _same_line(want,
                                                           actual[pos]):
                    pos += 1
                self.assertLess(pos, len(actual),
                                '%s\nmissing or out of order: %r' % (
                                    detail, want))
                pos += 1
