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
"""The real Galera cluster and HAProxy behind tests.fixtures.galera and
tests.fixtures.haproxy."""

import testtools

from tests.fixtures import galera


class TestGaleraCluster(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(galera.GaleraDatabase(haproxy=True))
        self.cluster = self.db.cluster
        self.addCleanup(self.cluster.restore)

    def test_three_nodes_synced_started_without_sst(self):
        for node in self.cluster.nodes:
            status = node.wsrep_status()
            self.assertEqual((3, 'Synced', True, 'Primary'),
                             (status['cluster_size'], status['local_state'],
                              status['ready'], status['cluster_status']),
                             node)
        self.assertEqual(0, self.cluster.sst_count())

    def test_a_row_written_on_node_1_is_read_on_node_3(self):
        first, _, third = self.cluster.nodes
        first.query('CREATE TABLE `%s`.t (id INT PRIMARY KEY, v TEXT)'
                    % self.db.dbname)
        first.query("INSERT INTO `%s`.t VALUES (1, 'r\u00e9plique')"
                    % self.db.dbname)
        # wsrep_sync_wait: node 3 waits until it applied what the
        # cluster committed before it reads.
        conn = third.connect(self.db.dbname)
        try:
            with conn.cursor() as cur:
                cur.execute('SET SESSION wsrep_sync_wait = 1')
                cur.execute('SELECT id, v FROM t')
                self.assertEqual(((1, 'r\u00e9plique'),), cur.fetchall())
        finally:
            conn.close()

    def test_haproxy_reaches_node_1_and_a_backup_once_it_is_killed(self):
        proxy = self.db.haproxy

        def node_behind_proxy():
            conn = galera.pymysql.connect(
                host=galera.HOST, port=proxy.port, user='root',
                connect_timeout=5)
            try:
                with conn.cursor() as cur:
                    cur.execute('SELECT @@wsrep_node_name')
                    return cur.fetchone()[0]
            finally:
                conn.close()
        self.assertEqual('node1', node_behind_proxy())
        self.cluster.nodes[0].kill()
        proxy.wait_for_active('node2', timeout=10)
        self.assertEqual('node2', node_behind_proxy())
        self.cluster.nodes[0].start()
        proxy.wait_for_active('node1', timeout=10)
        self.assertEqual('node1', node_behind_proxy())
