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
"""What a warning is, whatever finds it and whichever channel sends it."""

import dataclasses
import datetime

#: The kinds of warnings (each has its templates, its notification event
#: type ``placement_quota.warning.<kind>`` and its facts, listed in
#: :data:`FACTS`).
LEASE_END = 'lease_end'
BEFORE_END = 'before_end'
CREDITS = 'credits'
USER_CREDITS = 'user_credits'
ALLOCATION_END = 'allocation_end'
IDLE = 'idle'
IDLE_ENDED = 'idle_ended'
KINDS = (LEASE_END, BEFORE_END, CREDITS, USER_CREDITS, ALLOCATION_END,
         IDLE, IDLE_ENDED)

#: The event type prefix of the notification channel.
EVENT_TYPE_PREFIX = 'placement_quota.warning.'

#: The facts each kind carries (JSON values: dates as ISO 8601 strings
#: "YYYY-MM-DDTHH:MM:SSZ" in UTC, credits as floats, percentages as
#: floats). Renderers and notifications may rely on these keys.
FACTS = {
    LEASE_END: ('lease_row', 'start_date', 'end_date', 'lead_s',
                # Filled at delivery when [warnings] include_extension:
                'latest_end_date', 'bound_by', 'extension_message'),
    BEFORE_END: ('lease_row', 'start_date', 'end_date'),
    CREDITS: ('allocation_id', 'resource_class', 'threshold_pct',
              'used_pct', 'amount', 'spent', 'left', 'not_started',
              'allocation_end'),
    USER_CREDITS: ('share', 'spent', 'left', 'threshold_pct', 'used_pct'),
    ALLOCATION_END: ('allocation_id', 'resource_class', 'end_date',
                     'lead_s', 'amount', 'left'),
    IDLE: ('lease_row', 'start_date', 'end_date', 'idle_since', 'hosts',
           'credits_at_stake', 'ends_at'),
    IDLE_ENDED: ('lease_row', 'start_date', 'end_date', 'idle_since',
                 'hosts', 'ended_at', 'refunded'),
}


@dataclasses.dataclass(frozen=True)
class Notice:
    """One warning. ``key`` says what it is about and which threshold or
    lead time (see :func:`key`): the ledger records each key once, so it
    is sent once. ``user_id`` is the user it is for (a lease's creator, a
    share's holder); None for the project's (``[warnings]
    project_roles``).

    ``subject`` is what it is about (a lease's end, an allocation, a
    user's share; the key by default) and ``level`` how far it went (a
    threshold, minus a lead time): no warning of a subject is recorded at
    or below a level already recorded for it."""

    kind: str
    key: str
    project_id: str
    user_id: str = None
    lease_id: str = None
    lease_name: str = None
    due_at: datetime.datetime = None
    facts: dict = dataclasses.field(default_factory=dict)
    subject: str = None
    level: float = 0.0

    def __post_init__(self):
        if self.subject is None:
            object.__setattr__(self, 'subject', self.key)

    @property
    def event_type(self):
        return EVENT_TYPE_PREFIX + self.kind

    def as_dict(self):
        return {'kind': self.kind, 'key': self.key,
                'project_id': self.project_id, 'user_id': self.user_id,
                'lease_id': self.lease_id, 'lease_name': self.lease_name,
                'due_at': iso(self.due_at), 'facts': dict(self.facts)}

    @property
    def lease_row(self):
        return self.facts.get('lease_row')


def key(kind, *parts):
    """The exactly-once key of a warning: its kind and what identifies it,
    joined by ``:`` (at most 255 characters; long parts are what makes a
    key unique, so an overlong key is refused, not cut)."""
    text = ':'.join([kind] + [iso(p) if isinstance(p, datetime.datetime)
                              else str(p) for p in parts])
    if len(text) > 255:
        raise ValueError('warning key longer than 255 characters: %r'
                         % text[:80])
    return text


def iso(value):
    """A naive UTC datetime as ``YYYY-MM-DDTHH:MM:SSZ`` (None stays)."""
    if value is None:
        return None
    return value.replace(microsecond=0).isoformat() + 'Z'


def parse_iso(text):
    """The naive UTC datetime of :func:`iso`'s text (None stays)."""
    if text is None:
        return None
    return datetime.datetime.fromisoformat(text.rstrip('Z'))
