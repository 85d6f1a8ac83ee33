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
"""The README's quickstart, run as written against a real ``serve``.

The fenced blocks of README.md that follow a ``<!-- quickstart`` comment
are read as a console session: ``$ `` lines are commands (a trailing
``\\`` continues one), the lines under a command its expected output. The
command that runs ``serve`` is started in the background, the others are
run one after the other through bash, from a directory laid out as the
repository root (``doc``, ``tools`` and ``.venv`` linked to the real ones,
so what the commands write stays in the test's directory), with a private
HOME and XDG directories. The one change to the commands: the service
listens on a free loopback port instead of 8790, which may be taken. A
JSON line must equal the answer by value (a string ending in ``...`` is a
prefix), any other line exactly.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import testtools

from tests.functional import test_doc_examples

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
README = os.path.join(ROOT, 'README.md')
MARKER = '<!-- quickstart'
DOCUMENTED_PORT = 8790
TIMEOUT = 120


def quickstart(path=README):
    """``[(command, [output lines])]`` of the quickstart blocks."""
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    session, i = [], 0
    while i < len(lines):
        if not lines[i].startswith(MARKER):
            i += 1
            continue
        i += 1
        if not lines[i].startswith('```'):
            raise AssertionError('README.md:%d: a quickstart marker must '
                                 'be followed by a fenced block' % i)
        i += 1
        while not lines[i].startswith('```'):
            line = lines[i]
            i += 1
            if line.startswith('$ '):
                command = line[2:]
                while command.endswith('\\'):
                    command = command[:-1].rstrip() + ' ' + lines[i].strip()
                    i += 1
                session.append((command, []))
            elif session:
                session[-1][1].append(line)
    return session


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _same(want, got):
    if want.startswith('{'):
        try:
            return test_doc_examples._same_json(json.loads(want),
                                                json.loads(got))
        except ValueError:
            return False
    return want == got


class TestReadmeQuickstart(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.session = quickstart()
        self.home = tempfile.mkdtemp(prefix='pq-quickstart-')
        self.addCleanup(shutil.rmtree, self.home, True)
        self.root = os.path.join(self.home, 'repository')
        os.mkdir(self.root)
        for name, target in (('doc', os.path.join(ROOT, 'doc')),
                             ('tools', os.path.join(ROOT, 'tools')),
                             ('.venv', sys.prefix)):
            os.symlink(target, os.path.join(self.root, name))
        self.env = {key: value for key, value in os.environ.items()
                    if not key.startswith('OS_')}
        self.env.update(
            HOME=self.home,
            XDG_CONFIG_HOME=os.path.join(self.home, '.config'),
            XDG_CACHE_HOME=os.path.join(self.home, '.cache'),
            XDG_DATA_HOME=os.path.join(self.home, '.local', 'share'),
            XDG_STATE_HOME=os.path.join(self.home, '.local', 'state'))
        self.port = free_port()

    def on_our_port(self, command):
        return command.replace('127.0.0.1:%d' % DOCUMENTED_PORT,
                               '127.0.0.1:%d' % self.port)

    def start_service(self, command):
        log = open(os.path.join(self.home, 'serve.log'), 'w')
        self.addCleanup(log.close)
        process = subprocess.Popen(
            ['bash', '-c', 'exec %s --port %d' % (command, self.port)],
            cwd=self.root, env=self.env, stdout=log,
            stderr=subprocess.STDOUT)
        self.addCleanup(self.stop, process)
        deadline = time.monotonic() + TIMEOUT
        url = 'http://127.0.0.1:%d/healthcheck' % self.port
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5):
                    return
            except (OSError, urllib.error.URLError):
                if process.poll() is not None or time.monotonic() > deadline:
                    with open(log.name) as f:
                        self.fail('the quickstart service did not start '
                                  '(exit %s):\n%s' % (process.poll(),
                                                      f.read()))
                time.sleep(0.2)

    @staticmethod
    def stop(process):
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def test_quickstart_follows_the_two_commands(self):
        with open(README, encoding='utf-8') as f:
            text = f.read()
        sections = re.findall(r'^## (.*)$', text, re.M)
        two = text.index('## The two commands')
        following = text.index('## %s' % sections[
            sections.index('The two commands') + 1])
        self.assertLess(two, text.index('### Quickstart'))
        self.assertLess(text.index(MARKER), following)

    def test_quickstart_commands_print_what_the_readme_shows(self):
        serve = [c for c, _out in self.session if c.endswith(' serve')]
        self.assertEqual(1, len(serve), self.session)
        self.start_service(serve[0])
        statuses = []
        for command, output in self.session:
            if command in serve:
                continue
            result = subprocess.run(
                ['bash', '-c', self.on_our_port(command)], cwd=self.root,
                env=self.env, capture_output=True, text=True,
                timeout=TIMEOUT)
            detail = '%s\nexit %d\nstdout:\n%s\nstderr:\n%s' % (
                command, result.returncode, result.stdout, result.stderr)
            self.assertEqual(0, result.returncode, detail)
            got = result.stdout.rstrip('\n').split('\n')
            if not output:
                got = [line for line in got if line]
            self.assertEqual(len(output), len(got), detail)
            for want, line in zip(output, got):
                self.assertTrue(_same(want, line), '%s\nwant: %s' % (
                    detail, want))
            statuses.extend(line for line in got if line in ('204', '403'))
        # The story the README tells: allowed, denied, ended.
        self.assertEqual(['204', '403', '204'], statuses)
