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
"""The history of the accounts' limits (``limit_history``; see
ledger/limit_history.py), from this revision on.

Revision ID: 0010
Revises: 0009
"""

from alembic import op
import sqlalchemy as sa

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'limit_history',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('account_id', sa.String(255), nullable=False),
        sa.Column('resource', sa.String(255), nullable=False),
        sa.Column('value', sa.BigInteger, nullable=True),
        sa.Column('at', sa.DateTime, nullable=False),
    )
    op.create_index('ix_limit_history_account', 'limit_history',
                    ['account_id', 'resource', 'at'])
    if op.get_bind().dialect.name in ('mysql', 'mariadb'):
        op.execute('ALTER TABLE limit_history MODIFY `at` DATETIME(6) '
                   'NOT NULL')
