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
"""The statements a decision runs on the ledger, built once.

A decision runs the same few statements with other values: its locks, the
scalars read ahead, the leases of the project's family over the window,
other leases' instances on its hosts, its credit allocation, its entry
and first charge. Building a SQLAlchemy statement and working out its
cache key costs more than running it on a fast database (a quarter of a
service worker's interpreter time under a burst of check-creates), so
each is built once for each shape (``ledger/db/built.py``), its values
bound parameters given at each execution.
"""

import sqlalchemy as sa

from placement_quota.ledger.db import locks
from placement_quota.ledger import models


def on_hosts(column, count):
    """SQL: the space-separated host keys of ``column`` are empty or
    name one of ``count`` hosts, bound as ``host_0``, ``host_1``... by
    their :func:`host_pattern` (whole keys: ``a`` is not ``ab``; a key's
    ``%`` and ``_`` are no wildcards)."""
    padded = sa.literal(' ') + column + sa.literal(' ')
    return sa.or_(column == '', *(
        padded.like(sa.bindparam('host_%d' % i), escape=LIKE_ESCAPE)
        for i in range(count)))


#: The escape character of :func:`host_pattern`.
LIKE_ESCAPE = '/'


def host_pattern(key):
    """The ``LIKE`` pattern of :func:`on_hosts` finding the host key
    ``key`` whole in a space-separated list padded with spaces."""
    escaped = (key.replace(LIKE_ESCAPE, LIKE_ESCAPE * 2)
               .replace('%', LIKE_ESCAPE + '%')
               .replace('_', LIKE_ESCAPE + '_'))
    return '%% %s %%' % escaped


def instance_intervals(bounded, excluding, hosts):
    """The query of :meth:`Transaction.instance_intervals`, its values
    bound (``start``, ``end``, ``earliest`` when ``bounded``, ``exclude``
    when ``excluding``, and ``hosts`` host patterns unless None)."""
    t = models.leases
    query = sa.select(
        t.c.id, t.c.start_date, t.c.effective_end, t.c.instance_vcpus,
        t.c.instance_memory_mb, t.c.instance_disk_gb, t.c.instance_hosts
    ).where(
        t.c.start_date < sa.bindparam('end'),
        t.c.effective_end > sa.bindparam('start'),
        t.c.state.notin_(models.NOT_COUNTED),
        (t.c.instance_vcpus + t.c.instance_memory_mb +
         t.c.instance_disk_gb) > 0)
    if bounded:
        query = query.where(t.c.start_date >= sa.bindparam('earliest'))
    if excluding:
        query = query.where(t.c.id != sa.bindparam('exclude'))
    if hosts is not None:
        query = query.where(on_hosts(t.c.instance_hosts, hosts))
    # MariaDB ranges over the start's own index and reads each row (82 ms
    # at 100,000 leases; 2.3 ms over the covering one).
    for dialect in locks.MYSQL:
        query = query.with_hint(
            t, 'FORCE INDEX (%s)' % models.INSTANCE_WINDOW_INDEX, dialect)
    return query


def longest_duration():
    """The duration of the longest entry that counts (no row: none)."""
    # Not max(): MariaDB reads every row for a max() with a WHERE (12.8 ms
    # at 20,000 leases); the duration's index read from its top stops at
    # the first entry that counts, on every database.
    t = models.leases
    return (sa.select(t.c.duration_s)
            .where(t.c.state.notin_(models.NOT_COUNTED))
            .order_by(t.c.duration_s.desc()).limit(1))


def charge_of_new(columns):
    """One statement inserting an entry (its ``columns`` bound by their
    names) and its first charge (``charge_allocation_id``,
    ``charge_amount``, ``charge_kind``, ``charge_at``): a data-modifying
    ``WITH`` of PostgreSQL, returning the entry's row ID."""
    t = models.charges
    new = models.leases.insert().values(
        {name: sa.bindparam(name) for name in columns}
    ).returning(models.leases.c.id).cte('new_entry')
    return t.insert().from_select(
        ['project_id', 'lease_row', 'allocation_id', 'amount', 'kind', 'at'],
        sa.select(sa.bindparam('project_id', type_=t.c.project_id.type),
                  new.c.id,
                  sa.bindparam('charge_allocation_id',
                               type_=t.c.allocation_id.type),
                  sa.bindparam('charge_amount', type_=t.c.amount.type),
                  sa.bindparam('charge_kind', type_=t.c.kind.type),
                  sa.bindparam('charge_at', type_=t.c.at.type))
    ).returning(t.c.lease_row)


def spent(allocation_id):
    """Net micro-credits charged to the allocation ``allocation_id`` (a
    value or a column)."""
    t = models.charges
    return (sa.select(sa.func.coalesce(sa.func.sum(t.c.amount), 0))
            .where(t.c.allocation_id == allocation_id))
