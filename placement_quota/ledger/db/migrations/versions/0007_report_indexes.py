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
"""Indexes for usage reports: leases by creation and by end, charges by
date (``placement-quota report`` counts and sums them over a period).

Revision ID: 0007
Revises: 0006
"""

from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade():
    op.create_index('ix_leases_created', 'leases', ['created_at'])
    op.create_index('ix_leases_ended', 'leases', ['ended_at'])
    op.create_index('ix_charges_at', 'charges', ['at'])
