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
"""``GET /metrics`` after real requests: the enforcement app as the
service builds it (a real SQLite ledger, the Placement subprocess of
:mod:`tests.fixtures.placement`), and two uWSGI workers sharing
``PROMETHEUS_MULTIPROC_DIR``.

prometheus_client's metrics live for the whole test process, so each test
compares a scrape after its requests with one before them.
"""

import json
import os
import socket

import fixtures
from prometheus_client import parser
import requests
import testtools
import webob

from placement_quota.api.enforcement import app as api_app
from placement_quota import conf as pq_conf
from placement_quota import filters
from placement_quota.filters import chain as chain_mod
from tests import spec_examples
from tests.fixtures import placement as placement_fixture
from tests.fixtures import process
from tests.functional.api import test_deployment_uwsgi as uwsgi_test


def samples(text):
    """``{(name, sorted labels): value}`` of a Prometheus text scrape."""
    found = {}
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = (
                sample.value)
    return found


def value(scrape, name, **labels):
    return scrape.get((name, tuple(sorted(labels.items()))), 0.0)


def check_create_body(project, hours):
    body = spec_examples.check_create()
    body['context']['project_id'] = project
    body['lease']['start_date'] = '2030-05-13 00:00'
    body['lease'].pop('end_time', None)
    body['lease']['end_date'] = '2030-05-13 %02d:00' % hours
    return body


class MetricsTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.configure('')

    def configure(self, text, *enabled):
        path = os.path.join(self.dir, 'placement-quota.conf')
        with open(path, 'w') as out:
            out.write('[ledger]\nconnection = sqlite:///%s/ledger.sqlite\n'
                      'count_host_resources = false\n'
                      '[enforcement]\nreservation_max_length = 86400\n'
                      'enabled_filters = %s\n%s'
                      % (self.dir, ','.join(enabled or (
                          'MaximumReservationLengthFilter',
                          'LeaseCountFilter')), text))
        self.conf = pq_conf.new_config([], config_files=[path])
        chain_mod.register_filter_opts(self.conf, filters.all_filters)
        self.app = api_app.make_app(self.conf,
                                    chain_mod.FilterChain(self.conf))

    def scrape(self):
        response = webob.Request.blank('/metrics').get_response(self.app)
        self.assertEqual(200, response.status_int)
        self.assertTrue(response.content_type.startswith('text/plain'))
        return samples(response.text)

    def post(self, body, path='/v1/check-create'):
        return webob.Request.blank(
            path, method='POST', body=json.dumps(body).encode(),
            content_type='application/json').get_response(self.app)


class TestServiceMetrics(MetricsTestCase):

    def test_an_allowed_check_create_counts_one_allow(self):
        before = self.scrape()
        self.assertEqual(204, self.post(check_create_body(
            'metrics-allow', 2)).status_int)
        after = self.scrape()
        name = 'placement_quota_decisions_total'
        labels = dict(kind='check-create', outcome='allow', filter='')
        self.assertEqual(value(before, name, **labels) + 1,
                         value(after, name, **labels))
        name = 'placement_quota_ledger_admissions_total'
        self.assertEqual(value(before, name, outcome='recorded') + 1,
                         value(after, name, outcome='recorded'))

    def test_a_denial_counts_under_the_filter_that_denied(self):
        before = self.scrape()
        response = self.post(check_create_body('metrics-deny', 2)
                             | {'lease': spec_examples.check_create()[
                                 'lease']})
        self.assertEqual(403, response.status_int)
        after = self.scrape()
        name = 'placement_quota_decisions_total'
        labels = dict(kind='check-create', outcome='deny',
                      filter='MaximumReservationLengthFilter')
        self.assertEqual(value(before, name, **labels) + 1,
                         value(after, name, **labels))

    def test_an_invalid_body_counts_as_invalid(self):
        before = self.scrape()
        self.assertEqual(400, self.post({'lease': {}}).status_int)
        after = self.scrape()
        labels = dict(kind='check-create', outcome='invalid', filter='')
        self.assertEqual(
            value(before, 'placement_quota_decisions_total', **labels) + 1,
            value(after, 'placement_quota_decisions_total', **labels))

    def test_request_latency_is_observed_by_route_and_status(self):
        before = self.scrape()
        self.post(check_create_body('metrics-latency', 2))
        after = self.scrape()
        name = 'placement_quota_request_duration_seconds_count'
        labels = dict(route='/v1/check-create', status='2xx')
        self.assertEqual(value(before, name, **labels) + 1,
                         value(after, name, **labels))

    def test_unknown_paths_share_one_route_label(self):
        before = self.scrape()
        webob.Request.blank('/v1/leases/%s' % ('x' * 30)).get_response(
            self.app)
        after = self.scrape()
        name = 'placement_quota_request_duration_seconds_count'
        self.assertEqual(value(before, name, route='other', status='4xx') + 1,
                         value(after, name, route='other', status='4xx'))

    def test_lock_waits_are_observed_per_admission(self):
        before = self.scrape()
        self.post(check_create_body('metrics-locks', 2))
        after = self.scrape()
        name = 'placement_quota_ledger_lock_wait_seconds_count'
        self.assertEqual(value(before, name) + 1, value(after, name))

    def test_placement_calls_are_counted(self):
        server = self.useFixture(placement_fixture.PlacementServer())
        self.configure('[placement]\nauth_type = admin_token\n'
                       'endpoint = %s\ntoken = admin\n' % server.endpoint,
                       'PlacementCapacityFilter')
        before = self.scrape()
        body = check_create_body('metrics-placement', 2)
        body['lease']['reservations'] = [{
            'resource_type': 'virtual:instance', 'amount': 1, 'vcpus': 1,
            'memory_mb': 512, 'disk_gb': 1, 'affinity': None,
            'resource_properties': '', 'allocations': []}]
        self.post(body)
        after = self.scrape()
        name = 'placement_quota_placement_request_duration_seconds_count'
        self.assertGreater(value(after, name, method='GET', outcome='ok'),
                           value(before, name, method='GET', outcome='ok'))

    def test_metrics_can_be_turned_off(self):
        self.configure('[api]\nmetrics = false\n')
        response = webob.Request.blank('/metrics').get_response(self.app)
        self.assertEqual(404, response.status_int)


class TestMultiprocessMetrics(testtools.TestCase):
    """Two uWSGI workers write one multiprocess directory; one scrape
    (whichever worker answers it) sums them."""

    def test_a_scrape_sums_every_worker(self):
        if not os.path.exists(uwsgi_test.UWSGI):
            self.skipTest('pyuwsgi is not installed')
        directory = self.useFixture(fixtures.TempDir()).path
        multiproc = os.path.join(directory, 'prometheus')
        os.mkdir(multiproc)
        config = os.path.join(directory, 'placement-quota.conf')
        with open(config, 'w') as out:
            out.write(uwsgi_test.CONFIG.format(dir=directory))
        # One thread per worker: while one worker waits for the rest of a
        # request we hold back, every other request is the other's. The
        # module is the deprecated path uWSGI configurations written before
        # placement_quota.api.enforcement.wsgi name (a shim of it).
        server = uwsgi_test.UWSGIServer(
            'placement_quota.api.wsgi', directory, config,
            env={'PROMETHEUS_MULTIPROC_DIR': multiproc}, request_log=True,
            threads=1, args=['--socket-timeout', '30'])
        self.addCleanup(server.stop)
        body = json.dumps(check_create_body('mp-held', 2)).encode()
        held = socket.create_connection(('127.0.0.1', server.port),
                                        timeout=10)
        self.addCleanup(held.close)
        head = ('POST /v1/check-create HTTP/1.1\r\nHost: 127.0.0.1\r\n'
                'Content-Type: application/json\r\nConnection: close\r\n'
                'Content-Length: %d\r\n\r\n' % len(body)).encode()
        held.sendall(head)
        for i in range(5):
            response = requests.post(
                server.url + '/v1/check-create', timeout=10,
                data=json.dumps(check_create_body('mp-%d' % i, 2)),
                headers={'Content-Type': 'application/json'})
            self.assertEqual(204, response.status_code, response.text)
        held.sendall(body)
        self.assertIn(b' 204 ', held.recv(4096))
        scrape = samples(requests.get(server.url + '/metrics',
                                      timeout=10).text)
        # uWSGI logs a request after answering it.
        served = process.poll(
            lambda: (lambda counts: counts if sum(counts.values()) == 6
                     else None)(server.workers_answering('/v1/check-create')),
            10, 'six requests in the uWSGI log')
        self.assertEqual([1, 5], sorted(served.values()), served)
        self.assertEqual(6.0, value(
            scrape, 'placement_quota_decisions_total', kind='check-create',
            outcome='allow', filter=''))
