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
"""Blazar's ``lease.event.before_end_lease`` as a warning.

Blazar 18 publishes that notification at a lease's ``before_end_date``
(set when the lease is created or updated); ``placement-quota listen``
hands it here when ``[warnings] enabled`` is true. The warning is keyed
by the lease and its end: delivered again (at least once), it is not
recorded twice; an extended lease's next event is a new warning.

Blazar gives every lease such an event (``[manager]
minutes_before_end_lease``, 60 by default, when the lease sets no
``before_end_date``), so it is no warning of its own when:

* the lease ends in less than :data:`MIN_NOTICE` seconds: nobody can act
  on it (Blazar moves the event of a lease ended early, e.g. an idle one,
  to just before its end);
* a warning of the lead times (``[warnings] lease_end_lead_times``) was
  already recorded for the same lease and end: the user knows.
"""

import datetime

from oslo_log import log as logging

from placement_quota.lifecycle import events as lifecycle_events
from placement_quota.warning import model
from placement_quota.warning import record
from placement_quota.warning import scan

LOG = logging.getLogger(__name__)


def before_end_notice(payload, entry=None, now=None):
    """The BEFORE_END notice of a ``before_end_lease`` payload (checked:
    :class:`~placement_quota.lifecycle.events.Malformed` otherwise);
    ``entry``: the lease's ledger entry, when there is one (its creator
    is the user warned when the payload names none)."""
    notified = lifecycle_events.Notified(payload)
    end = notified.end_date
    return model.Notice(
        kind=model.BEFORE_END,
        key=model.key(model.BEFORE_END, notified.lease_id, end),
        project_id=notified.project_id,
        user_id=notified.user_id or (entry.user_id if entry else None),
        lease_id=notified.lease_id,
        lease_name=notified.name or (entry.name if entry else None),
        facts={'lease_row': entry.id if entry is not None else None,
               'start_date': model.iso(notified.start_date),
               'end_date': model.iso(end)},
        **({} if entry is None or now is None else dict(
            subject=scan.lease_end_subject(entry.id, end),
            level=-(end - now).total_seconds())))


#: Seconds: an event for a lease ending sooner than this is no warning.
MIN_NOTICE = 120


def before_end(ledger, payload, now):
    """Record the warning of one ``before_end_lease`` payload (unless the
    module's docstring says it is none); True when it was new."""
    notified = lifecycle_events.Notified(payload)
    now = max(now, ledger.clock())   # a late delivery: judged now
    if notified.end_date - now < datetime.timedelta(seconds=MIN_NOTICE):
        LOG.info('Lease %s ends on %s, too soon for a warning of its '
                 'before_end_lease event', notified.lease_id,
                 notified.end_date)
        return False
    with ledger.reader() as reader:
        entry = reader.find(notified.project_id, notified.lease_id,
                            notified.fingerprint, notified.shape,
                            any_project=True)
        warned = entry is not None and record.levels(
            reader, subjects=[scan.lease_end_subject(
                entry.id, notified.end_date)])
    if warned:
        LOG.info('Lease %s was already warned of its end on %s: its '
                 'before_end_lease event adds nothing', notified.lease_id,
                 notified.end_date)
        return False
    notice = before_end_notice(payload, entry, now)
    return record.record(ledger, [notice], now) > 0
