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
"""What a Galera cluster under the ledger says about itself, and what of
it loses data or admissions (``placement-quota-status upgrade check``,
``db purge``).

:func:`read` asks the node a connection is on for its state
(``wsrep_*`` status) and the settings that matter; :func:`findings`
judges them: ``(severity, message)`` pairs, each saying what to change.

* **Failures** (the cluster cannot take admissions, or ``db sync`` must
  not run now): the node is not in the primary component, not synced or
  not ready; ``binlog_format`` is not ``ROW`` (Galera replicates rows).
* **Warnings**: ``innodb_flush_log_at_trx_commit`` other than 1 (a node
  that crashes recovers from the others, but a power cut of every node
  at once loses the last second of admissions, which Blazar acted on);
  ``wsrep_sync_wait`` 0 on the ledger's connections (``[database]
  mysql_wsrep_sync_wait = 0``: a read right after a commit on another
  node may miss it); fewer than three nodes (the death of one leaves no
  majority: the cluster stops taking writes).
"""

import dataclasses

FAILURE = 'failure'
WARNING = 'warning'

_STATUS = ('wsrep_cluster_status', 'wsrep_local_state_comment',
           'wsrep_ready', 'wsrep_cluster_size')
_VARIABLES = ('wsrep_on', 'binlog_format', 'innodb_flush_log_at_trx_commit',
              'wsrep_max_ws_rows', 'wsrep_max_ws_size', 'wsrep_OSU_method')


@dataclasses.dataclass
class Node:
    """The state of a Galera node, and the settings the ledger cares
    about (as strings, the server's spelling)."""

    cluster_status: str
    state: str
    ready: bool
    cluster_size: int
    binlog_format: str
    flush_log_at_trx_commit: int
    sync_wait: int
    max_ws_rows: int
    max_ws_size: int
    osu_method: str


def _pairs(connection, statement, names):
    rows = connection.exec_driver_sql(statement).all()
    wanted = {name.lower() for name in names}
    return {str(name).lower(): str(value) for name, value in rows
            if str(name).lower() in wanted}


def read(connection):
    """The :class:`Node` a SQLAlchemy ``connection`` is on, or None when
    it is no Galera node (``wsrep_on`` is not ON)."""
    variables = _pairs(connection, "SHOW VARIABLES WHERE Variable_name IN "
                       "('%s')" % "', '".join(_VARIABLES), _VARIABLES)
    if variables.get('wsrep_on', '').upper() != 'ON':
        return None
    status = _pairs(connection, "SHOW STATUS WHERE Variable_name IN "
                    "('%s')" % "', '".join(_STATUS), _STATUS)
    sync_wait = connection.exec_driver_sql(
        'SELECT @@SESSION.wsrep_sync_wait').scalar()
    return Node(
        cluster_status=status.get('wsrep_cluster_status', ''),
        state=status.get('wsrep_local_state_comment', ''),
        ready=status.get('wsrep_ready', '').upper() == 'ON',
        cluster_size=int(status.get('wsrep_cluster_size') or 0),
        binlog_format=variables.get('binlog_format', '').upper(),
        flush_log_at_trx_commit=int(
            variables.get('innodb_flush_log_at_trx_commit') or 0),
        sync_wait=int(sync_wait or 0),
        max_ws_rows=int(variables.get('wsrep_max_ws_rows') or 0),
        max_ws_size=int(variables.get('wsrep_max_ws_size') or 0),
        osu_method=variables.get('wsrep_osu_method', ''))


def findings(node):
    """``[(severity, message)]``: what of ``node``'s state and settings
    refuses admissions or loses them (:data:`FAILURE` first)."""
    found = []
    if node.cluster_status != 'Primary' or not node.ready or \
            node.state != 'Synced':
        found.append((FAILURE, (
            'The Galera node is not ready to take admissions or "db sync" '
            '(wsrep_cluster_status %s, wsrep_local_state_comment %s, '
            'wsrep_ready %s): wait until it is Primary and Synced.'
            % (node.cluster_status or '?', node.state or '?',
               'ON' if node.ready else 'OFF'))))
    if node.binlog_format != 'ROW':
        found.append((FAILURE, (
            'binlog_format is %s: Galera replicates rows only; set '
            'binlog_format = ROW on every node.' % node.binlog_format)))
    if node.flush_log_at_trx_commit != 1:
        found.append((WARNING, (
            'innodb_flush_log_at_trx_commit is %d: a node that crashes '
            'recovers from the others, but if every node stops at once (a '
            'power cut) the admissions of the last second are lost although '
            'Blazar acted on them; set it to 1 unless the nodes cannot fail '
            'together.' % node.flush_log_at_trx_commit)))
    if node.sync_wait == 0:
        found.append((WARNING, (
            'wsrep_sync_wait is 0 on the ledger\'s connections ([database] '
            'mysql_wsrep_sync_wait = 0): a read right after a commit on '
            'another node (listen, reconcile, reports) may miss it; leave '
            'the option unset (the ledger uses 1) or set it to 1.')))
    if node.cluster_size < 3:
        found.append((WARNING, (
            'The Galera cluster has %d node(s): when one dies no majority '
            'is left and the cluster stops taking writes; run three.'
            % node.cluster_size)))
    return sorted(found, key=lambda item: item[0] != FAILURE)


def describe(node):
    """One line: the node's state, for a check that found nothing
    wrong."""
    return ('a Galera cluster of %d nodes (this node %s, %s; schema '
            'changes in %s: "db sync" pauses writes on every node while '
            'each runs)' % (node.cluster_size, node.state,
                            node.cluster_status, node.osu_method or 'TOI'))
