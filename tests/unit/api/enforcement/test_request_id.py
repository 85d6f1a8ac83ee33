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
"""The request ids the service gives its answers."""

import os
import uuid

import testtools

from placement_quota.api.enforcement import app


class TestNewRequestId(testtools.TestCase):

    def test_is_req_and_a_version_4_uuid(self):
        request_id = app.new_request_id()
        self.assertRegex(request_id, app._GLOBAL_REQUEST_ID)
        found = uuid.UUID(request_id[len('req-'):])
        self.assertEqual(4, found.version)
        self.assertEqual(uuid.RFC_4122, found.variant)

    def test_does_not_repeat(self):
        drawn = [app.new_request_id() for _ in range(10000)]
        self.assertEqual(len(drawn), len(set(drawn)))

    def test_a_forked_worker_draws_other_ids_than_its_parent(self):
        # serve --workers forks: a generator not seeded again in the
        # child would give both the same ids from then on.
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:   # the child
            try:
                os.close(read_end)
                os.write(write_end, app.new_request_id().encode())
            finally:
                os._exit(0)
        os.close(write_end)
        ours = app.new_request_id()
        with os.fdopen(read_end, 'rb') as pipe:
            theirs = pipe.read().decode()
        os.waitpid(pid, 0)
        self.assertRegex(theirs, app._GLOBAL_REQUEST_ID)
        self.assertNotEqual(ours, theirs)
