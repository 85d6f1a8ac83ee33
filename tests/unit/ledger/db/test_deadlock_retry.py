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
"""How often a transaction that deadlocks while taking its locks is tried
(a real deadlock, on MariaDB: tests/functional/ledger/test_mariadb.py).
The deadlocks here are oslo.db's exception raised by a fake ``begin``: a
database that deadlocks every time cannot be made to."""

import fixtures
import testtools

from placement_quota.ledger.db import engine
from placement_quota.ledger import errors


class FakeDeadlockingBegin:
    """Deadlocks ``times`` times, then returns ``'locked'``."""

    def __init__(self, times):
        self.times = times
        self.calls = 0

    def __call__(self):
        self.calls += 1
        if self.calls <= self.times:
            raise errors.LedgerConflict('deadlock')
        return 'locked'


class TestRetryDeadlocks(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            name='placement_quota.ledger.db.engine'))

    def test_a_deadlock_is_tried_again_and_logged(self):
        begin = FakeDeadlockingBegin(1)
        self.assertEqual('locked', engine.retry_deadlocks(begin))
        self.assertEqual(2, begin.calls)
        self.assertIn('deadlocked (attempt 1 of 5)', self.log.output)

    def test_the_last_deadlock_is_the_ledger_unavailable(self):
        begin = FakeDeadlockingBegin(engine.DEADLOCK_ATTEMPTS)
        error = self.assertRaises(errors.LedgerConflict,
                                  engine.retry_deadlocks, begin)
        self.assertEqual(engine.DEADLOCK_ATTEMPTS, begin.calls)
        self.assertIn('deadlocked 5 times in a row', str(error))

    def test_other_errors_are_not_tried_again(self):
        def begin():
            raise errors.LockTimeout('held')
        self.assertRaises(errors.LockTimeout, engine.retry_deadlocks, begin)
        self.assertEqual('', self.log.output)
