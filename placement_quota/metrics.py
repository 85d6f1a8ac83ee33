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
"""Prometheus metrics of the enforcement service and the listener.

Every metric is defined here, once per process, with labels of bounded
cardinality (route templates, filter names, outcomes: never a project, a
lease or a URL with an ID). The enforcement service exposes them at
``GET /metrics``; ``placement-quota listen`` on a port of its own
(``[lifecycle] metrics_port``).

Several worker processes (uWSGI): set the environment variable
``PROMETHEUS_MULTIPROC_DIR`` to an empty directory writable by every
worker, the same for all, before the processes start (prometheus_client
chooses its storage when it is imported). Each process then writes its
values to files there, and a scrape of any worker sums them
(prometheus_client's multiprocess mode); the directory must be emptied
when the service restarts (``ExecStartPre=`` in systemd).
"""

import contextlib
import os
import time

import prometheus_client
from prometheus_client import multiprocess

MULTIPROC_VARIABLE = 'PROMETHEUS_MULTIPROC_DIR'

#: Seconds: the buckets of the request and call latency histograms.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                   1.0, 2.5, 5.0, 10.0)
#: Seconds: the buckets of the listener's lag.
LAG_BUCKETS = (0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0)

DECISIONS = prometheus_client.Counter(
    'placement_quota_decisions',
    'Enforcement decisions, by request kind (check-create, check-update, '
    'on-end), outcome (allow, deny, invalid, unavailable, error) and the '
    'filter that denied or failed ("" otherwise).',
    ['kind', 'outcome', 'filter'])
REQUEST_SECONDS = prometheus_client.Histogram(
    'placement_quota_request_duration_seconds',
    'Time to answer an HTTP request, by route and status class (2xx...).',
    ['route', 'status'], buckets=LATENCY_BUCKETS)
PLACEMENT_SECONDS = prometheus_client.Histogram(
    'placement_quota_placement_request_duration_seconds',
    'Time of each call to Placement, by method and outcome (ok, or the '
    'status class of an error answer, or unreachable).',
    ['method', 'outcome'], buckets=LATENCY_BUCKETS)
NOVA_SECONDS = prometheus_client.Histogram(
    'placement_quota_nova_request_duration_seconds',
    'Time of each call to Nova, by call (quota_set, flavor) and outcome '
    '(ok or error).',
    ['call', 'outcome'], buckets=LATENCY_BUCKETS)
ADMISSIONS = prometheus_client.Counter(
    'placement_quota_ledger_admissions',
    'Ledger admissions (one per decision of a chain with ledger filters), '
    'by outcome (recorded, denied, failed).',
    ['outcome'])
CONFLICTS = prometheus_client.Counter(
    'placement_quota_ledger_conflicts',
    'Ledger admissions the database rolled back because a competing '
    'transaction wrote the same rows (a deadlock; on Galera, a '
    'certification conflict), by what followed (retried, or given_up: '
    'answered 503 after [ledger] conflict_attempts).',
    ['outcome'])
LOCK_WAIT_SECONDS = prometheus_client.Histogram(
    'placement_quota_ledger_lock_wait_seconds',
    'Time from opening an admission\'s transaction to holding its ledger '
    'locks (connection, BEGIN and the locks).',
    buckets=LATENCY_BUCKETS)
EVENTS = prometheus_client.Counter(
    'placement_quota_lifecycle_events',
    'Blazar notifications the listener handled, by event type and result '
    '(applied, ignored, malformed, requeued).',
    ['event_type', 'result'])
LAG_SECONDS = prometheus_client.Histogram(
    'placement_quota_lifecycle_lag_seconds',
    'Time from Blazar publishing a notification to the listener applying '
    'it.',
    buckets=LAG_BUCKETS)
LAST_EVENT = prometheus_client.Gauge(
    'placement_quota_lifecycle_last_event_timestamp_seconds',
    'When the listener last applied a notification (Unix time).',
    multiprocess_mode='max')


WARNINGS = prometheus_client.Counter(
    'placement_quota_warnings',
    'Warnings to users, by kind (lease_end, credits...) and outcome '
    '(sent, retried, failed, obsolete, lost: held past claim_timeout).',
    ['kind', 'outcome'])

_CHILDREN = {}


def counted(metric, *labels):
    """``metric.labels(*labels)``, kept: prometheus_client looks a
    child up under a lock and checks its labels on every call."""
    key = (metric, labels)
    child = _CHILDREN.get(key)
    if child is None:
        child = _CHILDREN[key] = metric.labels(*labels)
    return child


def multiprocess_dir():
    """The multiprocess directory, or None in single-process mode."""
    return os.environ.get(MULTIPROC_VARIABLE) or None


def registry():
    """The registry a scrape reads: the sum over the processes of the
    multiprocess directory, else this process's metrics."""
    if multiprocess_dir() is None:
        return prometheus_client.REGISTRY
    collected = prometheus_client.CollectorRegistry()
    multiprocess.MultiProcessCollector(collected)
    return collected


def status_class(status):
    """``'2xx'`` for ``'204 No Content'`` or 204."""
    return '%sxx' % str(status)[0]


class Timer:
    """``with Timer() as t: ...``; ``t.seconds`` afterwards."""

    def __enter__(self):
        self.started = time.perf_counter()
        self.seconds = None
        return self

    def __exit__(self, *exc_info):
        self.seconds = time.perf_counter() - self.started
        return False


@contextlib.contextmanager
def timed_call(histogram, *labels):
    """Observe the block's time in ``histogram`` under ``labels`` and an
    outcome, ``ok`` or (when it raises) ``error``."""
    outcome = 'error'
    started = time.perf_counter()
    try:
        yield
        outcome = 'ok'
    finally:
        counted(histogram, *labels, outcome).observe(
            time.perf_counter() - started)


def metrics_app(environ, start_response):
    """``GET /metrics``: every metric in Prometheus's text format."""
    if environ.get('REQUEST_METHOD') not in ('GET', 'HEAD'):
        start_response('405 Method Not Allowed',
                       [('Allow', 'GET, HEAD'),
                        ('Content-Type', 'application/json')])
        return [b'{"message": "GET or HEAD /metrics"}']
    body = prometheus_client.generate_latest(registry())
    start_response('200 OK', [
        ('Content-Type', prometheus_client.CONTENT_TYPE_LATEST),
        ('Content-Length', str(len(body)))])
    return [] if environ['REQUEST_METHOD'] == 'HEAD' else [body]


class RequestMetrics:
    """WSGI middleware: the duration of each request, by route (one of
    ``routes``, else what ``route_of`` answers for the path -- a route
    template such as ``/v1/projects/{project_id}/limits`` -- else
    ``other``) and status class."""

    def __init__(self, app, routes, route_of=None):
        self.app = app
        self.routes = frozenset(routes)
        self.route_of = route_of or (lambda path: None)

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO', '') or '/'
        route = path if path in self.routes else (
            self.route_of(path) or 'other')
        started = time.perf_counter()
        seen = []

        def start(status, headers, exc_info=None):
            seen.append(status)
            return start_response(status, headers, exc_info)

        try:
            return self.app(environ, start)
        finally:
            counted(REQUEST_SECONDS, route,
                    status_class(seen[0]) if seen else '5xx').observe(
                        time.perf_counter() - started)


def serve_metrics(port, host='127.0.0.1'):
    """Serve ``/metrics`` on ``host:port`` from a daemon thread (the
    listener's metrics port); return the server."""
    server, _thread = prometheus_client.start_http_server(
        port, addr=host, registry=registry())
    return server
