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
"""What the enforcement API answers when the ledger refuses a request or
does not answer in time: the service's WSGI app called in-process (no
socket) on a SQLite-file ledger."""

import datetime
import json
import os
import sqlite3
import time

import fixtures
import webob

from placement_quota.api.enforcement import app as api_app
from placement_quota.filters import chain as chain_mod
from placement_quota.ledger import errors as ledger_errors
from tests.builders import day
from tests.builders import hosts
from tests.builders import lease
from tests.builders import LEASE_ID
from tests.unit.filters import base

OTHER_ID = '8a5a9d5e-0000-4000-8000-000000000002'


class AnswersTestCase(base.LedgerTestCase):

    options = {('enforcement', 'max_leases_per_project'): 10}

    def setUp(self):
        super().setUp()
        self.app = api_app.make_app(self.conf, self.chain('LeaseCountFilter'))

    def post(self, kind, body, project=None):
        body = dict(body, context={'project_id': project or self.project,
                                   'user_id': 'u'})
        req = webob.Request.blank('/v1/' + kind, method='POST',
                                  body=json.dumps(body).encode('utf-8'),
                                  content_type='application/json')
        response = req.get_response(self.app)
        return (response.status_int,
                response.json if response.body else None)

    def create(self, body, project=None):
        return self.post('check-create', {'lease': body}, project)

    def update(self, current, new, project=None):
        return self.post('check-update', {'current_lease': current,
                                          'lease': new}, project)

    def end(self, body, project=None):
        return self.post('on-end', {'lease': body}, project)


class TestLedgerRefusals(AnswersTestCase):

    def test_update_giving_another_entrys_id_answers_400_naming_it(self):
        self.create(lease(day(2), day(3), name='a', lease_id=LEASE_ID))
        second = lease(day(4), day(5), name='b', lease_id=OTHER_ID)
        self.create(second)
        status, body = self.update(second, lease(day(4), day(6), name='b',
                                                 lease_id=LEASE_ID))
        self.assertEqual((400, 'lease.id', LEASE_ID),
                         (status, body['field'], body['value']))

    def test_update_of_an_ended_lease_answers_403(self):
        first = lease(day(2), day(4), hosts('a'), name='l',
                      lease_id=LEASE_ID)
        self.create(first)
        self.now = datetime.datetime(2026, 6, 3)
        self.end(first)
        status, body = self.update(first, lease(day(2), day(5), hosts('a'),
                                                name='l', lease_id=LEASE_ID))
        self.assertEqual((403, 'ledger'), (status, body['filter']))
        self.assertIn('an ended lease cannot be updated', body['message'])

    def test_update_from_another_project_answers_400_not_moving_it(self):
        first = lease(day(2), day(4), name='l', lease_id=LEASE_ID)
        self.create(first, project='proj-1')
        status, body = self.update(first, first, project='proj-2')
        self.assertEqual((400, ['pending'], []),
                         (status, self.states('proj-1'),
                          self.entries('proj-2')))


class TestLedgerLocked(AnswersTestCase):
    """The SQLite write lock held elsewhere past ``lock_timeout``."""

    options = {('enforcement', 'max_leases_per_project'): 10,
               ('ledger', 'lock_timeout'): 1}

    def hold_the_lock(self):
        holder = sqlite3.connect(os.path.join(self.tmp, 'ledger.sqlite'),
                                 isolation_level=None)
        self.addCleanup(holder.close)
        holder.execute('BEGIN IMMEDIATE')
        self.addCleanup(holder.execute, 'ROLLBACK')

    def test_check_create_answers_503_with_a_json_message(self):
        self.hold_the_lock()
        status, body = self.create(lease(day(2), day(3), name='l'))
        self.assertEqual(503, status)
        self.assertIn('Timed out after 1 seconds waiting for the ledger '
                      'lock of project-a', body['message'])

    def test_check_create_gives_up_after_the_lock_timeout(self):
        self.hold_the_lock()
        began = time.monotonic()
        self.create(lease(day(2), day(3), name='l'))
        self.assertLess(time.monotonic() - began, 3)

    def test_on_end_is_logged_and_answers_204(self):
        body = lease(day(2), day(3), name='l')
        self.create(body)
        logger = self.useFixture(fixtures.FakeLogger())
        self.hold_the_lock()
        self.assertEqual((204, None), self.end(body))
        self.assertIn('The ledger could not close the lease of project '
                      'project-a', logger.output)


class TestChainUnavailable(base.LedgerTestCase):

    def test_ledger_unavailable_is_service_unavailable_not_a_failure(self):
        chain = self.chain('LeaseCountFilter')
        self.useFixture(fixtures.MockPatchObject(
            self.ledger, 'transaction',
            side_effect=ledger_errors.LedgerUnavailable(
                'The ledger database at x did not answer within 5 seconds')))
        error = self.assertRaises(chain_mod.ServiceUnavailable, self.create,
                                  lease(day(2), day(3)), via=chain)
        self.assertIn('did not answer within 5 seconds', str(error))
