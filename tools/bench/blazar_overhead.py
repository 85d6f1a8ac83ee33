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
"""Benchmark: the latency a lease create through stock Blazar gains from
all our filters, against the same Blazar with no enforcement at all.

Everything is real and on loopback: the Keystone of
:mod:`tests.fixtures.keystone`, a RabbitMQ node
(:func:`tests.fixtures.rabbitmq.shared`), an embedded Placement seeded
with ``--hosts`` compute nodes (``policies.seed_placement``), and two
stock Blazar 18 processes (:class:`tests.fixtures.blazar.BlazarServer`:
API and manager, each with its own SQLite database and its own RabbitMQ
vhost, notifications on as a deployment has them for our listener, the
fixture's test double of the dummy VM plugin for ``virtual:instance``):

* **with**: ``[enforcement] enabled_filters = ExternalServiceFilter``
  calling ``placement-quota serve`` (a process of its own, as an operator
  runs it: ``admission_scale.write_config``) with every policy filter of
  ``policies.FILTERS``, PlacementCapacityFilter included (every compute
  node of the Placement is eligible: the test double allocates no host),
  on a SQLite ledger seeded with ``--ledger-leases`` leases
  (``policies.seed_ledger``, in 2030, over ``--projects`` projects plus
  the user's), the Placement read live (``--capacity-max-age`` 0, the
  default; more uses the capacity view) and the Nova quota from a file;
* **without**: no ``[enforcement]`` filter at all.

Why two Blazars rather than one switched per create: Blazar reads
``enabled_filters`` once, when its manager starts, and a switch inside
our service would still leave Blazar's filter and its HTTP call in the
"without" figure. Two identical processes differing only in that option
can be measured turn about, so a load swing on the shared machine hits
both alike. What one process might gain over the other by itself (where
its files and memory landed) is not cancelled; the service's own time a
check-create (its ``/metrics``), printed next to the difference, is the
cross-check.

The user is a ``member`` of a project of their own, with
python-blazarclient on a keystoneauth session (as in the end-to-end
tests). Each create is one ``virtual:instance`` reservation (one
instance of 2 VCPUs, 1024 MB, 10 GB) for one day in 2030, so nothing
starts; it is timed around ``client.lease.create`` and the lease is
deleted right after (not timed), so neither database grows. Creates go
with, without, with, without... (``--warmup`` pairs first, not timed:
connections, token caches, the first trust). Our lifecycle listener is
not run: it consumes notifications after the create has answered.

    python tools/bench/blazar_overhead.py [--creates 30] [--hosts 100]
        [--ledger-leases 10000] [--capacity-max-age 0]

prints one JSON object on stdout (``creates``, ``median_s_without``,
``median_s_with``, ``overhead_pct``, ``goal_met``: the overhead of the
medians under 5 %, p90s, the filters, the lease shape, the service's
time a check-create) and a summary on stderr.
"""

import argparse
import datetime
import faulthandler
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from blazarclient import client as blazar_client  # noqa: E402
from blazarclient import exception as blazar_exception  # noqa: E402
from keystoneauth1.identity import v3  # noqa: E402
from keystoneauth1 import session as ks_session  # noqa: E402
from prometheus_client import parser as prom_parser  # noqa: E402
import requests  # noqa: E402

from placement_quota.ledger import store  # noqa: E402
from placement_quota.placement import client as placement_client  # noqa
from placement_quota.placement import embedded  # noqa: E402
from tests.fixtures import blazar as blazar_fixture  # noqa: E402
from tests.fixtures import keystone as keystone_fixture  # noqa: E402
from tests.fixtures import rabbitmq  # noqa: E402
from tests.functional.blazar_e2e import base as e2e  # noqa: E402
from tools.bench import admission_scale  # noqa: E402
from tools.bench import common  # noqa: E402
from tools.bench import policies  # noqa: E402

#: The goal: a create through Blazar at most this much slower, in %.
GOAL_PCT = 5.0
WATCHDOG = 3600
WITH, WITHOUT = 'with', 'without'
#: Where the creates go: the first in 2030, a day apart.
START = datetime.datetime(2030, 1, 1)
#: The histograms of our service's ``/metrics`` the split is read from.
SPLIT = {'placement_quota_request_duration_seconds': 'check-create',
         'placement_quota_placement_request_duration_seconds': 'placement',
         'placement_quota_ledger_lock_wait_seconds': 'locks'}


class BenchError(Exception):
    """The benchmark could not run, or a create was refused."""


def order(creates):
    """The Blazars to create on, turn about: ``creates`` each, the one
    with enforcement first."""
    return [WITH, WITHOUT] * creates


def overhead_pct(median_with, median_without):
    """How much slower, in %, ``median_with`` is than ``median_without``
    (negative when faster)."""
    return (median_with - median_without) / median_without * 100.0


def judge(times):
    """The figures of ``times`` (``{WITH: [s], WITHOUT: [s]}``, in the
    order they were taken): medians, p90s, the overhead of the medians
    and whether it meets the goal; and, as a second reading less moved
    by a load that drifts during the run, the median of the differences
    of each pair (a create with enforcement and the one without that
    followed it) in % of the median without."""
    medians = {who: statistics.median(times[who]) for who in times}
    pct = overhead_pct(medians[WITH], medians[WITHOUT])
    paired = statistics.median(
        w - wo for w, wo in zip(times[WITH], times[WITHOUT]))
    return {'creates': min(len(times[WITH]), len(times[WITHOUT])),
            'median_s_without': round(medians[WITHOUT], 4),
            'median_s_with': round(medians[WITH], 4),
            'p90_s_without': round(common.percentile(times[WITHOUT], 0.9),
                                   4),
            'p90_s_with': round(common.percentile(times[WITH], 0.9), 4),
            'overhead_s': round(medians[WITH] - medians[WITHOUT], 4),
            'overhead_pct': round(pct, 2),
            'paired_overhead_s': round(paired, 4),
            'paired_overhead_pct': round(
                paired / medians[WITHOUT] * 100.0, 2),
            'goal_pct': GOAL_PCT,
            'goal_met': pct < GOAL_PCT}


def service_seconds(url):
    """``{what: (count, seconds)}`` from the ``/metrics`` of our service
    at ``url``: ``check-create`` (its answers), ``placement`` (its calls
    to Placement) and ``locks`` (an admission's wait for its ledger
    locks), each since the service started."""
    text = requests.get(url + '/metrics', timeout=30).text
    found = {what: [0, 0.0] for what in SPLIT.values()}
    for family in prom_parser.text_string_to_metric_families(text):
        what = SPLIT.get(family.name)
        if what is None:
            continue
        for sample in family.samples:
            if (what == 'check-create' and
                    'check-create' not in sample.labels.get('route', '')):
                continue
            if sample.name.endswith('_count'):
                found[what][0] += int(sample.value)
            elif sample.name.endswith('_sum'):
                found[what][1] += sample.value
    return {what: tuple(value) for what, value in found.items()}


def split_ms(before, after):
    """Milliseconds a check-create, by part (see :func:`service_seconds`),
    between two readings; the check-creates counted."""
    checks = after['check-create'][0] - before['check-create'][0]
    if not checks:
        return 0, {}
    return checks, {
        what: round((after[what][1] - before[what][1]) / checks * 1000, 2)
        for what in after}


class Setup:
    """The services of the module's documentation; :meth:`close` stops
    what was started."""

    def __init__(self, args):
        self.workdir = tempfile.mkdtemp(prefix='pq-bench-blazar-overhead-')
        self.keystone = self.placement = self.service = None
        self.blazars = {}
        self.vhosts = []
        try:
            self._start(args)
        except BaseException:
            self.close()
            raise

    def _start(self, args):
        reason = rabbitmq.unavailable_reason()
        if reason is not None:
            raise BenchError('RabbitMQ is not installed: %s' % reason)
        self.rabbit = rabbitmq.shared()
        self.keystone = keystone_fixture.KeystoneFixture()
        self.keystone.setUp()
        project = self.keystone.create_project().id
        self.user = self.keystone.create_user(project)
        self.project = project

        began = time.monotonic()
        self.placement = embedded.ServerProcess()
        client = placement_client.PlacementClient.from_endpoint(
            self.placement.url, embedded.NOAUTH_HEADERS)
        hosts = policies.seed_placement(client, args.hosts)
        projects = policies.project_ids(args.projects)
        projects[project] = None
        ledger_url = 'sqlite:///%s' % os.path.join(self.workdir,
                                                   'ledger.sqlite')
        ledger = store.Ledger(ledger_url, migrate=True)
        try:
            policies.seed_ledger(ledger, projects, args.ledger_leases,
                                 hosts, random.Random(args.seed))
        finally:
            ledger.dispose()
        self.seed_s = time.monotonic() - began
        config = admission_scale.write_config(
            self.workdir, ledger_url, self.placement.url, projects,
            'allocations')
        with open(config, 'a') as f:
            f.write('[enforcement]\ncapacity_max_age = %d\n'
                    % args.capacity_max_age)
        self.service, self.service_url = admission_scale.start_service(
            config)

        for who in (WITH, WITHOUT):
            vhost = 'pq-overhead-%s-%s' % (who, uuid.uuid4().hex[:8])
            transport_url = self.rabbit.add_vhost(vhost)
            self.vhosts.append(vhost)
            self.blazars[who] = blazar_fixture.BlazarServer(
                self.keystone, transport_url=transport_url,
                notifications='messagingv2',
                enforcement_endpoint=(self.service_url + '/v1/'
                                      if who == WITH else None),
                test_double_plugin=True).start()
        self.clients = {who: self.client(server)
                        for who, server in self.blazars.items()}

    def client(self, server):
        auth = v3.Password(auth_url=self.keystone.auth_url,
                           username=self.user.name,
                           password=self.user.password,
                           project_id=self.project,
                           user_domain_name=self.keystone.user_domain_name)
        return blazar_client.Client(
            session=ks_session.Session(auth=auth),
            endpoint_override=server.endpoint)

    def close(self):
        for server in self.blazars.values():
            server.stop()
        self.blazars = {}
        for vhost in self.vhosts:
            try:
                self.rabbit.delete_vhost(vhost)
            except Exception:  # the node goes at exit anyway
                pass
        self.vhosts = []
        stops = ((self.service, admission_scale.stop),
                 (self.placement, lambda server: server.stop()),
                 (self.keystone, lambda fixture: fixture.cleanUp()))
        self.service = self.placement = self.keystone = None
        for part, stop in stops:
            if part is not None:
                stop(part)
        shutil.rmtree(self.workdir, ignore_errors=True)


def create_and_delete(client, i):
    """Create lease ``i`` (timed), then delete it; return the seconds of
    the create."""
    start = START + datetime.timedelta(days=i)
    began = time.perf_counter()
    lease = client.lease.create(
        'overhead-%d' % i, e2e.api_date(start),
        e2e.api_date(start + datetime.timedelta(days=1)),
        [e2e.instance_reservation()], [])
    seconds = time.perf_counter() - began
    client.lease.delete(lease['id'])
    return seconds


def run(setup, creates, warmup):
    """``{WITH: [s], WITHOUT: [s]}`` of ``creates`` timed creates each,
    after ``warmup`` untimed pairs, and the service's figures of the
    timed ones (:func:`split_ms`)."""
    i = 0
    for who in order(warmup):
        create_and_delete(setup.clients[who], i)
        i += 1
    before = service_seconds(setup.service_url)
    times = {WITH: [], WITHOUT: []}
    for who in order(creates):
        times[who].append(create_and_delete(setup.clients[who], i))
        i += 1
    return times, split_ms(before, service_seconds(setup.service_url))


def non_negative(text):
    """An argparse type: an integer of at least 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError('must be 0 or more, not %s' % text)
    return value


#: The command line: ``(option, type, default, help)``.
OPTIONS = (
    ('--creates', common.positive, 30, 'timed creates on each Blazar'),
    ('--warmup', non_negative, 3, 'untimed pairs of creates first'),
    ('--hosts', common.positive, 100, 'compute nodes in Placement'),
    ('--ledger-leases', non_negative, 10000,
     'leases in the ledger before the run'),
    ('--projects', common.positive, 100,
     'projects the ledger\'s leases belong to'),
    ('--capacity-max-age', non_negative, 0, '[enforcement] capacity_max_age '
     'of our service; 0 reads Placement live, as configured by default'),
    ('--seed', int, 42, 'seed of the ledger\'s leases'),
    ('--timeout', common.positive, WATCHDOG, 'seconds after which the '
     'command gives up, printing where it was'),
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    for option, kind, default, text in OPTIONS:
        parser.add_argument(option, type=kind, default=default,
                            help='%s (default: %s)' % (text, default))
    return parser.parse_args(argv)


def main(argv=None, watchdog=False):
    args = parse_args(argv)
    if watchdog:
        faulthandler.dump_traceback_later(args.timeout, exit=True)
    warnings.simplefilter('ignore')
    started = time.monotonic()
    setup = None
    try:
        setup = Setup(args)
        times, (checks, split) = run(setup, args.creates, args.warmup)
    except (BenchError, RuntimeError,
            blazar_exception.BlazarClientException) as exc:
        print('blazar_overhead: %s' % exc, file=sys.stderr)
        return 1
    finally:
        if setup is not None:
            setup.close()
        if watchdog:
            faulthandler.cancel_dump_traceback_later()
    result = judge(times)
    service_ms = split.get('check-create')
    result.update({
        'order': 'with, without, with, without...',
        'warmup_pairs': args.warmup,
        'enforcement': 'ExternalServiceFilter -> placement-quota serve',
        'filters': policies.FILTERS,
        'capacity_max_age': args.capacity_max_age,
        'hosts': args.hosts, 'ledger_leases': args.ledger_leases,
        'lease': {'reservations': [e2e.instance_reservation()],
                  'start': START.isoformat(), 'days': 1},
        'check_creates': checks,
        'service_mean_ms': (round(service_ms, 2)
                            if service_ms is not None else None),
        # The part of the median create our service's answer accounts for.
        'service_share_pct': (
            round(service_ms / 10 / result['median_s_without'], 2)
            if service_ms is not None else None),
        # Milliseconds a check-create: answering it, in Placement calls
        # (every call, background reads included) and waiting for the
        # ledger's locks (those of the deletes' on-end calls included).
        'service_split_ms': split,
        'seed_s': round(setup.seed_s, 1),
        'times_s': {who: [round(t, 4) for t in values]
                    for who, values in times.items()}})
    print(json.dumps(result))
    print('lease create through Blazar, %d each, interleaved: median '
          '%.3f s without enforcement, %.3f s with %d filters (p90 %.3f / '
          '%.3f s): overhead %+.1f %% (%+.1f ms; goal < %.0f %%: %s); '
          'pair by pair %+.1f %%; our service %s ms a check-create (%s %% '
          'of a create); total %.0f s'
          % (result['creates'], result['median_s_without'],
             result['median_s_with'], len(policies.FILTERS),
             result['p90_s_without'], result['p90_s_with'],
             result['overhead_pct'], result['overhead_s'] * 1000, GOAL_PCT,
             'met' if result['goal_met'] else 'NOT met',
             result['paired_overhead_pct'], result['service_mean_ms'],
             result['service_share_pct'], time.monotonic() - started),
          file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main(watchdog=True))
