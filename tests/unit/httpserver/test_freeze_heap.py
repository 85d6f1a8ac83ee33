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
"""A serving process puts its heap out of the garbage collector's reach
once built (``wsgi_server.freeze_heap``)."""

import gc
import weakref

import testtools

from placement_quota.httpserver import server as wsgi_server


class _Node:
    pass


class TestFreezeHeap(testtools.TestCase):

    def freeze(self):
        wsgi_server.freeze_heap()
        self.addCleanup(gc.unfreeze)

    def test_live_objects_are_out_of_the_collectors_reach(self):
        kept = [_Node()]
        self.freeze()
        self.assertGreater(gc.get_freeze_count(), 0)
        self.assertFalse(any(o is kept for o in gc.get_objects()))

    def test_garbage_is_collected_not_frozen(self):
        node = _Node()
        node.cycle = node
        gone = weakref.ref(node)
        del node
        self.freeze()
        self.assertIsNone(gone())
