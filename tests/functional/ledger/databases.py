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
"""The ledger's database backends for tests that run on each of them.

A test case written once for "a ledger database" (a subclass of
:class:`DatabaseTestCase`) runs on a backend by mixing in one of
:class:`OnSQLite`, :class:`OnPostgreSQL` and :class:`OnMariaDB`:
``self.database`` then has ``url`` (and, on the servers, ``server``).
The servers are this test process's private ones (tests/fixtures), a
fresh database each test.
"""

import os

import fixtures
import testtools

from tests.fixtures import mariadb
from tests.fixtures import postgresql
from tests.fixtures import process as processes


class SQLiteDatabase(fixtures.Fixture):
    """A SQLite ledger file in a temp dir: ``url``."""

    def _setUp(self):
        directory = self.useFixture(fixtures.TempDir()).path
        self.url = 'sqlite:///' + os.path.join(directory, 'ledger.sqlite')


class OnSQLite:
    backend = 'sqlite'
    database_fixture = SQLiteDatabase
    #: A statement that takes 5 seconds (None: the backend has none).
    sleep_statement = None


class OnPostgreSQL:
    backend = 'postgresql'
    database_fixture = postgresql.PostgreSQLDatabase
    sleep_statement = 'SELECT pg_sleep(5)'

    def server_pids(self):
        """The server's processes, the postmaster first (each backend is
        a process of its own)."""
        postmaster = self.database.server.process.pid
        return [postmaster] + processes.children(postmaster)


class OnMariaDB:
    backend = 'mariadb'
    database_fixture = mariadb.MariaDBDatabase
    sleep_statement = 'SELECT SLEEP(5)'

    def server_pids(self):
        """The server's one process (its connections are threads)."""
        return [self.database.server.process.pid]


class DatabaseTestCase(testtools.TestCase):
    """A test on a fresh ledger database of the mixed-in backend."""

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(self.database_fixture())
