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
"""Users' shares of their project's credits (``credit_user_shares``; see
ledger/shares.py).

Revision ID: 0009
Revises: 0008
"""

from alembic import op
import sqlalchemy as sa

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'credit_user_shares',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255), nullable=False),
        sa.Column('amount', sa.BigInteger, nullable=False),
        sa.Column('created_at', sa.DateTime, nullable=False),
    )
    op.create_index('ix_credit_user_shares_project_user',
                    'credit_user_shares', ['project_id', 'user_id'])
    if op.get_bind().dialect.name in ('mysql', 'mariadb'):
        # Microseconds, as 0004 gives every other time column.
        op.execute('ALTER TABLE credit_user_shares MODIFY `created_at` '
                   'DATETIME(6) NOT NULL')
