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
"""MaximumReservationLengthFilter: deny leases longer than a threshold.

Blazar's "Flexible Reservation Usage Enforcement" spec names the filter
``MaximumReservationLengthFilter`` and its option ``reservation_max_length``
(seconds, 0 = no limit). Upstream Blazar shipped it as
``MaxLeaseDurationFilter`` with ``max_lease_duration`` (-1 = no limit) and
``max_lease_duration_exempt_project_ids``; both names and all three options
work here, so a blazar.conf moves over unchanged.
"""

import datetime

from oslo_config import cfg

from placement_quota.filters import base
from placement_quota.filters import measures


def _human(seconds):
    """``86400`` -> ``1 day (86400 seconds)``."""
    text = str(datetime.timedelta(seconds=seconds))
    if text.endswith(', 0:00:00'):
        text = text[:-len(', 0:00:00')]
    return '%s (%d seconds)' % (text, seconds)


class MaximumReservationLengthFilter(base.BaseFilter):
    """Deny a lease whose end is more than N seconds after its start."""

    enforcement_opts = [
        cfg.IntOpt(
            'reservation_max_length', default=0, min=0,
            help='Longest lease allowed, in seconds, from start_date to '
                 'end_date; 0 means no limit. Checked on create and on '
                 'update (the new dates). Takes precedence over '
                 'max_lease_duration when both are set.'),
        cfg.IntOpt(
            'max_lease_duration', default=-1, min=-1,
            help='Upstream Blazar\'s name for reservation_max_length, used '
                 'when reservation_max_length is 0; -1 means no limit.'),
        cfg.ListOpt(
            'max_lease_duration_exempt_project_ids', default=[],
            help='Project IDs this filter does not apply to (upstream '
                 'Blazar\'s option; [enforcement] exempted_projects exempts '
                 'from every filter).'),
    ]

    @property
    def max_length(self):
        """The limit in seconds, or None for no limit."""
        group = self.conf.enforcement
        if group.reservation_max_length > 0:
            return group.reservation_max_length
        if group.max_lease_duration >= 0:
            return group.max_lease_duration
        return None

    def inert(self):
        if self.max_length is None:
            return ('it sets no limit ([enforcement] reservation_max_length '
                    'is 0 and max_lease_duration is -1)')
        return None

    def limit_for(self, project_id):
        """The limit in seconds on the leases of ``project_id``, or None:
        no limit, or the project is exempt."""
        exempt = self.conf.enforcement.max_lease_duration_exempt_project_ids
        if project_id in exempt:
            return None
        return self.max_length

    def describe(self, probe):
        limit = self.limit_for(probe.project_id)
        if limit is None:
            return []
        return [measures.Measure(self.name, 'lease_length', measures.LEASE,
                                 limit, 'seconds')]

    def _check(self, context, lease, field):
        limit = self.limit_for(self.context(context).project_id)
        if limit is None:
            return
        lease = self.lease(lease, field)
        length = lease.duration.total_seconds()
        if length > limit:
            raise self.deny(
                'Lease length of %s exceeds the maximum of %s.'
                % (_human(int(length)), _human(limit)))

    def check_create(self, context, lease):
        self._check(context, lease, 'lease')

    def check_update(self, context, current_lease, lease):
        self._check(context, lease, 'lease')

    def on_end(self, context, lease):
        pass


class MaxLeaseDurationFilter(MaximumReservationLengthFilter):
    """Upstream Blazar's name for :class:`MaximumReservationLengthFilter`."""
