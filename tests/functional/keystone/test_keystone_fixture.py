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
"""Functional tests of the real-Keystone fixture."""

import testtools

from tests.fixtures import keystone


class KeystoneFixtureTest(testtools.TestCase):
    """Each test talks to the process's shared, real Keystone."""

    def setUp(self):
        super().setUp()
        self.keystone = self.useFixture(keystone.KeystoneFixture())
        self.session = self.keystone.admin_conn.session

    def _get(self, path, **kwargs):
        resp = self.session.get(self.keystone.auth_url + path, **kwargs)
        self.assertEqual(200, resp.status_code, resp.text)
        return resp.json()

    def test_server_is_shared_by_fixtures(self):
        other = self.useFixture(keystone.KeystoneFixture())
        self.assertIs(self.keystone.server, other.server)
        self.assertEqual(self.keystone.auth_url, other.auth_url)

    def test_auth_url_is_v3_on_loopback(self):
        self.assertRegex(self.keystone.auth_url,
                         r'^http://127\.0\.0\.1:\d+/v3$')

    def test_limits_model_is_strict_two_level(self):
        model = self._get('/limits/model')['model']
        self.assertEqual('strict_two_level', model['name'])

    def test_admin_connection_is_scoped_to_admin_project(self):
        conn = self.keystone.admin_conn
        project = conn.identity.get_project(conn.current_project_id)
        self.assertEqual(self.keystone.admin_project_name, project.name)

    def test_created_projects_get_unique_names(self):
        first = self.keystone.create_project()
        second = self.keystone.create_project()
        self.assertNotEqual(first.name, second.name)

    def test_child_project_reports_its_parent(self):
        parent = self.keystone.create_project()
        child = self.keystone.create_project(parent_id=parent.id)
        fetched = self.keystone.admin_conn.identity.get_project(child.id)
        self.assertEqual(parent.id, fetched.parent_id)

    def test_project_is_deleted_at_cleanup(self):
        inner = keystone.KeystoneFixture()
        inner.setUp()
        project = inner.create_project()
        inner.cleanUp()
        self.assertIsNone(
            self.keystone.admin_conn.identity.find_project(project.id))

    def test_user_is_deleted_at_cleanup(self):
        project = self.keystone.create_project()
        inner = keystone.KeystoneFixture()
        inner.setUp()
        user = inner.create_user(project.id)
        inner.cleanUp()
        self.assertIsNone(
            self.keystone.admin_conn.identity.find_user(user.id))

    def test_token_for_created_user_validates(self):
        project = self.keystone.create_project()
        user = self.keystone.create_user(project.id)
        token = self.keystone.issue_token(user.name, user.password,
                                          project.id)
        body = self._get('/auth/tokens',
                         headers={'X-Subject-Token': token})['token']
        self.assertEqual(user.id, body['user']['id'])
        self.assertEqual(project.id, body['project']['id'])

    def test_token_carries_the_roles_given(self):
        project = self.keystone.create_project()
        user = self.keystone.create_user(
            project.id, roles=('member', 'service',
                               keystone.unique_name('pq-role')))
        token = self.keystone.issue_token(user.name, user.password,
                                          project.id)
        body = self._get('/auth/tokens',
                         headers={'X-Subject-Token': token})['token']
        roles = {role['name'] for role in body['roles']}
        # Keystone adds implied roles too (member implies reader).
        self.assertLessEqual({'member', 'service', 'reader'}, roles)
        self.assertNotIn('admin', roles)

    def test_issue_token_rejects_a_wrong_password(self):
        project = self.keystone.create_project()
        user = self.keystone.create_user(project.id)
        self.assertRaises(RuntimeError, self.keystone.issue_token,
                          user.name, 'wrong-' + user.password, project.id)
