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
"""A lease's fingerprint and shape: the same for what check-create saw and
what Blazar later sends of the lease, different for another lease."""

import datetime

import testtools

from placement_quota.lease import model as lease_model
from placement_quota.ledger import keys
from tests.builders import hosts
from tests.builders import instances
from tests.builders import lease

PROJECT = 'project-a'


def checked(**changes):
    """A lease as Blazar's check-create sends it: minute dates, the
    reservation as the user wrote it (numbers as text)."""
    body = {'name': 'l', 'user_id': 'u', 'project_id': PROJECT,
            'start_date': datetime.datetime(2026, 6, 2, 10, 30),
            'end_date': datetime.datetime(2026, 6, 2, 12, 0),
            'reservations': [{'resource_type': 'physical:host',
                              'min': '1', 'max': '2',
                              'hypervisor_properties': '',
                              'resource_properties': '',
                              'allocations': []}]}
    body.update(changes)
    return body


def notified(**changes):
    """The same lease as Blazar's notifications carry it (its database
    row: IDs, statuses, numbers, dates as ISO text with seconds)."""
    body = {'lease_id': 'L1', 'name': 'l', 'user_id': 'u',
            'project_id': PROJECT, 'trust_id': 't', 'status': 'PENDING',
            'start_date': '2026-06-02T10:30:00.000000',
            'end_date': '2026-06-02T12:00:00.000000',
            'reservations': [{'id': 'R1', 'lease_id': 'L1',
                              'resource_id': 'X', 'status': 'pending',
                              'resource_type': 'physical:host',
                              'min': 1, 'max': 2, 'before_end': 'default',
                              'hypervisor_properties': '',
                              'resource_properties': '',
                              'missing_resources': False,
                              'resources_changed': False}],
            'events': [], 'created_at': '2026-06-01T00:00:00.000000',
            'updated_at': None, 'degraded': False}
    body.update(changes)
    return body


def fp(body, user='u'):
    return keys.fingerprint(PROJECT, user, body)


class TestFingerprint(testtools.TestCase):

    def test_check_create_and_the_create_notification_match(self):
        self.assertEqual(fp(checked()), fp(notified()))

    def test_a_parsed_lease_and_its_payload_match(self):
        body = lease('2026-06-02 10:30', '2026-06-02 12:00', hosts('a'),
                     name='l')
        self.assertEqual(fp(body), fp(lease_model.Lease.coerce(body)))

    def test_seconds_are_ignored(self):
        self.assertEqual(
            fp(checked()),
            fp(checked(start_date=datetime.datetime(2026, 6, 2, 10, 30,
                                                    59, 999))))

    def test_an_offset_is_converted_to_utc(self):
        self.assertEqual(fp(notified()), fp(notified(
            start_date='2026-06-02T12:30:00+02:00')))

    def test_another_minute_is_another_lease(self):
        self.assertNotEqual(fp(checked()), fp(checked(
            start_date=datetime.datetime(2026, 6, 2, 10, 31))))

    def test_another_name_is_another_lease(self):
        self.assertNotEqual(fp(checked()), fp(checked(name='m')))

    def test_another_user_is_another_lease(self):
        self.assertNotEqual(fp(checked()), fp(checked(user_id='v')))

    def test_the_leases_own_user_wins_over_the_callers(self):
        self.assertEqual(fp(checked(), user='u'), fp(checked(), user='v'))

    def test_another_project_is_another_lease(self):
        self.assertNotEqual(keys.fingerprint('p1', 'u', checked()),
                            keys.fingerprint('p2', 'u', checked()))

    def test_another_host_count_is_another_lease(self):
        changed = checked()
        changed['reservations'][0]['max'] = '3'
        self.assertNotEqual(fp(checked()), fp(changed))

    def test_reservation_order_does_not_matter(self):
        a = instances(1, vcpus=2)
        b = instances(2, vcpus=4)
        self.assertEqual(fp(checked(reservations=[a, b])),
                         fp(checked(reservations=[b, a])))

    def test_the_flavor_blazar_creates_for_an_instance_reservation_is_ignored(
            self):
        requested = instances(2, vcpus=2)
        stored = dict(requested, flavor_id='f-made-by-blazar',
                      aggregate_id=7, server_group_id='sg', id='R1')
        self.assertEqual(fp(checked(reservations=[requested])),
                         fp(notified(reservations=[stored])))

    def test_a_flavor_reservations_flavor_counts(self):
        self.assertNotEqual(
            fp(checked(reservations=[{'resource_type': 'flavor:instance',
                                      'amount': 1, 'flavor_id': 'small'}])),
            fp(checked(reservations=[{'resource_type': 'flavor:instance',
                                      'amount': 1, 'flavor_id': 'large'}])))

    def test_an_unknown_type_counts_by_its_type_alone(self):
        self.assertEqual(
            fp(checked(reservations=[{'resource_type': 'dummy:x',
                                      'amount': 3}])),
            fp(checked(reservations=[{'resource_type': 'dummy:x'}])))

    def test_a_payload_that_is_no_lease_has_a_fingerprint_too(self):
        self.assertEqual(64, len(fp({'reservations': 'no'})))


class TestShape(testtools.TestCase):

    def test_a_renamed_lease_keeps_its_shape(self):
        self.assertEqual(keys.shape(PROJECT, checked()),
                         keys.shape(PROJECT, notified(name='renamed')))

    def test_another_window_is_another_shape(self):
        self.assertNotEqual(keys.shape(PROJECT, checked()), keys.shape(
            PROJECT, checked(end_date=datetime.datetime(2026, 6, 3))))


class TestLeaseId(testtools.TestCase):

    def test_a_notification_names_it_lease_id(self):
        self.assertEqual('L1', keys.lease_id(notified()))

    def test_a_parsed_lease_names_it_id(self):
        self.assertEqual('L2', keys.lease_id(lease_model.Lease.coerce(
            lease('2026-06-02 00:00', '2026-06-03 00:00', lease_id='L2'))))

    def test_an_empty_id_is_none(self):
        self.assertIsNone(keys.lease_id({'id': ''}))
