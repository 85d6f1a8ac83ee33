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
"""Benchmark: NovaQuotaFilter on Nova's legacy quota sets, per decision
or cached.

Against the real nova-api and Keystone of :mod:`tests.fixtures.nova`
(``[nova]`` is their admin) and our enforcement service in this process
(the HTTP app on the threaded server, MaximumReservationLengthFilter and
NovaQuotaFilter with ``nova_quota_source = legacy``, a SQLite ledger):
``--projects`` projects with quota sets of their own, ``--requests``
check-creates over HTTP of one-instance leases starting tomorrow, round
robin over the projects, after one each to warm up. Run twice:
``nova_quota_max_age = 0`` (one
``GET /os-quota-sets/{project}/detail`` a decision) and ``--max-age``
(a project's quota set and usage reused that long: the leases all start
in the future; 2,000 requests last several times that long, so the
reads past half of it, made in the background, are part of the run).

The anchor (2026-11-23, through stock Blazar 18 and its client): a
check-create with the legacy NovaQuotaFilter took 95 ms median, 3.2 ms
without that filter. This bench times our service alone; Blazar adds its
own few milliseconds around it.

    python tools/bench/nova_legacy.py [--projects 10] [--requests 2000]
        [--max-age 5]

prints one JSON object on stdout and a summary on stderr.
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


from placement_quota.api.enforcement import app as api_app  # noqa: E402
from placement_quota import conf as pq_conf  # noqa: E402
from placement_quota.filters import chain as chain_mod  # noqa: E402
from placement_quota.filters import nova_quota  # noqa: E402
from placement_quota import filters as filters_mod  # noqa: E402
from placement_quota import services as services_mod  # noqa: E402
from placement_quota.httpserver import server as wsgi_server  # noqa: E402
from tests.fixtures import nova  # noqa: E402
from tools.bench import common  # noqa: E402

#: The anchor: check-create through stock Blazar, legacy NovaQuotaFilter.
ANCHOR_MEDIAN_MS = 95.0
#: The same without the filter.
ANCHOR_WITHOUT_FILTER_MS = 3.2
FILTERS = ['MaximumReservationLengthFilter', 'NovaQuotaFilter']


def configure(directory, fixture):
    conf = pq_conf.new_config([], config_files=[])
    chain_mod.register_filter_opts(conf, filters_mod.all_filters)
    conf.set_override('connection', 'sqlite:///%s' % os.path.join(
        directory, 'ledger.sqlite'), 'database')
    conf.set_override('count_host_resources', False, 'ledger')
    conf.set_override('enabled_filters', FILTERS, 'enforcement')
    conf.set_override('reservation_max_length', 7 * 86400, 'enforcement')
    conf.set_override('nova_quota_source', 'legacy', 'enforcement')
    fixture.keystone.set_admin_options(conf, 'nova')
    conf.set_override('endpoint_override', fixture.endpoint, 'nova')
    return conf


def body(project_id, i):
    start = (datetime.datetime.utcnow() + datetime.timedelta(days=1)
             ).replace(microsecond=0)
    return {'context': {'project_id': project_id, 'user_id': 'u'},
            'lease': {'name': 'bench-%d' % i,
                      'start_date': start.isoformat(),
                      'end_date': (start + datetime.timedelta(hours=1)
                                   ).isoformat(),
                      'reservations': [{
                          'resource_type': 'virtual:instance',
                          'amount': 1, 'vcpus': 1, 'memory_mb': 512,
                          'disk_gb': 1, 'affinity': None,
                          'resource_properties': ''}]}}


def phase(url, projects, count):
    """Latencies (ms) and statuses of ``count`` check-creates."""
    return common.time_check_creates(url, (
        body(projects[i % len(projects)], i) for i in range(count)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--projects', type=common.positive, default=10)
    parser.add_argument('--requests', type=common.positive, default=2000)
    parser.add_argument('--max-age', type=common.positive, default=5)
    parser.add_argument('--no-refresh-ahead', action='store_true',
                        help='Never read a cached quota again in the '
                             'background (as before refresh-ahead), for '
                             'comparison.')
    args = parser.parse_args(argv)
    if args.no_refresh_ahead:
        nova_quota.REFRESH_AHEAD = float('inf')
    directory = tempfile.mkdtemp(prefix='pq-bench-nova-legacy-')
    fixture = nova.NovaAPIFixture()
    fixture.setUp()
    try:
        projects = []
        for _ in range(args.projects):
            project = fixture.keystone.create_project().id
            fixture.set_quotas(project, instances=1000, cores=1000,
                               ram=1024000)
            projects.append(project)
        conf = configure(directory, fixture)
        services = services_mod.Services(conf)
        chain = chain_mod.FilterChain(conf, services=services)
        reader = [f for f in chain.filters
                  if f.name == 'NovaQuotaFilter'][0].reader
        app = api_app.make_app(conf, chain)
        wsgi_server.freeze_heap()  # as placement-quota serve does
        server = wsgi_server.WSGIServer(app, threads=4).start()
        result = {'projects': args.projects, 'requests': args.requests,
                  'filters': FILTERS,
                  'refresh_ahead': not args.no_refresh_ahead,
                  'anchor_median_ms': ANCHOR_MEDIAN_MS,
                  'anchor_without_filter_ms': ANCHOR_WITHOUT_FILTER_MS,
                  'phases': []}
        try:
            for max_age in (0, args.max_age):
                conf.set_override('nova_quota_max_age', max_age,
                                  'enforcement')
                # Warm-up: connections, and each project's first read.
                phase(server.url, projects, len(projects))
                before = reader._legacy.calls
                timings, statuses = phase(server.url, projects,
                                          args.requests)
                calls = reader._legacy.calls - before
                result['phases'].append({
                    'nova_quota_max_age': max_age, 'statuses': statuses,
                    'p50_ms': round(statistics.median(timings), 2),
                    'p99_ms': round(common.percentile(timings, 0.99), 2),
                    'nova_calls_per_request': round(
                        calls / float(args.requests), 3)})
        finally:
            server.stop()
            services.close()
    finally:
        fixture.cleanUp()
    print(json.dumps(result))
    for found in result['phases']:
        print('nova_quota_max_age %d: p50 %.2f ms, p99 %.2f ms, %.3f Nova '
              'calls a request (anchor: %.0f ms median through Blazar, '
              '%.1f ms without the filter)'
              % (found['nova_quota_max_age'], found['p50_ms'],
                 found['p99_ms'], found['nova_calls_per_request'],
                 ANCHOR_MEDIAN_MS, ANCHOR_WITHOUT_FILTER_MS),
              file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
