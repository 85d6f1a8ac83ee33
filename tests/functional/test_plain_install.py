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
"""Every command runs from a plain install: a venv with placement-quota
and ``requirements.txt``, no test requirements
(:mod:`tests.fixtures.plain_venv`, built once per test process).

The commands are read from setup.cfg (its console scripts and the
``placement_quota.cli`` entry points), so a new command is covered
without touching this file."""

import configparser
import json
import os
import signal
import subprocess
import threading

import fixtures
import requests
import testtools

from tests.fixtures import plain_venv
from tests.fixtures import process as processes
from tests.fixtures import rabbitmq
from tests import spec_examples as spec

TIMEOUT = 120
SETUP_CFG = os.path.join(plain_venv.REPO, 'setup.cfg')
#: What a broken import looks like on a terminal.
BROKEN = ('Traceback', 'ModuleNotFoundError', 'ImportError')

_venv = processes.OncePerProcess('the plain venv', plain_venv.build)

#: Run by the plain venv's Python: ``placement_quota.cmd.main.main`` (what
#: the ``placement-quota`` script calls) with ``WORDS --help`` for each
#: command and for none (the app's own help), in one process (a process
#: per command costs several seconds of imports each); prints
#: ``[[words, exit code, stdout, stderr]...]``. The script itself runs in
#: the serve and listen tests.
_HELP_RUNNER = """\
import contextlib, io, json, sys
sys.argv[0] = 'placement-quota'  # cliff names the app at import
from placement_quota.cmd import main
results = []
for words in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main.main(words + ['--help'])
        except SystemExit as exc:
            code = exc.code or 0  # sys.exit() is exit status 0
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 'raised'
    results.append([words, code, out.getvalue(), err.getvalue()])
sys.__stdout__.write(json.dumps(results))
"""


def entry_points(group):
    """``{name: value}`` of an entry-point group of setup.cfg."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(SETUP_CFG)
    lines = parser.get('entry_points', group).strip().splitlines()
    return dict((part.strip() for part in line.split('=', 1))
                for line in lines)


def cli_commands():
    """The words of every ``placement-quota`` command (cliff reads ``_``
    in an entry-point name as a space)."""
    return sorted(name.split('_') for name in
                  entry_points('placement_quota.cli'))


def requirement_names(path):
    return {plain_venv.requirements.Requirement(line).name.lower()
            for line in plain_venv.requirement_lines(path)}


class PlainInstallTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.venv = _venv.get()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def run_venv(self, argv, **kwargs):
        return subprocess.run(argv, cwd=self.venv.root, env=self.venv.env(),
                              capture_output=True, text=True,
                              timeout=TIMEOUT, **kwargs)

    def start(self, argv, ready):
        """Start a command of the plain venv; return it once its stdout
        said ``ready`` (the line is :attr:`line`), with the list its
        stderr lines go to."""
        process = subprocess.Popen(
            argv, cwd=self.venv.root, env=self.venv.env(),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        self.addCleanup(self._stop, process)
        stderr = []
        reader = threading.Thread(
            target=lambda: stderr.extend(process.stderr), daemon=True)
        reader.start()
        self.addCleanup(reader.join, 5)
        self.line = process.stdout.readline()
        self.assertIn(ready, self.line, ''.join(stderr))
        return process, stderr

    def terminate(self, process, stderr):
        """SIGTERM; the process ends with status 0 and no traceback."""
        process.send_signal(signal.SIGTERM)
        self.assertEqual(0, process.wait(TIMEOUT), ''.join(stderr))
        for word in BROKEN:
            self.assertNotIn(word, ''.join(stderr))

    @staticmethod
    def _stop(process):
        processes.stop(process, TIMEOUT)
        process.stdout.close()
        process.stderr.close()

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, 'w') as f:
            f.write(text)
        return path


class TestPlainInstall(PlainInstallTestCase):

    def test_the_venv_holds_none_of_the_test_requirements(self):
        tests_only = (requirement_names(os.path.join(
            plain_venv.REPO, 'test-requirements.txt')) -
            requirement_names(os.path.join(plain_venv.REPO,
                                           'requirements.txt')))
        self.assertIn('placement-quota', self.venv.distributions)
        self.assertIn('keystone', tests_only)
        self.assertEqual(set(), {plain_venv._canonical(n) for n in tests_only}
                         & self.venv.distributions)

    def test_every_other_console_script_helps_without_error(self):
        scripts = set(entry_points('console_scripts')) - {'placement-quota'}
        self.assertIn('placement-quota-status', scripts)
        for script in sorted(scripts):
            result = self.run_venv([os.path.join(self.venv.bin, script),
                                    '--help'])
            self.assertEqual(0, result.returncode,
                             '%s --help: %s' % (script, result.stderr))
            self.assertIn('usage: %s' % script, result.stdout)
            for word in BROKEN:
                self.assertNotIn(word, result.stdout + result.stderr)

    def test_every_command_helps_without_error(self):
        commands = cli_commands()
        self.assertIn(['db', 'sync'], commands)
        result = self.run_venv([os.path.join(self.venv.bin, 'python'), '-c',
                                _HELP_RUNNER, json.dumps([[]] + commands)])
        self.assertEqual(0, result.returncode, result.stderr)
        failed = []
        for words, code, out, err in json.loads(result.stdout):
            name = ' '.join(['placement-quota'] + words)
            if code != 0 or 'usage: %s' % name not in out \
                    or any(word in out + err for word in BROKEN):
                failed.append('%s --help: exit %s\n%s%s' % (name, code,
                                                            out, err))
        self.assertEqual([], failed)

    def test_serve_answers_check_create_and_stops_on_sigterm(self):
        process, stderr = self.start(
            [os.path.join(self.venv.bin, 'placement-quota'), 'serve',
             '--port', '0'], 'listening on http://127.0.0.1:')
        url = self.line.split('listening on ')[1].split()[0]
        response = requests.post(url + 'check-create',
                                 json=spec.check_create(), timeout=30)
        self.assertIn(response.status_code, (204, 403), response.text)
        self.terminate(process, stderr)

    def test_listen_says_it_listens_and_stops_on_sigterm(self):
        broker = self.useFixture(rabbitmq.RabbitMQFixture())
        config = self.write('placement-quota.conf',
                            '[lifecycle]\ntransport_url = %s\n'
                            % broker.transport_url)
        process, stderr = self.start(
            [os.path.join(self.venv.bin, 'placement-quota'),
             '--config-file', config, 'listen'],
            "listening to Blazar's lease notifications")
        self.terminate(process, stderr)

    def test_a_chart_without_the_charts_extra_names_the_extra(self):
        self.assertNotIn('matplotlib', self.venv.distributions)
        config = self.write('placement-quota.conf',
                            '[database]\nconnection = sqlite:///%s\n'
                            % os.path.join(self.dir, 'ledger.sqlite'))
        result = self.run_venv(
            [os.path.join(self.venv.bin, 'placement-quota'),
             '--config-file', config, 'report', '--start', '2030-01-01',
             '--end', '2030-01-03', '--by', 'day', '--chart',
             os.path.join(self.dir, 'usage.png')])
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertIn('placement-quota[charts]', result.stderr)
        for word in BROKEN:
            self.assertNotIn(word, result.stderr)

    def test_the_warning_templates_are_installed(self):
        result = self.run_venv([
            os.path.join(self.venv.bin, 'python'), '-c',
            'from oslo_config import cfg\n'
            'from placement_quota.conf import warnings\n'
            'from placement_quota.warning import model, render\n'
            'conf = cfg.ConfigOpts()\n'
            'warnings.register_opts(conf)\n'
            'conf([])\n'
            'print(render.Renderer(conf).render(model.Notice(\n'
            '    model.CREDITS, "credits:1:90", "project-a",\n'
            '    facts={"used_pct": 91.0})).subject)\n'])
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual('Project project-a has used 91% of its credits',
                         result.stdout.strip())
