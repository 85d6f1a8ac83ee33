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
"""Users' shares of their project's credits.

A share caps what one user of a project may spend of the project's credit
allocations: the credits charged for the user's leases, net of refunds
(every entry's ``charged``), may not pass it. It adds no credit: the
project's allocations still pay, and their balance still holds. The
latest share set for a user is the one in force (the earlier ones stay,
as history). Amounts are micro-credits, as everywhere in the ledger.
"""

import sqlalchemy as sa

from placement_quota.ledger import models


def set_share(connection, project_id, user_id, amount, now):
    """Make ``amount`` the user's share; its ID."""
    result = connection.execute(models.credit_user_shares.insert().values(
        project_id=project_id, user_id=user_id, amount=amount,
        created_at=now))
    return result.inserted_primary_key[0]


def share(connection, project_id, user_id):
    """The user's share in force (micro-credits), or None."""
    return connection.execute(share_query(project_id, user_id)).scalar()


def share_query(project_id, user_id):
    """The query of :func:`share` (one row, or none)."""
    t = models.credit_user_shares
    return (sa.select(t.c.amount).where(t.c.project_id == project_id,
                                        t.c.user_id == user_id)
            .order_by(t.c.id.desc()).limit(1))


def shares(connection, project_id):
    """``{user: share in force}`` of a project."""
    t = models.credit_user_shares
    found = {}
    for row in connection.execute(
            sa.select(t.c.user_id, t.c.amount)
            .where(t.c.project_id == project_id).order_by(t.c.id)):
        found[row.user_id] = row.amount
    return found


def spent(connection, project_id, user_id):
    """Micro-credits charged, net, for the user's leases in the project."""
    t = models.leases
    return connection.execute(
        sa.select(sa.func.coalesce(sa.func.sum(t.c.charged), 0)).where(
            t.c.project_id == project_id, t.c.user_id == user_id)
    ).scalar_one()
