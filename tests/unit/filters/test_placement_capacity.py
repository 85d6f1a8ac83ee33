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
"""PlacementCapacityFilter on the in-process Placement of this test process
(no subprocess, no socket): each test makes compute nodes of its own."""

import datetime

from placement_quota.filters import placement_capacity
from placement_quota.ledger.db import locks
from placement_quota.ledger import models
from tests.builders import day
from tests.builders import hosts
from tests.builders import instances
from tests.builders import lease
from tests import ledger_helpers
from tests.unit.filters import base


class TestPlacementCapacityFilter(ledger_helpers.PlacementHelpers,
                                  base.LedgerTestCase):

    filter_class = placement_capacity.PlacementCapacityFilter

    def placement(self):
        return self.in_process_placement()

    def setUp(self):
        super().setUp()
        self.host1, self.uuid1 = self.compute_node()
        self.host2, self.uuid2 = self.compute_node()
        self.both = (self.host1, self.host2)

    def test_instances_that_fit_are_allowed_and_recorded(self):
        self.create(lease(day(2), day(3),
                          instances(4, vcpus=4, hosts=self.both)))
        entry, = self.entries()
        self.assertEqual(16, entry.instance_vcpus)

    def test_more_instances_than_fit_are_denied_with_numbers(self):
        message = self.assertDenied(self.create, lease(
            day(2), day(3), instances(5, vcpus=4, hosts=self.both)))
        self.assertEqual('Only 4 instances of DISK_GB=1, MEMORY_MB=512, '
                         'VCPU=4 fit on the 2 eligible hosts now; the '
                         'reservation asks for 5.', message)

    def test_other_reservations_in_the_window_hold_capacity(self):
        self.create(lease(day(2), day(4), instances(2, vcpus=4,
                                                    hosts=self.both),
                          name='a'), project='other')
        message = self.assertDenied(self.create, lease(
            day(3), day(5), instances(3, vcpus=4, hosts=self.both),
            name='b'))
        self.assertEqual(
            'Not enough free VCPU on the 2 eligible hosts from 2026-06-03 '
            '00:00 to 2026-06-05 00:00: the lease asks for 12, other leases '
            'hold 8 already reserved at the peak, from 2026-06-03 00:00 to '
            '2026-06-04 00:00, and 16 is free in Placement now.', message)

    def test_reservations_outside_the_window_do_not_hold_capacity(self):
        self.create(lease(day(2), day(4), instances(2, vcpus=4,
                                                    hosts=self.both),
                          name='a'), project='other')
        self.create(lease(day(4), day(5), instances(4, vcpus=4,
                                                    hosts=self.both),
                          name='b'))
        self.assertEqual(1, len(self.entries()))

    def test_current_allocations_reduce_the_free_capacity(self):
        self.allocate(self.uuid1, 'someone', VCPU=6)
        message = self.assertDenied(self.create, lease(
            day(2), day(3), instances(3, vcpus=4, hosts=self.both)))
        self.assertIn('Only 2 instances', message)

    def test_reservations_on_other_hosts_do_not_count(self):
        other, _ = self.compute_node()
        self.create(lease(day(2), day(4), instances(2, vcpus=4,
                                                    hosts=[other]),
                          name='a'), project='other')
        self.create(lease(day(2), day(4), instances(4, vcpus=4,
                                                    hosts=self.both),
                          name='b'))
        self.assertEqual(1, len(self.entries()))

    def test_hosts_and_sharing_providers_are_not_read_again_by_each_lease(
            self):
        for name in ('a', 'b', 'c'):
            self.create(lease(day(2), day(3), instances(
                1, vcpus=4, hosts=self.both), name=name))
        # One listing names both hosts; the sharing providers' classes
        # are read once in their bound (a minute).
        self.assertEqual({'listing': 1, 'name': 0, 'sharing': 1},
                         self.services.provider_directory.calls)

    def test_leases_without_instances_do_not_read_placement(self):
        self.create(lease(day(2), day(3), hosts('x')))
        self.assertEqual((1, 0), (len(self.entries()),
                                  self.services.placement_asked))

    def test_updated_lease_does_not_hold_capacity_against_itself(self):
        first = lease(day(2), day(4), instances(3, vcpus=4, hosts=self.both),
                      name='a')
        self.create(first)
        self.update(first, lease(day(2), day(4), instances(
            4, vcpus=4, hosts=self.both), name='a'))
        entry, = self.entries()
        self.assertEqual(16, entry.instance_vcpus)

    def test_ended_lease_frees_the_rest_of_its_window(self):
        first = lease(day(2), day(9), instances(4, vcpus=4, hosts=self.both),
                      name='a')
        self.create(first, project='other')
        self.now = datetime.datetime(2026, 6, 3, 0)
        self.end(first, project='other')
        self.create(lease(day(4), day(5), instances(4, vcpus=4,
                                                    hosts=self.both)))
        self.assertEqual(1, len(self.entries()))

    def test_admission_on_allocated_hosts_locks_their_pools(self):
        found = self.filter.lease_locks(self.filter.lease(lease(
            day(2), day(3), instances(2, vcpus=4, hosts=self.both))))
        self.assertEqual(sorted(locks.host_pool_lock(name)
                                for name in self.both) +
                         [locks.shared(models.GLOBAL_LOCK)], found)

    def test_admission_without_allocated_hosts_locks_the_cloud(self):
        self.assertEqual([models.GLOBAL_LOCK], self.filter.lease_locks(
            self.filter.lease(lease(day(2), day(3), instances(2)))))

    def test_admission_counting_every_host_locks_the_cloud(self):
        self.set(capacity_hosts='all')
        self.assertEqual([models.GLOBAL_LOCK], self.filter.lease_locks(
            self.filter.lease(lease(day(2), day(3), instances(
                2, vcpus=4, hosts=self.both)))))

    def test_admission_without_instances_locks_no_pool(self):
        self.assertEqual([], self.filter.lease_locks(
            self.filter.lease(lease(day(2), day(3), hosts('x')))))

    def test_host_name_with_a_space_locks_the_pool_its_entry_names(self):
        found = self.filter.lease_locks(self.filter.lease(lease(
            day(2), day(3), instances(1, hosts=['rack 1']))))
        self.assertEqual(locks.host_pool_lock('rack%201'), found[0])

    def test_exempted_project_is_not_checked(self):
        chain = self.chain(exempted=[self.project])
        self.assertIsNone(self.create(lease(day(2), day(3), instances(
            9, vcpus=4, hosts=self.both)), via=chain))


class TestEntriesOfAnyLength(ledger_helpers.PlacementHelpers,
                             base.LedgerTestCase):
    """Entries an earlier version recorded (a denied lease ending in year
    9999 or starting in year 1, with its unclamped duration) break no
    later instance check, of any project, also after a restart."""

    filter_class = placement_capacity.PlacementCapacityFilter
    placement = TestPlacementCapacityFilter.placement

    def setUp(self):
        super().setUp()
        self.both = (self.compute_node()[0], self.compute_node()[0])

    def bad_row(self, start, end, state=models.DENIED):
        with self.ledger.engine.begin() as connection:
            connection.execute(models.leases.insert().values(
                project_id='prober', provisional_key='k', start_date=start,
                end_date=end, effective_end=end, state=state,
                duration_s=int((end - start).total_seconds()),
                amounts={}, lease={}, hourly_rate=0, charged=0,
                instance_vcpus=0, instance_memory_mb=0, instance_disk_gb=0,
                instance_hosts='', created_at=datetime.datetime(2026, 6, 1)))

    def test_denied_lease_ending_in_year_9999_breaks_no_later_check(self):
        self.bad_row(datetime.datetime(2026, 6, 2),
                     datetime.datetime(9999, 12, 31))
        self.create(lease(day(2), day(3), instances(2, hosts=self.both)))
        self.assertEqual(['pending'], self.states())

    def test_denied_lease_starting_in_year_1_breaks_no_later_check(self):
        self.bad_row(datetime.datetime(1, 1, 1),
                     datetime.datetime(2026, 6, 5))
        self.create(lease(day(2), day(3), instances(2, hosts=self.both)))
        self.assertEqual(['pending'], self.states())

    def test_live_lease_of_any_length_breaks_no_later_check(self):
        self.bad_row(datetime.datetime(1, 1, 1),
                     datetime.datetime(9999, 12, 31), state=models.PENDING)
        self.create(lease(day(2), day(3), instances(2, hosts=self.both)))
        self.assertEqual(['pending'], self.states())

    def test_bad_entry_breaks_no_check_after_a_restart(self):
        self.bad_row(datetime.datetime(2026, 6, 2),
                     datetime.datetime(9999, 12, 31))
        self.services.close()
        restarted = base.Services(self.conf, placement=self.placement_client)
        self.addCleanup(restarted.close)
        self.create(lease(day(2), day(3), instances(2, hosts=self.both)),
                    via=placement_capacity.PlacementCapacityFilter(
                        self.conf, services=restarted))
        self.assertEqual(['pending'], self.states())
