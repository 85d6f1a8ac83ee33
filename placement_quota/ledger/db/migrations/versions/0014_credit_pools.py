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
"""Credit pools per resource class: an allocation may hold the hours of
one resource class (``credit_allocations.resource_class``; NULL is the
general allocation of credits, as before), and a lease keeps what it was
charged to each pool (``leases.pool_charges``; see filters/credit.py).

Revision ID: 0014
Revises: 0013
"""

from alembic import op
import sqlalchemy as sa

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('credit_allocations',
                  sa.Column('resource_class', sa.String(255),
                            nullable=True))
    op.add_column('leases', sa.Column('pool_charges', sa.JSON,
                                      nullable=True))
