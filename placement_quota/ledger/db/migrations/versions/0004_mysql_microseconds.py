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
"""MySQL and MariaDB: times with microseconds (``DATETIME(6)``), as
SQLite and PostgreSQL keep them; a plain ``DATETIME`` rounds them to the
second. Nothing changes on the other databases.

Revision ID: 0004
Revises: 0003
"""

from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

#: {table: [(column, nullable)]}: every time column of the ledger.
TIMES = {
    'projects': [('created_at', False)],
    'leases': [('start_date', False), ('end_date', False),
               ('effective_end', False), ('created_at', False),
               ('updated_at', True), ('ended_at', True),
               ('notified_at', True)],
    'credit_allocations': [('start_date', True), ('end_date', True),
                           ('created_at', False)],
    'charges': [('at', False)],
    'accounts': [('created_at', False), ('updated_at', True),
                 ('deleted_at', True)],
}


def upgrade():
    if op.get_bind().dialect.name not in ('mysql', 'mariadb'):
        return
    # One ALTER a table: each copies the table once.
    for table, columns in sorted(TIMES.items()):
        op.execute('ALTER TABLE %s %s' % (table, ', '.join(
            'MODIFY `%s` DATETIME(6) %s' % (
                name, 'NULL' if nullable else 'NOT NULL')
            for name, nullable in columns)))
