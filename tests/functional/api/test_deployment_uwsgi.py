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
"""Both WSGI entry points under uWSGI, as the deployment guide runs them.

uWSGI is pyuwsgi from PyPI (the same uWSGI, built as a Python package):
a master and two worker processes on 127.0.0.1, the configuration file
named by ``PLACEMENT_QUOTA_CONFIG_FILES`` in the process environment, a
SQLite ledger shared by the workers. Started once for the class.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import fixtures
import requests
import testtools

from tests import spec_examples
from tests.fixtures import process

UWSGI = os.path.join(os.path.dirname(sys.executable), 'uwsgi')

CONFIG = """[enforcement]
enabled_filters = MaximumReservationLengthFilter,LeaseCountFilter
reservation_max_length = 86400
max_leases_per_project = 1
[ledger]
connection = sqlite:///{dir}/ledger.sqlite
count_host_resources = false
[admin_api]
auth_strategy = noauth
"""


class UWSGIServer:
    """``uwsgi`` serving ``module``'s ``application`` on a free port."""

    def __init__(self, module, directory, config, env=None,
                 request_log=False, threads=2, args=()):
        self.port = process.free_port('127.0.0.1')
        self.url = 'http://127.0.0.1:%d' % self.port
        self.log = os.path.join(directory, '%s.log' % module)
        env = dict(os.environ, PLACEMENT_QUOTA_CONFIG_FILES=config,
                   **(env or {}))
        with open(self.log, 'ab') as log:
            self.process = subprocess.Popen(
                [UWSGI, '--http-socket', '127.0.0.1:%d' % self.port,
                 '--module', '%s:application' % module,
                 '--master', '--processes', '2', '--threads', str(threads),
                 '--need-app', '--die-on-term', '--lazy-apps'] +
                ([] if request_log else ['--disable-logging']) + list(args),
                env=env, cwd=directory, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT)
        process.wait_until_answers(self.process, self.url + '/healthcheck',
                                   200, 60, 'uWSGI (%s)' % module, self.log)

    def stop(self):
        process.stop(self.process)

    def workers_answering(self, path):
        """``{worker pid: requests of path}`` from uWSGI's request log
        (``request_log=True``)."""
        counts = {}
        with open(self.log, errors='replace') as log:
            for line in log:
                if line.startswith('[pid: ') and ' %s ' % path in line:
                    pid = int(line[len('[pid: '):].split('|')[0])
                    counts[pid] = counts.get(pid, 0) + 1
        return counts


class TestEnforcementUnderUWSGI(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not os.path.exists(UWSGI):
            raise cls.skipException('pyuwsgi is not installed (%s)' % UWSGI)
        cls.dir = tempfile.mkdtemp(prefix='pq-uwsgi-')
        cls.config = os.path.join(cls.dir, 'placement-quota.conf')
        with open(cls.config, 'w') as out:
            out.write(CONFIG.format(dir=cls.dir))
        cls.server = UWSGIServer('placement_quota.api.enforcement.wsgi',
                                 cls.dir, cls.config)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)
        super().tearDownClass()

    def post(self, body):
        return requests.post(self.server.url + '/v1/check-create',
                             data=json.dumps(body), timeout=10,
                             headers={'Content-Type': 'application/json'})

    def check_create(self, project, hours):
        body = spec_examples.check_create()
        body['context']['project_id'] = project
        body['lease']['start_date'] = '2030-05-13 00:00'
        body['lease'].pop('end_time', None)
        body['lease']['end_date'] = '2030-05-13 %02d:00' % hours
        return self.post(body)

    def test_short_lease_is_allowed(self):
        response = self.check_create('project-short', 2)
        self.assertEqual(204, response.status_code, response.text)

    def test_long_lease_is_denied_with_the_filters_message(self):
        body = spec_examples.check_create()
        body['context']['project_id'] = 'project-long'
        response = self.post(body)
        self.assertEqual(403, response.status_code, response.text)
        self.assertIn('exceeds the maximum of 1 day',
                      response.json()['message'])

    def test_workers_share_one_ledger(self):
        # The second lease of a project is denied whichever worker takes
        # it: the count is in the ledger, not in a process.
        statuses = [self.check_create('project-count', 1).status_code
                    for _ in range(4)]
        self.assertEqual([204, 403, 403, 403], statuses)

    def test_healthcheck_checks_the_ledger(self):
        response = requests.get(self.server.url + '/healthcheck',
                                headers={'Accept': 'application/json'},
                                timeout=10)
        self.assertEqual(200, response.status_code)
        self.assertEqual(['ledger OK (sqlite)'], response.json()['reasons'])


class TestAdminAPIUnderUWSGI(testtools.TestCase):

    def setUp(self):
        super().setUp()
        if not os.path.exists(UWSGI):
            self.skipTest('pyuwsgi is not installed (%s)' % UWSGI)
        directory = self.useFixture(fixtures.TempDir()).path
        config = os.path.join(directory, 'placement-quota.conf')
        with open(config, 'w') as out:
            out.write(CONFIG.format(dir=directory))
        # The deprecated path uWSGI configurations written before
        # placement_quota.api.admin.wsgi name: a shim of that module.
        self.server = UWSGIServer('placement_quota.api.admin_wsgi',
                                  directory, config)
        self.addCleanup(self.server.stop)

    def test_admin_api_creates_then_updates_an_account(self):
        url = self.server.url + '/v1/physics'
        headers = {'Content-Type': 'application/json'}
        body = json.dumps({'limits': {'class:VCPU': 10}})
        created = requests.put(url, data=body, headers=headers, timeout=10)
        self.assertEqual(201, created.status_code, created.text)
        again = requests.put(url, data=body, headers=headers, timeout=10)
        self.assertEqual(202, again.status_code, again.text)
        self.assertEqual(1, again.json()['generation'])
