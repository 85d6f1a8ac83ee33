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
"""Benchmark: Placement calls and Placement time of an instance
reservation's start and end on N hosts, through Blazar's manager, with
Blazar's instance plugin (``virtual.instance.plugin``) and with ours
(``virtual.instance.placement_quota``).

A real Keystone, nova-api and Placement (Keystone auth, SQLite) run on
127.0.0.1 (:mod:`tests.fixtures.blazar_cloud`); N compute hosts are seeded
in Nova (services, compute nodes) and Placement (providers as Nova makes
them), and registered in Blazar's database with their reservation
providers ``blazar_<host>`` (not timed: what Blazar's host plugin leaves,
without its four seconds per host). Then Blazar's manager
(:mod:`tests.fixtures.blazar_manager`, one subprocess, one database)
loads our plugin and creates, starts and ends a lease with one instance
reservation of N instances (anti-affinity: one per host), then loads
Blazar's plugin and does the same on the same hosts. Starts and ends run
as the manager's event loop runs them (``_exec_event``).

Every HTTP request is counted and timed where ``requests`` sends it, by
service: ``*_calls`` / ``*_s`` are Placement's (``_s``: seconds spent in
Placement requests), ``*_nova_*`` Nova's and ``*_keystone_*`` Keystone's
(reported apart; they are the same for both plugins but for the tokens:
Blazar's Placement client fetches one per request). After each start the
inventories are checked (every host holds the reservation's class with
total 1), after each end that nothing is left; a mismatch exits non-zero.

    python tools/bench/blazar_plugin.py --hosts 100

prints one JSON object per ``--hosts`` value on stdout
(``{"hosts", "stock": {...}, "ours": {...}}``) and a summary on stderr.
N=100 takes about 6 minutes on 2 cores (most of it Nova: aggregates).
"""

import argparse
import faulthandler
import json
import os
import sys
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tests.fixtures import blazar_cloud  # noqa: E402
from tests.fixtures import blazar_manager  # noqa: E402
from tools.bench import common  # noqa: E402

#: The goals: per transition, whatever N; Placement time ratio at N=100.
GOAL_CALLS = 3
GOAL_SPEEDUP = 10.0
WATCHDOG = 3600
PHASES = ('create', 'start', 'end')
CAPACITY = {'vcpus': 8, 'memory_mb': 16384, 'local_gb': 80}


class BenchError(Exception):
    """The benchmark could not run, or a plugin's result was wrong."""


def phase(name, plugins, hosts):
    reservation = {'resource_type': 'virtual:instance', 'amount': hosts,
                   'vcpus': 1, 'memory_mb': 512, 'disk_gb': 1,
                   'affinity': False, 'resource_properties': ''}
    return [
        {'op': 'use_plugins', 'plugins': list(plugins)},
        {'op': 'create_lease', 'label': name + ' create', 'lease': name,
         'reservations': [reservation]},
        {'op': 'start', 'label': name + ' start', 'lease': name},
        {'op': 'inventories', 'label': name + ' started', 'lease': name},
        {'op': 'end', 'label': name + ' end', 'lease': name},
        {'op': 'inventories', 'label': name + ' ended', 'lease': name},
    ]


def run_once(cloud, hosts, prefix):
    names = ['%s-%05d' % (prefix, i) for i in range(hosts)]
    cloud.add_hosts(names, **CAPACITY)
    steps = ([{'op': 'use_plugins',
               'plugins': list(blazar_manager.OUR_PLUGINS)},
              {'op': 'seed_hosts', 'capacity': CAPACITY}] +
             phase('ours', blazar_manager.OUR_PLUGINS, hosts) +
             phase('stock', blazar_manager.STOCK_PLUGINS, hosts))
    result = blazar_manager.run(
        cloud.keystone.auth_url, cloud.blazar_user,
        cloud.scenario(names, steps, snapshots=False))
    by_label = {s['label']: s for s in result['steps']}
    out = {'hosts': hosts}
    for who in ('stock', 'ours'):
        started = by_label[who + ' started']['inventories']
        if started != {'hosts': {'1': hosts}, 'class': True}:
            raise BenchError('%s: after start, expected all %d hosts with '
                             'one instance reserved, found %s'
                             % (who, hosts, started))
        ended = by_label[who + ' ended']['inventories']
        if ended != {'hosts': {'0': hosts}, 'class': False}:
            raise BenchError('%s: after end, something is left: %s'
                             % (who, ended))
        figures = {}
        for key in ('start', 'end'):
            step = by_label['%s %s' % (who, key)]
            figures[key + '_calls'] = step.get('placement_calls', 0)
            figures[key + '_s'] = step.get('placement_s', 0.0)
        for key in PHASES:
            step = by_label['%s %s' % (who, key)]
            if key == 'create':
                figures['create_calls'] = step.get('placement_calls', 0)
                figures['create_s'] = step.get('placement_s', 0.0)
            for service in ('nova', 'keystone'):
                figures['%s_%s_calls' % (key, service)] = step.get(
                    service + '_calls', 0)
                figures['%s_%s_s' % (key, service)] = step.get(
                    service + '_s', 0.0)
            figures[key + '_wall_s'] = step['wall_s']
        out[who] = figures
    return out


def summary(result):
    ours, stock = result['ours'], result['stock']
    return ('hosts=%d: Placement calls start/end ours %d/%d, Blazar %d/%d; '
            'Placement time Blazar/ours: start %.1fx, end %.1fx'
            % (result['hosts'], ours['start_calls'], ours['end_calls'],
               stock['start_calls'], stock['end_calls'],
               stock['start_s'] / max(ours['start_s'], 1e-9),
               stock['end_s'] / max(ours['end_s'], 1e-9)))


def main(argv=None, watchdog=False):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--hosts', type=common.positive, nargs='+',
                        default=[100],
                        help='numbers of hosts, one run (and one JSON line) '
                        'each (default: 100)')
    parser.add_argument('--timeout', type=common.positive, default=WATCHDOG,
                        help='seconds after which the command gives up, '
                        'printing where it was (default: %d)' % WATCHDOG)
    args = parser.parse_args(argv)
    if watchdog:
        faulthandler.dump_traceback_later(args.timeout, exit=True)
    warnings.simplefilter('ignore')
    started = time.monotonic()
    cloud = blazar_cloud.BlazarCloud()
    try:
        for i, hosts in enumerate(args.hosts):
            result = run_once(cloud, hosts, 'bench%d' % i)
            print(json.dumps(result), flush=True)
            print(summary(result), file=sys.stderr, flush=True)
    except (BenchError, RuntimeError) as exc:
        print('blazar_plugin: %s' % exc, file=sys.stderr)
        return 1
    finally:
        cloud.close()
        if watchdog:
            faulthandler.cancel_dump_traceback_later()
    print('total %.1f s' % (time.monotonic() - started), file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main(watchdog=True))
