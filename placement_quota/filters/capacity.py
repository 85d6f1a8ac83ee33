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
"""PlacementCapacityFilter: reserved instances must fit the free capacity.

specs/001 chapter 22: a lease is issued only if unused capacity can hold
all its reservations. For each ``virtual:instance`` reservation:

* the eligible hosts are those Blazar allocated (their
  ``hypervisor_hostname``, the name of their Placement provider), or every
  compute node (a root provider with VCPU) when it allocated none, or
  always every compute node with ``capacity_hosts = all``;
* their free capacity per resource class is read from Placement
  (inventories and usages, Placement's own rule:
  ``(total - reserved) x allocation_ratio - used``);
* the peak of the instance resources (VCPU, MEMORY_MB, DISK_GB) that other
  leases reserve on those hosts during the window — every project's, from
  the ledger — plus the lease's must fit that free capacity, class by
  class;
* and ``amount`` instances of the requested size must fit on the eligible
  hosts one by one (a host holds whole instances only).

The cloud-wide ledger lock is held, so two admissions never hand out the
same free capacity.
"""

from urllib import parse

from oslo_config import cfg

from placement_quota.filters import ledger_base
from placement_quota import ledger
from placement_quota.ledger import accounting
from placement_quota.ledger import models
from placement_quota.ledger import window
from placement_quota import lease as lease_model
from placement_quota.placement import capacity

_CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB')


def compute_nodes(client):
    """``{name: uuid}`` of the root providers that have VCPU."""
    found = client.get('/resource_providers?resources=VCPU:1')
    return {rp['name']: rp['uuid'] for rp in found['resource_providers']
            if rp.get('root_provider_uuid', rp['uuid']) == rp['uuid']}


def _instance_hosts(lease_body):
    """Hypervisor names of the instance reservations of a stored lease."""
    names = set()
    for reservation in lease_body.get('reservations') or ():
        if reservation.get('resource_type') != lease_model.INSTANCE:
            continue
        for allocation in reservation.get('allocations') or ():
            name = allocation.get('hypervisor_hostname')
            if isinstance(name, str):
                names.add(name)
    return names


class PlacementCapacityFilter(ledger_base.LedgerFilter):
    """Deny instance reservations the free capacity cannot hold."""

    enforcement_opts = [
        cfg.StrOpt(
            'capacity_hosts', default='allocations', choices=[
                ('allocations', 'the hosts Blazar allocated, or every '
                                'compute node when it allocated none'),
                ('all', 'every compute node')],
            help='Which hosts\' free capacity an instance reservation may '
                 'use.'),
    ]

    def ledger_locks(self, context):
        return [models.GLOBAL_LOCK]

    def _eligible(self, client, reservations):
        nodes = None
        names = set()
        if self.conf.enforcement.capacity_hosts == 'allocations':
            for reservation in reservations:
                names.update(accounting.host_names(reservation))
        if not names:
            nodes = compute_nodes(client)
            return nodes, False
        uuids = {}
        for name in sorted(names):
            found = client.get('/resource_providers?name=%s'
                               % parse.quote(name, safe=''))
            for rp in found['resource_providers']:
                uuids[rp['name']] = rp['uuid']
        return uuids, True

    def check(self, admission):
        reservations = admission.lease.reservations_of(lease_model.INSTANCE)
        if not reservations:
            return
        client = ledger.placement(self.conf)
        hosts, by_allocation = self._eligible(client, reservations)
        asked = {}
        capacities = {}
        for reservation in reservations:
            size = accounting.instance_size(reservation)
            amount = reservation.count('amount', 1)
            for rc, value in size.items():
                asked[rc] = asked.get(rc, 0) + amount * value
            if not size:
                continue
            fit = capacity.instances_that_fit_on_hosts(
                client, hosts.values(), size)
            if fit.total < amount:
                raise self.deny(
                    'Only %d instances of %s fit on the %d eligible hosts '
                    'now; the reservation asks for %d.'
                    % (fit.total, _size_text(size), len(hosts), amount))
            capacities = fit.capacities
        if not asked:
            return
        free = {rc: sum(max(0, c[rc].free) for c in capacities.values()
                        if rc in c) for rc in asked}
        others = []
        for interval, row in admission.intervals(models.GLOBAL_LOCK):
            if by_allocation:
                used_hosts = _instance_hosts(row.lease or {})
                if used_hosts and not used_hosts & set(hosts):
                    continue
            others.append(window.Interval(interval.start, interval.end, {
                rc: interval.amounts.get('class:' + rc, 0)
                for rc in _CLASSES}))
        peaks = window.peaks(others, admission.start, admission.end,
                             list(asked))
        for rc in sorted(asked):
            if peaks[rc].amount + asked[rc] > free[rc]:
                raise self.deny(
                    'Not enough free %s on the %d eligible hosts from %s to '
                    '%s: the lease asks for %d, other leases hold %s, and '
                    '%d is free in Placement now.'
                    % (rc, len(hosts), ledger_base.when(admission.start),
                       ledger_base.when(admission.end), asked[rc],
                       ledger_base.peak_text(peaks[rc]), free[rc]))


def _size_text(size):
    return ', '.join('%s=%d' % item for item in sorted(size.items()))
