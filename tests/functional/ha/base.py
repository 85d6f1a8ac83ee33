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
"""Two ``placement-quota serve`` processes on a ledger in the Galera
cluster (tests/fixtures/galera.py), and the requests and checks the HA
tests share.

Topologies: *multi-writer*, one service writing through node 1 and the
other through node 2 (each node certifies the other's writes: a conflict
shows at COMMIT), and *single writer*, both through HAProxy (node 1 active,
the others backups, as OpenStack deployment tools configure Galera).
"""

import concurrent.futures
import datetime
import json
import os
import re
import subprocess
import sys
import time
import uuid

import fixtures
import requests
import testtools
from testtools import content

from placement_quota.ledger import models
from placement_quota.ledger import store
from tests import builders
from tests.fixtures import galera
from tests.fixtures import process as processes

#: Seconds a ``placement-quota serve`` process may take to listen.
START_TIMEOUT = 60
LISTENING = re.compile(r'listening on (http://\S+)/v1/')
DATE = '%Y-%m-%d %H:%M'

#: The ledger's timeouts in the services' configuration: a request that
#: waits for the database answers 503 within about these.
LOCK_TIMEOUT = 10
STATEMENT_TIMEOUT = 15
CONNECT_TIMEOUT = 3
#: What a request may take at most: the statement timeout, the conflict
#: retries' pauses and a connection attempt, with room for a loaded
#: machine.
REQUEST_BOUND = STATEMENT_TIMEOUT + CONNECT_TIMEOUT + 12


class ServiceProcess:
    """``placement-quota serve`` in a subprocess on a free port, its
    output in ``log_file``; :meth:`wait` until it listens (``url``)."""

    def __init__(self, config, log_file):
        self.log_file = log_file
        self.log = open(log_file, 'w')
        self.url = None
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'placement_quota.cmd.main',
             '--config-file', config, 'serve', '--port', '0'],
            stdout=subprocess.PIPE, stderr=self.log, text=True)

    def wait(self):
        line = self.process.stdout.readline()
        found = LISTENING.search(line)
        if not found:
            self.stop()
            raise AssertionError('serve did not start: %r\n%s' % (
                line, processes.log_tail(self.log_file, 'serve')))
        self.url = found.group(1)
        # Nothing else is printed on stdout; keep it from filling anyway.
        self.process.stdout.close()
        return self

    def stop(self):
        processes.stop(self.process, timeout=20)
        self.log.close()


class Answer:
    """One check-create request's outcome."""

    def __init__(self, index, status, body, seconds, service):
        self.index = index
        self.status = status
        self.body = body
        self.seconds = seconds
        self.service = service
        self.finished = time.monotonic()

    def __repr__(self):
        return '<%d %s %.2fs %r>' % (self.index, self.status, self.seconds,
                                     self.body)


class Services(fixtures.Fixture):
    """One ``placement-quota serve`` process per ledger URL of ``urls``
    (on the Galera ``database``), running ``filters`` (``extra``: more
    ``[enforcement]`` lines). The ledger is migrated first; ``ledger``
    reads it through HAProxy; ``services`` are the processes, ``logs``
    their log files."""

    def __init__(self, database, urls, filters, extra=''):
        super().__init__()
        self.database = database
        self.urls = urls
        self.filters = filters
        self.extra = extra

    def _setUp(self):
        directory = self.useFixture(fixtures.TempDir()).path
        limits = os.path.join(directory, 'limits.yaml')
        with open(limits, 'w') as f:
            f.write('registered_limits: {hosts: 10}\n')
        store.Ledger(self.urls[0], migrate=True).dispose()
        self.ledger = store.Ledger(self.database.url)
        self.addCleanup(self.ledger.dispose)
        self.services = []
        for index, url in enumerate(self.urls):
            config = os.path.join(directory, 'serve-%d.conf' % index)
            with open(config, 'w') as f:
                f.write('[database]\nconnection = %s\n'
                        '[ledger]\ncount_host_resources = false\n'
                        'lock_timeout = %d\nstatement_timeout = %d\n'
                        'connect_timeout = %d\n'
                        '[limits]\nlimits_file = %s\n'
                        '[enforcement]\nenabled_filters = %s\n%s'
                        '[api]\nthreads = 8\n'
                        % (url, LOCK_TIMEOUT, STATEMENT_TIMEOUT,
                           CONNECT_TIMEOUT, limits, ','.join(self.filters),
                           self.extra))
            service = ServiceProcess(
                config, os.path.join(directory, 'serve-%d.log' % index))
            self.addCleanup(service.stop)
            self.services.append(service)
        # Started together, waited for together: each takes seconds to
        # import its modules.
        for service in self.services:
            service.wait()

    def log_tails(self):
        """``{name: the tail of its log}`` of each service."""
        return {'serve-%d.log' % i: processes.log_tail(s.log_file, 'serve',
                                                       200)
                for i, s in enumerate(self.services)}


class GaleraServicesTestCase(testtools.TestCase):
    """Service processes on a ledger database of the cluster."""

    #: Requests of a burst, and the threads sending them.
    requests_sent = 40
    threads = 16

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(galera.GaleraDatabase(haproxy=True))
        self.cluster = self.database.cluster
        self.project = 'p-%s' % uuid.uuid4().hex[:8]
        self.ledger = None
        # Every lease: the same day, in the future (pending: counted).
        self.start = (datetime.datetime.utcnow().replace(
            hour=0, minute=0, second=0, microsecond=0) +
            datetime.timedelta(days=2))
        self.end = self.start + datetime.timedelta(days=1)

    def multi_writer(self, database=None):
        """The URLs of a service through node 1 and one through node
        2."""
        return (database or self.database).urls[:2]

    def single_writer(self, database=None):
        """Twice the URL through HAProxy."""
        return [(database or self.database).url] * 2

    def start_services(self, urls, filters, extra=''):
        """:class:`Services` for this test: their processes; their logs
        are attached to a failure; :attr:`ledger` reads their ledger."""
        found = self.use_services(self.useFixture(
            Services(self.database, urls, filters, extra)))
        return found.services

    def use_services(self, services):
        """Attach the logs of ``services`` to a failure; read their
        ledger."""
        self.ledger = services.ledger

        def attach(exc_info):
            # Read now: their temp dir may be gone when details are shown.
            for name, text in services.log_tails().items():
                self.addDetail(name, content.text_content(text))
        self.addOnException(attach)
        return services

    def lease(self, index, hosts=1):
        """The lease of request ``index``: ``hosts`` hosts of its own
        over one day, named ``lease-<index>``."""
        names = ['h-%d-%d' % (index, i) for i in range(hosts)]
        return builders.lease(self.start.strftime(DATE),
                              self.end.strftime(DATE),
                              builders.hosts(*names),
                              name='lease-%d' % index)

    def check_create(self, service, index, hosts=1, user=None):
        """POST /v1/check-create of :meth:`lease` ``index``: its
        :class:`Answer`."""
        context = {'project_id': self.project}
        if user is not None:
            context['user_id'] = user
        body = {'context': context, 'lease': self.lease(index, hosts)}
        began = time.monotonic()
        try:
            response = requests.post(service.url + '/v1/check-create',
                                     data=json.dumps(body), timeout=120)
        except requests.RequestException as exc:
            return Answer(index, 'error', repr(exc),
                          time.monotonic() - began, service)
        try:
            answer = response.json() if response.content else None
        except ValueError:
            answer = response.text
        return Answer(index, response.status_code, answer,
                      time.monotonic() - began, service)

    def burst(self, services, count=None, first=0, hosts=None, user=None):
        """``count`` check-creates (indexes from ``first``) spread over
        ``services`` from :attr:`threads` threads: their answers.
        ``hosts(index)`` gives the hosts of a lease (default 1)."""
        count = self.requests_sent if count is None else count

        def one(i):
            return self.check_create(services[i % len(services)], i,
                                     hosts=hosts(i) if hosts else 1,
                                     user=user)
        with concurrent.futures.ThreadPoolExecutor(self.threads) as pool:
            return list(pool.map(one, range(first, first + count)))

    # --- checks ---------------------------------------------------------

    def statuses(self, answers):
        found = {}
        for answer in answers:
            found[answer.status] = found.get(answer.status, 0) + 1
        return found

    def assertOnlyDecisions(self, answers):
        """Every answer is a 204, a 403 denial or a 503 with a JSON
        message: no 500, no other status, no lost connection."""
        for answer in answers:
            if answer.status == 204:
                continue
            self.assertIn(answer.status, (403, 503), answer)
            self.assertIsInstance(answer.body, dict, answer)
            self.assertIn('message', answer.body, answer)

    def live_entries(self):
        with self.ledger.transaction() as txn:
            return [row for row in txn.leases(self.project)
                    if row.state not in models.NOT_COUNTED]

    def assertLedgerHoldsExactlyTheAdmitted(self, answers):
        """The ledger's live entries are the leases answered 204, each
        once (by name): none lost, none added, none twice."""
        admitted = sorted('lease-%d' % a.index for a in answers
                          if a.status == 204)
        self.assertEqual(admitted,
                         sorted(row.name for row in self.live_entries()))

    def assertExactlyAdmitted(self, limit, answers):
        """No error; exactly ``limit`` answered 204 and the ledger holds
        exactly them."""
        self.assertOnlyDecisions(answers)
        self.assertEqual(limit, self.statuses(answers).get(204, 0),
                         self.statuses(answers))
        self.assertLedgerHoldsExactlyTheAdmitted(answers)
