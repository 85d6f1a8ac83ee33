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
"""The benchmarks' shared client (tools/bench/common.py)."""

import json

import testtools

from placement_quota.httpserver import server as wsgi_server
from tools.bench import common


class TestTimeCheckCreates(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.received = []

        def app(environ, start_response):
            body = json.loads(environ['wsgi.input'].read(
                int(environ['CONTENT_LENGTH'])))
            self.received.append((environ['PATH_INFO'], body))
            status = '204 No Content' if body['ok'] else '403 Forbidden'
            start_response(status, [('Content-Length', '0')])
            return [b'']
        self.server = wsgi_server.WSGIServer(app, threads=1).start()
        self.addCleanup(self.server.stop)

    def test_each_body_is_posted_to_check_create_and_timed(self):
        bodies = [{'ok': True}, {'ok': False}, {'ok': True}]
        timings, statuses = common.time_check_creates(self.server.url,
                                                      iter(bodies))
        self.assertEqual([('/v1/check-create', b) for b in bodies],
                         self.received)
        self.assertEqual(3, len(timings))
        self.assertTrue(all(t > 0 for t in timings), timings)
        self.assertEqual({204: 2, 403: 1}, statuses)
