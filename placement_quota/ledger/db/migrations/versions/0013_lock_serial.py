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
"""A serial per lock row, moved by each transaction that takes the lock on
MySQL/MariaDB: taking a ledger lock writes its row, so that a Galera
cluster (which does not replicate the locks of ``SELECT ... FOR UPDATE``
and certifies only writes) sees two admissions of one project on two
nodes conflict, and rolls one back.

Revision ID: 0013
Revises: 0012
"""

from alembic import op
import sqlalchemy as sa

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('projects', sa.Column('lock_serial', sa.BigInteger,
                                        nullable=False, server_default='0'))
