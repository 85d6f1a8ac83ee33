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
"""What of a Galera node's state and settings refuses or loses admissions
(the upgrade check's "Ledger on Galera"). The reading of a real node is
tested on the Galera cluster (tests/functional/ha)."""

import dataclasses

import testtools

from placement_quota.ledger.db import galera

HEALTHY = galera.Node(
    cluster_status='Primary', state='Synced', ready=True, cluster_size=3,
    binlog_format='ROW', flush_log_at_trx_commit=1, sync_wait=1,
    max_ws_rows=0, max_ws_size=2147483647, osu_method='TOI')


def findings(**changes):
    return galera.findings(dataclasses.replace(HEALTHY, **changes))


class TestFindings(testtools.TestCase):

    def test_a_healthy_three_node_cluster_has_nothing_to_say(self):
        self.assertEqual([], findings())

    def test_a_node_outside_the_primary_component_is_a_failure(self):
        [(severity, message)] = findings(cluster_status='non-Primary')
        self.assertEqual(galera.FAILURE, severity)
        self.assertIn('wsrep_cluster_status non-Primary', message)

    def test_a_node_not_synced_is_a_failure(self):
        [(severity, message)] = findings(state='Donor/Desynced')
        self.assertEqual(galera.FAILURE, severity)
        self.assertIn('Primary and Synced', message)

    def test_a_binlog_format_other_than_row_is_a_failure(self):
        [(severity, message)] = findings(binlog_format='STATEMENT')
        self.assertEqual(galera.FAILURE, severity)
        self.assertIn('binlog_format = ROW', message)

    def test_flushing_the_log_lazily_is_a_warning(self):
        [(severity, message)] = findings(flush_log_at_trx_commit=2)
        self.assertEqual(galera.WARNING, severity)
        self.assertIn('innodb_flush_log_at_trx_commit is 2', message)

    def test_no_sync_wait_is_a_warning(self):
        [(severity, message)] = findings(sync_wait=0)
        self.assertEqual(galera.WARNING, severity)
        self.assertIn('mysql_wsrep_sync_wait', message)

    def test_fewer_than_three_nodes_is_a_warning(self):
        [(severity, message)] = findings(cluster_size=2)
        self.assertEqual(galera.WARNING, severity)
        self.assertIn('2 node(s)', message)

    def test_failures_come_before_warnings(self):
        found = findings(flush_log_at_trx_commit=0, binlog_format='MIXED')
        self.assertEqual([galera.FAILURE, galera.WARNING],
                         [severity for severity, _ in found])
