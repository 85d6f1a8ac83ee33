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
"""Benchmark: one ``enforce()`` on a tree of one root with N children.

Two ways of knowing the usage of the tree, on the same tree and limits
(an embedded source: the limits are in memory, so only the usage
calculation differs):

* ours (``aggregate``): the enforcer reads the root's aggregate usage, kept up
  to date as claims land (Keystone's "Strict Two-Level Limits Enforcement
  Model", "Optimized usage calculation");
* naive: a usage read per project of the tree at every check, as
  oslo.limit's callback design implies (``usage(project_id, resources)``
  for the root and each child). Here the callback is the cheapest possible,
  a dict lookup; a real one is a database query or an HTTP call, so the
  real ratio is larger.

The baseline (what exists already): oslo.limit has no working strict
two-level enforcer (NotImplementedError) and no published figures; the
naive path is what its flat enforcer does per project.

    python tools/bench/limits.py --children 10 1000 100000

prints one JSON object per N on stdout, ``{"children": N, "ours_us": ...,
"naive_us": ..., "speedup": ..., ...}``, and a table on stderr. Each figure
is the median over ``--rounds`` rounds of the mean time per check of a
batch; batches are bounded by ``--budget`` seconds per path and N.
"""

import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from placement_quota.limits import enforcer as enforcer_mod  # noqa: E402
from placement_quota.limits import sources  # noqa: E402
from placement_quota.limits import tree as tree_mod  # noqa: E402

RESOURCE = 'cores'
#: Goals at N = 100000.
GOAL_US = 20.0
GOAL_SPEEDUP = 1000.0


def build_data(children):
    """Root ``root`` (limit: room for every check) and ``children``
    children using one core each."""
    projects = {'root': tree_mod.Project(
        'root', limits={RESOURCE: 10 * (children + 1)})}
    usage = {}
    for i in range(children):
        child = 'child-%d' % i
        projects[child] = tree_mod.Project(child, 'root')
        usage[child] = {RESOURCE: 1}
    return tree_mod.LimitData(registered_limits={RESOURCE: 5},
                              projects=projects, usage=usage)


def per_check_us(check, rounds, budget):
    """Median over ``rounds`` of the mean microseconds of one check."""
    # Size a batch so that all rounds fit in the budget.
    start = time.perf_counter()
    check()
    once = time.perf_counter() - start
    batch = max(1, int(budget / rounds / max(once, 1e-7)))
    batch = min(batch, 100000)
    means = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(batch):
            check()
        means.append((time.perf_counter() - start) / batch * 1e6)
    return statistics.median(means), batch


def run(children, rounds, budget):
    data = build_data(children)
    began = time.perf_counter()
    ours = enforcer_mod.Enforcer(sources.EmbeddedSource(data))
    build_s = time.perf_counter() - began
    usage = {p: dict(u) for p, u in data.usage.items()}

    def callback(project_id, resources):
        own = usage.get(project_id, {})
        return {r: own.get(r, 0) for r in resources}

    naive = enforcer_mod.Enforcer(sources.EmbeddedSource(data),
                                  usage=callback, aggregate=False)
    deltas = {RESOURCE: 1}
    # Both paths must agree before they are timed.
    expected = ours.calculate_usage('child-0', [RESOURCE])
    if expected != naive.calculate_usage('child-0', [RESOURCE]) or \
            expected[RESOURCE][1] != children:
        raise SystemExit('aggregate and naive usage differ: %r' % expected)
    ours_us, ours_batch = per_check_us(
        lambda: ours.enforce('child-0', deltas), rounds, budget)
    naive_us, naive_batch = per_check_us(
        lambda: naive.enforce('child-0', deltas), rounds, budget)

    def claim():
        with ours.claim('child-0', deltas):
            pass
        ours.release('child-0', deltas)
    claim_us, _ = per_check_us(claim, rounds, budget)
    return {
        'children': children,
        'ours_us': round(ours_us, 2),
        'naive_us': round(naive_us, 2),
        'speedup': round(naive_us / ours_us, 1),
        'claim_us': round(claim_us, 2),
        'build_s': round(build_s, 2),
        'batches': {'ours': ours_batch, 'naive': naive_batch},
        'rounds': rounds,
        'anchor': 'oslo.limit strict two-level: NotImplementedError; '
                  'naive = one usage read per project (its callback design)',
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--children', type=int, nargs='+',
                        default=[10, 1000, 100000],
                        help='Tree sizes: children under the root.')
    parser.add_argument('--rounds', type=int, default=5,
                        help='Rounds per path and size; the median is '
                             'reported.')
    parser.add_argument('--budget', type=float, default=2.0,
                        help='Seconds of timing per path and size (about).')
    args = parser.parse_args(argv)
    if any(n < 0 or n > 1000000 for n in args.children):
        parser.error('--children must be between 0 and 1000000')
    if not 1 <= args.rounds <= 100:
        parser.error('--rounds must be between 1 and 100')
    if not 0 < args.budget <= 60:
        parser.error('--budget must be in (0, 60] seconds')
    results = [run(n, args.rounds, args.budget) for n in args.children]
    for result in results:
        print(json.dumps(result), flush=True)
    sys.stderr.write('%10s %12s %14s %10s %10s\n' % (
        'children', 'ours µs', 'naive µs', 'speedup', 'claim µs'))
    for r in results:
        sys.stderr.write('%10d %12.2f %14.2f %9.0fx %10.2f\n' % (
            r['children'], r['ours_us'], r['naive_us'], r['speedup'],
            r['claim_us']))
    largest = max(results, key=lambda r: r['children'])
    if largest['children'] >= 100000:
        met = (largest['ours_us'] <= GOAL_US and
               largest['speedup'] >= GOAL_SPEEDUP)
        sys.stderr.write('goal at N=%d (<= %.0f µs, >= %.0fx): %s\n' % (
            largest['children'], GOAL_US, GOAL_SPEEDUP,
            'met' if met else 'NOT met'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
