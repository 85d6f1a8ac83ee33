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
"""Fuzz the enforcement service and the admin API: longer runs than CI's.

The properties and strategies of tests/functional/test_fuzz.py (see
tests/fuzz_harness.py and tests/fuzz_strategies.py), against the real
services -- our enforcement service with all seven policy filters, the
account admin API, a real Placement (a subprocess), a SQLite ledger in a
temporary directory and/or a private PostgreSQL (a subprocess; needs the
PostgreSQL server binaries, see tests/fixtures/postgresql.py)::

    python tools/fuzz.py --examples N [--database sqlite|postgresql|both]
        [--endpoint check-create|check-update|on-end|admin|all ...]
        [--rounds R] [--no-shrink] [--report FILE]

``--examples`` is per endpoint and database (default 1000); ``--endpoint``
may be given several times (default: all four). The run is deterministic:
the same code and arguments send the same requests. On 2 cores the
default run took 7 minutes when every property held but one, 15 minutes
on the code before the hardening (49 failures to shrink).

Hypothesis stops an endpoint's run soon after its first failure, once it
has shrunk what it found. So that one broken property does not hide
another, the tool runs again with the failures already found counted as
passes, up to ``--rounds`` times (default 6), until a run finds nothing
new. Each distinct failure -- property, endpoint and cause (the exception
the service logged and where, the field, the ledger table...) -- is
printed once, with its minimal example (unshrunk with ``--no-shrink``).

Printed on stderr: every failure as it is found, then per endpoint and
database the examples run, the statuses of the requests under test and of
the setup requests, and the list of failures. ``--report FILE`` also
writes them as JSON. Exit status: 0 when every property held, 1 when one
failed, 2 for bad arguments.

Nothing is written to the home directory or the working directory: the
ledger, Placement's database, hypothesis' storage and the XDG state and
config directories are temporary directories, removed at the end.
"""

import argparse
import atexit
import json
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_WORKDIR = tempfile.mkdtemp(prefix='pq-fuzz-tool-')
atexit.register(shutil.rmtree, _WORKDIR, True)
for _variable, _name in (('XDG_STATE_HOME', 'state'),
                         ('XDG_CONFIG_HOME', 'config'),
                         ('XDG_CACHE_HOME', 'cache'),
                         ('XDG_DATA_HOME', 'data'),
                         ('HYPOTHESIS_STORAGE_DIRECTORY', 'hypothesis')):
    os.environ[_variable] = os.path.join(_WORKDIR, _name)
    os.makedirs(os.environ[_variable], exist_ok=True)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tests import fuzz_harness  # noqa: E402
from tests import fuzz_strategies  # noqa: E402

DEFAULT_EXAMPLES = 1000


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description=__doc__.split('\n')[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog='\n'.join(__doc__.split('\n')[1:]))
    parser.add_argument('--examples', type=int, default=DEFAULT_EXAMPLES,
                        help='Scenarios per endpoint and database '
                             '(default %(default)s).')
    parser.add_argument('--database', default='both',
                        choices=fuzz_harness.DATABASES + ('both',))
    parser.add_argument('--endpoint', action='append',
                        choices=fuzz_strategies.ENDPOINTS + ('all',),
                        help='An endpoint to fuzz (repeatable; default '
                             'all).')
    parser.add_argument('--rounds', type=int, default=6,
                        help='Runs per endpoint and database, each setting '
                             'aside the failures found before (default '
                             '%(default)s).')
    parser.add_argument('--no-shrink', action='store_true',
                        help='Report failures as found, not minimal.')
    parser.add_argument('--report', metavar='FILE',
                        help='Also write the counts and failures as JSON.')
    args = parser.parse_args(argv)
    if args.examples < 1 or args.rounds < 1:
        parser.error('--examples and --rounds must be at least 1')
    if not args.endpoint or 'all' in args.endpoint:
        args.endpoint = list(fuzz_strategies.ENDPOINTS)
    args.databases = (fuzz_harness.DATABASES if args.database == 'both'
                      else (args.database,))
    return args


class Failure:
    """One distinct failure: its property, signature and example."""

    def __init__(self, database, endpoint, error):
        self.database = database
        self.endpoint = endpoint
        self.kind = fuzz_harness.kind_of(error)
        self.signature = type(error).signature
        # The failing request, then the whole scenario (hypothesis' note).
        self.text = str(error) + ''.join(
            '\n' + note for note in getattr(error, '__notes__', ()))
        self.text = self.text.encode('utf-8', 'backslashreplace').decode()

    @property
    def key(self):
        return (self.kind.__name__,) + self.signature

    def to_dict(self):
        return {'database': self.database, 'run': self.endpoint,
                'property': self.kind.name,
                'class': self.kind.__name__,
                'signature': list(self.signature), 'example': self.text}


def fuzz_endpoint(deployment, endpoint, args, counts, failures):
    """Run ``endpoint`` for up to ``args.rounds`` rounds."""
    database = deployment.database
    # A failure found before (by another endpoint's run too: its setup
    # requests are check-creates) is set aside.
    known = {f.key for f in failures if f.database == database}

    def ignore(error):
        return (fuzz_harness.kind_of(error).__name__,) + \
            type(error).signature in known

    for round_ in range(args.rounds):
        try:
            fuzz_harness.run(deployment, endpoint, args.examples, counts,
                             shrink=not args.no_shrink, ignore=ignore)
            return
        except Exception as exc:
            found = fuzz_harness.property_failures(exc)
            if not found:
                raise
            new = [Failure(database, endpoint, e) for e in found]
            new = [f for f in new if f.key not in known]
            if not new:
                return
            for failure in new:
                known.add(failure.key)
                failures.append(failure)
                fuzz_harness.log('\n=== FAILURE %d (%s, %s, round %d): %s\n'
                                 '    signature: %s\n%s\n'
                                 % (len(failures), endpoint, database,
                                    round_ + 1, failure.kind.name,
                                    failure.signature, failure.text))


def _counted(counts, endpoint, database):
    key = endpoint, database
    return {'endpoint': endpoint, 'database': database,
            'examples': counts.examples[key],
            'seconds': round(counts.seconds[key], 1),
            'statuses': {str(s): n for s, n in counts.statuses[key].items()},
            'setup_statuses': {str(s): n
                               for s, n in counts.setup[key].items()}}


def main(argv=None):
    args = parse_args(argv)
    counts = fuzz_harness.Counts()
    failures = []
    skipped = []
    started = time.monotonic()
    try:
        for database in args.databases:
            deployment = fuzz_harness.Deployment(database, workdir=_WORKDIR)
            try:
                deployment.setUp()
            except Exception as exc:
                reason = str(exc).strip().splitlines()[0] if str(exc) \
                    else type(exc).__name__
                fuzz_harness.log('Skipping %s: %s' % (database, reason))
                skipped.append((database, reason))
                continue
            try:
                for endpoint in args.endpoint:
                    fuzz_harness.log('Fuzzing %s on %s: %d examples...'
                                     % (endpoint, database, args.examples))
                    fuzz_endpoint(deployment, endpoint, args, counts,
                                  failures)
            finally:
                deployment.cleanUp()
    finally:
        elapsed = time.monotonic() - started
        fuzz_harness.log('\nCounts (%.0f s in all):\n%s'
                         % (elapsed, counts.report()))
        if failures:
            fuzz_harness.log('\n%d distinct failures:' % len(failures))
            for index, failure in enumerate(failures, 1):
                fuzz_harness.log('  %d. [%s] %s %s' % (
                    index, failure.database, failure.kind.name,
                    failure.signature))
        else:
            fuzz_harness.log('\nEvery property held.')
        if args.report:
            with open(args.report, 'w') as f:
                json.dump({
                    'examples_per_endpoint': args.examples,
                    'seconds': round(elapsed, 1),
                    'skipped': [{'database': d, 'reason': r}
                                for d, r in skipped],
                    'counts': [_counted(counts, e, d)
                               for e, d in sorted(counts.examples)],
                    'failures': [f.to_dict() for f in failures],
                }, f, indent=2)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
