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
"""Which e-mail attributes of Keystone users are addresses (the lookups
themselves run against a real Keystone in
tests/functional/warning/test_mail_recipients.py)."""

import testtools

from placement_quota.warning import recipients


class TestAddress(testtools.TestCase):

    def test_a_plain_address_is_one(self):
        self.assertEqual('alice@example.org',
                         recipients.address('alice@example.org'))

    def test_surrounding_spaces_are_dropped(self):
        self.assertEqual('alice@example.org',
                         recipients.address(' alice@example.org '))

    def test_a_name_without_a_domain_is_none(self):
        self.assertIsNone(recipients.address('alice'))

    def test_two_addresses_are_none(self):
        self.assertIsNone(recipients.address('a@example.org, b@example.org'))

    def test_an_address_with_a_name_is_none(self):
        self.assertIsNone(recipients.address('Alice <alice@example.org>'))

    def test_a_newline_is_none(self):
        self.assertIsNone(recipients.address('a@example.org\nBcc: x@y.z'))

    def test_an_empty_string_is_none(self):
        self.assertIsNone(recipients.address(''))

    def test_a_value_that_is_no_string_is_none(self):
        self.assertIsNone(recipients.address(['alice@example.org']))
