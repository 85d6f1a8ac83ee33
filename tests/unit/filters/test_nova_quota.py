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
"""NovaQuotaFilter: reserved peaks against Nova unified limits read from a
limits file, without the current usage (so without Placement)."""

import datetime
import os

from placement_quota.filters import nova_quota
from tests.builders import day
from tests.builders import floatingips
from tests.builders import hosts
from tests.builders import instances
from tests.builders import lease
from tests.unit.filters import base

LIMITS = """\
model: flat
registered_limits: {servers: 10, class:VCPU: 20}
projects:
  project-a: {limits: {class:VCPU: 16}}
"""


class TestNovaQuotaFilter(base.LedgerTestCase):

    filter_class = nova_quota.NovaQuotaFilter
    options = {('enforcement', 'nova_quota_source'): 'file',
               ('enforcement', 'nova_quota_include_usage'): False}

    def setUp(self):
        super().setUp()
        path = os.path.join(self.tmp, 'nova-limits.yaml')
        with open(path, 'w') as f:
            f.write(LIMITS)
        self.set(nova_quota_limits_file=path)

    def test_lease_within_the_quota_is_allowed_and_recorded(self):
        self.create(lease(day(2), day(3), instances(4, vcpus=4)))
        entry, = self.entries()
        self.assertEqual(16, entry.amounts['class:VCPU'])

    def test_overlapping_leases_add_up_against_the_quota(self):
        self.create(lease(day(2), day(4), instances(3, vcpus=4), name='a'))
        message = self.assertDenied(self.create, lease(
            day(3), day(5), instances(2, vcpus=4), name='b'))
        self.assertEqual(
            'Nova quota of project project-a for class:VCPU: the lease asks '
            'for 8 from 2026-06-03 00:00 to 2026-06-05 00:00, 12 already '
            'reserved at the peak, from 2026-06-03 00:00 to 2026-06-04 '
            '00:00, and 0 in use now; the quota is 16.', message)

    def test_adjacent_leases_do_not_add_up(self):
        self.create(lease(day(2), day(4), instances(3, vcpus=4), name='a'))
        self.create(lease(day(4), day(5), instances(4, vcpus=4), name='b'))
        self.assertEqual(2, len(self.entries()))

    def test_nested_lease_counts_against_its_container(self):
        self.create(lease(day(2), day(9), instances(2, vcpus=4), name='a'))
        self.create(lease(day(4), day(5), instances(1, vcpus=4), name='b'))
        message = self.assertDenied(self.create, lease(
            day(3), day(6), instances(2, vcpus=4), name='c'))
        self.assertMentions(message, '12 already reserved at the peak, from '
                            '2026-06-04 00:00 to 2026-06-05 00:00')

    def test_registered_limit_applies_to_a_project_without_its_own(self):
        message = self.assertDenied(self.create, lease(
            day(2), day(3), instances(6, vcpus=4)), project='other')
        self.assertMentions(message, 'project other for class:VCPU',
                            'the quota is 20.')

    def test_other_projects_reservations_do_not_count(self):
        self.create(lease(day(2), day(3), instances(4, vcpus=4)),
                    project='other')
        self.create(lease(day(2), day(3), instances(4, vcpus=4)))
        self.assertEqual(1, len(self.entries()))

    def test_hosts_count_as_instances(self):
        self.create(lease(day(2), day(3), hosts(*'abcdefgh'), name='a'))
        message = self.assertDenied(self.create, lease(
            day(2), day(3), instances(3, vcpus=1), name='b'))
        self.assertMentions(message, 'for servers', '8 already reserved',
                            'the quota is 10.')

    def test_hosts_do_not_count_when_told_not_to(self):
        self.set(nova_quota_hosts_as_instances=False)
        self.create(lease(day(2), day(3), hosts(*'abcdefgh'), name='a'))
        self.create(lease(day(2), day(3), instances(3, vcpus=1), name='b'))
        self.assertEqual(2, len(self.entries()))

    def test_lease_without_nova_resources_is_not_checked(self):
        self.set(nova_quota_limits_file=os.path.join(self.tmp, 'missing'))
        self.create(lease(day(2), day(3), floatingips(3)))
        self.assertEqual(1, len(self.entries()))

    def test_file_source_without_a_file_is_an_error_saying_so(self):
        self.conf.clear_override('nova_quota_limits_file', 'enforcement')
        error = self.assertRaises(ValueError, self.create, lease(
            day(2), day(3), instances(1)))
        self.assertIn('nova_quota_source = file needs '
                      'nova_quota_limits_file', str(error))

    def test_updated_lease_is_not_counted_twice(self):
        first = lease(day(2), day(3), instances(3, vcpus=4), name='a')
        self.create(first)
        self.update(first, lease(day(2), day(4), instances(4, vcpus=4),
                                 name='a'))
        entry, = self.entries()
        self.assertEqual(16, entry.amounts['class:VCPU'])

    def test_update_past_the_quota_is_denied(self):
        first = lease(day(2), day(3), instances(3, vcpus=4), name='a')
        self.create(first)
        message = self.assertDenied(self.update, first, lease(
            day(2), day(4), instances(5, vcpus=4), name='a'))
        self.assertMentions(message, 'asks for 20', 'none reserved then',
                            'the quota is 16.')

    def test_ended_lease_frees_the_rest_of_its_window(self):
        first = lease(day(2), day(9), instances(4, vcpus=4), name='a')
        self.create(first)
        self.now = datetime.datetime(2026, 6, 3, 0)
        self.end(first)
        self.create(lease(day(4), day(5), instances(4, vcpus=4), name='b'))
        self.assertEqual(['terminated', 'pending'], self.states())

    def test_placement_is_not_needed_without_the_usage(self):
        self.create(lease(day(2), day(3), instances(1)))
        self.assertEqual(0, self.services.placement_asked)

    def test_exempted_project_is_not_limited(self):
        chain = self.chain(exempted=[self.project])
        self.assertIsNone(self.create(lease(day(2), day(3),
                                            instances(9, vcpus=4)),
                                      via=chain))
