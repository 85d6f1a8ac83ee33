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
"""One reconciliation: read both sides, find the drift, maybe repair it."""

import dataclasses
import datetime
import time

from oslo_utils import timeutils

from placement_quota.reconcile import findings as findings_mod
from placement_quota.reconcile import readers
from placement_quota.reconcile import repair


@dataclasses.dataclass
class Report:
    outcomes: list
    #: Placement calls: reading, and repairing.
    read_calls: int
    fix_calls: int
    seconds: float
    blazar: bool
    #: Blazar's lease list: the leases it answered, and the seconds
    #: ``lease.list()`` took.
    blazar_leases: int = 0
    blazar_seconds: float = 0.0

    @property
    def findings(self):
        return [o.finding for o in self.outcomes]

    @property
    def left(self):
        """Findings not repaired (all of them in a dry run)."""
        return [o for o in self.outcomes if not o.fixed]


def reconcile(client, ledger, blazar=None, fix=False, now=None,
              grace=findings_mod.DEFAULT_GRACE,
              pending_timeout=findings_mod.DEFAULT_PENDING_TIMEOUT,
              max_concurrency=8, show_progress=True):
    """Read Placement, then the ledger and Blazar (in that order: a class
    Placement shows was made after its lease, so the lease is then seen;
    an entry recorded after the ledger was read is not judged, and a lease
    Blazar creates in between is matched by the next run), find every
    drift and, with ``fix``, apply the safe repairs."""
    started = time.monotonic()
    now = now or timeutils.utcnow()
    state = readers.read_placement(client, max_concurrency, show_progress)
    reservations, entries = readers.read_ledger(ledger)
    view = None
    listed, list_seconds = 0, 0.0
    if blazar is not None:
        before = time.monotonic()
        leases = blazar.leases()
        list_seconds = time.monotonic() - before
        listed = len(leases)
        view = findings_mod.blazar_view(leases)
    found = findings_mod.find(reservations, entries, state, now,
                              grace=_delta(grace),
                              pending_timeout=_delta(pending_timeout),
                              blazar=view)
    before = client.calls
    if fix:
        outcomes = repair.apply(found, client, ledger)
    else:
        outcomes = repair.plan(found)
    return Report(outcomes, state.calls, client.calls - before,
                  time.monotonic() - started, blazar is not None,
                  listed, list_seconds)


def _delta(value):
    if isinstance(value, datetime.timedelta):
        return value
    return datetime.timedelta(seconds=value)
