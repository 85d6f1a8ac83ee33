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
"""Benchmark: POST /v1/check-create through the chain vs a bare endpoint.

One server process (the same threaded cheroot server and logging as
``placement-quota serve``) mounts three: ``/v1/...`` is the enforcement app
running MaximumReservationLengthFilter and ExternalServiceFilter (no endpoint
set), ``/bare/check-create`` a WSGI function that reads the body and answers
204 (the ceiling), and ``/parse/check-create`` one that also parses and
validates the body as the enforcement app does (``lease.parse_body``) and
answers 204: the floor of any chain that checks its input, since no filter
can run before that. Client processes on loopback keep one connection each
and post the check-create example of Blazar's "Flexible Reservation Usage
Enforcement" spec for a fixed time. Prints requests per second, p50 and p99
latency, the server's CPU time a request, and the ratios.

The three endpoints are measured in --rounds rounds, each round running
them back to back (on 2 shared cores a single run of each swings by a
third between runs); the table gives each figure's median over the rounds,
the ratios are those of the medians, and each round's ratios are printed
too. The chain's extra CPU is split in two: parsing (parse only minus the
ceiling) and everything after it (the chain minus parse only: request id,
fault barrier, metrics, routing, the handler and the filters).

    python tools/bench/enforcement.py [--seconds 5] [--clients 4] [--rounds 3]

Bounded: each run stops after --seconds or --max-requests per client.
"""

import argparse
import http.client
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

# There is no absolute figure to beat for this service (upstream Blazar
# ships no external service); the baseline is the bare endpoint on the same
# server.
GOAL_RATIO = 0.80
# The same goal as server CPU a request: at most 1.25 times the ceiling's.
GOAL_CPU = 1.25


def payload():
    from tests import spec_examples
    body = spec_examples.check_create()
    body['lease']['start_date'] = '2030-05-13 00:00'
    body['lease']['end_time'] = '2030-05-14 23:59'
    return json.dumps(body).encode()


# --- server side ------------------------------------------------------------

def bare_app(environ, start_response):
    length = int(environ.get('CONTENT_LENGTH') or 0)
    environ['wsgi.input'].read(length)
    start_response('204 No Content', [])
    return [b'']


def parse_only_app(environ, start_response, parse_body):
    length = int(environ.get('CONTENT_LENGTH') or 0)
    parse_body('check-create', environ['wsgi.input'].read(length))
    start_response('204 No Content', [])
    return [b'']


def serve(threads, log_file):
    from oslo_log import log as logging

    from placement_quota.api.enforcement import app as api_app
    from placement_quota import conf as pq_conf
    from placement_quota import filters
    from placement_quota.filters import chain as chain_mod
    from placement_quota.lease import model as lease
    from placement_quota.httpserver import server as wsgi_server

    conf = pq_conf.new_config([], config_files=[])
    chain_mod.register_filter_opts(conf, filters.all_filters)
    conf.set_override('enabled_filters', ['MaximumReservationLengthFilter',
                                          'ExternalServiceFilter'],
                      'enforcement')
    conf.set_override('reservation_max_length', 30 * 86400, 'enforcement')
    conf.set_override('log_file', log_file)
    logging.setup(conf, 'placement-quota')
    chain_app = api_app.make_app(conf, chain_mod.FilterChain(conf))

    def app(environ, start_response):
        path = environ.get('PATH_INFO', '')
        if path.startswith('/bare/'):
            return bare_app(environ, start_response)
        if path.startswith('/parse/'):
            return parse_only_app(environ, start_response,
                                  lease.parse_body)
        return chain_app(environ, start_response)

    def ready(server):
        print('LISTENING %s' % server.url, flush=True)

    wsgi_server.freeze_heap()  # as placement-quota serve does
    wsgi_server.WSGIServer(app, threads=threads).serve_forever(
        on_ready=ready)


# --- client side ------------------------------------------------------------

def client(args):
    host, port, path, body, seconds, max_requests = args
    conn = http.client.HTTPConnection(host, port, timeout=10)
    headers = {'Content-Type': 'application/json'}
    latencies = []
    errors = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and len(latencies) < max_requests:
        started = time.perf_counter()
        conn.request('POST', path, body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        latencies.append(time.perf_counter() - started)
        if response.status != 204:
            errors += 1
    conn.close()
    return latencies, errors


def run(url, path, clients, seconds, max_requests, body, server=None):
    host, port = url.split('//')[1].split(':')
    jobs = [(host, int(port), path, body, seconds, max_requests)] * clients
    with multiprocessing.Pool(clients) as pool:
        cpu_before = _cpu(server)
        started = time.monotonic()
        results = pool.map(client, jobs)
        elapsed = time.monotonic() - started
        cpu = _cpu(server) - cpu_before
    latencies = sorted(x for lat, _ in results for x in lat)
    errors = sum(e for _, e in results)
    return {
        'requests': len(latencies), 'errors': errors,
        'rps': len(latencies) / elapsed,
        'p50_ms': statistics.median(latencies) * 1000,
        'p99_ms': latencies[int(len(latencies) * 0.99) - 1] * 1000,
        'server_cpu_us': cpu / len(latencies) * 1e6,
    }


def _cpu(process):
    """CPU seconds (user + system) the server process has used."""
    if process is None:
        return 0.0
    times = psutil.Process(process.pid).cpu_times()
    return times.user + times.system


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seconds', type=float, default=5.0)
    parser.add_argument('--clients', type=int, default=4)
    parser.add_argument('--threads', type=int, default=16)
    parser.add_argument('--max-requests', type=int, default=100000,
                        help='per client and run')
    parser.add_argument('--rounds', type=int, default=3,
                        help='rounds of the three runs, back to back; the '
                             'figures are the medians over the rounds')
    parser.add_argument('--serve', action='store_true',
                        help=argparse.SUPPRESS)
    parser.add_argument('--log-file', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args.threads, args.log_file)
    if args.rounds < 1:
        parser.error('--rounds must be at least 1, not %d' % args.rounds)

    workdir = tempfile.mkdtemp(prefix='pq-bench-')
    log_file = os.path.join(workdir, 'placement-quota.log')
    server = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), '--serve',
         '--threads', str(args.threads), '--log-file', log_file],
        stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        line = server.stdout.readline()
        if not line.startswith('LISTENING '):
            raise SystemExit('bench server did not start: %r' % line)
        url = line.split()[1]
        body = payload()
        # Warm the three paths up.
        for path in PATHS:
            run(url, path, 1, 0.5, 1000, body)
        rounds = [{path: run(url, path, args.clients, args.seconds,
                             args.max_requests, body, server)
                   for path in PATHS}
                  for _ in range(args.rounds)]
    finally:
        server.terminate()
        server.wait(10)
    bare, parse_only, chain = (median_run([r[path] for r in rounds])
                               for path in PATHS)
    ratio = chain['rps'] / bare['rps']
    print('POST /v1/check-create, %d clients x %.0fs, %d server threads, '
          'body %d bytes, %d CPUs; medians of %d rounds'
          % (args.clients, args.seconds, args.threads, len(body),
             os.cpu_count(), args.rounds))
    print('%-30s %8s %8s %8s %14s %7s' % (
        '', 'req/s', 'p50 ms', 'p99 ms', 'server CPU/req', 'errors'))
    for name, r in (('bare 204 endpoint (ceiling)', bare),
                    ('parse only (floor of a chain)', parse_only),
                    ('through the chain', chain)):
        print('%-30s %8.0f %8.2f %8.2f %11.0f us %7d' % (
            name, r['rps'], r['p50_ms'], r['p99_ms'], r['server_cpu_us'],
            r['errors']))
    print('chain / ceiling throughput: %.0f%% (goal: at least %.0f%%)'
          % (ratio * 100, GOAL_RATIO * 100))
    print('server CPU a request, chain / ceiling: %.2fx (goal: at most '
          '%.2fx); parse only / ceiling: %.2fx'
          % (chain['server_cpu_us'] / bare['server_cpu_us'], GOAL_CPU,
             parse_only['server_cpu_us'] / bare['server_cpu_us']))
    for label, extra in cpu_split(bare, parse_only, chain):
        print('  %-48s %+5.0f us (%.2fx the ceiling)'
              % (label, extra, extra / bare['server_cpu_us']))
    print('  the goal leaves the two together %.0f us (%.2fx the ceiling)'
          % ((GOAL_CPU - 1) * bare['server_cpu_us'], GOAL_CPU - 1))
    print('each round, chain / ceiling CPU: %s; parse only / ceiling: %s'
          % (', '.join('%.2fx' % cpu_ratio(r, PATHS[2]) for r in rounds),
             ', '.join('%.2fx' % cpu_ratio(r, PATHS[1]) for r in rounds)))
    errors = sum(r[path]['errors'] for r in rounds for path in PATHS)
    return 0 if errors == 0 else 1


PATHS = ('/bare/check-create', '/parse/check-create', '/v1/check-create')


def median_run(runs):
    """Each figure's median over ``runs`` of one endpoint; errors summed."""
    merged = {key: statistics.median(r[key] for r in runs)
              for key in runs[0] if key != 'errors'}
    merged['errors'] = sum(r['errors'] for r in runs)
    return merged


def cpu_split(bare, parse_only, chain):
    """The chain's server CPU a request over the ceiling's, in two parts."""
    return (('parsing (parse only - ceiling)',
             parse_only['server_cpu_us'] - bare['server_cpu_us']),
            ('after parsing: layers, filters (chain - parse)',
             chain['server_cpu_us'] - parse_only['server_cpu_us']))


def cpu_ratio(round_, path):
    return (round_[path]['server_cpu_us']
            / round_[PATHS[0]]['server_cpu_us'])


if __name__ == '__main__':
    sys.exit(main())
