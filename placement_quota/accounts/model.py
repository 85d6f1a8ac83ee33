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
"""An account and the parts of its representation computed from data
already read (no I/O): the account itself, and what its open leases
reserve."""

import dataclasses
import datetime
import typing

from placement_quota.ledger import models
from placement_quota.ledger import window

#: Lease states that reserve resources.
OPEN_STATES = (models.PENDING, models.ACTIVE)


@dataclasses.dataclass
class Account:
    """One account row."""

    account_id: str
    parent_id: typing.Optional[str]
    limits: dict
    metadata: dict
    generation: int
    created_at: datetime.datetime
    updated_at: typing.Optional[datetime.datetime] = None
    deleted_at: typing.Optional[datetime.datetime] = None

    @classmethod
    def from_row(cls, row):
        return cls(row.account_id, row.parent_id, dict(row.limits or {}),
                   dict(row.properties or {}), row.generation,
                   row.created_at, row.updated_at, row.deleted_at)

    def as_dict(self):
        return {'id': self.account_id, 'parent_id': self.parent_id,
                'limits': dict(sorted(self.limits.items())),
                'metadata': dict(sorted(self.metadata.items())),
                'generation': self.generation,
                'created_at': iso(self.created_at),
                'updated_at': iso(self.updated_at)}


def iso(value):
    """ISO 8601 of a datetime, or None."""
    return value.isoformat() if value is not None else None


def interval(row):
    """The :class:`~placement_quota.ledger.window.Interval` of a lease
    row: what it holds, from its start to its effective end."""
    return window.Interval(row.start_date, row.effective_end,
                           row.amounts or {})


def reservations(rows, now, resources=()):
    """The ``usage.reservations`` part of an account's representation,
    from its open lease ``rows``: counts by state, what is reserved
    ``now`` and the peak from now on, for ``resources`` and every
    resource a lease holds."""
    intervals = [interval(r) for r in rows]
    last = max([i.end for i in intervals], default=now)
    names = set(resources)
    for one in intervals:
        names.update(one.amounts)
    instant = datetime.timedelta(microseconds=1)
    current = window.peaks(intervals, now, now + instant, names)
    peak = window.peaks(intervals, now, max(last, now + instant), names)
    return {
        'pending': sum(1 for r in rows if r.state == models.PENDING),
        'active': sum(1 for r in rows if r.state == models.ACTIVE),
        'now': {r: p.amount for r, p in sorted(current.items())},
        'peak': {r: p.as_dict() for r, p in sorted(peak.items())},
    }
