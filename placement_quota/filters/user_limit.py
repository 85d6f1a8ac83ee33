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
"""UserLimitFilter: one user may not take a whole project's share.

Slurm limits each user association inside an account (MaxJobs,
MaxSubmitJobs, GrpTRES per user); placement-quota's other limits are per
project. Every lease carries the ``user_id`` of who asked (the request's
context); the ledger keeps it with the entry. Per user of a project:

* ``max_leases_per_user``: pending plus active leases at once;
* ``max_hosts_per_user``: the most hosts the user holds reserved at one
  moment of the lease's window (the ledger's peak), plus the lease's;
* ``max_instances_per_user``: the same for instances (``virtual:instance``
  and ``flavor:instance``).

The project's limits still hold (LeaseCountFilter, NovaQuotaFilter,
ProjectTreeLimitFilter...). An update counts against the lease's owner (the
user who created it), whoever sends it. A request without a ``user_id``
is not limited per user. Exact under concurrency as the project limits
are: the admission holds the project's lock, which every user of the
project takes.
"""

from oslo_config import cfg

from placement_quota.filters import ledger_base
from placement_quota.filters import measures
from placement_quota.lease import amounts as accounting
from placement_quota.ledger import window

#: Option -> (ledger resource, what the message calls it).
PEAK_LIMITS = {
    'max_hosts_per_user': (accounting.HOSTS, 'hosts'),
    'max_instances_per_user': (accounting.INSTANCES, 'instances'),
}


class UserLimitFilter(ledger_base.LedgerFilter):
    """Deny a lease past a per-user limit inside its project."""

    enforcement_opts = [
        cfg.IntOpt(
            'max_leases_per_user', default=0, min=0,
            help='Most pending plus active leases one user may hold in a '
                 'project at once; 0 means no limit. Counted in the '
                 'ledger.'),
        cfg.IntOpt(
            'max_hosts_per_user', default=0, min=0,
            help='Most hosts one user of a project may hold reserved at '
                 'one moment (the peak over the lease\'s window, the lease '
                 'included); 0 means no limit.'),
        cfg.IntOpt(
            'max_instances_per_user', default=0, min=0,
            help='Most instances (virtual:instance and flavor:instance) '
                 'one user of a project may hold reserved at one moment '
                 '(the peak over the lease\'s window, the lease '
                 'included); 0 means no limit.'),
    ]

    def inert(self):
        if self.any_option_set():
            return None
        return ('it sets no limit ([enforcement] max_leases_per_user, '
                'max_hosts_per_user and max_instances_per_user are 0)')

    def _limited(self):
        """``{option: (resource, noun)}`` of the peak limits set."""
        group = self.conf.enforcement
        return {option: PEAK_LIMITS[option]
                for option in sorted(PEAK_LIMITS) if getattr(group, option)}

    @staticmethod
    def held_leases(admission, owner):
        """Pending and active leases ``owner`` holds in the project (the
        admission's own entry, for an update, included: an update never
        changes the count)."""
        return admission.txn.open_count(admission.project_id,
                                        user_id=owner)

    @staticmethod
    def own_intervals(admission, owner):
        """What ``owner`` holds reserved in the project over the
        admission's window (the lease itself left out)."""
        return [interval for interval, row in admission.intervals()
                if row.user_id == owner]

    def describe(self, probe):
        group = self.conf.enforcement
        owner = probe.owner
        if not owner:
            return []
        found = []
        if group.max_leases_per_user:
            found.append(measures.Measure(
                self.name, 'leases', measures.USER,
                group.max_leases_per_user, 'leases',
                in_use=self.held_leases(probe, owner),
                project_id=probe.project_id, user_id=owner))
        limited = self._limited()
        if limited:
            resources = [resource for resource, _ in limited.values()]
            now, peaks = measures.now_and_peaks(
                self.own_intervals(probe, owner), probe.start, probe.end,
                resources)
            for option, (resource, noun) in limited.items():
                found.append(measures.Measure(
                    self.name, resource, measures.USER,
                    getattr(group, option), noun, in_use=now[resource],
                    peak=peaks[resource], project_id=probe.project_id,
                    user_id=owner))
        return found

    def check(self, admission):
        group = self.conf.enforcement
        owner = admission.owner
        if not owner:
            return
        if group.max_leases_per_user and admission.entry is None:
            held = self.held_leases(admission, owner)
            if held + 1 > group.max_leases_per_user:
                raise self.deny(
                    'User %s of project %s already holds %d pending or '
                    'active leases; at most %d are allowed per user.'
                    % (owner, admission.project_id, held,
                       group.max_leases_per_user))
        limited = self._limited()
        if not limited:
            return
        self.deny_unaccounted(admission.lease)
        asked = {resource: admission.amounts.get(resource, 0)
                 for resource, _ in limited.values()}
        if not any(asked.values()):
            return
        peaks = window.peaks(self.own_intervals(admission, owner),
                             admission.start, admission.end,
                             [r for r, amount in asked.items() if amount])
        for option, (resource, noun) in limited.items():
            if not asked[resource]:
                continue
            limit = getattr(group, option)
            peak = peaks[resource]
            if peak.amount + asked[resource] > limit:
                raise self.deny(
                    'User %s of project %s: the lease asks for %d %s from '
                    '%s to %s, and the user has %s; at most %d per user.'
                    % (owner, admission.project_id, asked[resource], noun,
                       ledger_base.when(admission.start),
                       ledger_base.when(admission.end),
                       ledger_base.peak_text(peak), limit))
