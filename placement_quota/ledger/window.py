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
"""Peak concurrent amounts over a time window: a sweep (pure).

A ledger entry holds its amounts over the half-open interval ``[start,
end)``: a lease ending at 12:00 and one starting at 12:00 never overlap.
The peak of a resource over a window is the largest sum of the amounts of
the entries that hold it at one moment of the window; it is found by one
sweep over the entries' start and end events, sorted (``O(n log n)`` in the
number of entries that overlap the window; the ledger hands over only
those).
"""

import dataclasses
import datetime
import typing


@dataclasses.dataclass(frozen=True)
class Interval:
    """Amounts held from ``start`` (inclusive) to ``end`` (exclusive)."""

    start: datetime.datetime
    end: datetime.datetime
    amounts: typing.Mapping[str, int]


@dataclasses.dataclass(frozen=True)
class Peak:
    """The most of one resource held at once in a window, and when:
    from ``at`` until ``until`` (the first moment it went lower, or the end
    of the window). ``amount`` 0 means nothing was held."""

    resource: str
    amount: int
    at: typing.Optional[datetime.datetime] = None
    until: typing.Optional[datetime.datetime] = None

    def as_dict(self):
        return {'resource': self.resource, 'amount': self.amount,
                'at': self.at.isoformat() if self.at else None,
                'until': self.until.isoformat() if self.until else None}


def overlaps(interval, start, end):
    """Does ``interval`` hold anything inside ``[start, end)``?"""
    return interval.start < end and interval.end > start


def peaks(intervals: typing.Iterable[Interval], start: datetime.datetime,
          end: datetime.datetime,
          resources: typing.Optional[typing.Iterable[str]] = None
          ) -> typing.Dict[str, Peak]:
    """``{resource: Peak}`` of the intervals inside ``[start, end)``.

    Every resource of ``resources`` is in the answer (amount 0 when none is
    held); without ``resources``, every resource an overlapping interval
    holds. Intervals outside the window are ignored.
    """
    wanted = None if resources is None else set(resources)
    events = []
    for interval in intervals:
        if not overlaps(interval, start, end):
            continue
        amounts = interval.amounts if wanted is None else {
            r: v for r, v in interval.amounts.items() if r in wanted}
        if not amounts:
            continue
        # At one moment, ends (0) sort before starts (1): half-open.
        events.append((max(interval.start, start), 1, amounts))
        if interval.end < end:
            events.append((interval.end, 0, amounts))
    events.sort(key=lambda e: (e[0], e[1]))
    held = {}
    best = {r: Peak(r, 0) for r in (wanted or ())}
    at = {}
    for moment, is_start, amounts in events:
        for resource, value in amounts.items():
            if is_start:
                now = held.get(resource, 0) + value
                held[resource] = now
                peak = best.get(resource)
                if peak is None or now > peak.amount:
                    best[resource] = Peak(resource, now, moment)
                    at[resource] = True
            else:
                held[resource] = held.get(resource, 0) - value
                if at.pop(resource, False):
                    peak = best[resource]
                    best[resource] = dataclasses.replace(peak, until=moment)
    for resource in list(at):
        peak = best[resource]
        best[resource] = dataclasses.replace(peak, until=end)
    return best


def headroom(peak_amount, requested, limit):
    """Is ``peak_amount + requested`` within ``limit`` (-1: unlimited)?"""
    return limit < 0 or peak_amount + requested <= limit
