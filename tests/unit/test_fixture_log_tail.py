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
"""What a failing functional test shows of a service's log
(tests/fixtures/process.py ``log_tail``)."""

import os
import tempfile

import fixtures
import testtools

from tests.fixtures import process


class TestLogTail(testtools.TestCase):

    def log(self, *lines):
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, 'service.log')
        with open(path, 'w') as f:
            f.writelines(line + '\n' for line in lines)
        return path

    def test_the_last_lines_under_a_title_naming_the_file(self):
        path = self.log('one', 'two', 'three')
        self.assertEqual('Last lines of %s:\ntwo\nthree\n' % path,
                         process.log_tail(path, 'Service', 2))

    def test_lines_containing_skip_are_left_out_and_counted(self):
        path = self.log('manager: start_lease failed', 'api GET /lease',
                        'api GET /lease')
        self.assertEqual(
            "Last lines of %s (2 lines with 'api GET' left out):\n"
            "manager: start_lease failed\n" % path,
            process.log_tail(path, 'Service', 2, skip='api GET'))

    def test_a_missing_log_says_so(self):
        path = os.path.join(tempfile.gettempdir(), 'pq-no-such-dir', 'x.log')
        self.assertEqual('(no Service log at %s)' % path,
                         process.log_tail(path, 'Service'))
