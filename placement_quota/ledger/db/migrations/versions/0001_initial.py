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
"""The ledger's first tables: projects, leases, credit allocations, charges.

Revision ID: 0001
Revises:
"""

from alembic import op
import sqlalchemy as sa

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'projects',
        sa.Column('project_id', sa.String(255), primary_key=True),
        sa.Column('created_at', sa.DateTime, nullable=False))
    op.create_table(
        'leases',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('lease_id', sa.String(255), nullable=True, unique=True),
        sa.Column('provisional_key', sa.String(64), nullable=False),
        sa.Column('name', sa.String(255), nullable=True),
        sa.Column('user_id', sa.String(255), nullable=True),
        sa.Column('start_date', sa.DateTime, nullable=False),
        sa.Column('end_date', sa.DateTime, nullable=False),
        sa.Column('effective_end', sa.DateTime, nullable=False),
        sa.Column('duration_s', sa.Integer, nullable=False),
        sa.Column('state', sa.String(16), nullable=False),
        sa.Column('amounts', sa.JSON, nullable=False),
        sa.Column('instance_vcpus', sa.BigInteger, nullable=False),
        sa.Column('instance_memory_mb', sa.BigInteger, nullable=False),
        sa.Column('instance_disk_gb', sa.BigInteger, nullable=False),
        sa.Column('instance_hosts', sa.Text, nullable=False),
        sa.Column('lease', sa.JSON, nullable=False),
        sa.Column('hourly_rate', sa.BigInteger, nullable=False),
        sa.Column('charged', sa.BigInteger, nullable=False),
        sa.Column('allocation_id', sa.Integer, nullable=True),
        sa.Column('message', sa.Text, nullable=True),
        sa.Column('created_at', sa.DateTime, nullable=False),
        sa.Column('updated_at', sa.DateTime, nullable=True),
        sa.Column('ended_at', sa.DateTime, nullable=True))
    op.create_index('ix_leases_project_end', 'leases',
                    ['project_id', 'effective_end'])
    op.create_index('ix_leases_end', 'leases', ['effective_end'])
    op.create_index('ix_leases_start', 'leases', ['start_date'])
    op.create_index('ix_leases_duration', 'leases', ['duration_s'])
    op.create_index('ix_leases_provisional_key', 'leases',
                    ['provisional_key'])
    op.create_table(
        'credit_allocations',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('amount', sa.BigInteger, nullable=False),
        sa.Column('start_date', sa.DateTime, nullable=True),
        sa.Column('end_date', sa.DateTime, nullable=True),
        sa.Column('created_at', sa.DateTime, nullable=False))
    op.create_index('ix_credit_allocations_project_id', 'credit_allocations',
                    ['project_id'])
    op.create_table(
        'charges',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('lease_row', sa.Integer, sa.ForeignKey('leases.id'),
                  nullable=True),
        sa.Column('allocation_id', sa.Integer,
                  sa.ForeignKey('credit_allocations.id'), nullable=True),
        sa.Column('amount', sa.BigInteger, nullable=False),
        sa.Column('kind', sa.String(16), nullable=False),
        sa.Column('at', sa.DateTime, nullable=False))
    op.create_index('ix_charges_allocation', 'charges', ['allocation_id'])
    op.create_index('ix_charges_lease', 'charges', ['lease_row'])
