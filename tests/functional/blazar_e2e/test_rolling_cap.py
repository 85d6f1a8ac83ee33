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
"""RollingCapFilter through stock Blazar 18, as a user with
python-blazarclient: a lease at the cap is created, one a minute past it
is refused with the rule's message."""

import datetime

from tests.functional.blazar_e2e import base

#: VCPU-hours a project may use in any week: one instance of 2 VCPUs
#: (base.instance_reservation()) for 4 hours.
CAP = 8


class TestRollingCap(base.BlazarE2ETestCase):

    def setUp(self):
        super().setUp()
        self.use_chain(['RollingCapFilter'],
                       {'rolling_cap_resources': ['class:VCPU']},
                       limits={'registered_limits': {'hours:class:VCPU': CAP}})

    def test_a_lease_at_the_cap_is_created_and_a_minute_more_refused(self):
        start = base.minute() + datetime.timedelta(hours=1)
        self.assertDenied(
            lambda: self.create_lease(start=start, hours=4 + 1 / 60),
            'Project %s may use at most 8 VCPU-hours (class:VCPU) in any 7 '
            'days' % self.project,
            'it would use 8.0333 (0.0 already reserved, 8.0333 by this '
            'lease): 8.0 more fit there.')
        lease = self.create_lease(start=start, hours=4)
        self.assertEqual('PENDING', self.client.lease.get(
            lease['id'])['status'])
