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
"""The ledger's exceptions: a database that cannot be used, one that does
not answer in time, a lock waited on too long.

The enforcement API answers :class:`LedgerUnavailable` (and so
:class:`LockTimeout`) with 503; see
:mod:`~placement_quota.ledger.db.engine` for the timeouts that raise it.
"""

from placement_quota import errors as pq_errors


class LedgerError(pq_errors.DependencyError):
    """The ledger database cannot be used; says why and what to do."""


class LedgerUnavailable(LedgerError, pq_errors.DependencyUnavailable):
    """The ledger database did not answer in time, or cannot be reached:
    the request is given up (the API answers 503); trying again later may
    work."""

    service = 'ledger'
    advises_retry = True


class LockTimeout(LedgerUnavailable):
    """Another admission held a project's lock for too long."""


class LedgerConflict(LedgerUnavailable):
    """A competing transaction wrote the same ledger rows and won: the
    database rolled this one back (MySQL/MariaDB's deadlock, 1213; a
    Galera certification failure or brute-force abort, which it reports
    as 1213 too, at any statement or at COMMIT; error 1020 under
    REPEATABLE READ). Nothing of the transaction was kept, so running it
    again from the start is safe: an admission is re-run whole
    (:func:`placement_quota.filters.admit.run`) before this becomes a
    503."""
