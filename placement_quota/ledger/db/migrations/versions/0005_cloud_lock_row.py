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
"""The cloud lock row ``*`` exists from the start.

Capacity admissions on disjoint hosts take the row ``*`` in shared mode
(ledger/db/locks.py). A lock row is otherwise inserted by the first
transaction that takes it, and until that transaction ends every other
one taking the row waits for the insert: the first admissions of a new
ledger would wait for each other. No schema change.

Revision ID: 0005
Revises: 0004
"""

import datetime

from alembic import op
import sqlalchemy as sa

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

#: models.GLOBAL_LOCK, written out: a migration does not change with the
#: code.
CLOUD_LOCK = '*'


def upgrade():
    projects = sa.table('projects', sa.column('project_id', sa.String),
                        sa.column('created_at', sa.DateTime))
    connection = op.get_bind()
    found = connection.execute(sa.select(projects.c.project_id).where(
        projects.c.project_id == CLOUD_LOCK)).first()
    if found is None:
        op.bulk_insert(projects, [{
            'project_id': CLOUD_LOCK,
            'created_at': datetime.datetime.now(
                datetime.timezone.utc).replace(tzinfo=None)}])
