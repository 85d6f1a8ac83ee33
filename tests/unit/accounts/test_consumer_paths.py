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
"""What the accounts send to Placement: a consumer UUID is
checked before any call, and every value in a Placement path is
percent-encoded (a fake Placement client records the paths)."""

import uuid

import testtools

from placement_quota.accounts import consumers
from placement_quota.accounts import errors

TRAVERSAL = '../../../identity/v3/users'


class RecordingClient:
    """A Placement client that records the paths asked for."""

    def __init__(self, answers=None):
        self.answers = answers or {}
        self.paths = []

    def get(self, path):
        self.paths.append(path)
        for prefix, answer in self.answers.items():
            if path.startswith(prefix):
                return answer
        return {}


class TestConsumerUuids(testtools.TestCase):

    def test_a_traversal_is_refused_before_any_placement_call(self):
        client = RecordingClient()
        error = self.assertRaises(errors.Invalid, consumers.read, client,
                                  TRAVERSAL)
        self.assertEqual(('consumer_uuid', TRAVERSAL),
                         (error.body['field'], error.body['value']))
        self.assertEqual([], client.paths)

    def test_a_uuid_carrying_a_query_is_refused(self):
        client = RecordingClient()
        self.assertRaises(errors.Invalid, consumers.read, client,
                          '%s?project_id=x' % uuid.uuid4())
        self.assertEqual([], client.paths)

    def test_a_uuid_is_read_at_its_allocations_path(self):
        consumer = str(uuid.uuid4())
        client = RecordingClient()
        consumers.read(client, consumer)
        self.assertEqual(['/allocations/%s' % consumer], client.paths)

    def test_placement_uuid_forms_are_uuids(self):
        value = uuid.uuid4()
        forms = (str(value), value.hex, str(value).upper())
        self.assertEqual([True, True, True],
                         [consumers.is_uuid(v) for v in forms])

    def test_other_values_are_not_uuids(self):
        value = str(uuid.uuid4())
        self.assertEqual(
            [False] * 6,
            [consumers.is_uuid(v) for v in (
                '', '..', value[:-1], '{%s}' % value, 'urn:uuid:' + value,
                value + '/')])


class TestPlacementPaths(testtools.TestCase):

    def test_each_segment_is_percent_encoded(self):
        self.assertEqual('/resource_providers/..%2F..%2Fx%3Fy%3D1%23z/'
                         'allocations',
                         consumers.path('/resource_providers/%s/allocations',
                                        '../../x?y=1#z'))

    def test_a_provider_uuid_from_placement_stays_one_segment(self):
        provider = {'uuid': '../identity'}
        client = RecordingClient({
            '/usages': {'usages': {'VCPU': 1}},
            '/resource_providers/': {'allocations': {}},
            '/resource_providers': {'resource_providers': [provider]}})
        client.supports = lambda version: False
        consumers.of_account(client, 'acct', workers=1)
        self.assertIn('/resource_providers/..%2Fidentity/allocations',
                      client.paths)
