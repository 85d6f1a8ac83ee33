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
"""What the real Keystone of the functional tests cannot show.

It always answers ``strict_two_level`` to ``GET /v3/limits/model``, and it
is always reachable. The rest of the Keystone source is tested against it
(tests/functional/keystone/test_keystone_limits.py).
"""

import socket

from openstack import connection
import testtools

from placement_quota.identity import limits as identity_limits
from placement_quota.limits import sources
from placement_quota.limits import tree as tree_mod


def _model(name):
    return {'model': {'name': name, 'description': 'a model'}}


class TestModelFromBody(testtools.TestCase):

    def test_the_spec_spelling_is_strict_two_level(self):
        self.assertEqual(tree_mod.STRICT_TWO_LEVEL,
                         identity_limits.model_from_body(
                             _model('strict-two-level')))

    def test_keystones_spelling_is_strict_two_level(self):
        self.assertEqual(tree_mod.STRICT_TWO_LEVEL,
                         identity_limits.model_from_body(
                             _model('strict_two_level')))

    def test_flat_is_flat(self):
        self.assertEqual(tree_mod.FLAT,
                         identity_limits.model_from_body(_model('flat')))

    def test_an_unknown_model_is_a_source_error_naming_it(self):
        error = self.assertRaises(sources.SourceError,
                                  identity_limits.model_from_body,
                                  _model('three-level'))
        self.assertIn("'three-level'", str(error))

    def test_a_body_without_a_model_name_is_a_source_error(self):
        self.assertRaises(sources.SourceError,
                          identity_limits.model_from_body, {'error': {}})


class TestUnreachableKeystone(testtools.TestCase):

    def test_unreachable_keystone_is_a_source_error_saying_so(self):
        with socket.socket() as sock:  # a port nobody listens on
            sock.bind(('127.0.0.1', 0))
            port = sock.getsockname()[1]
        conn = connection.Connection(
            auth_url='http://127.0.0.1:%d/v3' % port, username='admin',
            password='secret', project_name='admin',
            user_domain_name='Default', project_domain_name='Default')
        self.addCleanup(conn.close)
        source = identity_limits.KeystoneLimitSource(conn, service_id='s')
        error = self.assertRaises(sources.SourceError, source.load)
        self.assertIn('Cannot read the limits enforcement model from '
                      'Keystone', str(error))
        self.assertIn('Keystone is unreachable', str(error))
