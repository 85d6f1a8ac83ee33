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
"""The fingerprint on what stock Blazar 18 really sends: the enforcement
calls and the notifications captured from one lease (``capture-a``:
created, started, prolonged by an hour, ended) and another
(``capture-b``: deleted before its start), replayed into the ledger."""

import datetime
import json
import os

from placement_quota.ledger import keys
from placement_quota.ledger import models
from placement_quota.lifecycle import events
from tests.unit.filters import base

PAYLOADS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'functional', 'blazar_e2e', 'payloads')


def captured(name):
    with open(os.path.join(PAYLOADS, name)) as f:
        return json.load(f)


def call_fingerprint(name, document='lease'):
    body = captured(name)
    context = body['context']
    return keys.fingerprint(context['project_id'], context['user_id'],
                            body[document])


def notified_fingerprint(name):
    payload = captured(name)['payload']
    return keys.fingerprint(payload['project_id'], payload['user_id'],
                            payload)


class TestCapturedFingerprints(base.LedgerTestCase):

    def test_check_create_matches_the_lease_create_notification(self):
        self.assertEqual(call_fingerprint('check-create.json'),
                         notified_fingerprint('lease.create.json'))

    def test_check_updates_current_lease_matches_the_lease_create(self):
        self.assertEqual(call_fingerprint('check-update.json',
                                          'current_lease'),
                         notified_fingerprint('lease.create.json'))

    def test_start_lease_matches_the_lease_create(self):
        self.assertEqual(notified_fingerprint('lease.event.start_lease.json'),
                         notified_fingerprint('lease.create.json'))

    def test_on_end_matches_the_end_lease_notification(self):
        self.assertEqual(call_fingerprint('on-end.end_lease.json'),
                         notified_fingerprint('lease.event.end_lease.json'))

    def test_on_end_of_a_deleted_lease_matches_its_delete(self):
        self.assertEqual(call_fingerprint('on-end.delete.json'),
                         notified_fingerprint(
                             'lease.delete.not_started.json'))

    def test_two_leases_have_two_fingerprints(self):
        self.assertNotEqual(call_fingerprint('check-create.json'),
                            call_fingerprint('on-end.delete.json'))

    def test_a_renamed_lease_keeps_the_shape_of_its_check_create(self):
        create = captured('check-create.json')
        payload = dict(captured('lease.create.json')['payload'],
                       name='renamed')
        self.assertEqual(
            keys.shape(create['context']['project_id'], create['lease']),
            keys.shape(payload['project_id'], payload))


class TestCapturedReplay(base.LedgerTestCase):
    """The captured calls and notifications of ``capture-a`` replayed in
    Blazar's order through a priced chain and the events: one entry,
    bound at ``lease.create``, charged for 3 hours, closed at its end."""

    options = {('enforcement', 'credit_instance_rate'): 1.0}

    def setUp(self):
        super().setUp()
        create = captured('check-create.json')
        self.project = create['context']['project_id']
        self.allocation = self.give_credits(100)
        self.via = self.chain('CreditFilter')
        self.now = datetime.datetime(2026, 11, 23, 21, 16)

    def call(self, name):
        body = captured(name)
        kind = name.split('.')[0]
        if kind == 'check-create':
            self.via.check_create(body['context'], body['lease'])
        elif kind == 'check-update':
            self.via.check_update(body['context'], body['current_lease'],
                                  body['lease'])
        else:
            self.via.on_end(body['context'], body['lease'])

    def notify(self, name):
        message = captured(name)
        timestamp = datetime.datetime.fromisoformat(
            message['metadata']['timestamp'])
        return events.handle(self.ledger, message['event_type'],
                             message['payload'], timestamp)

    def test_the_lease_is_one_entry_bound_charged_and_closed_once(self):
        self.call('check-create.json')
        self.notify('lease.create.json')
        self.notify('lease.event.start_lease.json')
        self.call('check-update.json')
        self.notify('lease.update.json')
        self.now = datetime.datetime(2026, 11, 24, 0, 16)
        self.call('on-end.end_lease.json')
        self.notify('lease.event.end_lease.json')
        entry, = self.entries()
        lease_id = captured('lease.create.json')['payload']['lease_id']
        self.assertEqual((lease_id, models.TERMINATED, 'capture-a'),
                         (entry.lease_id, entry.state, entry.name))
        # One instance at 1 credit an hour, 21:16 to 00:16.
        self.assertEqual(3.0, self.spent(self.allocation))
