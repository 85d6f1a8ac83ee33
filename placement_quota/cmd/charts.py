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
"""Charts of a usage report over time (``placement-quota report --chart``).

From the rows of a report grouped by day, week or month
(:mod:`placement_quota.ledger.report`): the average reserved amount of
each piece (its resource-hours over its hours: hosts, instances, VCPU),
against the account's limit in force at each piece's start (the history
of its limits; before the history starts, its limit now, and the legend
says so), and the credits spent, cumulated over the period.
:func:`series` is what is drawn, also written as CSV by
``--chart-data``.

matplotlib (the Agg backend, no display) is an extra:
``pip install 'placement-quota[charts]'``.
"""

import csv

from placement_quota.ledger import report

#: A name of the report's limits (:data:`placement_quota.ledger.report.
#: LIMITS`, whose resource the limit is) -> (the report column of its
#: hours, label): drawn as the series ``average_<name>`` and
#: ``limit_<name>``.
AVERAGES = {
    'hosts': ('host_hours', 'hosts'),
    'instances': ('instance_hours', 'instances'),
    'vcpus': ('vcpu_hours', 'VCPU'),
}
SERIES = (('group', 'start') + tuple('average_' + name for name in AVERAGES)
          + tuple('limit_' + name for name in AVERAGES) +
          ('credits_spent_cumulative',))
#: Inches (at 100 dpi: 1000 x 700 pixels).
SIZE = (10, 7)
DPI = 100


class ChartError(Exception):
    """A chart cannot be made (matplotlib missing, rows not by time)."""


def series(rows, start, end, by, limit_of=None):
    """``[{series: value}]`` of a report by ``day``, ``week`` or
    ``month``: each piece's average reserved amounts, the limits at its
    start (``limit_of(resource, moment)`` -> ``(value, as_of)`` or None)
    and the credits spent so far."""
    if by not in report.BY_TIME:
        raise ChartError('a chart needs --by day, week or month (got %s)'
                         % by)
    pieces = {label: (piece_start, piece_end) for label, piece_start,
              piece_end in report.periods(start, end, by)}
    spent = 0.0
    found = []
    for row in rows:
        piece_start, piece_end = pieces[row.group]
        hours = (piece_end - piece_start).total_seconds() / 3600.0
        spent += row.values['credits_net']
        point = {'group': row.group, 'start': piece_start.isoformat()}
        for name, (column, _) in AVERAGES.items():
            point['average_' + name] = round(row.values[column] / hours, 4)
            found_limit = limit_of and limit_of(report.LIMITS[name],
                                                piece_start)
            point['limit_' + name] = found_limit[0] if found_limit else None
            point.setdefault('_as_of', set())
            if found_limit:
                point['_as_of'].add(found_limit[1])
        point['credits_spent_cumulative'] = round(spent, 6)
        found.append(point)
    return found


def write_data(path, points):
    """``points`` (:func:`series`) as CSV with a header."""
    with open(path, 'w', newline='') as out:
        writer = csv.DictWriter(out, fieldnames=SERIES,
                                extrasaction='ignore')
        writer.writeheader()
        writer.writerows(points)


def write_chart(path, points, title):
    """A PNG or SVG (by ``path``'s suffix) of ``points``, their limits
    as dashed step lines."""
    try:
        import matplotlib
        matplotlib.use('Agg')
        from matplotlib import pyplot
    except ImportError:
        raise ChartError('--chart needs matplotlib: pip install '
                         '"placement-quota[charts]"')
    if not path.lower().endswith(('.png', '.svg')):
        raise ChartError('--chart must name a .png or .svg file (got %s)'
                         % path)
    figure, (reserved, credits) = pyplot.subplots(
        2, 1, figsize=SIZE, sharex=True)
    try:
        labels = [point['group'] for point in points]
        as_of = set().union(*(p.get('_as_of', set()) for p in points)) \
            if points else set()
        suffix = ' (now, before its history)' if 'now' in as_of else ''
        for name, (_, label) in AVERAGES.items():
            values = [point['average_' + name] for point in points]
            limit = [point['limit_' + name] for point in points]
            if not any(values) and not any(v is not None for v in limit):
                continue
            line, = reserved.plot(labels, values, marker='o', label=label)
            if any(v is not None for v in limit):
                reserved.step(labels, [v if v is not None else float('nan')
                                       for v in limit], where='post',
                              linestyle='--', color=line.get_color(),
                              label='%s limit%s' % (label, suffix))
        reserved.set_ylabel('reserved (average)')
        reserved.set_title(title)
        reserved.legend(loc='upper left')
        credits.plot(labels, [p['credits_spent_cumulative']
                              for p in points], marker='o', color='black')
        credits.set_ylabel('credits spent (cumulative)')
        credits.tick_params(axis='x', labelrotation=45)
        figure.tight_layout()
        figure.savefig(path, dpi=DPI)
    finally:
        pyplot.close(figure)
