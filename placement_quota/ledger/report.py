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
"""Usage over a period, computed in the database.

What Slurm's ``sreport`` answers for HPC: for a period ``[start, end)``
and a set of projects (or one user), the reserved resource-hours, grouped
by project, user, or period (day, week, month). A lease crossing the
period's edges counts only its part inside: ``(min(end, effective end) -
max(start, lease start))`` seconds times its amount, summed by the
database (one indexed window query a group of time; nothing is loaded
lease by lease). Credits charged and refunded are the ``charges`` rows
dated inside the period; leases created, denied and ended early are
counted by their dates.

Entries counted: every entry not denied or abandoned, closed ones at their
actual end (``effective_end``).
"""

import dataclasses
import datetime
import typing

import sqlalchemy as sa

from placement_quota.lease import amounts as accounting
from placement_quota.ledger import limit_history
from placement_quota.ledger import models
from placement_quota.ledger import store

#: Report column -> ledger resource whose hours it sums.
HOURS = {
    'host_hours': accounting.HOSTS,
    'instance_hours': accounting.INSTANCES,
    'vcpu_hours': accounting.VCPU,
    'memory_mb_hours': accounting.MEMORY_MB,
    'disk_gb_hours': accounting.DISK_GB,
    'floatingip_hours': accounting.FLOATINGIPS,
    'network_hours': accounting.NETWORKS,
}
#: Report columns ``peak_<name>`` and ``peak_<name>_at`` -> resource:
#: the most reserved at one moment of the group's piece, and when first.
PEAKS = {
    'hosts': accounting.HOSTS,
    'instances': accounting.INSTANCES,
    'vcpus': accounting.VCPU,
}
#: With ``by=project``: ``limit_<name>`` (the project's limit then),
#: ``limit_<name>_as_of`` (``peak``: an account's limit from its history,
#: at the peak; ``now``: the limit of now -- the account's when its
#: history starts after the peak, else the one the limits source holds
#: now) and ``peak_<name>_share`` (the peak over that limit).
LIMITS = {'hosts': 'hosts', 'instances': 'instances', 'vcpus': 'class:VCPU'}
#: Most pieces a report by day, week or month may have (each is a few
#: queries): 1,000 days is about 2.7 years.
MAX_PIECES = 1000
#: The groups of ``--by``.
BY_KEY = ('project', 'user', 'resource-type')
BY_TIME = ('day', 'week', 'month')
BY = BY_KEY + BY_TIME + ('total',)
#: The columns of a row, in order.
COLUMNS = (('group',) + tuple(HOURS) +
           ('credits_charged', 'credits_refunded', 'credits_net',
            'pools_net', 'leases_created', 'leases_denied', 'denied_by',
            'leases_ended_early') +
           tuple(column for name in PEAKS
                 for column in ('peak_' + name, 'peak_%s_at' % name)) +
           tuple(column for name in LIMITS
                 for column in ('limit_' + name, 'limit_%s_as_of' % name,
                                'peak_%s_share' % name)))


class TooManyRows(ValueError):
    """A report by day, week or month past :data:`MAX_PIECES` rows."""


@dataclasses.dataclass
class Row:
    """One group of the report (``values``: :data:`COLUMNS` after
    ``group``)."""

    group: str
    values: typing.Dict[str, float]

    def as_tuple(self):
        return (self.group,) + tuple(self.values[c] for c in COLUMNS[1:])


def _seconds(dialect, later, earlier):
    """SQL for the seconds from ``earlier`` to ``later`` (datetimes)."""
    if dialect == 'sqlite':
        return (sa.func.julianday(later) - sa.func.julianday(earlier)) * \
            86400.0
    if dialect == 'postgresql':
        return sa.extract('epoch', later - earlier)
    return sa.func.timestampdiff(sa.text('MICROSECOND'), earlier,
                                 later) / 1000000.0


def _least(dialect, a, b):
    return sa.func.min(a, b) if dialect == 'sqlite' else sa.func.least(a, b)


def _greatest(dialect, a, b):
    return sa.func.max(a, b) if dialect == 'sqlite' \
        else sa.func.greatest(a, b)


def _amount(column, resource):
    """SQL for ``amounts[resource]`` (0 when absent)."""
    return sa.func.coalesce(column[resource].as_float(), 0.0)


def periods(start, end, by):
    """``[(label, start, end)]``: ``[start, end)`` cut by day, ISO week
    (from Monday) or calendar month (UTC); one piece for other groups."""
    if by not in BY_TIME:
        return [(None, start, end)]
    found = []
    at = start
    while at < end and len(found) <= MAX_PIECES:
        if by == 'day':
            day = datetime.datetime(at.year, at.month, at.day)
            following = day + datetime.timedelta(days=1)
            label = day.strftime('%Y-%m-%d')
        elif by == 'week':
            day = datetime.datetime(at.year, at.month, at.day)
            monday = day - datetime.timedelta(days=day.weekday())
            following = monday + datetime.timedelta(days=7)
            year, week, _ = monday.isocalendar()
            label = '%d-W%02d' % (year, week)
        else:
            first = datetime.datetime(at.year, at.month, 1)
            following = (first + datetime.timedelta(days=32)).replace(day=1)
            label = first.strftime('%Y-%m')
        piece_end = min(following, end)
        found.append((label, at, piece_end))
        at = piece_end
    return found


def report(connection, dialect, start, end, by='project', projects=None,
           user_id=None, limits_now=None):
    """:class:`Row` s of the usage of ``projects`` (None: every project)
    or of one user, during ``[start, end)``, grouped ``by``.

    ``limits_now(project_ids)`` -> ``{project: {resource: limit}}`` (the
    limits source's limits of now, see
    :func:`placement_quota.limits.sources.limits_now`) gives, by project,
    the limit of a project that is no account of the admin API, or of a
    resource its account does not limit; it is called once, with the
    report's projects."""
    if by not in BY:
        raise ValueError('--by must be one of %s (got %r)'
                         % (', '.join(BY), by))
    if not end > start:
        raise ValueError('the end (%s) must be after the start (%s)'
                         % (end, start))
    pieces = periods(start, end, by)
    if len(pieces) > MAX_PIECES:
        raise TooManyRows(
            'a report by %s may have at most %d rows; this period has '
            'more: choose a longer group or a shorter period'
            % (by, MAX_PIECES))
    rows = {}
    # No counted lease is longer than the longest: the window query
    # bounds start_date on both sides (its index) instead of scanning every
    # lease that ends after the period's start.
    longest = store.longest_duration(connection)
    for label, piece_start, piece_end in pieces:
        for key, values in _usage(connection, dialect, piece_start,
                                  piece_end, by, projects, user_id,
                                  longest):
            group = label if by in BY_TIME else (
                'total' if by == 'total' else key)
            found = rows.setdefault(group, _empty())
            for column, value in values.items():
                if column in ('denied_by', 'pools_net'):
                    for name, count in value.items():
                        found[column][name] = \
                            found[column].get(name, 0) + count
                elif column.startswith('peak_'):
                    found[column] = value
                else:
                    found[column] += value
        if by in BY_TIME:
            rows.setdefault(label, _empty())
    if by == 'project':
        for project_id in projects or ():
            # Each project asked for has its row, if only of zeros.
            rows.setdefault(project_id, _empty())
        now = limits_now(sorted(rows)) if limits_now and rows else {}
        for group, values in rows.items():
            _add_limits(connection, group, values, now.get(group))
    return [Row(group, _rounded(values))
            for group, values in sorted(rows.items(),
                                        key=lambda item: str(item[0]))]


def _empty():
    values = dict.fromkeys(COLUMNS[1:], 0)
    values['denied_by'] = {}
    values['pools_net'] = {}
    for name in PEAKS:
        values['peak_%s_at' % name] = None
    for name in LIMITS:
        values['limit_' + name] = values['limit_%s_as_of' % name] = \
            values['peak_%s_share' % name] = None
    return values


def _add_limits(connection, project_id, values, source_limits):
    """The limits of ``project_id`` at its peaks (:func:`limit_in_force`)
    and the peaks' shares of them."""
    account_limits = limits_of_account(connection, project_id)
    for name, resource in LIMITS.items():
        found = limit_in_force(connection, project_id, resource,
                               values['peak_%s_at' % name], account_limits,
                               source_limits)
        if found is None:
            continue
        value, from_history = found
        values['limit_' + name] = value
        values['limit_%s_as_of' % name] = 'peak' if from_history else 'now'
        if value:
            values['peak_%s_share' % name] = round(
                values['peak_' + name] / value, 4)


def limits_of_account(connection, project_id):
    """The limits now ({resource: value}) of the account ``project_id``,
    None when it is no account of the admin API."""
    t = models.accounts
    return connection.execute(sa.select(t.c.limits).where(
        t.c.account_id == project_id)).scalar()


def limit_in_force(connection, project_id, resource, moment,
                   account_limits, source_limits):
    """``(limit, from_history)`` of ``project_id`` at ``moment``, or None
    (no limit): an account's from its history, else its limit now
    (``account_limits``, :func:`limits_of_account`), else the one of now
    in ``source_limits`` ({resource: limit}, the limits source's)."""
    found = None
    if account_limits is not None:
        found = limit_history.in_force(connection, project_id, resource,
                                       moment, account_limits)
    if found is None and (source_limits or {}).get(resource) is not None:
        found = source_limits[resource], False
    return found


def _rounded(values):
    out = {}
    for column, value in values.items():
        if column == 'denied_by':
            # 'CreditFilter: 2; LeaseCountFilter: 1' (denials recorded
            # before the ledger kept the filter: 'unknown').
            out[column] = '; '.join('%s: %d' % item
                                    for item in sorted(value.items()))
        elif column == 'pools_net':
            # 'CUSTOM_GPU: 4.0; VCPU: 80.0' (resource-hours).
            out[column] = '; '.join(
                '%s: %s' % (rc, round(net / 1000000.0, 6))
                for rc, net in sorted(value.items()))
        elif column.startswith('peak_') and column.endswith('_at'):
            out[column] = value.isoformat() if value is not None else None
        elif column.startswith('limit_') or column.endswith('_share'):
            out[column] = value
        elif column.endswith('_hours') or column.startswith('peak_'):
            out[column] = round(value, 4)
        elif column.startswith('credits_'):
            out[column] = round(value / 1000000.0, 6)
        else:
            out[column] = int(value)
    return out


def _filter(query, table, projects, user_id):
    if projects is not None:
        query = query.where(table.c.project_id.in_(sorted(projects)))
    if user_id is not None:
        query = query.where(table.c.user_id == user_id)
    return query


def _grouped(query, key, by):
    """``query`` grouped by ``key`` (not for one literal group: no
    database groups by a constant)."""
    return query.group_by(key) if by in BY_KEY else query


def _group_column(table, by):
    if by == 'project':
        return table.c.project_id
    if by == 'user':
        return sa.func.coalesce(table.c.user_id, '-')
    if by == 'resource-type':
        return sa.func.coalesce(table.c.resource_type, '-')
    return sa.literal('total')


def _usage(connection, dialect, start, end, by, projects, user_id,
           longest):
    """``[(group key, {column: value})]`` of one piece of the period."""
    t = models.leases
    key = _group_column(t, by)
    inside = _seconds(dialect, _least(dialect, t.c.effective_end, end),
                      _greatest(dialect, t.c.start_date, start)) / 3600.0
    hours = [sa.func.sum(inside * _amount(t.c.amounts, resource))
             .label(column) for column, resource in HOURS.items()]
    query = _filter(sa.select(key.label('key'), *hours).where(
        t.c.state.notin_(models.NOT_COUNTED), t.c.start_date < end,
        t.c.effective_end > start), t, projects, user_id)
    earliest = store.earliest_start(start, longest)
    if earliest is not None:
        query = query.where(t.c.start_date >= earliest)
    query = _grouped(query, key, by)
    found = {}
    for row in connection.execute(query):
        found[row.key] = {column: float(getattr(row, column) or 0)
                          for column in HOURS}
    for name, resource in PEAKS.items():
        _add_peak(connection, dialect, by, start, end, projects, user_id,
                  earliest, name, resource, found)
    _add_counts(connection, t, by, start, end, projects, user_id, found)
    _add_credits(connection, dialect, by, start, end, projects, user_id,
                 found)
    return sorted(found.items(), key=lambda item: str(item[0]))


def _add_peak(connection, dialect, by, start, end, projects, user_id,
              earliest, name, resource, found):
    """``peak_<name>`` and ``peak_<name>_at`` of each group: every lease
    is two events, +amount at its (clipped) start and -amount at its
    (clipped) end; the running sum over them in time order (ends before
    starts at one moment: touching leases do not overlap), a window
    function of the database, peaks at the answer."""
    t = models.leases
    key = _group_column(t, by)
    amount = _amount(t.c.amounts, resource)

    def events(at, sign):
        query = _filter(sa.select(key.label('key'), at.label('at'),
                                  (amount * sign).label('d')).where(
            t.c.state.notin_(models.NOT_COUNTED), t.c.start_date < end,
            t.c.effective_end > start, amount > 0), t, projects, user_id)
        if earliest is not None:
            query = query.where(t.c.start_date >= earliest)
        return query

    both = sa.union_all(
        events(_greatest(dialect, t.c.start_date, start), 1),
        events(_least(dialect, t.c.effective_end, end), -1)).subquery()
    partition = {'partition_by': both.c.key} if by in BY_KEY else {}
    levels = sa.select(
        both.c.key, both.c.at, sa.func.sum(both.c.d).over(
            order_by=(both.c.at, both.c.d), **partition).label('level')
    ).cte('levels')
    if by in BY_KEY:
        tops = sa.select(levels.c.key.label('key'),
                         sa.func.max(levels.c.level).label('peak')
                         ).group_by(levels.c.key).cte('tops')
        first = sa.select(tops.c.key, tops.c.peak,
                          sa.func.min(levels.c.at).label('at')).select_from(
            tops.join(levels, sa.and_(levels.c.key == tops.c.key,
                                      levels.c.level == tops.c.peak))
        ).group_by(tops.c.key, tops.c.peak)
    else:
        # One group: no key to group or join by.
        tops = sa.select(sa.func.max(levels.c.level).label('peak')
                         ).cte('tops')
        first = sa.select(sa.literal('total').label('key'), tops.c.peak,
                          sa.func.min(levels.c.at).label('at')).select_from(
            tops.join(levels, levels.c.level == tops.c.peak)
        ).group_by(tops.c.peak)
    for row in connection.execute(first):
        if row.peak is None or row.peak <= 0:
            continue
        values = found.setdefault(row.key, dict.fromkeys(HOURS, 0.0))
        values['peak_' + name] = float(row.peak)
        values['peak_%s_at' % name] = _as_datetime(row.at)


def _as_datetime(value):
    """SQLite gives a computed date back as text."""
    if isinstance(value, str):
        return datetime.datetime.fromisoformat(value)
    return value


def _add_counts(connection, t, by, start, end, projects, user_id, found):
    key = _group_column(t, by)
    denied = sa.case((t.c.state == models.DENIED, 1), else_=0)
    counted = sa.case((t.c.state.notin_(models.NOT_COUNTED), 1), else_=0)
    query = _filter(sa.select(
        key.label('key'), sa.func.sum(counted).label('created'),
        sa.func.sum(denied).label('denied')).where(
            t.c.created_at >= start, t.c.created_at < end),
        t, projects, user_id)
    for row in connection.execute(_grouped(query, key, by)):
        values = found.setdefault(row.key, dict.fromkeys(HOURS, 0.0))
        values['leases_created'] = int(row.created or 0)
        values['leases_denied'] = int(row.denied or 0)
    named = sa.func.coalesce(t.c.denied_by, 'unknown')
    by_filter = _filter(sa.select(
        key.label('key'), named.label('name'), sa.func.count().label('n'))
        .where(t.c.created_at >= start, t.c.created_at < end,
               t.c.state == models.DENIED), t, projects, user_id)
    group = (key, named) if by in BY_KEY else (named,)
    for row in connection.execute(by_filter.group_by(*group)):
        values = found.setdefault(row.key, dict.fromkeys(HOURS, 0.0))
        values.setdefault('denied_by', {})[row.name] = int(row.n)
    early = _filter(sa.select(key.label('key'), sa.func.count().label('n'))
                    .where(t.c.ended_at >= start, t.c.ended_at < end,
                           t.c.effective_end < t.c.end_date,
                           t.c.state == models.TERMINATED),
                    t, projects, user_id)
    for row in connection.execute(_grouped(early, key, by)):
        values = found.setdefault(row.key, dict.fromkeys(HOURS, 0.0))
        values['leases_ended_early'] = int(row.n or 0)


def _add_credits(connection, dialect, by, start, end, projects, user_id,
                 found):
    """The credits charged and refunded (the general allocations'
    charges), and the net resource-hours charged to each credit pool
    (``pools_net``: {class: micro-units})."""
    c, t, a = models.charges, models.leases, models.credit_allocations
    joined = by in ('user', 'resource-type')
    key = _group_column(t, by) if joined else (
        c.c.project_id if by == 'project' else sa.literal('total'))
    charged = sa.case((c.c.amount > 0, c.c.amount), else_=0)
    refunded = sa.case((c.c.amount < 0, -c.c.amount), else_=0)
    source = c.outerjoin(a, c.c.allocation_id == a.c.id)
    if joined or user_id is not None:
        source = source.join(t, c.c.lease_row == t.c.id)

    def charges(*columns):
        query = sa.select(key.label('key'), *columns).select_from(
            source).where(c.c.at >= start, c.c.at < end)
        if user_id is not None:
            query = query.where(t.c.user_id == user_id)
        if projects is not None:
            query = query.where(c.c.project_id.in_(sorted(projects)))
        return query

    pools = charges(a.c.resource_class.label('rc'),
                    sa.func.sum(c.c.amount).label('net')).where(
        a.c.resource_class.isnot(None)).group_by(a.c.resource_class)
    for row in connection.execute(_grouped(pools, key, by)):
        values = found.setdefault(row.key, dict.fromkeys(HOURS, 0.0))
        values.setdefault('pools_net', {})[row.rc] = int(row.net or 0)
    query = charges(sa.func.sum(charged).label('charged'),
                    sa.func.sum(refunded).label('refunded')).where(
        a.c.resource_class.is_(None))
    for row in connection.execute(_grouped(query, key, by)):
        values = found.setdefault(row.key, dict.fromkeys(HOURS, 0.0))
        values['credits_charged'] = float(row.charged or 0)
        values['credits_refunded'] = float(row.refunded or 0)
        values['credits_net'] = float((row.charged or 0) -
                                      (row.refunded or 0))
