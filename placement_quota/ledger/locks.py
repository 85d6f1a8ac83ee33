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
"""The ledger's locks: their names and the one order of every writer.

Every writer takes ledger locks: an admission locks its project (and what
its policies ask for: the project's tree root, the cloud-wide row ``*``),
an account move locks both accounts, a change of the account hierarchy
locks ``*accounts``. PostgreSQL and MySQL lock rows of ``projects``
(``SELECT ... FOR UPDATE``); SQLite takes its database write lock at
``BEGIN IMMEDIATE`` (one lock: it cannot deadlock). Either way, two service
processes sharing one database never admit past a limit together.

On a database that locks rows, two transactions that take two locks in
opposite orders deadlock. :func:`lock_order` is therefore the one order of
every writer, applied by
:meth:`~placement_quota.ledger.store.Transaction.lock` whatever order a
caller names its locks in:

1. projects (the own project and the tree root alike: a root is itself a
   project, the own project of its admissions and a side of moves, so
   "own project before root" would not be one order), by ID;
2. ``*accounts`` (:data:`models.ACCOUNTS_LOCK`), the account hierarchy;
3. capacity pools (``*pool:<name>``, :func:`pool_lock`), by name;
4. ``*`` (:data:`models.GLOBAL_LOCK`), the whole cloud.

A transaction takes all its locks at its start; taking one that sorts
before a lock it already holds is refused
(:class:`~placement_quota.ledger.errors.LedgerError`).
"""

from placement_quota.ledger import models

#: The prefix of the lock of a capacity pool (see :func:`pool_lock`).
POOL_PREFIX = '*pool:'

# Lock kinds, in the order of :func:`lock_order`.
_PROJECT, _ACCOUNTS, _POOL, _CLOUD = range(4)


def pool_lock(name):
    """The lock name of the capacity pool ``name``."""
    return POOL_PREFIX + name


def lock_kind(key):
    """The rank of a lock's kind in :func:`lock_order`."""
    if key == models.GLOBAL_LOCK:
        return _CLOUD
    if key.startswith(POOL_PREFIX):
        return _POOL
    if key == models.ACCOUNTS_LOCK:
        return _ACCOUNTS
    return _PROJECT


def lock_key(key):
    """The place of a lock in :func:`lock_order`: its kind, then its
    name."""
    return (lock_kind(key), key)


def lock_order(keys):
    """``keys`` (lock names) in the one order every writer takes them:
    projects, ``*accounts``, capacity pools, ``*``; by name within a
    kind; each once."""
    return sorted(set(keys), key=lock_key)
