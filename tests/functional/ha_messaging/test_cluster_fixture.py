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
"""The three-node cluster of :mod:`tests.fixtures.rabbitmq_cluster`
works, and is hermetic."""

import os

from testtools import content
import testtools

from tests.fixtures import rabbitmq_cluster


class TestRabbitMQCluster(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.cluster = rabbitmq_cluster.shared()  # skips when not installed
        self.addCleanup(self.cluster.heal)

    def test_three_nodes_with_one_cookie_and_one_epmd_form_one_cluster(self):
        cluster = self.cluster
        self.addDetail('startup-seconds', content.text_content(
            '%.1f' % cluster.startup_seconds))
        names = [node.nodename for node in cluster.nodes]
        self.assertEqual(['pq-test-%d-%s@localhost' % (os.getpid(), name)
                          for name in 'abc'], names)
        self.assertEqual(names, cluster.running_nodes())
        self.assertEqual({cluster.epmd.port},
                         {node.epmd_port for node in cluster.nodes})
        self.assertEqual({cluster.home}, {node.home for node in cluster.nodes})
        self.assertTrue(all(node.workdir.startswith(cluster.workdir)
                            for node in cluster.nodes))
        self.assertEqual(
            'rabbit://%s/' % ','.join('guest:guest@127.0.0.1:%d' % node.port
                                      for node in cluster.nodes),
            cluster.transport_url)
        # Each its own AMQP and distribution port.
        ports = {node.port for node in cluster.nodes} | \
            {node.dist_port for node in cluster.nodes}
        self.assertEqual(6, len(ports))

    def test_killed_node_rejoins_the_cluster_when_restarted(self):
        cluster = self.cluster
        node = cluster.node('c')
        cluster.kill(node)
        self.assertFalse(node.alive())
        self.assertFalse(node.accepts_connections())
        cluster.restart(node)
        self.assertTrue(node.accepts_connections())
        self.assertEqual([n.nodename for n in cluster.nodes],
                         cluster.running_nodes())
