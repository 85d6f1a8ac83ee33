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
"""With ``[oslo_messaging_rabbit] rabbit_quorum_queue = true`` (the
listener's and Blazar's), the listener survives the death of the node
leading its queue without losing a notification."""

import time

from testtools import content

from placement_quota.ledger import models
from tests.functional.ha_messaging import base

ACTIVE, TERMINATED = models.ACTIVE, models.TERMINATED


class TestQuorumQueues(base.ClusterListenerTestCase):

    rabbit_options = {'rabbit_quorum_queue': True}
    lease_count = 10

    def test_killing_the_queue_leader_mid_stream_loses_no_event(self):
        endpoint = base.RecordingEndpoint(self.ledger)
        self.start_listener(endpoint=endpoint)
        pool = self.conf.lifecycle.pool
        self.create_all()
        leader = self.cluster.queue_node(self.broker.vhost, pool)

        # Published, then the leader dies at once: some are applied, some
        # are on their way to the listener or not yet acknowledged.
        self.publish(*[('start', 'l%d' % n) for n in range(6)] +
                     [('end', 'l%d' % n) for n in range(3)])
        killed_at = time.monotonic()
        self.cluster.kill(leader)
        # Published while the node is dead.
        after = self.publish(
            ('end', 'l3'), ('end', 'l4'),
            *[('start', 'l%d' % n) for n in range(6, 10)],
            ('end', 'l6'), ('end', 'l7'))

        self.wait_for_states({
            'l0': TERMINATED, 'l1': TERMINATED, 'l2': TERMINATED,
            'l3': TERMINATED, 'l4': TERMINATED, 'l5': ACTIVE,
            'l6': TERMINATED, 'l7': TERMINATED, 'l8': ACTIVE,
            'l9': ACTIVE})
        gap = endpoint.first_after(killed_at, after)
        self.addDetail('reconnect-gap', content.text_content(
            'the first notification published after the kill was handled '
            '%.2fs after it' % gap))
        # Another node leads the queue now.
        self.assertNotEqual(leader.nodename, self.cluster.queue_node(
            self.broker.vhost, pool).nodename)
        self.assertEqual(0, endpoint.counts['failed'])
