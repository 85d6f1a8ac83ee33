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
"""The real MariaDB behind tests.fixtures.mariadb."""

import threading
import unittest

import fixtures
import sqlalchemy as sa
import testtools

from tests.fixtures import mariadb

# Bounds for the locking test: how long the second SELECT FOR UPDATE must
# stay blocked, and how long anything may take at most.
BLOCKED_FOR = 0.5
TIMEOUT = 10


def _tables(url):
    engine = sa.create_engine(url)
    try:
        return sa.inspect(engine).get_table_names()
    finally:
        engine.dispose()


class TestMariaDBDatabase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(mariadb.MariaDBDatabase())
        self.engine = sa.create_engine(self.db.url)
        self.addCleanup(self.engine.dispose)

    def test_url_is_a_pymysql_url_on_the_private_socket(self):
        url = sa.engine.make_url(self.db.url)
        self.assertEqual('mysql+pymysql', url.drivername)
        self.assertEqual(self.db.server.socket, url.query['unix_socket'])
        self.assertEqual(self.db.dbname, url.database)

    def test_server_settings(self):
        with self.engine.connect() as conn:
            def show(name):
                return conn.exec_driver_sql('SELECT @@%s' % name).scalar()
            self.assertEqual(1, show('skip_networking'))
            self.assertEqual(0, show('log_bin'))
            self.assertEqual(2, show('innodb_flush_log_at_trx_commit'))
            self.assertGreaterEqual(show('max_connections'), 200)
            self.assertEqual(self.db.server.socket, show('socket'))
            self.assertEqual('utf8mb4', show('character_set_database'))

    def test_table_created_through_sqlalchemy_can_be_read_back(self):
        metadata = sa.MetaData()
        items = sa.Table(
            'items', metadata,
            sa.Column('id', sa.Integer, primary_key=True),
            sa.Column('name', sa.String(64), nullable=False))
        metadata.create_all(self.engine)
        with self.engine.begin() as conn:
            conn.execute(sa.insert(items), [{'name': 'a'}, {'name': 'b'}])
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(items.c.id, items.c.name).order_by(items.c.id)
            ).all()
        self.assertEqual([(1, 'a'), (2, 'b')], [tuple(r) for r in rows])

    def test_two_fixtures_give_two_different_empty_databases(self):
        other = self.useFixture(mariadb.MariaDBDatabase())
        self.assertNotEqual(self.db.dbname, other.dbname)
        self.assertEqual([], _tables(self.db.url))
        self.assertEqual([], _tables(other.url))
        with self.engine.begin() as conn:
            conn.exec_driver_sql('CREATE TABLE only_here (id integer)')
        self.assertEqual(['only_here'], _tables(self.db.url))
        self.assertEqual([], _tables(other.url))

    def test_select_for_update_blocks_a_second_connection(self):
        with self.engine.begin() as conn:
            conn.exec_driver_sql('CREATE TABLE counter (n integer) '
                                 'ENGINE=InnoDB')
            conn.exec_driver_sql('INSERT INTO counter VALUES (0)')
        first = self.engine.connect()
        self.addCleanup(first.close)
        first.exec_driver_sql('SELECT n FROM counter FOR UPDATE')
        locked = threading.Event()
        result = {}

        def second():
            try:
                with self.engine.begin() as conn:
                    # Bounded: a lost wakeup fails instead of hanging.
                    conn.exec_driver_sql(
                        'SET SESSION innodb_lock_wait_timeout = %d'
                        % TIMEOUT)
                    result['n'] = conn.exec_driver_sql(
                        'SELECT n FROM counter FOR UPDATE').scalar()
                    locked.set()
            except Exception as exc:
                result['error'] = exc
                locked.set()

        thread = threading.Thread(target=second, daemon=True)
        thread.start()
        self.assertFalse(locked.wait(BLOCKED_FOR),
                         'the second SELECT FOR UPDATE did not wait: %s'
                         % result)
        first.exec_driver_sql('UPDATE counter SET n = 1')
        first.commit()
        self.assertTrue(locked.wait(TIMEOUT),
                        'the second SELECT FOR UPDATE stayed blocked')
        thread.join(TIMEOUT)
        self.assertEqual({'n': 1}, result)


class TestMariaDBDatabaseLifecycle(testtools.TestCase):

    def test_database_is_dropped_at_cleanup_despite_open_connections(self):
        db = mariadb.MariaDBDatabase()
        db.setUp()
        try:
            left_open = db.connect()
            with left_open.cursor() as cursor:
                cursor.execute('CREATE TABLE t (id integer)')
                cursor.execute('SELECT * FROM t FOR UPDATE')
        finally:
            db.cleanUp()
        conn = db.server.connect()
        try:
            with conn.cursor() as cur:
                cur.execute('SELECT COUNT(*) FROM information_schema.'
                            'schemata WHERE schema_name = %s', (db.dbname,))
                self.assertEqual(0, cur.fetchone()[0])
        finally:
            conn.close()

    def test_skips_when_mariadb_is_missing(self):
        self.useFixture(fixtures.EnvironmentVariable(
            mariadb.BINDIR_ENV, '/nonexistent/mariadb/bin'))
        self.assertFalse(mariadb.available())
        # Raised as is (not wrapped in MultipleExceptions), so that
        # testtools and stestr report a skip.
        skip = self.assertRaises(unittest.SkipTest,
                                 mariadb.MariaDBDatabase().setUp)
        self.assertIn('MariaDB is not installed', str(skip))
