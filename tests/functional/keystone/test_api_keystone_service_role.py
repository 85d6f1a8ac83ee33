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
"""The service role (auth part of the hardening): in keystone mode every
enforcement call -- check-create, check-update and on-end, under ``/v1/`` and
without it (as Blazar's ``urljoin`` may send them) -- is accepted only from a
token carrying a service role. A real Keystone issues and validates the tokens.
"""

import requests

from tests.functional.keystone import test_api_keystone_auth as auth

PATHS = ['/v1/check-create', '/v1/check-update', '/v1/on-end',
         '/check-create', '/check-update', '/on-end', '/v1/check-create/']
#: A body no endpoint takes: past authentication it answers 400.
INVALID = {'context': {}, 'lease': 'not a lease'}


class TestEveryEnforcementPath(auth.KeystoneProtectedServiceTestCase):

    def setUp(self):
        super().setUp()
        self.server = self.start_service()

    def post(self, path, token=None, headers=None):
        headers = dict(headers or {})
        if token is not None:
            headers['X-Auth-Token'] = token
        return requests.post(self.server.url + path, json=INVALID,
                             headers=headers, timeout=30)

    def test_every_path_refuses_a_request_without_a_token_with_401(self):
        self.assertEqual([401] * len(PATHS),
                         [self.post(path).status_code for path in PATHS])

    def test_every_path_refuses_a_member_token_with_403(self):
        token = self.token_with_roles('member')
        answers = [self.post(path, token) for path in PATHS]
        self.assertEqual([(403, True)] * len(PATHS),
                         [(a.status_code, 'needs one of: service' in
                           a.json()['message']) for a in answers])

    def test_every_path_refuses_an_admin_token_without_service_role(self):
        token = self.token_with_roles('admin')
        self.assertEqual([403] * len(PATHS),
                         [self.post(path, token).status_code
                          for path in PATHS])

    def test_a_forged_roles_header_does_not_grant_the_service_role(self):
        token = self.token_with_roles('member')
        self.assertEqual([403] * len(PATHS), [
            self.post(path, token, {'X-Roles': 'service',
                                    'X-Service-Roles': 'service'}).status_code
            for path in PATHS])

    def test_every_path_takes_a_service_token_to_the_handler(self):
        token = self.token_with_roles('service')
        self.assertEqual([400] * len(PATHS),
                         [self.post(path, token).status_code
                          for path in PATHS])
