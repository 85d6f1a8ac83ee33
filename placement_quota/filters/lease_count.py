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
"""LeaseCountFilter: how many pending and active leases a project may hold.

The use case of Blazar's "Flexible Reservation Usage Enforcement" spec,
 "limiting the number of pending or active leases". The
count is the ledger's: leases allowed and not yet ended (a lease whose end
date passed, or whose on-end came, no longer counts). An update replaces
its lease and never changes the count.
"""

from oslo_config import cfg

from placement_quota.filters import ledger_base
from placement_quota.filters import measures


class LeaseCountFilter(ledger_base.LedgerFilter):
    """Deny a new lease when the project already holds the maximum."""

    reads_ahead = ('open_count',)

    enforcement_opts = [
        cfg.IntOpt(
            'max_leases_per_project', default=0, min=0,
            help='Most pending plus active leases one project may hold at '
                 'once; 0 means no limit. Counted in the ledger.'),
    ]

    def inert(self):
        if self.conf.enforcement.max_leases_per_project:
            return None
        return ('it sets no limit ([enforcement] max_leases_per_project '
                'is 0)')

    def describe(self, probe):
        limit = self.conf.enforcement.max_leases_per_project
        if not limit:
            return []
        return [measures.Measure(
            self.name, 'leases', measures.PROJECT, limit, 'leases',
            in_use=probe.open_leases(), project_id=probe.project_id)]

    def check(self, admission):
        limit = self.conf.enforcement.max_leases_per_project
        if not limit:
            return
        if admission.entry is not None:
            return  # an update of a lease the ledger already counts
        held = admission.open_leases()
        if held + 1 > limit:
            raise self.deny(
                'Project %s already holds %d pending or active leases; at '
                'most %d are allowed.' % (admission.project_id, held, limit))
