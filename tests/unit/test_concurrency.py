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
"""Calls made side by side: all at once, each outcome in its place."""

import contextvars
import threading

import testtools

from placement_quota import concurrency

COLOUR = contextvars.ContextVar('colour', default=None)


class TestSideBySide(testtools.TestCase):

    def test_outcomes_are_in_the_order_of_the_calls(self):
        found = concurrency.side_by_side(
            [lambda i=i: i * 10 for i in range(5)])
        self.assertEqual([0, 10, 20, 30, 40], [o.get() for o in found])

    def test_the_calls_run_at_the_same_time(self):
        # Each waits until all three have started: in turn, they would
        # break the barrier.
        meeting = threading.Barrier(3, timeout=5)
        found = concurrency.side_by_side([meeting.wait] * 3)
        self.assertEqual([None] * 3, [o.error for o in found])

    def test_the_last_call_runs_in_the_calling_thread(self):
        found = concurrency.side_by_side([threading.current_thread] * 2)
        self.assertEqual([False, True], [
            o.get() is threading.current_thread() for o in found])

    def test_an_exception_is_the_outcome_of_its_call_alone(self):
        def fail():
            raise ValueError('no')
        first, second, third = concurrency.side_by_side(
            [lambda: 1, fail, lambda: 3])
        self.assertEqual((1, 'no', 3),
                         (first.get(), str(second.error), third.get()))

    def test_get_raises_what_the_call_raised(self):
        def fail():
            raise KeyError('k')
        outcome, = concurrency.side_by_side([fail])
        self.assertRaises(KeyError, outcome.get)

    def test_each_call_sees_the_callers_context(self):
        token = COLOUR.set('blue')
        self.addCleanup(COLOUR.reset, token)
        found = concurrency.side_by_side([COLOUR.get] * 3)
        self.assertEqual(['blue'] * 3, [o.get() for o in found])

    def test_no_call_no_outcome(self):
        self.assertEqual([], concurrency.side_by_side([]))
