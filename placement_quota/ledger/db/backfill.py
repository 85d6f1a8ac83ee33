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
"""Columns a migration adds, filled in for the entries already there."""

import collections

import sqlalchemy as sa

from placement_quota.lease import amounts as accounting

#: Entries read and written at once.
BATCH = 1000


def resource_types(bind):
    """``leases.resource_type`` of every entry from its lease: one
    UPDATE a kind of lease in each batch, not one an entry."""
    leases = sa.table('leases', sa.column('id', sa.Integer),
                      sa.column('lease', sa.JSON),
                      sa.column('resource_type', sa.String))
    last = 0
    while True:
        rows = list(bind.execute(
            sa.select(leases.c.id, leases.c.lease)
            .where(leases.c.id > last).order_by(leases.c.id).limit(BATCH)))
        if not rows:
            return
        last = rows[-1].id
        by_type = collections.defaultdict(list)
        for row in rows:
            by_type[accounting.resource_type(row.lease)].append(row.id)
        for kind, ids in by_type.items():
            if kind is not None:
                bind.execute(leases.update().where(leases.c.id.in_(ids))
                             .values(resource_type=kind))
