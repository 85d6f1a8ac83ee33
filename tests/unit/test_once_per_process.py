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
"""The test fixtures' "start once per test process" helper."""

import testtools

from tests.fixtures import process


class _Service:
    def __init__(self):
        self.stopped = False

    def stop(self):
        self.stopped = True


class TestOncePerProcess(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.starts = []

    def start(self):
        self.starts.append(_Service())
        return self.starts[-1]

    def test_the_service_starts_once_and_is_shared(self):
        once = process.OncePerProcess('svc', self.start)
        self.assertIs(once.get(), once.get())
        self.assertEqual(1, len(self.starts))

    def test_a_failed_start_is_raised_again_without_retrying(self):
        calls = []

        def failing():
            calls.append(1)
            raise OSError('port taken')

        once = process.OncePerProcess('svc', failing)
        self.assertRaises(OSError, once.get)
        error = self.assertRaises(RuntimeError, once.get)
        self.assertIn('svc failed to start earlier', str(error))
        self.assertIn('port taken', str(error))
        self.assertEqual(1, len(calls))

    def test_a_dead_service_is_started_again(self):
        once = process.OncePerProcess('svc', self.start,
                                      alive=lambda s: not s.stopped)
        first = once.get()
        first.stop()
        self.assertIsNot(first, once.get())
        self.assertEqual(2, len(self.starts))
