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
"""Without quorum queues (oslo.messaging's default: a classic queue, on
the node the listener was connected to when it declared it), the
notifications Blazar publishes while that node is dead and the listener
has not declared its queue again elsewhere are lost; ``placement-quota
reconcile``, which compares the ledger with Blazar's lease list, finds
and settles them."""

import datetime
import json
import os
import subprocess
import sys

from oslo_utils import timeutils
from testtools import content

from placement_quota.ledger import models
from tests.fixtures import blazar as blazar_fixture
from tests.fixtures import keystone as keystone_fixture
from tests.functional.ha_messaging import base
from tests.functional.lifecycle import base as lifecycle_base

ACTIVE, TERMINATED, PENDING = models.ACTIVE, models.TERMINATED, \
    models.PENDING

_RECONCILE_CONFIG = """\
[database]
connection = sqlite:///{tmp}/ledger.sqlite

[placement]
embedded = true
embedded_state_dir = {tmp}/reconcile-placement

{blazar}endpoint_override = {endpoint}
"""


class TestClassicQueues(base.ClusterListenerTestCase):

    lease_count = 6
    real_clock = True

    def lease_window(self):
        # Around now: reconcile judges Blazar's leases at the real time.
        start = timeutils.utcnow().replace(second=0, microsecond=0) - \
            datetime.timedelta(hours=1)
        return start, start + datetime.timedelta(days=1)

    def test_reconcile_settles_the_events_lost_with_the_queue_node(self):
        # The listener waits 3 s (instead of 1) before it reconnects: the
        # window in which its queue exists nowhere is far longer than the
        # few milliseconds the three notifications after the kill take.
        lifecycle_base.set_rabbit_options(self.conf,
                                          {'kombu_reconnect_delay': 3.0})
        self.start_listener()
        pool = self.conf.lifecycle.pool
        self.create_all()
        self.publish(*[('start', 'l%d' % n) for n in range(4)])
        self.wait_for_states({'l0': ACTIVE, 'l1': ACTIVE, 'l2': ACTIVE,
                              'l3': ACTIVE})
        holder = self.cluster.queue_node(self.broker.vhost, pool)
        # Blazar publishes through another node (oslo.messaging picks one
        # of the URL's at random; this is the case where Blazar is not
        # cut off too and publishes at once).
        survivor = next(n for n in self.cluster.nodes if n is not holder)
        self.notifier, transport = lifecycle_base.blazar_notifier(
            survivor.vhost_url(self.broker.vhost), self.rabbit_options)
        self.addCleanup(transport.cleanup)

        self.cluster.kill(holder)
        lost = self.publish(('end', 'l0'), ('end', 'l1'), ('start', 'l4'))
        self.wait_for_new_holder(pool, holder)
        self.publish(('end', 'l2'), ('start', 'l5'))
        self.wait_for_states({'l2': TERMINATED, 'l5': ACTIVE})
        before = self.states_by_name()
        # Lost: l0 and l1 still active, l4 still pending.
        self.assertEqual({'l0': ACTIVE, 'l1': ACTIVE, 'l2': TERMINATED,
                          'l3': ACTIVE, 'l4': PENDING, 'l5': ACTIVE},
                         before)
        self.addDetail('events-lost', content.text_content(
            '%d of %d lost: %s' % (len(lost), len(self.published), lost)))

        findings = self.reconcile({'l0': 'TERMINATED', 'l1': 'TERMINATED',
                                   'l2': 'TERMINATED', 'l3': 'ACTIVE',
                                   'l4': 'ACTIVE', 'l5': 'ACTIVE'})
        self.assertEqual(
            {('lease_state', self.leases[name][1], True)
             for name in ('l0', 'l1', 'l4')},
            {(row['Kind'], row['Subject'].split('(lease ')[1].split(',')[0],
              row['Result'].startswith('fixed'))
             for row in findings if row['Kind'].startswith('lease')})
        self.assertEqual({'l0': TERMINATED, 'l1': TERMINATED,
                          'l2': TERMINATED, 'l3': ACTIVE, 'l4': ACTIVE,
                          'l5': ACTIVE}, self.states_by_name())

    def reconcile(self, statuses):
        """Blazar's API with the leases in ``statuses`` (``{name: Blazar
        status}``), then ``placement-quota reconcile --fix`` on the
        ledger and that Blazar; its findings (JSON rows)."""
        keystone = self.useFixture(keystone_fixture.KeystoneFixture())
        blazar = blazar_fixture.BlazarServer(keystone).start()
        self.addCleanup(blazar.stop)
        start, end = self.window
        blazar.seed([
            {'id': self.leases[name][1], 'name': name,
             'project_id': self.project, 'user_id': lifecycle_base.USER,
             'start_date': start, 'end_date': end, 'status': status,
             'trust_id': 't', 'reservations': []}
            for name, status in sorted(statuses.items())])
        config = os.path.join(self.tmp, 'reconcile.conf')
        with open(config, 'w') as f:
            f.write(_RECONCILE_CONFIG.format(
                tmp=self.tmp, blazar=keystone.admin_section('blazar'),
                endpoint=blazar.endpoint))
        home = os.path.join(self.tmp, 'home')
        os.mkdir(home)
        result = subprocess.run(
            [sys.executable, '-m', 'placement_quota.cmd.main',
             '--config-file', config, 'reconcile', '--fix', '--no-progress',
             '-f', 'json'], cwd=self.tmp, capture_output=True, text=True,
            timeout=120, env=dict(os.environ, HOME=home,
                                  XDG_CACHE_HOME=os.path.join(home, 'c')))
        self.addDetail('reconcile-stderr', content.text_content(
            result.stderr))
        self.assertIn(result.returncode, (0, 1), result.stderr)
        return json.loads(result.stdout)
