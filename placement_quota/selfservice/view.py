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
"""A project's own view: its limits, credits, leases and usage.

Every limit comes from an enabled filter's ``describe``
(:mod:`placement_quota.filters.measures`), on a probe of the window
looked at, read without a lock: the numbers the filters decide with.
"""

import functools

from placement_quota import concurrency
from placement_quota.filters import measures
from placement_quota.lease import model as lease_model
from placement_quota.ledger import admission as admission_mod
from placement_quota.ledger import models
from placement_quota.ledger import store


def probe(txn, project_id, user_id, start, end):
    """An :class:`~placement_quota.ledger.admission.Admission` of an
    empty lease of ``project_id`` asked by ``user_id`` over ``[start,
    end)``: what filters describe their limits on."""
    return admission_mod.Admission(
        txn, admission_mod.CHECK_CREATE,
        lease_model.Context(project_id, user_id),
        lease_model.Lease(start_date=start, end_date=end))


def limits(filters, reader, project_id, user_id, days, guard):
    """The ``limits`` answer (see the project API reference) from
    ``filters`` on the ledger (``reader()``: a context manager giving a
    ledger transaction that reads); ``guard(filter_)`` is a context
    manager around each filter's part.

    A filter with a ``prepare_describe(project_id)`` step (what it reads
    from another service: NovaQuotaFilter's quota and usage) has it made
    while the other filters describe their limits from the ledger, side
    by side; its own ``describe`` then finds it in
    ``probe.prepared_for(filter)``."""
    preparing = [f for f in filters
                 if getattr(f, 'prepare_describe', None) is not None]
    found, window = {}, {}

    def from_ledger(described, prepared=None):
        with reader() as txn:
            if not window:
                window.update(zip(('start', 'end'), measures.window_of(
                    txn.now, days)))
            seen = probe(txn, project_id, user_id, window['start'],
                         window['end'])
            seen.prepared.update(prepared or {})
            for filter_ in described:
                with guard(filter_):
                    found[filter_] = _describe(filter_, seen)

    outcomes = concurrency.side_by_side(
        [functools.partial(f.prepare_describe, project_id)
         for f in preparing] +
        [functools.partial(from_ledger,
                           [f for f in filters if f not in preparing])])
    ledger_outcome = outcomes.pop()
    ledger_outcome.get()
    prepared = {}
    for filter_, outcome in zip(preparing, outcomes):
        with guard(filter_):
            prepared[filter_] = outcome.get()
    if preparing:
        from_ledger(preparing, prepared)
    credits = next((found[f][1] for f in filters
                    if found[f][1] is not None), None)
    start, end = window['start'], window['end']
    return {'project_id': project_id, 'user_id': user_id,
            'at': measures.iso(start),
            'window': {'start': measures.iso(start),
                       'end': measures.iso(end), 'days': days},
            'limits': [m for f in filters for m in found[f][0]],
            'credits': credits,
            'filters': [{'name': f.name, 'inert': found[f][2]}
                        for f in filters]}


def _describe(filter_, seen):
    """``(limits as dicts, credits or None, inert)`` of one filter."""
    describe = getattr(filter_, 'describe', None)
    described = ([m.as_dict() for m in describe(seen)]
                 if describe is not None else [])
    balance_of = getattr(filter_, 'balance_of', None)
    credits = balance_of(seen) if balance_of is not None else None
    inert = getattr(filter_, 'inert', None)
    return described, credits, inert() if inert is not None else None


def series(intervals, start, end):
    """``{resource: [{'at', 'amount'}]}``: what ``intervals`` hold over
    ``[start, end)`` as steps -- each amount holds from its ``at`` to the
    next point's (the first point is at ``start``)."""
    intervals = [i for i in intervals if i.start < end and i.end > start]
    resources = sorted({r for i in intervals for r in i.amounts})
    moments = sorted({start} | {i.start for i in intervals if i.start > start}
                     | {i.end for i in intervals if i.end < end})
    found = {}
    for resource in resources:
        points = []
        for moment in moments:
            amount = measures.held_at(intervals, moment,
                                      [resource])[resource]
            if not points or points[-1]['amount'] != amount:
                points.append({'at': measures.iso(moment),
                               'amount': amount})
        found[resource] = points
    return found


def usage(txn, project_id, days):
    """The ``usage`` answer: what the project holds reserved over the
    next ``days`` days."""
    start, end = measures.window_of(txn.now, days)
    intervals = [i for i, _ in txn.intervals(start, end, [project_id])]
    return {'project_id': project_id, 'start': measures.iso(start),
            'end': measures.iso(end),
            'resources': series(intervals, start, end)}


def leases(txn, project_id):
    """The ``leases`` answer: the project's leases in the ledger (denied
    ones left out), with what each was charged and refunded."""
    charges = txn.charges_by_lease(project_id)
    found = []
    for row in txn.leases(project_id):
        if row.state == models.DENIED:
            continue
        charged, refunded = charges.get(row.id, (0, 0))
        found.append({
            'lease_id': row.lease_id, 'name': row.name,
            'user_id': row.user_id,
            'state': store.state_at(row, txn.now),
            'start_date': measures.iso(row.start_date),
            'end_date': measures.iso(row.end_date),
            'effective_end': measures.iso(row.effective_end),
            'charged': store.from_micro(charged),
            'refunded': store.from_micro(refunded)})
    return {'project_id': project_id, 'leases': found}
