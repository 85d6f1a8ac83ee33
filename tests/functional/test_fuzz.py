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
"""The fuzz suite: mutated requests against the real services.

Each test sends ``PQ_FUZZ_EXAMPLES`` hypothesis scenarios (default
:data:`DEFAULT_EXAMPLES`) to one endpoint -- ``POST /v1/check-create``,
``/v1/check-update``, ``/v1/on-end``, or the account admin API -- of our
enforcement service with all seven policy filters (maximum length, size,
lease count, Nova quota from a limits file, Placement capacity on a real
Placement, credits given to the fuzzed projects, project tree limits from
an embedded limits file) and the admin API, on a SQLite ledger in a
temporary directory and on PostgreSQL. The strategies are in
tests/fuzz_strategies.py, the services and the properties in
tests/fuzz_harness.py. At every request of every scenario:

1. never a 5xx (nor a connection dropped without an answer);
2. every error body is JSON (strict: no NaN or Infinity) with a
   ``message``;
3. a request answered 4xx changes nothing in the ledger (leases,
   credit allocations, charges, accounts) -- but for the entry in state
   ``denied`` that a denied check-create leaves, by design;
4. a denial (403) never changes a credit balance;
5. a 2xx on-end never gives a project back more than it was charged;
6. no credit allocation ever has more left than it was given;
7. an enforcement call changes only its own project's entries and
   charges;
8. a terminated entry stays terminated (its dates, amounts and charge
   never change again);
9. a request cannot forge a line of the services' log;
10. a state-changing admin call a web page could send (a form or text
    body, a foreign ``Origin`` or ``Host``) never succeeds.

1 to 5 are the service's promises; 6 to 10 are cheap to check on the same
requests.

One hypothesis run per endpoint and database checks all of them; each
property raises its own exception class (and one per distinct cause:
the exception the service logged, the field...), so hypothesis reports
every broken property with its own minimal example. The run is
deterministic (``derandomize``, no example database). The counts --
examples run, statuses of the requests under test and of the setup
requests -- go to stderr and to the test's ``fuzz-counts`` detail.

Longer runs: ``tools/fuzz.py --examples N``.
"""

import os

import testtools
from testtools import content

from tests import fuzz_harness
from tests import fuzz_strategies

#: Examples per endpoint and database. Measured on 2 cores (2026-11-23):
#: the whole module (8 runs) takes 112 s in one process, 82 s split over
#: two; 158 s in one process on the unfixed code, where every run fails and
#: hypothesis shrinks what it found.
DEFAULT_EXAMPLES = 300
EXAMPLES = int(os.environ.get('PQ_FUZZ_EXAMPLES') or DEFAULT_EXAMPLES)


class _Fuzz:
    """The fuzz tests of one ledger database (``database``)."""

    database = None

    def setUp(self):
        super().setUp()
        self.deployment = self.useFixture(
            fuzz_harness.Deployment(self.database))
        self.counts = fuzz_harness.Counts()

    def fuzz(self, endpoint):
        try:
            fuzz_harness.run(self.deployment, endpoint, EXAMPLES,
                             self.counts)
        except Exception as exc:
            failures = fuzz_harness.property_failures(exc)
            if not failures:
                raise
            self.fail(fuzz_harness.describe(failures))
        finally:
            report = self.counts.report()
            self.addDetail('fuzz-counts', content.text_content(report))
            fuzz_harness.log('fuzz: ' + report)

    def test_check_create(self):
        self.fuzz('check-create')

    def test_check_update(self):
        self.fuzz('check-update')

    def test_on_end(self):
        self.fuzz('on-end')

    def test_admin_api(self):
        self.fuzz(fuzz_strategies.ADMIN)


class TestFuzzSQLite(_Fuzz, testtools.TestCase):
    database = 'sqlite'


class TestFuzzPostgreSQL(_Fuzz, testtools.TestCase):
    database = 'postgresql'
