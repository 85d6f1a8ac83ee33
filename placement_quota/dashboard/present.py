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
"""What the panel shows, made from the API's answers: plain functions of
the JSON documents, without requests, so that the pages render the
numbers the API gave and nothing else.

Numbers are shown as the API gives them: an integer as an integer, a
credit amount with two decimals. Dates are shown in UTC as
``YYYY-MM-DD HH:MM UTC``.
"""

import datetime

from django.utils.translation import gettext_lazy as _

#: Names of the resources of the limits, as the user reads them.
RESOURCE_LABELS = {
    'leases': _('Leases'),
    'hosts': _('Hosts'),
    'instances': _('Instances'),
    'lease_length': _('Lease length'),
    'floatingips': _('Floating IPs'),
    'networks': _('Networks'),
}

#: Who a limit applies to, by its ``scope``.
SCOPE_TITLES = {
    'project': _('This project'),
    'user': _('You, in this project'),
    'tree': _('The project tree (its root\'s limit, over every project '
              'of the tree)'),
    'lease': _('Each lease'),
    'reservation': _('Each reservation'),
}
#: The order of the sections of the limit summary.
SCOPES = ('project', 'user', 'tree', 'lease', 'reservation')

DATE_FORMAT = '%Y-%m-%d %H:%M UTC'
CREDITS_FORMAT = '%.2f'

# The usage chart's drawing area, in SVG units.
CHART_WIDTH = 640
CHART_HEIGHT = 160
CHART_LEFT = 48
CHART_BOTTOM = 24
CHART_TOP = 8


def number(value):
    """An amount as shown: ``3``, ``2.5``; ``-`` for none."""
    if value is None:
        return '-'
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def credits(value):
    """Credits as shown: two decimals (``80.00``); ``-`` for none."""
    if value is None:
        return '-'
    return CREDITS_FORMAT % value


def parse_date(text):
    """A date of the API (``2026-11-27T17:00:00Z``) as an aware
    datetime; None for None or a date it cannot read."""
    if not text:
        return None
    try:
        value = datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))
    except (TypeError, ValueError):
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value.astimezone(datetime.timezone.utc)


def date(text, default='-'):
    """A date of the API as shown (``2026-11-27 17:00 UTC``)."""
    value = parse_date(text)
    if value is None:
        return text or default
    return value.strftime(DATE_FORMAT)


def is_ahead(window_start, at):
    """Whether a window starting at ``window_start`` lies ahead of
    ``at`` (the moment of the answer) rather than behind it."""
    start, now = parse_date(window_start), parse_date(at)
    return start is None or now is None or start >= now


def resource_label(resource):
    """``hosts`` -> Hosts; ``class:VCPU`` -> VCPU (resource class)."""
    if resource in RESOURCE_LABELS:
        return RESOURCE_LABELS[resource]
    if resource.startswith('class:'):
        return resource[len('class:'):]
    return resource.replace('_', ' ').capitalize()


def duration(seconds):
    """``86400`` -> ``1 day``; ``5400`` -> ``1 hour 30 minutes``."""
    seconds = int(seconds)
    parts = []
    for size, one, many in ((86400, _('day'), _('days')),
                            (3600, _('hour'), _('hours')),
                            (60, _('minute'), _('minutes')),
                            (1, _('second'), _('seconds'))):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append('%d %s' % (count, one if count == 1 else many))
    return ' '.join(parts) or '0 %s' % _('seconds')


def limit_rows(limits):
    """The rows of the limits table: every limit the API gave, with its
    numbers as shown."""
    rows = []
    for entry in limits:
        peak = entry.get('peak') or None
        unit = entry.get('unit') or ''
        limit = entry.get('limit')
        limit_shown = number(limit)
        if unit == 'seconds' and isinstance(limit, (int, float)):
            limit_shown = '%s (%s)' % (limit_shown, duration(limit))
        rows.append({
            'resource': entry.get('resource'),
            'label': resource_label(entry.get('resource') or ''),
            'scope': entry.get('scope'),
            'applies_to': SCOPE_TITLES.get(entry.get('scope'),
                                           entry.get('scope')),
            'filter': entry.get('filter'),
            'unit': unit,
            'limit': limit_shown,
            'in_use': number(entry.get('in_use')),
            'peak': number(peak.get('amount')) if peak else '-',
            'peak_at': date(peak.get('at')) if peak else '',
            'peak_until': date(peak.get('until')) if peak else '',
        })
    return rows


def limit_charts(limits):
    """The limit summary's sections (Horizon's ``_limit_summary.html``):
    one per scope, one pie chart per limit that has an amount in use
    (a per-lease limit has none: it is in the table only)."""
    sections = []
    for scope in SCOPES:
        charts = []
        for entry in limits:
            used, quota = entry.get('in_use'), entry.get('limit')
            if entry.get('scope') != scope or not isinstance(
                    used, (int, float)) or not isinstance(
                    quota, (int, float)):
                continue
            charts.append({
                'name': resource_label(entry.get('resource') or ''),
                'used': used,
                'quota': quota,
                'text': _('Used'),
                'used_display': number(used),
                'quota_display': number(quota),
                'filter': entry.get('filter'),
            })
        if charts:
            sections.append({'title': SCOPE_TITLES[scope],
                             'charts': charts})
    return sections


def credit_summary(document):
    """The credits section, or None when no CreditFilter runs."""
    if not document:
        return None
    allocation = document.get('allocation') or {}
    user = document.get('user') or None
    summary = {
        'allocation_id': allocation.get('id'),
        'amount': credits(allocation.get('amount')),
        'start': date(allocation.get('start_date'), _('open')),
        'end': date(allocation.get('end_date'), _('open')),
        'spent': credits(document.get('spent')),
        'balance': credits(document.get('balance')),
        'has_allocation': bool(allocation),
        'user': None,
        # Credit pools per resource class, in hours of their class.
        'pools': [{'resource_class': pool.get('resource_class'),
                   'amount': credits((pool.get('allocation') or {}).get(
                       'amount')),
                   'spent': credits(pool.get('spent')),
                   'balance': credits(pool.get('balance'))}
                  for pool in document.get('pools') or []],
    }
    if user:
        summary['user'] = {
            'share': credits(user.get('share')),
            'has_share': user.get('share') is not None,
            'spent': credits(user.get('spent')),
            'left': credits(user.get('left')),
        }
    return summary


def lease_rows(leases, user_id=None):
    """The leases table's rows, newest start first."""
    rows = []
    for lease in leases:
        charged, refunded = lease.get('charged'), lease.get('refunded')
        net = None
        if isinstance(charged, (int, float)):
            net = charged - (refunded or 0)
        rows.append({
            'id': lease.get('lease_id'),
            'name': lease.get('name') or lease.get('lease_id'),
            'user_id': lease.get('user_id'),
            'mine': user_id is not None and lease.get('user_id') == user_id,
            'state': lease.get('state') or '-',
            'start': date(lease.get('start_date')),
            'end': date(lease.get('end_date')),
            'effective_end': date(lease.get('effective_end')),
            'ended_early': (lease.get('effective_end') or None) not in (
                None, lease.get('end_date')),
            'charged': credits(charged),
            'refunded': credits(refunded),
            'net': credits(net),
            '_sort': lease.get('start_date') or '',
        })
    rows.sort(key=lambda row: row['_sort'], reverse=True)
    return rows


def _points(start, end, points):
    """``[(datetime, amount)]`` of the window, in time order: the amount
    before the first point is 0, and each amount holds until the next
    point."""
    steps = []
    for point in points:
        at = parse_date(point.get('at'))
        amount = point.get('amount')
        if at is None or not isinstance(amount, (int, float)):
            continue
        steps.append((at, amount))
    steps.sort(key=lambda step: step[0])
    # Clamp to the window: the amount at the start is the last one
    # before it.
    before = [s for s in steps if s[0] <= start]
    inside = [s for s in steps if start < s[0] < end]
    first = before[-1][1] if before else 0
    return [(start, first)] + inside


def usage_charts(document, now=None):
    """One step chart per resource of GET .../usage, as SVG geometry:
    ``path`` (the line), ``area`` (under it), the axis labels, and the
    highest amount with its moment."""
    start = parse_date(document.get('start'))
    end = parse_date(document.get('end'))
    if start is None or end is None or end <= start:
        return []
    span = (end - start).total_seconds()
    width = CHART_WIDTH - CHART_LEFT
    height = CHART_HEIGHT - CHART_BOTTOM - CHART_TOP
    charts = []
    for resource, points in sorted((document.get('resources') or {}).items()):
        steps = _points(start, end, points or [])
        highest = max(amount for _at, amount in steps)
        scale_max = highest if highest > 0 else 1

        def x(at):
            return CHART_LEFT + round(
                (at - start).total_seconds() / span * width, 1)

        def y(amount):
            return CHART_TOP + round(height - amount / scale_max * height, 1)

        commands = ['M%s,%s' % (x(start), y(steps[0][1]))]
        for at, amount in steps[1:]:
            commands.append('H%s' % x(at))
            commands.append('V%s' % y(amount))
        commands.append('H%s' % x(end))
        path = ' '.join(commands)
        area = '%s V%s H%s Z' % (path, y(0), x(start))
        peak_at = next(at for at, amount in steps if amount == highest)
        current = None
        if now is not None and start <= now <= end:
            current = [amount for at, amount in steps if at <= now][-1]
        charts.append({
            'resource': resource,
            'label': resource_label(resource),
            'path': path,
            'area': area,
            'highest': number(highest),
            'highest_at': peak_at.strftime(DATE_FORMAT),
            'current': number(current),
            'y_max': number(scale_max),
            'y_max_pos': y(scale_max),
            'y_zero_pos': y(0),
            'x_start': x(start),
            'label_x': CHART_LEFT - 6,
            'x_end': x(end),
            'start_label': start.strftime('%Y-%m-%d'),
            'end_label': end.strftime('%Y-%m-%d'),
            'points': [{'at': at.strftime(DATE_FORMAT),
                        'amount': number(amount)} for at, amount in steps],
            'width': CHART_WIDTH,
            'height': CHART_HEIGHT,
            'axis_y': CHART_HEIGHT - CHART_BOTTOM,
            'label_y': CHART_HEIGHT - 6,
        })
    return charts


def quote_result(document):
    """The quote as shown: allowed or denied (by which filter, why), every
    filter's answer, and the cost in credits."""
    filters = []
    for entry in document.get('filters') or []:
        allowed = entry.get('allowed')
        filters.append({
            'name': entry.get('name'),
            'answer': (_('Allowed') if allowed is True else
                       _('Denied') if allowed is False else _('Not asked')),
            'allowed': allowed,
            'message': entry.get('message') or '',
        })
    cost = document.get('credits') or None
    lease = document.get('lease') or {}
    return {
        'allowed': bool(document.get('allowed')),
        'denied_by': document.get('denied_by'),
        'message': document.get('message') or '',
        'filters': filters,
        'lease_name': lease.get('name'),
        'start': date(lease.get('start_date')),
        'end': date(lease.get('end_date')),
        'credits': None if cost is None else {
            'cost': credits(cost.get('cost')),
            'hourly_rate': credits(cost.get('hourly_rate')),
            'hours': number(cost.get('hours')),
            'balance': credits(cost.get('balance')),
            'balance_after': credits(cost.get('balance_after')),
            'allocation_id': cost.get('allocation_id'),
        },
    }
