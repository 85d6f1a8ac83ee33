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
"""What the ledger says is due: leases about to end, credits past a
threshold, allocations about to end.

One scan reads the ledger in a fixed number of statements, whatever the
number of projects and leases (each an indexed range or one grouped
aggregate):

1. the leases ending within the longest lead time (``ix_leases_end``);
2. the allocations not ended yet, with what was charged to each (one
   join grouped by allocation);
3. what is charged to them for leases not started yet (``ix_leases_start``);
4. the users' shares in force, with what each user's leases were charged
   (one grouped join);
5. and 6. the highest level already recorded of each subject (lease ends
   and allocation ends of the lead window; credits and shares).

A warning goes out for the most urgent step reached only: a lease inside
both its 48 h and its 1 h lead times when first seen gets the 1 h
warning; credits found at 95 % get the 90 % warning, not the 75 % one;
and nothing is recorded at or below a level already recorded for the same
subject (a refund that brings the credits back under 90 % gives no 75 %
warning after the 90 % one). A lease extended has a new end, so a new
subject: it is warned again before its new end.
"""

import collections
import datetime

import sqlalchemy as sa

from placement_quota.ledger import models
from placement_quota.ledger import store
from placement_quota.warning import model
from placement_quota.warning import record

OPEN = (models.PENDING, models.ACTIVE)


def lease_end_subject(row_id, end):
    return 'lease_end:%s:%s' % (row_id, model.iso(end))


def _reached_before(recorded, subject, level):
    """Whether ``recorded`` (:func:`~placement_quota.warning.record.
    levels`) has ``subject`` warned at ``level`` or higher already."""
    return subject in recorded and recorded[subject] >= level


def _lead_reached(now, start, end, leads):
    """The shortest lead time of ``leads`` (seconds) whose warning is due
    at ``now`` for a lease over ``[start, end)``, or None. A lead time
    longer than the lease gives no warning (its moment is before the
    lease starts)."""
    reached = [lead for lead in leads
               if end - datetime.timedelta(seconds=lead) <= now and
               end - datetime.timedelta(seconds=lead) >= start]
    return min(reached) if reached else None


def lease_ends(reader, now, leads, recorded):
    """The LEASE_END notices due at ``now`` (statement 1)."""
    if not leads:
        return []
    t = models.leases
    horizon = now + datetime.timedelta(seconds=max(leads))
    rows = reader.connection.execute(
        sa.select(t.c.id, t.c.project_id, t.c.lease_id, t.c.name,
                  t.c.user_id, t.c.start_date, t.c.end_date,
                  t.c.effective_end)
        .where(t.c.effective_end > now, t.c.effective_end <= horizon,
               t.c.state.in_(OPEN)))
    found = []
    for row in rows:
        end = row.effective_end
        lead = _lead_reached(now, row.start_date, end, leads)
        if lead is None:
            continue
        subject = lease_end_subject(row.id, end)
        if _reached_before(recorded, subject, -lead):
            continue
        found.append(model.Notice(
            kind=model.LEASE_END,
            key=model.key(model.LEASE_END, row.id, end, lead),
            project_id=row.project_id, user_id=row.user_id,
            lease_id=row.lease_id, lease_name=row.name,
            due_at=end - datetime.timedelta(seconds=lead),
            subject=subject, level=-lead,
            facts={'lease_row': row.id,
                   'start_date': model.iso(row.start_date),
                   'end_date': model.iso(end), 'lead_s': lead}))
    return found


def _integer(total):
    """A SUM of micro-credits as an integer: PostgreSQL's SUM of a bigint
    is a numeric (a Decimal in Python), which floats do not mix with."""
    return sa.cast(total, sa.BigInteger)


def _allocations(reader, now):
    """Statements 2 and 3: the allocations not ended at ``now``, each
    with what was charged to it and, of that, for leases not started."""
    a, c, t = models.credit_allocations, models.charges, models.leases
    spent = (sa.select(c.c.allocation_id,
                       _integer(sa.func.sum(c.c.amount)).label('spent'))
             .where(c.c.allocation_id.is_not(None))
             .group_by(c.c.allocation_id).subquery())
    rows = list(reader.connection.execute(
        sa.select(a.c.id, a.c.project_id, a.c.amount, a.c.start_date,
                  a.c.end_date, a.c.resource_class,
                  sa.func.coalesce(spent.c.spent, 0).label('spent'))
        .select_from(a.outerjoin(spent, spent.c.allocation_id == a.c.id))
        .where(sa.or_(a.c.end_date.is_(None), a.c.end_date > now))))
    not_started = {row[0]: row[1] for row in reader.connection.execute(
        sa.select(t.c.allocation_id, _integer(sa.func.sum(t.c.charged)))
        .where(t.c.start_date > now, t.c.state == models.PENDING,
               t.c.allocation_id.is_not(None))
        .group_by(t.c.allocation_id))}
    return rows, not_started


def _crossed(used, amount, thresholds):
    """The highest threshold (percent) ``used`` of ``amount`` reached."""
    if amount <= 0:
        return None, 0.0
    used_pct = 100.0 * used / amount
    reached = [t for t in thresholds if used_pct >= t - 1e-9]
    return (max(reached) if reached else None), used_pct


def _units(value):
    """Micro-credits (or micro resource-hours of a pool) as a float."""
    return round(store.from_micro(value), 6)


def credits(allocations, not_started, thresholds, recorded):
    """The CREDITS notices of ``allocations``."""
    found = []
    for row in allocations:
        threshold, used_pct = _crossed(row.spent, row.amount, thresholds)
        if threshold is None:
            continue
        subject = 'credits:%s' % row.id
        if _reached_before(recorded, subject, threshold):
            continue
        found.append(model.Notice(
            kind=model.CREDITS,
            key=model.key(model.CREDITS, row.id, _pct(threshold)),
            project_id=row.project_id, subject=subject, level=threshold,
            facts={'allocation_id': row.id,
                   'resource_class': row.resource_class,
                   'threshold_pct': threshold,
                   'used_pct': round(used_pct, 2),
                   'amount': _units(row.amount),
                   'spent': _units(row.spent),
                   'left': _units(row.amount - row.spent),
                   'not_started': (None if row.resource_class else
                                   _units(not_started.get(row.id) or 0)),
                   'allocation_end': model.iso(row.end_date)}))
    return found


def _pct(value):
    return ('%g' % value)


def allocation_ends(allocations, now, leads, recorded):
    """The ALLOCATION_END notices: an allocation ending within a lead
    time, that no other allocation of its project (and resource class)
    takes over from at its end."""
    if not leads:
        return []
    by_owner = collections.defaultdict(list)
    for row in allocations:
        by_owner[(row.project_id, row.resource_class)].append(row)
    found = []
    for row in allocations:
        if row.end_date is None:
            continue
        lead = _lead_reached(now, row.start_date or datetime.datetime.min,
                             row.end_date, leads)
        if lead is None:
            continue
        if any(other.id != row.id and
               (other.start_date is None or
                other.start_date <= row.end_date) and
               (other.end_date is None or other.end_date > row.end_date)
               for other in by_owner[(row.project_id, row.resource_class)]):
            continue
        subject = 'allocation_end:%s:%s' % (row.id, model.iso(row.end_date))
        if _reached_before(recorded, subject, -lead):
            continue
        found.append(model.Notice(
            kind=model.ALLOCATION_END,
            key=model.key(model.ALLOCATION_END, row.id, row.end_date, lead),
            project_id=row.project_id, subject=subject, level=-lead,
            due_at=row.end_date - datetime.timedelta(seconds=lead),
            facts={'allocation_id': row.id,
                   'resource_class': row.resource_class,
                   'end_date': model.iso(row.end_date), 'lead_s': lead,
                   'amount': _units(row.amount),
                   'left': _units(row.amount - row.spent)}))
    return found


def user_credits(reader, thresholds, recorded):
    """Statement 4: the USER_CREDITS notices of the shares in force."""
    s, t = models.credit_user_shares, models.leases
    latest = (sa.select(sa.func.max(s.c.id).label('id'))
              .group_by(s.c.project_id, s.c.user_id).subquery())
    # What each holder's leases were charged, read per share through the
    # leases' project index: MariaDB joins a grouped derived table to the
    # shares without an index (a block nested loop), twice as slow.
    spent = (sa.select(_integer(sa.func.sum(t.c.charged)))
             .where(t.c.project_id == s.c.project_id,
                    t.c.user_id == s.c.user_id).scalar_subquery())
    rows = reader.connection.execute(
        sa.select(s.c.id, s.c.project_id, s.c.user_id, s.c.amount,
                  sa.func.coalesce(spent, 0).label('spent'))
        .select_from(s.join(latest, latest.c.id == s.c.id)))
    found = []
    for row in rows:
        threshold, used_pct = _crossed(row.spent, row.amount, thresholds)
        if threshold is None:
            continue
        subject = 'user_credits:%s' % row.id
        if _reached_before(recorded, subject, threshold):
            continue
        found.append(model.Notice(
            kind=model.USER_CREDITS,
            key=model.key(model.USER_CREDITS, row.id, _pct(threshold)),
            project_id=row.project_id, user_id=row.user_id,
            subject=subject, level=threshold,
            facts={'share': _units(row.amount),
                   'spent': _units(row.spent),
                   'left': _units(row.amount - row.spent),
                   'threshold_pct': threshold,
                   'used_pct': round(used_pct, 2)}))
    return found


def scan(ledger, conf, now=None):
    """Every warning the ledger says is due at ``now`` (default the
    ledger's clock) and not recorded yet, as :class:`~.model.Notice`
    objects (nothing is recorded here)."""
    group = conf.warnings
    now = now or ledger.clock()
    lease_leads = sorted(set(group.lease_end_lead_times))
    allocation_leads = sorted(set(group.allocation_end_lead_times))
    thresholds = sorted(set(group.credit_thresholds))
    longest = max(lease_leads + allocation_leads + [0])
    with ledger.reader() as reader:
        windowed = record.levels(
            reader, since=now - datetime.timedelta(seconds=longest),
            kinds=(model.LEASE_END, model.BEFORE_END, model.ALLOCATION_END))
        found = lease_ends(reader, now, lease_leads, windowed)
        allocations, not_started = _allocations(reader, now)
        found += allocation_ends(allocations, now, allocation_leads,
                                 windowed)
        if thresholds:
            levels = record.levels(
                reader, kinds=(model.CREDITS, model.USER_CREDITS))
            found += credits(allocations, not_started, thresholds, levels)
            found += user_credits(reader, thresholds, levels)
    return found
