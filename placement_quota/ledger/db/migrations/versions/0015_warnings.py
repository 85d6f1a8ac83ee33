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
"""Warnings to users (``warnings``: each recorded once by its key, then
sent; see placement_quota/warning/record.py) and the idle reservations
seen (``idle_watch``: since when a started lease's providers carry no
allocation; placement_quota/warning/idle.py).

Revision ID: 0015
Revises: 0014
"""

from alembic import op
import sqlalchemy as sa

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None

_TIMES = {'warnings': ('created_at', 'due_at', 'next_attempt_at',
                       'claimed_until', 'sent_at'),
          'idle_watch': ('idle_since', 'checked_at')}
_NULLABLE = ('claimed_until', 'sent_at', 'due_at')


def upgrade():
    op.create_table(
        'warnings',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('key', sa.String(255), nullable=False),
        sa.Column('kind', sa.String(32), nullable=False),
        sa.Column('subject', sa.String(255), nullable=False),
        sa.Column('level', sa.Float, nullable=False, server_default='0'),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255), nullable=True),
        sa.Column('lease_id', sa.String(255), nullable=True),
        sa.Column('lease_name', sa.String(255), nullable=True),
        sa.Column('facts', sa.JSON, nullable=False),
        sa.Column('state', sa.String(16), nullable=False),
        sa.Column('channels_done', sa.JSON, nullable=False),
        sa.Column('attempts', sa.Integer, nullable=False,
                  server_default='0'),
        sa.Column('last_error', sa.Text, nullable=True),
        sa.Column('created_at', sa.DateTime, nullable=False),
        sa.Column('due_at', sa.DateTime, nullable=True),
        sa.Column('next_attempt_at', sa.DateTime, nullable=False),
        sa.Column('claimed_until', sa.DateTime, nullable=True),
        sa.Column('sent_at', sa.DateTime, nullable=True),
        sa.UniqueConstraint('key', name='uq_warnings_key'),
    )
    op.create_index('ix_warnings_state_next', 'warnings',
                    ['state', 'next_attempt_at'])
    op.create_index('ix_warnings_project', 'warnings', ['project_id'])
    op.create_index('ix_warnings_subject', 'warnings', ['subject'])
    op.create_index('ix_warnings_created', 'warnings', ['created_at'])
    op.create_table(
        'idle_watch',
        sa.Column('lease_row', sa.Integer, primary_key=True,
                  autoincrement=False),
        sa.Column('idle_since', sa.DateTime, nullable=False),
        sa.Column('checked_at', sa.DateTime, nullable=False),
    )
    if op.get_bind().dialect.name in ('mysql', 'mariadb'):
        # Microseconds, as 0004 gives every other time column.
        for table, columns in _TIMES.items():
            for column in columns:
                op.execute('ALTER TABLE %s MODIFY `%s` DATETIME(6) %s'
                           % (table, column, 'NULL' if column in _NULLABLE
                              else 'NOT NULL'))
