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
"""Lease identity: the fingerprint and shape of each entry, and the time of
the last Blazar notification applied to it.

Entries not yet bound to a lease ID were keyed on project and name; they
get the fingerprint and shape of the lease they stored, so that Blazar's
next call or notification about them finds them.

Revision ID: 0003
Revises: 0002
"""

from alembic import op
import sqlalchemy as sa

from placement_quota.ledger import keys

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade():
    # Nullable columns: SQLite adds them in place (no table copy).
    op.add_column('leases', sa.Column('shape_key', sa.String(64),
                                      nullable=True))
    op.add_column('leases', sa.Column('notified_at', sa.DateTime,
                                      nullable=True))
    op.create_index('ix_leases_shape_key', 'leases', ['shape_key'])
    leases = sa.table('leases', sa.column('id', sa.Integer),
                      sa.column('project_id', sa.String),
                      sa.column('user_id', sa.String),
                      sa.column('lease', sa.JSON),
                      sa.column('provisional_key', sa.String),
                      sa.column('shape_key', sa.String))
    bind = op.get_bind()
    rows = list(bind.execute(sa.select(
        leases.c.id, leases.c.project_id, leases.c.user_id, leases.c.lease)))
    for row in rows:
        body = row.lease if isinstance(row.lease, dict) else {}
        bind.execute(leases.update().where(leases.c.id == row.id).values(
            provisional_key=keys.fingerprint(row.project_id, row.user_id,
                                             body),
            shape_key=keys.shape(row.project_id, body)))
