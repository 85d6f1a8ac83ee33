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
"""``tools/serve.sh``: installs only when the packaging changed, and
puts the options of ``placement-quota`` itself before ``serve``.

Its venv (``$PQ_VENV``) is a temporary directory whose
``bin/placement-quota`` is the test venv's, with the packaging stamp
``tools/install.sh`` writes (the sha256 of setup.cfg, setup.py and
requirements.txt): tools/install.sh never runs on the test venv."""

import hashlib
import os
import subprocess
import sys

import fixtures
import testtools

from tests.fixtures import process

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
SERVE_SH = os.path.join(REPO, 'tools', 'serve.sh')
TIMEOUT = 60


def packaging_stamp():
    digest = hashlib.sha256()
    for name in ('setup.cfg', 'setup.py', 'requirements.txt'):
        with open(os.path.join(REPO, name), 'rb') as f:
            digest.update(f.read())
    return digest.hexdigest()


class TestServeSh(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.venv = os.path.join(self.dir, 'venv')
        os.makedirs(os.path.join(self.venv, 'bin'))
        os.symlink(os.path.join(os.path.dirname(sys.executable),
                                'placement-quota'),
                   os.path.join(self.venv, 'bin', 'placement-quota'))
        with open(os.path.join(self.venv, '.placement-quota-packaging'),
                  'w') as f:
            f.write(packaging_stamp() + '\n')
        home = os.path.join(self.dir, 'home')
        self.env = dict(os.environ, PQ_VENV=self.venv, HOME=home,
                        XDG_STATE_HOME=os.path.join(home, 'state'),
                        XDG_CONFIG_HOME=os.path.join(home, 'config'),
                        XDG_CACHE_HOME=os.path.join(home, 'cache'))

    def serve_sh(self, *args):
        return subprocess.run([SERVE_SH] + list(args), env=self.env,
                              stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=TIMEOUT)

    def test_unchanged_packaging_is_not_installed_again(self):
        before = sorted(os.listdir(self.venv))
        result = self.serve_sh('--help')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertIn('usage: placement-quota serve', result.stdout)
        self.assertEqual(before, sorted(os.listdir(self.venv)))

    def test_config_file_goes_before_serve_and_port_after(self):
        config = os.path.join(self.dir, 'placement-quota.conf')
        with open(config, 'w') as f:
            f.write('[enforcement]\n'
                    'enabled_filters = MaximumReservationLengthFilter\n'
                    'reservation_max_length = 86400\n')
        serve = subprocess.Popen(
            [SERVE_SH, '--config-file', config, '--port', '0'],
            env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True)
        self.addCleanup(serve.stdout.close)
        self.addCleanup(process.stop, serve, TIMEOUT)
        banner = serve.stdout.readline()
        self.assertIn('listening on http://127.0.0.1:', banner)
        self.assertNotIn(':8790/', banner)
        self.assertIn('filters: MaximumReservationLengthFilter;', banner)

    def test_a_global_option_without_its_value_is_refused(self):
        result = self.serve_sh('--port', '0', '--config-file')
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertIn('serve.sh: --config-file needs a value', result.stderr)
