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
"""What a filter says about a project's limits: its :class:`Measure`\\ s.

A filter that limits a project (or its users, or each lease) describes
those limits with ``describe(probe)``: ``probe`` is an
:class:`~placement_quota.ledger.admission.Admission` of an empty lease
over the window the caller looks at (now to now + N days), opened on a
ledger reader (no lock), with ``probe.owner`` the user asking. The
filter answers from the same helpers its ``check`` decides with -- the
open-lease count, the peaks over the window, the limits in force -- so
what a member reads is what the next decision uses.

A measure says, in the limit's own terms, what counts against it now
(``in_use``) and the most that counts against it at one moment of the
window (``peak``, None for counts and per-lease limits): a lease over
the whole window fits while ``peak.amount`` plus what it asks stays within
``limit``.
"""

import dataclasses
import datetime
import typing

from placement_quota.ledger import window

PROJECT = 'project'
USER = 'user'
TREE = 'tree'
LEASE = 'lease'
RESERVATION = 'reservation'


def iso(moment):
    """``2026-11-27T17:00:00Z`` (seconds), or None."""
    if moment is None:
        return None
    return moment.replace(microsecond=0).isoformat() + 'Z'


@dataclasses.dataclass(frozen=True)
class Measure:
    """One limit in force, and how much of it is taken."""

    filter: str
    resource: str
    scope: str
    limit: typing.Optional[int]
    unit: str
    in_use: typing.Optional[int] = None
    peak: typing.Optional[window.Peak] = None
    project_id: typing.Optional[str] = None
    user_id: typing.Optional[str] = None
    #: The earliest start a new lease may have under the limit, when
    #: that is later than the window's start (NoStackingFilter: after
    #: the owner's last lease of the resource); listed only when set.
    earliest_start: typing.Optional[datetime.datetime] = None

    def as_dict(self):
        peak = None
        if self.peak is not None:
            peak = {'amount': self.peak.amount, 'at': iso(self.peak.at),
                    'until': iso(self.peak.until)}
        found = {'filter': self.filter, 'resource': self.resource,
                 'scope': self.scope, 'limit': self.limit,
                 'unit': self.unit, 'in_use': self.in_use, 'peak': peak}
        if self.project_id is not None:
            found['project_id'] = self.project_id
        if self.user_id is not None:
            found['user_id'] = self.user_id
        if self.earliest_start is not None:
            found['earliest_start'] = iso(self.earliest_start)
        return found


def held_at(intervals, moment, resources=None):
    """``{resource: amount}`` the intervals hold at ``moment`` (an
    interval holds from its start, inclusive, to its end, exclusive, as
    in :func:`~placement_quota.ledger.window.peaks`)."""
    found = {} if resources is None else dict.fromkeys(resources, 0)
    for interval in intervals:
        if interval.start <= moment < interval.end:
            for resource, amount in interval.amounts.items():
                if resources is None or resource in found:
                    found[resource] = found.get(resource, 0) + amount
    return found


def now_and_peaks(intervals, start, end, resources):
    """``({resource: held at start}, {resource: Peak over [start, end)})``
    of ``intervals``."""
    intervals = list(intervals)
    return (held_at(intervals, start, resources),
            window.peaks(intervals, start, end, resources))


def window_of(now, days):
    """``(start, end)``: ``now`` (whole seconds) to ``days`` later."""
    start = now.replace(microsecond=0)
    return start, start + datetime.timedelta(days=days)
