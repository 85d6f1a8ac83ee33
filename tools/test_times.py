#!/usr/bin/env python3
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
"""How long each test took, kept so that a fresh clone's test run splits
its tests evenly between the workers.

stestr spreads tests over its workers by the times of earlier runs, kept
in ``.stestr/``; a fresh clone has none, and then hands whole groups
(``group_regex`` in ``.stestr.conf``: the tests that share a Keystone, a
Galera cluster, a RabbitMQ cluster...) round-robin, so that several of the
longest can land on one worker (a run seen 9 minutes longer on one worker
than on the other). ``tools/test-times.json`` holds the seconds of each
test of a full run; ``tools/run-tests.sh`` loads them into a new
``.stestr/`` before the run (``seed``), so that the first run of a clone
is split as well as later ones. Tests added since are unknown to it and
handed round-robin, as before.

Commands::

    tools/test_times.py record RUN.log   # from `stestr run` output
    tools/test_times.py record --update RUN.log   # of some modules only
    tools/test_times.py seed | stestr load --force-init
"""

import argparse
import datetime
import json
import os
import re
import sys

#: Where the times are kept, beside this script.
TIMES = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     'test-times.json')
#: A line of ``stestr run``'s output: ``{worker} test.id [1.23s] ... ok``.
LINE = re.compile(r'^\{\d+\} (tests\.[\w.]+) \[([\d.]+)s\] \.\.\. ok')
#: When the seeded run "happened" (any fixed time: only durations count).
EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def record(log_path, out_path=TIMES, update=False):
    """Write the times of the passed tests of a ``stestr run`` output
    to ``out_path``; return how many. With ``update``, the times kept
    of the tests the output does not have stay (a run of some modules
    only, after they changed)."""
    times = {}
    if update:
        with open(out_path) as f:
            times = json.load(f)
    found_any = False
    with open(log_path, errors='replace') as log:
        for line in log:
            found = LINE.match(line)
            if found:
                times[found.group(1)] = round(float(found.group(2)), 2)
                found_any = True
    if not found_any:
        sys.exit('%s: no passed test in it (is it the output of '
                 '"stestr run"?)' % log_path)
    with open(out_path, 'w') as out:
        json.dump(times, out, indent=0, sort_keys=True)
        out.write('\n')
    return len(times)


def seed(out, times_path=TIMES):
    """Write a subunit v2 stream of a passed run with the recorded times
    to ``out`` (a binary file)."""
    from subunit import v2   # a test requirement (stestr's)
    with open(times_path) as f:
        times = json.load(f)
    stream = v2.StreamResultToBytes(out)
    now = EPOCH
    for test_id, seconds in sorted(times.items()):
        stream.status(test_id=test_id, test_status='inprogress',
                      timestamp=now)
        now += datetime.timedelta(seconds=seconds)
        stream.status(test_id=test_id, test_status='success', timestamp=now)
    out.flush()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    commands = parser.add_subparsers(dest='command', required=True)
    recording = commands.add_parser(
        'record', help='keep the times of the tests a "stestr run" output '
                       'says passed')
    recording.add_argument('log', help='the output of "stestr run"')
    recording.add_argument(
        '--update', action='store_true',
        help='keep the times of the tests the output does not have (it '
             'ran some modules only)')
    commands.add_parser(
        'seed', help='a subunit stream of the kept times, for "stestr load"')
    args = parser.parse_args(argv)
    if args.command == 'record':
        print('%d test times kept in %s'
              % (record(args.log, update=args.update), TIMES))
    else:
        seed(sys.stdout.buffer)


if __name__ == '__main__':
    main()
