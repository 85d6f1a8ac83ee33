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
"""Which option is the ledger's database: ``[database] connection``
(oslo.db's), its deprecated alias ``[ledger] connection``, the default
SQLite file; and inside blazar-manager, whose ``[database]`` is Blazar's."""

import os

import fixtures
from oslo_config import cfg
from oslo_db import options as db_options
import testtools

from placement_quota import conf as pq_conf
from placement_quota.conf import ledger as ledger_conf
from placement_quota.ledger import errors
from placement_quota.ledger import store


class ConnectionTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        # Each test sees the warnings that are logged once per process.
        self.useFixture(fixtures.MockPatchObject(ledger_conf, '_warned',
                                                 set()))
        self.log = self.useFixture(fixtures.FakeLogger(
            name='placement_quota.conf.ledger'))

    def config(self, text=''):
        path = os.path.join(self.tmp, 'placement-quota.conf')
        with open(path, 'w') as f:
            f.write(text)
        return pq_conf.new_config([], config_files=[path])

    def url(self, name):
        return 'sqlite:///' + os.path.join(self.tmp, name)


class TestConnection(ConnectionTestCase):

    def test_default_is_the_sqlite_file_in_the_state_directory(self):
        conf = self.config()
        self.assertEqual(
            (ledger_conf._default_connection(), None),
            tuple(ledger_conf.connection(conf)))
        self.assertIn('(the default)', ledger_conf.describe(conf))

    def test_database_connection_is_the_ledger(self):
        conf = self.config('[database]\nconnection = %s\n' % self.url('a'))
        self.assertEqual((self.url('a'), '[database] connection'),
                         tuple(ledger_conf.connection(conf)))
        self.assertEqual('', self.log.output)

    def test_ledger_connection_alone_is_used_with_a_deprecation_warning(
            self):
        conf = self.config('[ledger]\nconnection = %s\n' % self.url('b'))
        self.assertEqual((self.url('b'), '[ledger] connection'),
                         tuple(ledger_conf.connection(conf)))
        self.assertIn('[ledger] connection is deprecated', self.log.output)

    def test_deprecation_warning_is_logged_once(self):
        conf = self.config('[ledger]\nconnection = %s\n' % self.url('b'))
        ledger_conf.connection(conf)
        ledger_conf.connection(conf)
        self.assertEqual(1, self.log.output.count('deprecated'))

    def test_database_connection_wins_over_ledger_connection_with_warning(
            self):
        conf = self.config('[database]\nconnection = %s\n'
                           '[ledger]\nconnection = %s\n'
                           % (self.url('a'), self.url('b')))
        self.assertEqual((self.url('a'), '[database] connection'),
                         tuple(ledger_conf.connection(conf)))
        self.assertIn('are both set: the ledger is [database] connection',
                      self.log.output)

    def test_describe_names_the_option_and_hides_the_password(self):
        conf = self.config('[database]\nconnection = '
                           'mysql+pymysql://quota:secret@db/ledger\n')
        self.assertEqual(
            'mysql+pymysql://quota:***@db/ledger ([database] connection)',
            ledger_conf.describe(conf))

    def test_database_options_are_oslo_db_options(self):
        conf = self.config('[database]\nmax_overflow = 3\n')
        options = ledger_conf.database_options(conf)
        self.assertEqual(3, options['max_overflow'])
        self.assertEqual('TRADITIONAL', options['mysql_sql_mode'])


class TestMissingDirectory(ConnectionTestCase):

    def test_database_connection_in_a_missing_directory_is_an_error(self):
        url = 'sqlite:///' + os.path.join(self.tmp, 'missing', 'l.sqlite')
        conf = self.config('[database]\nconnection = %s\n' % url)
        error = self.assertRaises(errors.LedgerError,
                                  store.Ledger.from_conf, conf)
        self.assertIn('[database] connection %s: the directory' % url,
                      str(error))

    def test_ledger_connection_in_a_missing_directory_is_an_error(self):
        url = 'sqlite:///' + os.path.join(self.tmp, 'missing', 'l.sqlite')
        conf = self.config('[ledger]\nconnection = %s\n' % url)
        error = self.assertRaises(errors.LedgerError,
                                  store.Ledger.from_conf, conf)
        self.assertIn('[ledger] connection %s: the directory' % url,
                      str(error))


class TestInsideBlazarManager(ConnectionTestCase):
    """Blazar's configuration object: its [database] is Blazar's own
    database, registered before our groups are."""

    def blazar_config(self, text):
        path = os.path.join(self.tmp, 'blazar.conf')
        with open(path, 'w') as f:
            f.write(text)
        conf = cfg.ConfigOpts()
        db_options.set_defaults(conf)
        conf([], default_config_files=[path])
        pq_conf.register_missing(conf)
        return conf

    def test_ledger_connection_is_the_ledger_not_blazars_database(self):
        conf = self.blazar_config(
            '[database]\nconnection = mysql+pymysql://blazar@db/blazar\n'
            '[ledger]\nconnection = %s\n' % self.url('l'))
        self.assertEqual((self.url('l'), '[ledger] connection'),
                         tuple(ledger_conf.connection(conf)))
        self.assertEqual('', self.log.output)

    def test_blazars_database_keeps_its_own_default(self):
        conf = self.blazar_config('')
        self.assertIsNone(conf.database.connection)
        self.assertEqual({}, ledger_conf.database_options(conf))
