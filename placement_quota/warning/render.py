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
"""The words of a warning: a subject, a plain-text and an HTML part.

Each kind has three templates, ``<kind>.subject``, ``<kind>.txt`` and
``<kind>.html``, in Python's :class:`string.Template` syntax (``$name``,
``${name}``, ``$$`` for a dollar). The built-in ones are in the
``templates`` directory next to this module; ``[warnings] template_dir``
replaces any of them, file by file. The values are computed here, ready
to read (dates as ``2026-11-29 14:00 UTC``, credits with two decimals,
percentages, sentences saying what the user can do); :data:`PLACEHOLDERS`
lists each kind's. The HTML part gets every value HTML-escaped.

Templates are read and checked when the :class:`Renderer` is made: an
unreadable file, a ``$`` not followed by a name, or a name the kind does
not have raises ValueError naming the file and the placeholder, so a
mistake in an operator's template stops the service at start, not a
warning at send time.
"""

import dataclasses
import datetime
import html
import os
import re
import string
import textwrap

from oslo_log import log as logging

from placement_quota.warning import model

LOG = logging.getLogger(__name__)

#: The built-in templates.
TEMPLATE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            'templates')
#: The template files of a kind: ``<kind>.<part>``.
PARTS = ('subject', 'txt', 'html')

#: Every kind's placeholders.
COMMON = ('kind', 'key', 'project_id', 'user_id')
_LEASE = ('lease_name', 'lease_id', 'start_date', 'end_date')
PLACEHOLDERS = {
    model.LEASE_END: COMMON + _LEASE + (
        'lead', 'latest_end_date', 'bound_by', 'extension_message',
        'extension'),
    model.BEFORE_END: COMMON + _LEASE + ('extension',),
    model.CREDITS: COMMON + (
        'allocation_id', 'resource_class', 'unit', 'threshold', 'used',
        'amount', 'spent', 'left', 'not_started', 'not_started_note',
        'allocation_end', 'advice'),
    model.USER_CREDITS: COMMON + (
        'share', 'spent', 'left', 'threshold', 'used', 'advice'),
    model.ALLOCATION_END: COMMON + (
        'allocation_id', 'resource_class', 'unit', 'end_date', 'lead',
        'amount', 'left', 'advice'),
    model.IDLE: COMMON + _LEASE + (
        'idle_since', 'hosts', 'credits_at_stake', 'ends_at', 'end_note'),
    model.IDLE_ENDED: COMMON + _LEASE + (
        'idle_since', 'hosts', 'ended_at', 'refunded'),
}


@dataclasses.dataclass(frozen=True)
class Rendered:
    """A warning's words: a one-line ``subject``, ``text`` and ``html``."""

    subject: str
    text: str
    html: str


# --- values ----------------------------------------------------------------

def date(value):
    """``2026-11-29 14:00 UTC`` of an ISO 8601 UTC date (a fact) or a
    naive UTC datetime; empty for None; the text itself if it is not a
    date."""
    if value is None or value == '':
        return ''
    if not isinstance(value, datetime.datetime):
        try:
            value = model.parse_iso(str(value))
        except ValueError:
            return str(value)
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return value.strftime('%Y-%m-%d %H:%M UTC')


def _blazar_date(value):
    """The ``--end-date`` argument of ``openstack reservation lease
    update`` for an ISO 8601 UTC date."""
    try:
        return model.parse_iso(str(value)).strftime('%Y-%m-%d %H:%M')
    except ValueError:
        return str(value)


def number(value):
    """Credits (or resource-hours) with two decimals: ``1,234.50``."""
    if value is None or value == '':
        return ''
    try:
        return '{:,.2f}'.format(float(value))
    except (TypeError, ValueError):
        return str(value)


def percent(value):
    """``90%``, ``91.5%`` (one decimal at most)."""
    if value is None or value == '':
        return ''
    try:
        text = '%.1f' % float(value)
    except (TypeError, ValueError):
        return str(value)
    return (text[:-2] if text.endswith('.0') else text) + '%'


def duration(seconds):
    """``48 hours``, ``1 hour``, ``7 days``, ``30 minutes``: days from
    three days on, else hours, minutes or seconds, whichever is whole."""
    if seconds is None or seconds == '':
        return ''
    try:
        seconds = int(seconds)
    except (TypeError, ValueError):
        return str(seconds)
    for size, name in ((86400, 'day'), (3600, 'hour'), (60, 'minute')):
        if seconds % size == 0 and seconds >= (
                3 * size if size == 86400 else size):
            count = seconds // size
            break
    else:
        count, name = seconds, 'second'
    return '%d %s%s' % (count, name, '' if count == 1 else 's')


def _unit(resource_class):
    """What an allocation counts: credits, or hours of a resource class
    (a credit pool)."""
    return '%s-hours' % resource_class if resource_class else 'credits'


def _spent(used):
    try:
        return float(used) >= 100 - 1e-9
    except (TypeError, ValueError):
        return False


def _hosts(value):
    if isinstance(value, (list, tuple)):
        return ', '.join(str(v) for v in value)
    return '' if value is None else str(value)


def _common(notice):
    return {'kind': notice.kind, 'key': notice.key,
            'project_id': notice.project_id or '',
            'user_id': notice.user_id or ''}


def _lease(notice, facts):
    return {'lease_name': notice.lease_name or notice.lease_id or '',
            'lease_id': notice.lease_id or '',
            'start_date': date(facts.get('start_date')),
            'end_date': date(facts.get('end_date'))}


def _how_far(lease_id):
    return ('If you need it longer, see how far it can be extended:\n'
            '  openstack reservation lease extension %s\n'
            'and extend it before it ends:\n'
            '  openstack reservation lease update --end-date '
            '"YYYY-MM-DD HH:MM" %s' % (lease_id, lease_id))


def _extension(notice, facts):
    """What the user can do about a lease's end: extend it up to the
    extension query's answer when the facts have it."""
    lease_id = notice.lease_id or notice.lease_name or '<lease>'
    latest, end = facts.get('latest_end_date'), facts.get('end_date')
    if not latest:
        return _how_far(lease_id)
    bound_by, message = facts.get('bound_by'), facts.get(
        'extension_message')
    why = ''
    if bound_by:
        why = ' (%s%s)' % (bound_by, ': %s' % message if message else '')
    try:
        extensible = model.parse_iso(latest) > model.parse_iso(end)
    except (TypeError, ValueError):
        extensible = latest != end
    if not extensible:
        return ('It cannot be extended now%s. To keep working after its '
                'end, save your work and create a new lease.' % why)
    refusal = ('; a later end is refused%s' % why) if bound_by else ''
    return ('You can extend it now up to %s%s:\n'
            '  openstack reservation lease update --end-date "%s" %s'
            % (date(latest), refusal, _blazar_date(latest), lease_id))


def _lease_end(notice, facts):
    return dict(
        _lease(notice, facts), lead=duration(facts.get('lead_s')),
        latest_end_date=date(facts.get('latest_end_date')),
        bound_by=facts.get('bound_by') or '',
        extension_message=facts.get('extension_message') or '',
        extension=_extension(notice, facts))


def _before_end(notice, facts):
    return dict(_lease(notice, facts),
                extension=_how_far(notice.lease_id or notice.lease_name or
                                   '<lease>'))


def _credits(notice, facts):
    unit = _unit(facts.get('resource_class'))
    not_started = facts.get('not_started')
    note = ''
    if not_started:
        note = ('Of what is spent, %s %s are charged for leases that have '
                'not started yet: deleting one you do not need refunds '
                'it.' % (number(not_started), unit))
    if _spent(facts.get('used_pct')):
        advice = ('Its %s are spent: new leases charged to it are refused. '
                  'Ask the cloud\'s operators for more %s, or end leases '
                  'you no longer need (what they have not used yet is '
                  'refunded).' % (unit, unit))
    else:
        advice = ('When they are spent, new leases charged to it are '
                  'refused. To make them last, end leases you no longer '
                  'need (what they have not used yet is refunded), or ask '
                  'the cloud\'s operators for more %s.' % unit)
    return {'allocation_id': str(facts.get('allocation_id') or ''),
            'resource_class': facts.get('resource_class') or '',
            'unit': unit, 'threshold': percent(facts.get('threshold_pct')),
            'used': percent(facts.get('used_pct')),
            'amount': number(facts.get('amount')),
            'spent': number(facts.get('spent')),
            'left': number(facts.get('left')),
            'not_started': number(not_started or 0),
            'not_started_note': note,
            'allocation_end': (date(facts.get('allocation_end')) or
                               'no end date'),
            'advice': advice}


def _user_credits(notice, facts):
    if _spent(facts.get('used_pct')):
        advice = ('Your share is spent: the leases you create in this '
                  'project are refused until it grows. Ask your '
                  'project\'s managers for a larger share.')
    else:
        advice = ('When your share is spent, the leases you create in '
                  'this project are refused. Ask your project\'s managers '
                  'for a larger share if you need more.')
    return {'share': number(facts.get('share')),
            'spent': number(facts.get('spent')),
            'left': number(facts.get('left')),
            'threshold': percent(facts.get('threshold_pct')),
            'used': percent(facts.get('used_pct')),
            'advice': advice}


def _allocation_end(notice, facts):
    unit = _unit(facts.get('resource_class'))
    return {'allocation_id': str(facts.get('allocation_id') or ''),
            'resource_class': facts.get('resource_class') or '',
            'unit': unit, 'end_date': date(facts.get('end_date')),
            'lead': duration(facts.get('lead_s')),
            'amount': number(facts.get('amount')),
            'left': number(facts.get('left')),
            'advice': ('No other allocation of the project takes over '
                       'after it: reservations after that date are '
                       'refused, and what is left on it cannot be used '
                       'then. Ask the cloud\'s operators for a new '
                       'allocation if you need to reserve later.')}


def _idle(notice, facts):
    ends_at = date(facts.get('ends_at'))
    note = ''
    if ends_at:
        note = ('If nothing runs on its hosts by %s, the lease will be '
                'ended then and its unused part refunded.' % ends_at)
    return dict(_lease(notice, facts),
                idle_since=date(facts.get('idle_since')),
                hosts=_hosts(facts.get('hosts')),
                credits_at_stake=number(facts.get('credits_at_stake')),
                ends_at=ends_at, end_note=note)


def _idle_ended(notice, facts):
    return dict(_lease(notice, facts),
                idle_since=date(facts.get('idle_since')),
                hosts=_hosts(facts.get('hosts')),
                ended_at=date(facts.get('ended_at')),
                refunded=number(facts.get('refunded')))


_VALUES = {model.LEASE_END: _lease_end, model.BEFORE_END: _before_end,
           model.CREDITS: _credits, model.USER_CREDITS: _user_credits,
           model.ALLOCATION_END: _allocation_end, model.IDLE: _idle,
           model.IDLE_ENDED: _idle_ended}


def values(notice):
    """``{placeholder: text}`` of ``notice`` (every placeholder of its
    kind, empty when its fact is missing)."""
    if notice.kind not in _VALUES:
        raise ValueError('Unknown kind of warning %r (known: %s)'
                         % (notice.kind, ', '.join(model.KINDS)))
    facts = notice.facts or {}
    found = dict(_common(notice), **_VALUES[notice.kind](notice, facts))
    return {name: '' if value is None else str(value)
            for name, value in found.items()}


# --- templates -------------------------------------------------------------

def _placeholders(template, path):
    """The names ``template`` uses; ValueError naming ``path`` and the
    line of a ``$`` that starts no placeholder."""
    names = []
    for found in template.pattern.finditer(template.template):
        if found.group('invalid') is not None:
            start = found.start('invalid')
            line = template.template.count('\n', 0, start) + 1
            text = template.template[start:start + 12].split('\n')[0]
            raise ValueError(
                'Template %s, line %d: %r is not a placeholder (write '
                '$name or ${name}, and $$ for a dollar sign)'
                % (path, line, text))
        name = found.group('named') or found.group('braced')
        if name is not None:
            names.append(name)
    return names


def load_template(path, kind):
    """The :class:`string.Template` in ``path``, checked against the
    placeholders of ``kind``; ValueError naming the file (and the
    placeholder) otherwise."""
    try:
        with open(path, encoding='utf-8') as f:
            template = string.Template(f.read())
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError('Template %s cannot be read: %s' % (path, exc))
    known = PLACEHOLDERS[kind]
    for name in _placeholders(template, path):
        if name not in known:
            raise ValueError(
                'Template %s has an unknown placeholder $%s; the %s '
                'warning has: %s' % (path, name, kind, ', '.join(
                    '$' + k for k in known)))
    return template


def template_paths(template_dir=None):
    """``{(kind, part): path}``: the operator's file in ``template_dir``
    where there is one, else the built-in one."""
    if template_dir and not os.path.isdir(template_dir):
        raise ValueError('[warnings] template_dir %r is not a directory'
                         % template_dir)
    expected = {'%s.%s' % (kind, part): (kind, part)
                for kind in model.KINDS for part in PARTS}
    paths = {}
    for name, (kind, part) in expected.items():
        paths[kind, part] = os.path.join(TEMPLATE_DIR, name)
        if template_dir:
            custom = os.path.join(template_dir, name)
            if os.path.lexists(custom):
                paths[kind, part] = custom
    if template_dir:
        strays = sorted(set(os.listdir(template_dir)) - set(expected))
        if strays:
            LOG.warning('[warnings] template_dir %s has files that are no '
                        'template of a warning, ignored: %s (templates are '
                        '<kind>.subject, <kind>.txt and <kind>.html, kinds '
                        '%s)', template_dir, ', '.join(strays),
                        ', '.join(model.KINDS))
    return paths


_BLANK_LINES = re.compile(r'\n[ \t]*\n(?:[ \t]*\n)+')
#: The width the text part's sentences are filled to.
WIDTH = 72


def _filled(value):
    """``value`` with its lines longer than :data:`WIDTH` filled (an
    indented line, a command, is left as it is)."""
    if len(value) <= WIDTH:
        return value
    return '\n'.join(line if line[:1].isspace() else
                     textwrap.fill(line, WIDTH, break_long_words=False,
                                   break_on_hyphens=False)
                     for line in value.split('\n'))


class Renderer:
    """Renders notices with the templates of ``conf.warnings
    .template_dir`` over the built-in ones, all read and checked here."""

    def __init__(self, conf):
        self.paths = template_paths(conf.warnings.template_dir)
        self.templates = {where: load_template(path, where[0])
                          for where, path in self.paths.items()}

    def render(self, notice):
        """The :class:`Rendered` words of ``notice``."""
        found = values(notice)
        subject = self.templates[notice.kind, 'subject'].substitute(
            {k: ' '.join(v.split()) for k, v in found.items()})
        text = self.templates[notice.kind, 'txt'].substitute(
            {k: _filled(v) for k, v in found.items()})
        markup = self.templates[notice.kind, 'html'].substitute(
            {k: html.escape(v) for k, v in found.items()})
        return Rendered(subject=' '.join(subject.split()),
                        text=_BLANK_LINES.sub('\n\n', text).strip() + '\n',
                        html=markup)
