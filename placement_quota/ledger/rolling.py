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
"""Usage over rolling windows: the most resource-time in any window of a
given length (pure, exact).

An interval holds ``amount`` of a resource from its start (inclusive) to
its end (exclusive). The usage of a window ``[t, t + P)`` is the sum over
the intervals of ``amount`` x the length of the interval's part inside
the window. Times are whole microseconds (:func:`micros`), so usage is an
integer number of resource-microseconds: no rounding anywhere.

With ``F(x)`` the resource-time held before ``x`` (piecewise linear, its
breakpoints at the intervals' starts and ends), the usage of the window
starting at ``t`` is ``F(t + P) - F(t)``: piecewise linear in ``t``, so
its maximum over a range of ``t`` is reached at an end of the range or
where ``t`` or ``t + P`` is an interval's start or end. :func:`busiest`
evaluates exactly those candidates: ``O(n log n)`` in the number of
intervals.
"""

import bisect
import dataclasses
import datetime

EPOCH = datetime.datetime(1970, 1, 1)
MICROSECOND = datetime.timedelta(microseconds=1)
#: Microseconds in an hour: a limit of N resource-hours is N x HOUR
#: resource-microseconds.
HOUR = 3600 * 1000000


def micros(moment):
    """``moment`` (naive UTC) as whole microseconds since 1970."""
    return (moment - EPOCH) // MICROSECOND


def length(delta):
    """A timedelta as whole microseconds."""
    return delta // MICROSECOND


def moment(value):
    """The naive UTC datetime of ``value`` microseconds since 1970."""
    return EPOCH + value * MICROSECOND


class Cumulative:
    """``F(x)``: the resource-time of ``spans`` (``[(start, end,
    amount)]``, in microseconds) held before ``x``."""

    def __init__(self, spans):
        deltas = {}
        for start, end, amount in spans:
            if end <= start or not amount:
                continue
            deltas[start] = deltas.get(start, 0) + amount
            deltas[end] = deltas.get(end, 0) - amount
        self.times = sorted(deltas)
        # held[k]: held on [times[k], times[k + 1]); total[k]: F(times[k]).
        self.held = []
        self.total = []
        held = total = 0
        previous = None
        for at in self.times:
            if previous is not None:
                total += held * (at - previous)
            held += deltas[at]
            self.total.append(total)
            self.held.append(held)
            previous = at

    def __call__(self, x):
        k = bisect.bisect_right(self.times, x) - 1
        if k < 0:
            return 0
        return self.total[k] + self.held[k] * (x - self.times[k])


def usage(spans, start, period):
    """Resource-microseconds ``spans`` hold in ``[start, start +
    period)`` (a direct sum; the reference :class:`Cumulative` is checked
    against)."""
    return sum(amount * max(0, min(end, start + period) - max(begin, start))
               for begin, end, amount in spans)


@dataclasses.dataclass(frozen=True)
class Busiest:
    """The window ``[start, start + period)`` with the most usage
    (resource-microseconds), the first such one; ``usage`` 0 with
    ``start`` the first candidate when nothing is held."""

    start: int
    usage: int


def busiest(spans, first, last, period):
    """The :class:`Busiest` window ``[t, t + period)`` of ``spans`` over
    every ``t`` in ``[first, last]`` (microseconds).

    Exact: the usage is piecewise linear in ``t`` and is evaluated at
    every candidate where it can change slope, and at both ends.
    """
    spans = list(spans)
    held_before = Cumulative(spans)
    candidates = {first, last}
    for begin, end, _ in spans:
        for x in (begin, end, begin - period, end - period):
            if first < x < last:
                candidates.add(x)
    best = None
    for t in sorted(candidates):
        found = held_before(t + period) - held_before(t)
        if best is None or found > best.usage:
            best = Busiest(t, found)
    return best
