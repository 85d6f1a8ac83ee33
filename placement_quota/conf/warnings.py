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
"""``[warnings]``: what placement-quota tells users before it hurts (a
lease about to end, credits running low, an allocation period ending, a
reservation left idle), and how it reaches them (oslo.messaging
notifications, e-mail through SMTP).

The notification channel publishes with oslo.messaging's own
``[oslo_messaging_notifications]`` options (``driver``, ``topics``,
``transport_url``), as every OpenStack service does.
"""

import re

from oslo_config import cfg
from oslo_config import types

from placement_quota.conf import _util

GROUP = cfg.OptGroup(
    'warnings', title='Warnings to users',
    help='Warnings placement-quota records in the ledger and sends once '
         'each: leases about to end, credits crossing thresholds of their '
         'allocation, allocation periods ending, reservations left idle. '
         'placement-quota warn scans and sends them; placement-quota '
         'listen does too when [warnings] enabled is true, and turns '
         'Blazar\'s lease.event.before_end_lease into a warning.')

#: The delivery channels.
EMAIL = 'email'
NOTIFICATION = 'notification'
CHANNELS = (EMAIL, NOTIFICATION)

_DURATION = re.compile(r'^\s*(\d+)\s*([smhdw]?)\s*$')
_UNITS = {'': 1, 's': 1, 'm': 60, 'h': 3600, 'd': 86400, 'w': 604800}


def seconds(value):
    """Seconds in a duration: a whole number, optionally followed by s, m,
    h, d or w (``90``, ``30m``, ``48h``, ``7d``). Raises ValueError naming
    the value otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError('%r is not a duration (negative)' % value)
        return value
    found = _DURATION.match(str(value))
    if found is None:
        raise ValueError(
            '%r is not a duration: a whole number of seconds, or one '
            'followed by s, m, h, d or w (e.g. 30m, 48h, 7d)' % (value,))
    return int(found.group(1)) * _UNITS[found.group(2)]


class Duration(types.ConfigType):
    """A duration option (see :func:`seconds`); its value is seconds."""

    def __init__(self, type_name='duration value'):
        super().__init__(type_name=type_name)

    def __call__(self, value):
        return seconds(value)

    def __repr__(self):
        return 'Duration'

    def _formatter(self, value):
        return str(value)


def _durations(name, default, help):
    return cfg.ListOpt(name, default=default,
                       item_type=Duration(), help=help)


opts = [
    cfg.BoolOpt(
        'enabled', default=False,
        help='Whether placement-quota listen also scans for warnings and '
             'sends them (every scan_interval), and turns Blazar\'s '
             'lease.event.before_end_lease notifications into warnings. '
             'placement-quota warn does the same on its own, whatever '
             'this says. Any number of listen and warn processes may run: '
             'each warning is recorded once in the ledger and sent by one '
             'of them.'),
    cfg.ListOpt(
        'channels', default=[], item_type=types.String(choices=CHANNELS),
        help='How warnings reach people: "email" (SMTP, the smtp_* '
             'options; recipients are the Keystone users\' e-mail '
             'addresses) and "notification" (oslo.messaging notifications '
             'of event types placement_quota.warning.<kind>, on '
             '[oslo_messaging_notifications] driver, topics and '
             'transport_url). Empty: warnings are recorded and listed '
             '(placement-quota warnings list) but not sent.'),
    _durations(
        'lease_end_lead_times', ['48h', '1h'],
        'How long before a lease ends its user is warned, one warning per '
        'lead time (durations: 90, 30m, 48h, 7d). A lease that is '
        'already inside several of them gets the warning of the shortest '
        'one only. An extended lease gets new warnings for its new end. '
        'Empty: no warning from the ledger (Blazar\'s before_end_lease '
        'events still give one).'),
    cfg.ListOpt(
        'credit_thresholds', default=['75', '90', '100'],
        item_type=types.Float(min=0.1, max=1000),
        help='Percentages of an allocation at which its project is warned '
             '(and, for a user\'s share of the project\'s credits, the '
             'user). What is charged for leases not started yet counts: '
             'credits are charged when a lease is allowed. One warning per '
             'threshold and allocation; crossing several at once gives '
             'the highest one only. Empty: no credit warning.'),
    _durations(
        'allocation_end_lead_times', ['7d', '1d'],
        'How long before an allocation of credits ends (its end date) its '
        'project is warned, one warning per lead time; none when another '
        'allocation of the project (of the same resource class) takes '
        'over at its end. Empty: no such warning.'),
    cfg.Opt(
        'idle_after', type=Duration(), default=0,
        help='A started lease whose reserved providers in Placement carry '
             'no allocation for this long (instances never launched, or '
             'deleted) is idle: its user is warned once, and placement-'
             'quota report idle lists it. 0 (the default): idle '
             'reservations are not looked for.'),
    cfg.Opt(
        'end_idle_after', type=Duration(), default=0,
        help='End a lease that has been idle this long, through Blazar\'s '
             'API ([blazar] credentials), which refunds its unused part '
             'the usual way; its user is told. A lease whose reserved '
             'providers hold any allocation is never ended. Must be at '
             'least idle_after (the warning comes first). 0 (the '
             'default): idle leases are never ended.'),
    cfg.Opt(
        'scan_interval', type=Duration(), default=60,
        help='Seconds between two scans of the ledger for warnings due '
             '(and deliveries of the recorded ones not yet sent).'),
    cfg.IntOpt(
        'max_attempts', default=5, min=1,
        help='Attempts to deliver a warning on a channel before it is '
             'given up, marked failed and logged as an error (placement-'
             'quota warnings list --state failed shows them).'),
    cfg.Opt(
        'retry_delay', type=Duration(), default=30,
        help='Seconds before the first retry of a failed delivery; each '
             'next retry waits twice as long, up to retry_delay_max.'),
    cfg.Opt(
        'retry_delay_max', type=Duration(), default=3600,
        help='The longest wait between two attempts of a delivery.'),
    cfg.Opt(
        'claim_timeout', type=Duration(), default=300,
        help='A process sending a warning holds it this long; a process '
             'that stopped mid-send leaves it to another after this '
             'time. Longer than an SMTP send can take.'),
    cfg.BoolOpt(
        'include_extension', default=True,
        help='Whether a lease-end warning says how far the lease may be '
             'extended now (the extension query of the self-service API, '
             'every enabled filter evaluated).'),
    cfg.ListOpt(
        'project_roles', default=['member'],
        help='Keystone roles whose holders on a project (effective '
             'assignments, so implied roles count) receive the project\'s '
             'warnings (credits, allocations). A lease\'s own warnings go '
             'to the user who created it.'),
    cfg.StrOpt(
        'template_dir',
        help='A directory of templates that replace the built-in ones: '
             '<kind>.subject, <kind>.txt and <kind>.html (kind: lease_end, '
             'before_end, credits, user_credits, allocation_end, idle, '
             'idle_ended), Python string.Template syntax ($lease_name, '
             '${end_date}...). A file missing there is taken from the '
             'built-in set.'),
    cfg.StrOpt(
        'smtp_host',
        help='The SMTP server e-mail warnings are sent through. Required '
             'when channels has "email".'),
    cfg.PortOpt(
        'smtp_port', default=25,
        help='The SMTP server\'s port (587 for submission with STARTTLS, '
             '465 with smtp_ssl).'),
    cfg.BoolOpt(
        'smtp_starttls', default=False,
        help='Upgrade the connection with STARTTLS before logging in and '
             'sending (the server must offer it, or the send fails).'),
    cfg.BoolOpt(
        'smtp_ssl', default=False,
        help='Connect over TLS from the start (SMTPS, usually port 465). '
             'Not together with smtp_starttls.'),
    cfg.StrOpt(
        'smtp_ca_file',
        help='CA bundle to verify the SMTP server\'s certificate with '
             '(TLS); unset: the system\'s.'),
    cfg.StrOpt(
        'smtp_username',
        help='User to log in to the SMTP server as; unset: no login.'),
    cfg.StrOpt(
        'smtp_password', secret=True,
        help='Password of smtp_username.'),
    cfg.Opt(
        'smtp_timeout', type=Duration(), default=30,
        help='Seconds an SMTP connection or command may take.'),
    cfg.StrOpt(
        'mail_from',
        help='The From address of e-mail warnings, e.g. "Cloud '
             'reservations <reservations@example.org>". Required when '
             'channels has "email".'),
    cfg.StrOpt(
        'mail_reply_to',
        help='A Reply-To address for e-mail warnings (e.g. the '
             'operators\' help desk); unset: none.'),
]


def register_opts(conf):
    _util.register(conf, GROUP, opts)


def list_opts():
    return {GROUP: opts}


def problems(group):
    """What is wrong in a parsed ``[warnings]`` group, as sentences naming
    the options (empty when nothing is)."""
    found = []
    if EMAIL in group.channels:
        for name in ('smtp_host', 'mail_from'):
            if not getattr(group, name):
                found.append('[warnings] channels has "email" but %s is '
                             'not set' % name)
    if group.smtp_ssl and group.smtp_starttls:
        found.append('[warnings] smtp_ssl and smtp_starttls are both set: '
                     'choose one (SMTPS, or STARTTLS on a plain '
                     'connection)')
    if group.end_idle_after and group.end_idle_after < group.idle_after:
        found.append('[warnings] end_idle_after (%ds) is shorter than '
                     'idle_after (%ds): the lease would be ended before '
                     'its user is warned' % (group.end_idle_after,
                                             group.idle_after))
    if group.end_idle_after and not group.idle_after:
        found.append('[warnings] end_idle_after is set but idle_after is '
                     '0: idle reservations are not looked for')
    if EMAIL in group.channels and \
            group.claim_timeout < 4 * (group.smtp_timeout or 30):
        found.append('[warnings] claim_timeout (%ds) is shorter than one '
                     'SMTP send can take (4 x smtp_timeout, %ds): another '
                     'process would send the warning again'
                     % (group.claim_timeout, 4 * (group.smtp_timeout or 30)))
    if group.retry_delay_max < group.retry_delay:
        found.append('[warnings] retry_delay_max (%ds) is shorter than '
                     'retry_delay (%ds)' % (group.retry_delay_max,
                                            group.retry_delay))
    return found
