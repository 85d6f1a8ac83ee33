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
"""The reservation types of each lease: ``leases.resource_type``
(``physical:host``, ``physical:host+virtual:floatingip``...; reports
group by it), filled in for the entries already there from their lease.

Revision ID: 0011
Revises: 0010
"""

from alembic import op
import sqlalchemy as sa

from placement_quota.ledger.db import backfill

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade():
    # Nullable: SQLite adds it in place (no table copy).
    op.add_column('leases', sa.Column('resource_type', sa.String(255),
                                      nullable=True))
    op.create_index('ix_leases_resource_type', 'leases', ['resource_type'])
    backfill.resource_types(op.get_bind())
