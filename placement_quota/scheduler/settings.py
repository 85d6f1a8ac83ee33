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
"""The names and prefixes the scheduler decision reads (pure).

Stock Blazar's and Nova's by default; ``[placement_quota_scheduler]``
(:mod:`placement_quota.conf.scheduler`) sets them for a deployment
(:func:`settings_from_conf`).
"""

import dataclasses
from typing import Tuple

from placement_quota.conf import scheduler as scheduler_conf


@dataclasses.dataclass(frozen=True)
class Settings:
    """Names and prefixes; the defaults are stock Blazar's and those of
    Placement's "Support filtering by forbidden aggregate membership" spec.

    :ivar required_prefix: that spec's
        ``placement_req_required_member_prefix``: a flavor/image key
        ``<prefix><id>`` asks for the aggregate with the same key.
    :ivar forbidden_prefixes: that spec's
        ``placement_req_default_forbidden_member_prefix``: aggregates with a
        key starting with one of them are fenced off.
    :ivar freepool_name: Blazar's ``[nova] aggregate_freepool_name``.
    :ivar az_prefixes: availability zones of Blazar's host-reservation
        aggregates: ``[physical:host] blazar_az_prefix`` and the legacy
        ``blazar:`` blazar-nova still honours.
    :ivar owner_key: Blazar's ``[nova] blazar_owner``.
    :ivar reservation_key: the aggregate metadata key of Blazar's instance
        reservations (its flavor asks for it through
        ``aggregate_instance_extra_specs:``).
    :ivar tenant_key_prefix: Nova's ``AggregateMultiTenancyIsolation`` keys
        (comma-separated project ids), written by Blazar for instance
        reservations.
    :ivar reservation_hint: the scheduler hint of host reservations.
    :ivar reservation_class_prefix: Blazar's instance reservation classes.
    :ivar preemptible_key: flavor extra spec / image property.
    :ivar allow_preemptibles: blazar-nova's ``allow_preemptibles``; when
        False a preemptible request is a regular one.
    """

    required_prefix: str = 'reservation:'
    forbidden_prefixes: Tuple[str, ...] = ('reservation:',)
    freepool_name: str = 'freepool'
    az_prefixes: Tuple[str, ...] = ('blazar_', 'blazar:')
    owner_key: str = 'blazar:owner'
    reservation_key: str = 'reservation'
    tenant_key_prefix: str = 'filter_tenant_id'
    reservation_hint: str = 'reservation'
    reservation_class_prefix: str = 'CUSTOM_RESERVATION_'
    preemptible_key: str = 'blazar:preemptible'
    allow_preemptibles: bool = True

    def __post_init__(self):
        if isinstance(self.forbidden_prefixes, str):
            object.__setattr__(self, 'forbidden_prefixes',
                               (self.forbidden_prefixes,))
        if isinstance(self.az_prefixes, str):
            object.__setattr__(self, 'az_prefixes', (self.az_prefixes,))
        for name in ('required_prefix', 'freepool_name', 'owner_key',
                     'reservation_key', 'reservation_hint',
                     'reservation_class_prefix', 'preemptible_key'):
            if not getattr(self, name):
                raise ValueError('Settings.%s must not be empty' % name)
        if not all(self.forbidden_prefixes):
            raise ValueError('Settings.forbidden_prefixes: empty prefix '
                             'would fence every aggregate')


DEFAULT_SETTINGS = Settings()


def settings_from_conf(conf):
    """The :class:`Settings` of ``conf`` (the group registered).

    :raises ValueError: an empty name or prefix.
    """
    group = conf[scheduler_conf.GROUP.name]
    values = {}
    for name in scheduler_conf.SETTINGS_FIELDS:
        value = group[name]
        if name == 'az_prefixes':
            # An empty AZ prefix would make every AZ a reservation's.
            value = tuple(v for v in value if v)
        elif isinstance(value, list):
            value = tuple(value)  # Settings refuses an empty one
        values[name] = value
    return Settings(**values)
