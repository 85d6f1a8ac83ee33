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
"""What Nova's server list may answer, checked before any use; the UUIDs
a ledger lease may hold consumers under; [accounts] consumers_from."""

import types
import uuid

import testtools

from placement_quota.accounts import consumers
from placement_quota.accounts import servers
from placement_quota import conf as pq_conf

A = str(uuid.uuid4())
B = str(uuid.uuid4())


class TestParsePage(testtools.TestCase):

    def test_a_page_answers_its_server_ids(self):
        self.assertEqual(([A, B], False), servers.parse_page(
            {'servers': [{'id': A, 'name': 'a'}, {'id': B}]}))

    def test_a_next_link_means_more_pages(self):
        self.assertEqual(([A], True), servers.parse_page(
            {'servers': [{'id': A}],
             'servers_links': [{'rel': 'next', 'href': 'x'}]}))

    def test_a_body_without_a_server_list_is_refused(self):
        for body in (None, [], {'servers': {}}, {'server': []}, 'x'):
            self.assertRaises(ValueError, servers.parse_page, body)

    def test_a_server_id_that_is_not_a_uuid_is_refused(self):
        for server in ({'id': '../usages'}, {'id': 7}, {}, 'x',
                       {'id': A + '?x=1'}):
            error = self.assertRaises(ValueError, servers.parse_page,
                                      {'servers': [server]})
            self.assertIn('not a UUID', str(error))

    def test_links_that_are_not_a_list_are_refused(self):
        self.assertRaises(ValueError, servers.parse_page,
                          {'servers': [], 'servers_links': 'next'})


class TestLeaseCandidates(testtools.TestCase):

    def test_lease_and_reservation_uuids_are_candidates(self):
        row = types.SimpleNamespace(lease_id=A, lease={
            'reservations': [{'id': B}, {'id': 'not-a-uuid'}, 'x', {}]})
        self.assertEqual(sorted([A, B]), consumers.lease_candidates([row]))

    def test_a_lease_without_ids_gives_none(self):
        row = types.SimpleNamespace(lease_id=None, lease=None)
        self.assertEqual([], consumers.lease_candidates([row]))


class TestConfigured(testtools.TestCase):

    def conf(self, **nova):
        conf = pq_conf.new_config([], config_files=[])
        for name, value in nova.items():
            conf.set_override(name, value, 'nova')
        return conf

    def test_an_empty_nova_section_names_no_nova(self):
        conf = self.conf()
        self.assertFalse(servers.configured(conf))
        self.assertIsNone(servers.NovaServers.from_conf(conf))

    def test_an_endpoint_override_names_a_nova(self):
        conf = self.conf(endpoint_override='http://nova:8774/v2.1')
        self.assertTrue(servers.configured(conf))
        lister = servers.NovaServers.from_conf(conf)
        self.assertEqual('http://nova:8774/v2.1', lister.description)

    def test_an_auth_type_missing_its_options_is_an_error_not_a_crash(self):
        conf = self.conf(auth_type='password')
        self.assertRaises(servers.NovaServersError,
                          servers.NovaServers.from_conf, conf)

    def test_consumers_from_defaults_to_auto(self):
        self.assertEqual('auto', self.conf().accounts.consumers_from)
