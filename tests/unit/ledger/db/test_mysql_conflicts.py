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
"""What MySQL/MariaDB and Galera errors mean to the ledger: a competing
transaction that won is a conflict (the admission runs again), a Galera
node that is not ready an outage."""

import pymysql
from sqlalchemy import exc as sa_exc
import testtools

from placement_quota.ledger.db import engine
from placement_quota.ledger import errors

URL = 'mysql+pymysql://root@db/ledger'


class Context:
    """The part of SQLAlchemy's ExceptionContext the translation reads."""

    def __init__(self, code, message):
        self.original_exception = pymysql.err.OperationalError(code, message)
        self.sqlalchemy_exception = sa_exc.OperationalError(
            'COMMIT', {}, self.original_exception)
        self.is_pre_ping = False
        self.is_disconnect = False
        self.connection = object()


def translate(code, message):
    return engine._unavailable_mysql(Context(code, message), URL, 30, 32)


class TestConflicts(testtools.TestCase):

    def test_a_deadlock_is_a_conflict(self):
        self.assertIsInstance(
            translate(1213, 'Deadlock found when trying to get lock; try '
                            'restarting transaction'),
            errors.LedgerConflict)

    def test_a_galera_certification_failure_is_a_conflict(self):
        found = translate(1213, 'Deadlock: wsrep aborted transaction')
        self.assertIsInstance(found, errors.LedgerConflict)
        self.assertIn('wsrep aborted transaction', str(found))

    def test_record_changed_since_last_read_is_a_conflict(self):
        self.assertIsInstance(
            translate(1020, "Record has changed since last read in table "
                            "'projects'"),
            errors.LedgerConflict)

    def test_a_conflict_is_an_outage_when_nobody_runs_it_again(self):
        self.assertTrue(issubclass(errors.LedgerConflict,
                                   errors.LedgerUnavailable))

    def test_a_galera_node_not_ready_is_an_outage_not_a_conflict(self):
        found = translate(1047, 'WSREP has not yet prepared node for '
                                'application use')
        self.assertEqual(errors.LedgerUnavailable, type(found))
        self.assertIn('not ready', str(found))

    def test_a_lock_wait_timeout_is_no_conflict(self):
        found = translate(1205, 'Lock wait timeout exceeded')
        self.assertIsInstance(found, sa_exc.OperationalError)
