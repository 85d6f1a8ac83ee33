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
"""The Placement client's microversion choice and its item by item
decoding of large answers (pure)."""

import json

import testtools

from placement_quota.placement import client


class TestChooseVersion(testtools.TestCase):

    def test_highest_common_version_is_chosen(self):
        self.assertEqual((1, 39), client.choose_version((1, 0), (1, 39)))

    def test_newer_server_gets_our_highest(self):
        self.assertEqual(client.MAX_VERSION,
                         client.choose_version((1, 0), (1, 45)))

    def test_server_without_nested_candidates_is_refused(self):
        error = self.assertRaises(client.VersionTooOld,
                                  client.choose_version, (1, 0), (1, 28))
        self.assertIn('up to 1.28', str(error))
        self.assertIn('at least 1.29', str(error))

    def test_server_that_dropped_our_versions_is_refused(self):
        error = self.assertRaises(client.VersionTooOld,
                                  client.choose_version, (1, 40), (1, 45))
        self.assertIn('at least microversion 1.40', str(error))


class TestDecodeItems(testtools.TestCase):

    def test_items_are_those_of_json_loads(self):
        for doc in ({'rps': []}, {'rps': [1]},
                    {'rps': [{'a': [1, {'b': 'c, ]}'}]}, 'x', None]}):
            for text in (json.dumps(doc), json.dumps(doc, indent=2)):
                self.assertEqual(doc['rps'], client.decode_items(text,
                                                                 'rps'))

    def test_each_item_is_picked(self):
        self.assertEqual([2, 3], client.decode_items(
            '{"rps": [1, 2]}', 'rps', lambda item: item + 1))

    def test_other_keys_before_or_after_the_list_are_decoded_whole(self):
        for doc in ({'x': 1, 'rps': [1, 2]}, {'rps': [1, 2], 'x': 1}):
            self.assertEqual([1, 2], client.decode_items(json.dumps(doc),
                                                         'rps'))

    def test_bad_json_raises_what_json_loads_raises(self):
        self.assertRaises(ValueError, client.decode_items,
                          '{"rps": [1, 2', 'rps')
        self.assertRaises(KeyError, client.decode_items,
                          '{"other": [1]}', 'rps')
