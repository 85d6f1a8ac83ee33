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
"""``reconcile`` asking a real Blazar API (tests/fixtures/blazar.py), which
checks our token against the real Keystone, about what the ledger alone
cannot decide: classes of reservations the ledger has no ID for, and
entries Blazar may never have created."""

import uuid

import testtools

from placement_quota import conf as pq_conf
from placement_quota.ledger import models
from placement_quota.reconcile import model as m
from placement_quota.reconcile import readers
from tests.fixtures import blazar as blazar_fixture
from tests.fixtures import keystone as keystone_fixture
from tests.functional.reconcile import base


def _blazar_conf(keystone, endpoint, password=None):
    conf = pq_conf.new_config([], config_files=[])
    keystone.set_admin_options(conf, 'blazar')
    if password is not None:
        conf.set_override('password', password, group='blazar')
    conf.set_override('endpoint_override', endpoint, group='blazar')
    return conf


class TestWithBlazar(testtools.TestCase):
    """One real Placement, ledger, Keystone and Blazar for the class.

    Blazar has lease ``created`` (project p1) with a running instance
    reservation K, lease ``over`` whose reservation E is terminated, and
    lease ``broken``, degraded, whose reservation B its resource monitor
    marked ``missing_resources``.
    Placement has the classes of K, of E and of G (a reservation Blazar
    never had). The ledger has entries ``never-created`` (charged 7
    credits) and ``created`` (the fingerprint of Blazar's lease
    ``created``), both pending without a lease ID since two days; it knows
    none of K, E, G.
    """

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.keystone = keystone_fixture.KeystoneFixture()
        cls.keystone.setUp()
        cls.blazar = blazar_fixture.BlazarServer(cls.keystone).start()
        cls.cloud = c = base.Cloud()
        cls.known, cls.ended, cls.gone, cls.broken = (
            str(uuid.uuid4()) for _ in 'kegb')
        cls.known_class = c.resource_class(cls.known)
        cls.ended_class = c.resource_class(cls.ended)
        cls.gone_class = c.resource_class(cls.gone)
        start, end = c.now - 2 * base.DAY, c.now + base.DAY
        cls.never = c.lease([], start, end, name='never-created',
                            charged=7000000, created_at=start)
        cls.created = c.lease([('virtual:instance', None, {})], start, end,
                              name='created', created_at=start)
        cls.blazar.seed([
            {'name': 'created', 'project_id': 'p1', 'user_id': 'u1',
             'start_date': start, 'end_date': end, 'status': 'ACTIVE',
             'trust_id': 't1', 'reservations': [{
                 'id': cls.known, 'resource_id': str(uuid.uuid4()),
                 'resource_type': 'virtual:instance', 'status': 'active'}]},
            {'name': 'over', 'project_id': 'p2', 'user_id': 'u2',
             'start_date': c.now - 3 * base.DAY,
             'end_date': c.now - 2 * base.DAY, 'status': 'TERMINATED',
             'trust_id': 't2', 'reservations': [{
                 'id': cls.ended, 'resource_id': str(uuid.uuid4()),
                 'resource_type': 'virtual:instance',
                 'status': 'deleted'}]},
            {'name': 'broken', 'project_id': 'p3', 'user_id': 'u3',
             'start_date': start, 'end_date': end, 'status': 'ACTIVE',
             'degraded': True, 'trust_id': 't3', 'reservations': [{
                 'id': cls.broken, 'resource_id': str(uuid.uuid4()),
                 'resource_type': 'physical:host', 'status': 'active',
                 'missing_resources': True}]}])
        cls.reader = readers.BlazarReader.from_conf(
            _blazar_conf(cls.keystone, cls.blazar.endpoint))
        cls.dry = c.reconcile(blazar=cls.reader)
        cls.report = c.reconcile(fix=True, blazar=cls.reader)

    @classmethod
    def tearDownClass(cls):
        cls.cloud.close()
        cls.blazar.stop()
        cls.keystone.cleanUp()
        super().tearDownClass()

    def subjects(self, report, kind):
        return sorted(f.subject for f in report.findings if f.kind == kind)

    def test_reader_lists_every_projects_leases_as_admin(self):
        leases = self.reader.leases()
        self.assertEqual({('created', 'p1'), ('over', 'p2'),
                          ('broken', 'p3')},
                         {(lease['name'], lease['project_id'])
                          for lease in leases})

    def test_reader_gets_the_reservation_ids_blazar_gave(self):
        reservations = {r['id']: r['status'] for lease in self.reader.leases()
                        for r in lease['reservations']}
        self.assertEqual({self.known: 'active', self.ended: 'deleted',
                          self.broken: 'active'}, reservations)

    def test_blazar_is_not_asked_unless_configured(self):
        conf = pq_conf.new_config([], config_files=[])
        self.assertIsNone(readers.BlazarReader.from_conf(conf))

    def test_wrong_credentials_are_a_blazar_error_naming_blazar(self):
        reader = readers.BlazarReader.from_conf(_blazar_conf(
            self.keystone, self.blazar.endpoint, password='wrong'))
        error = self.assertRaises(readers.BlazarError, reader.leases)
        self.assertIn('Cannot authenticate for Blazar at %s'
                      % self.blazar.endpoint, str(error))

    def test_blazar_that_is_down_is_a_blazar_error(self):
        reader = readers.BlazarReader.from_conf(_blazar_conf(
            self.keystone, 'http://127.0.0.1:9/v1'))
        error = self.assertRaises(readers.BlazarError, reader.leases)
        self.assertIn('Cannot reach Blazar', str(error))

    def test_class_of_a_reservation_blazar_has_is_not_a_finding(self):
        self.assertNotIn('class ' + self.known_class,
                         self.subjects(self.dry, m.ORPHAN_CLASS))

    def test_class_of_a_reservation_blazar_ended_is_safe_to_delete(self):
        found = {f.subject: f for f in self.dry.findings}
        ended = found['class ' + self.ended_class]
        self.assertTrue(ended.safe)
        self.assertIn('Blazar says reservation', ended.reason)

    def test_class_blazar_never_had_is_safe_to_delete(self):
        found = {f.subject: f for f in self.dry.findings}
        gone = found['class ' + self.gone_class]
        self.assertTrue(gone.safe)
        self.assertIn('neither the ledger nor Blazar', gone.reason)

    def test_fix_deletes_only_the_classes_blazar_does_not_keep(self):
        classes = self.cloud.classes()
        self.assertIn(self.known_class, classes)
        self.assertNotIn(self.ended_class, classes)
        self.assertNotIn(self.gone_class, classes)

    def test_entry_blazar_never_created_is_abandoned_and_released(self):
        row = self.cloud.entry(self.never)
        self.assertEqual((models.ABANDONED, 0), (row.state, row.charged))

    def test_entry_blazar_has_is_bound_and_follows_its_state(self):
        row = self.cloud.entry(self.created)
        self.assertEqual(models.ACTIVE, row.state)
        self.assertIn(row.lease_id, [lease['id'] for lease in
                                     self.reader.leases()
                                     if lease['name'] == 'created'])

    def test_reservation_blazar_flagged_is_reported_degraded(self):
        degraded = [f for f in self.dry.findings if f.kind == m.DEGRADED]
        self.assertEqual(['reservation %s' % self.broken],
                         [f.subject.split(' (')[0] for f in degraded])
        self.assertIn('missing_resources', degraded[0].reason)
        self.assertFalse(degraded[0].safe)

    def test_every_safe_finding_with_blazar_is_fixed(self):
        self.assertEqual(
            [(m.ORPHAN_CLASS, 'fixed'), (m.ORPHAN_CLASS, 'fixed'),
             (m.DEGRADED, 'left: needs an operator'),
             (m.STUCK_PENDING, 'fixed: 7000000 micro-credits released'),
             (m.UNBOUND_ENTRY, 'fixed'), (m.LEASE_STATE, 'fixed'),
             (m.UNKNOWN_LEASE, 'left: needs an operator')],
            [(o.finding.kind, o.result) for o in self.report.outcomes])
