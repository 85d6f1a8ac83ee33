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
"""How far a lease may be extended: the latest end date, to the minute,
that an update of the lease passes every filter with, now.

Blazar's dates have minutes; the candidates are the lease's end moved
later by whole minutes (from the first whole minute after it). Each
candidate is an update the chain evaluates dry
(:meth:`~placement_quota.filters.chain.FilterChain.evaluate`), as Blazar's
``lease update --end-date`` would be checked: the same filters, locks and
ledger reads, nothing recorded; what an admission reads before its locks
(Placement, Nova) does not depend on the dates and is read once for the
whole search. A later end never fits where an earlier
one did not (a longer lease costs more, holds more at its peak, is
longer), so the search gallops (1, 2, 4... minutes) until a candidate is
refused or the search's end is reached, then halves the gap: about 2 x
log2(minutes searched) evaluations. The answer is exact at the moment it
is given: extending to ``latest_end_date`` is allowed and one minute
later is refused by ``bound_by`` (both were evaluated), as long as
nothing else changes in between.
"""

import datetime

from placement_quota.filters import measures
from placement_quota.ledger import admission as admission_mod

MINUTE = datetime.timedelta(minutes=1)


def first_candidate(end):
    """The first whole minute after ``end``."""
    start = end.replace(second=0, microsecond=0)
    return start + MINUTE


def extended(stored, lease_id, end):
    """The lease body ``stored`` (as the ledger keeps it) ending at
    ``end``, with its ID."""
    body = dict(stored, end_date=end.isoformat())
    body.pop('end_time', None)
    if lease_id:
        body['id'] = lease_id
    return body


def search(evaluate, first, last):
    """``(latest allowed, first refused evaluation or None)`` over the
    minutes ``first`` to ``last``: ``evaluate(end)`` gives the
    :class:`~placement_quota.filters.chain.Evaluation` of an update to
    ``end``. ``latest allowed`` is None when ``first`` is refused."""
    allowed, refused = None, None
    step = 0
    candidate = first
    while True:
        found = evaluate(candidate)
        if not found.allowed:
            refused = (candidate, found)
            break
        allowed = candidate
        if candidate >= last:
            return allowed, None
        step = 1 if step == 0 else step * 2
        candidate = min(last, candidate + step * MINUTE)
    low = allowed       # allowed (or None: nothing is)
    high = refused[0]   # refused
    while low is not None and (high - low) > MINUTE:
        middle = low + ((high - low) // MINUTE // 2) * MINUTE
        found = evaluate(middle)
        if found.allowed:
            low = middle
        else:
            high, refused = middle, (middle, found)
    return low, refused[1]


def extension(chain, context, entry, now, days):
    """The ``extension`` answer (see the project API reference) for the
    ledger ``entry`` of a lease of ``context``'s project, searched up to
    ``days`` days past its end (or past ``now``, when later)."""
    stored = dict(entry.lease)
    stored.pop('end_time', None)
    if entry.lease_id:
        stored['id'] = entry.lease_id
    current = dict(stored, end_date=entry.end_date.isoformat())
    last = (max(entry.end_date, now) + datetime.timedelta(days=days)
            ).replace(second=0, microsecond=0)

    # Every candidate differs only in its end date: what the admission
    # reads before its locks (flavors, Placement, Nova's quota) is read
    # once, by the first, for the whole search.
    plans = []

    def evaluate(end):
        found = chain.evaluate(
            admission_mod.CHECK_UPDATE, context,
            extended(stored, entry.lease_id, end), current_lease=current,
            plan=plans[0] if plans else None)
        if not plans and found.plan is not None:
            plans.append(found.plan)
        return found

    latest, refused = search(evaluate, first_candidate(entry.end_date),
                             last)
    denial = None if refused is None else refused.denial
    return {
        'project_id': context.project_id,
        'lease_id': entry.lease_id, 'name': entry.name,
        'start_date': measures.iso(entry.start_date),
        'end_date': measures.iso(entry.end_date),
        'latest_end_date': measures.iso(latest or entry.end_date),
        'bound_by': None if denial is None else denial.filter_name,
        'message': None if denial is None else str(denial),
        'searched_until': measures.iso(last)}
