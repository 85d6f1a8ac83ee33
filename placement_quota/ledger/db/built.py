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
"""Statements built once for each shape, their values bound at execution.

Building a SQLAlchemy statement and working out its cache key costs more
than running it on a fast database; a statement kept here is built once,
and SQLAlchemy finds its compiled form in its cache at once. Used by the
ledger's locks and by the statements a decision runs
(:mod:`placement_quota.ledger.statements`).
"""

#: Statements built once (:func:`built`), by what tells them apart.
STATEMENTS = {}
#: Most statements kept in :data:`STATEMENTS` (shapes past them, such as a
#: lease on hundreds of hosts, are built for each use).
LIMIT = 512


def built(key, build):
    """The statement ``build()`` makes, built once for ``key`` (its values
    bound parameters given at each execution)."""
    found = STATEMENTS.get(key)
    if found is None:
        found = build()
        if len(STATEMENTS) < LIMIT:
            found = STATEMENTS.setdefault(key, found)
    return found
