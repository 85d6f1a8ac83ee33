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
"""``reconcile`` against a real Placement seeded with every kind of drift:
what a dry run finds, what ``--fix`` repairs, what it leaves."""

from placement_quota.ledger import models
from placement_quota.placement import reservations as rsv
from placement_quota.reconcile import model as m
from tests.functional.reconcile import base


def cls(rid):
    return rsv.reservation_class(rid)


class TestDryRun(base.CloudTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.report = cls.cloud.reconcile()

    def test_missing_reservation_provider_is_found_and_safe(self):
        found = self.findings(self.report, m.MISSING_PROVIDER)
        self.assertEqual(['provider blazar_cn-new'], list(found))
        self.assertIn('has no reservation provider',
                      found['provider blazar_cn-new'].reason)
        self.assertTrue(found['provider blazar_cn-new'].safe)

    def test_orphan_provider_without_compute_node_is_found(self):
        found = self.findings(self.report, m.ORPHAN_PROVIDER)
        self.assertEqual(['provider blazar_ghost'], list(found))
        self.assertIn('no compute node provider is named ghost',
                      found['provider blazar_ghost'].reason)
        self.assertTrue(found['provider blazar_ghost'].safe)

    def test_missing_class_of_a_running_reservation_is_found(self):
        found = self.findings(self.report, m.MISSING_CLASS)
        self.assertEqual(['class ' + cls(self.cloud.r['R2'])], list(found))

    def test_class_of_an_ended_reservation_is_an_orphan_safe_to_delete(self):
        found = self.findings(self.report, m.ORPHAN_CLASS)
        r3 = found['class ' + cls(self.cloud.r['R3'])]
        self.assertIn('ended at', r3.reason)
        self.assertTrue(r3.safe)

    def test_class_nobody_knows_is_an_orphan_left_to_the_operator(self):
        found = self.findings(self.report, m.ORPHAN_CLASS)
        unknown = found['class ' + cls(self.cloud.r['unknown'])]
        self.assertIn('no reservation in the ledger has this ID',
                      unknown.reason)
        self.assertFalse(unknown.safe)

    def test_class_with_allocations_is_never_safe_to_delete(self):
        found = self.findings(self.report, m.ORPHAN_CLASS)
        r4 = found['class ' + cls(self.cloud.r['R4'])]
        self.assertIn('1 allocated from it', r4.reason)
        self.assertFalse(r4.safe)

    def test_inventory_total_differing_from_the_reservation_is_found(self):
        found = self.findings(self.report, m.INVENTORY_MISMATCH)
        wrong = found['blazar_cn-b / ' + cls(self.cloud.r['R1'])]
        self.assertIn('holds 1 instance(s) on host cn-b', wrong.reason)
        self.assertIn('the inventory total is 3', wrong.reason)
        self.assertTrue(wrong.safe)

    def test_missing_inventory_of_a_running_reservation_is_found(self):
        found = self.findings(self.report, m.INVENTORY_MISMATCH)
        missing = found['blazar_cn-new / ' + cls(self.cloud.r['R2'])]
        self.assertIn('has no inventory of it', missing.reason)
        self.assertTrue(missing.safe)

    def test_inventory_on_a_host_the_reservation_does_not_hold(self):
        found = self.findings(self.report, m.INVENTORY_MISMATCH)
        extra = found['blazar_cn-c / ' + cls(self.cloud.r['R1'])]
        self.assertIn('has no allocation on host cn-c', extra.reason)
        self.assertTrue(extra.safe)

    def test_total_below_what_is_allocated_is_left_to_the_operator(self):
        found = self.findings(self.report, m.INVENTORY_MISMATCH)
        r5 = found['blazar_cn-c / ' + cls(self.cloud.r['R5'])]
        self.assertIn('2 are allocated', r5.reason)
        self.assertFalse(r5.safe)

    def test_correct_inventory_is_not_reported(self):
        subjects = [f.subject for f in self.report.findings]
        self.assertNotIn('blazar_cn-a / ' + cls(self.cloud.r['R1']),
                         subjects)

    def test_inventory_of_an_ended_reservation_is_found(self):
        found = self.findings(self.report, m.ENDED_INVENTORY)
        self.assertEqual(['blazar_cn-a / ' + cls(self.cloud.r['R3'])],
                         list(found))
        self.assertTrue(list(found.values())[0].safe)

    def test_allocations_of_an_ended_reservation_are_found(self):
        found = self.findings(self.report, m.ENDED_ALLOCATIONS)
        r4 = found['blazar_cn-b / ' + cls(self.cloud.r['R4'])]
        self.assertIn(self.cloud.consumer_r4, r4.reason)
        self.assertFalse(r4.safe)

    def test_reservation_on_a_disabled_compute_node_is_degraded(self):
        found = self.findings(self.report, m.DEGRADED)
        off = found['host cn-off / reservation %s (lease L6)'
                    % self.cloud.r['R6']]
        self.assertIn('COMPUTE_STATUS_DISABLED', off.reason)
        self.assertIn('resources changed after the start', off.reason)
        self.assertFalse(off.safe)

    def test_reservation_on_a_gone_compute_node_is_missing_resources(self):
        found = self.findings(self.report, m.DEGRADED)
        gone = found['host cn-gone / reservation %s (lease L7)'
                     % self.cloud.r['R7']]
        self.assertIn('gone from Placement', gone.reason)
        self.assertIn('missing resources before the start', gone.reason)

    def test_pending_entry_past_its_end_is_stuck_and_safe(self):
        found = self.findings(self.report, m.STUCK_PENDING)
        ended = [f for f in found.values() if 'never-ended' in f.subject]
        self.assertEqual(1, len(ended))
        self.assertTrue(ended[0].safe)
        self.assertIn('on-end was lost', ended[0].reason)

    def test_pending_entry_inside_its_window_is_left_to_the_operator(self):
        found = self.findings(self.report, m.STUCK_PENDING)
        inside = [f for f in found.values()
                  if 'never-confirmed' in f.subject]
        self.assertEqual(1, len(inside))
        self.assertFalse(inside[0].safe)

    def test_dry_run_changes_nothing(self):
        self.assertEqual(0, self.report.fix_calls)
        self.assertIn(cls(self.cloud.r['R3']), self.cloud.classes())

    def test_reading_costs_three_calls_plus_two_per_written_provider(self):
        # 5 reservation providers were written to (a, b, c; cn-off and
        # ghost never): 3 listings + inventories and allocations of 3.
        self.assertEqual(3 + 2 * 3, self.report.read_calls)


class TestFix(base.CloudTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fixed = cls.cloud.reconcile(fix=True)
        cls.again = cls.cloud.reconcile(fix=True)

    def results(self):
        return {(o.finding.kind, o.finding.subject): o.result
                for o in self.fixed.outcomes}

    def test_every_safe_finding_is_fixed(self):
        for outcome in self.fixed.outcomes:
            if outcome.finding.safe:
                self.assertEqual('fixed', outcome.result,
                                 outcome.finding.subject)

    def test_unsafe_findings_are_left_and_reported(self):
        left = {(o.finding.kind, o.result) for o in self.fixed.left}
        self.assertEqual({(k, 'left: needs an operator') for k in (
            m.ORPHAN_CLASS, m.INVENTORY_MISMATCH, m.ENDED_ALLOCATIONS,
            m.DEGRADED, m.STUCK_PENDING)}, left)

    def test_second_run_finds_nothing_fixable(self):
        self.assertEqual([], [f for f in self.again.findings if f.safe])
        self.assertEqual(0, self.again.fix_calls)

    def test_second_run_still_reports_what_needs_an_operator(self):
        self.assertEqual(sorted(o.finding.subject for o in self.fixed.left),
                         sorted(f.subject for f in self.again.findings))

    def test_class_with_allocations_is_never_removed(self):
        self.assertIn(cls(self.cloud.r['R4']), self.cloud.classes())
        self.assertEqual(1, self.cloud.inventories('cn-b')[
            cls(self.cloud.r['R4'])]['total'])

    def test_class_nobody_knows_is_kept(self):
        self.assertIn(cls(self.cloud.r['unknown']), self.cloud.classes())

    def test_ended_reservation_loses_its_inventory_and_class(self):
        self.assertNotIn(cls(self.cloud.r['R3']),
                         self.cloud.inventories('cn-a'))
        self.assertNotIn(cls(self.cloud.r['R3']), self.cloud.classes())

    def test_missing_provider_class_and_inventory_are_created(self):
        node = self.cloud.provider('cn-new')
        child = self.cloud.provider('blazar_cn-new')
        self.assertEqual(node['uuid'], child['parent_provider_uuid'])
        self.assertEqual(1, self.cloud.inventories('cn-new')[
            cls(self.cloud.r['R2'])]['total'])

    def test_wrong_total_is_set_to_the_reservation(self):
        self.assertEqual(1, self.cloud.inventories('cn-b')[
            cls(self.cloud.r['R1'])]['total'])

    def test_inventory_on_a_host_not_reserved_is_removed(self):
        inventories = self.cloud.inventories('cn-c')
        self.assertNotIn(cls(self.cloud.r['R1']), inventories)
        self.assertEqual(3, inventories[cls(self.cloud.r['R5'])]['total'])

    def test_orphan_provider_is_deleted(self):
        self.assertIsNone(self.cloud.provider('blazar_ghost'))

    def test_entry_stuck_past_its_end_is_terminated_and_the_other_kept(self):
        self.assertEqual(models.TERMINATED,
                         self.cloud.entry(self.cloud.stuck_ended).state)
        self.assertEqual(models.PENDING,
                         self.cloud.entry(self.cloud.stuck_open).state)
