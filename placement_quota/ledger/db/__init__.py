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
"""The ledger's database mechanics, apart from what the ledger means.

:mod:`~placement_quota.ledger.db.engine` (engines, connection and statement
timeouts, deadlock retries), :mod:`~placement_quota.ledger.db.locks` (the
lock rows and their order), :mod:`~placement_quota.ledger.db.checkpoints`
(SQLite's WAL checkpoints), :mod:`~placement_quota.ledger.db.deadlines`
(the watchdog of a database that does not answer), and the alembic
migrations (``migrations/``, with :mod:`~placement_quota.ledger.db.backfill`
for the columns they add). The tables, transactions and admissions are
:mod:`placement_quota.ledger`'s.
"""
