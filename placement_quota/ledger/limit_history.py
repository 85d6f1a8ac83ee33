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
"""The history of the accounts' limits, from ledger revision 0010 on.

Every change of an account's limits (created, set, unset) adds one row a
resource changed: the value from that moment (None: no limit any more).
Reports read the limit in force at a moment (:func:`at`); before the
history starts they have only the limit of now, and say so.
"""

import sqlalchemy as sa

from placement_quota.ledger import models


def record(connection, account_id, before, after, now):
    """One row for each resource whose limit differs between ``before``
    and ``after`` ({resource: value}) of the account."""
    before, after = before or {}, after or {}
    rows = [{'account_id': account_id, 'resource': resource,
             'value': after.get(resource), 'at': now}
            for resource in sorted(set(before) | set(after))
            if before.get(resource) != after.get(resource)]
    if rows:
        connection.execute(models.limit_history.insert(), rows)


def at(connection, account_id, resource, moment):
    """``(found, value)``: whether the history knows the limit in force at
    ``moment``, and that value (None: unlimited)."""
    t = models.limit_history
    row = connection.execute(
        sa.select(t.c.value).where(
            t.c.account_id == account_id, t.c.resource == resource,
            t.c.at <= moment).order_by(t.c.at.desc(), t.c.id.desc())
        .limit(1)).first()
    if row is not None:
        return True, row.value
    return False, None


def in_force(connection, account_id, resource, moment, limits_now):
    """``(limit, from_history)`` of the account at ``moment`` (None:
    no moment, take the limit of now): the history's value, else, before
    the history starts, the one of ``limits_now`` ({resource: value}, the
    account's limits now); None when there is no limit (unset or -1)."""
    found, value = (False, None) if moment is None else \
        at(connection, account_id, resource, moment)
    if not found:
        value = (limits_now or {}).get(resource)
    if value is None or value < 0:
        return None
    return value, found
