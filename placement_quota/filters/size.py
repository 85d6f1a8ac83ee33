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
"""ReservationSizeFilter: how much one reservation, and one lease, may hold.

The use case of Blazar's "Flexible Reservation Usage Enforcement" spec,
 "limiting the size (number of hosts, instances,
floating IPs) of reservations". A host reservation counts the hosts Blazar
allocated (its ``max`` before it chose them); an instance
(``virtual:instance`` or ``flavor:instance``) or floating IP reservation
its ``amount``; a network reservation one network. A lease holding another
reservation type is denied unless ``[enforcement]
unknown_reservation_types = allow``.
"""

from oslo_config import cfg

from placement_quota.filters import base
from placement_quota.filters import measures
from placement_quota.lease import amounts as accounting
from placement_quota.lease import model as lease_model

# (resource, reservation type, noun)
_KINDS = (
    (accounting.HOSTS, lease_model.HOST, 'hosts'),
    (accounting.INSTANCES, lease_model.INSTANCE, 'instances'),
    (accounting.FLOATINGIPS, lease_model.FLOATINGIP, 'floating IPs'),
    (accounting.NETWORKS, lease_model.NETWORK, 'networks'),
)


def _opt(name, what):
    return cfg.IntOpt(name, default=0, min=0,
                      help='Most %s allowed %s; 0 means no limit.' % what)


class ReservationSizeFilter(base.BaseFilter):
    """Deny reservations or leases larger than the configured sizes."""

    enforcement_opts = [
        _opt('max_hosts_per_reservation', ('hosts', 'in one physical:host '
                                           'reservation')),
        _opt('max_instances_per_reservation',
             ('instances', 'in one virtual:instance or flavor:instance '
                           'reservation')),
        _opt('max_floatingips_per_reservation',
             ('floating IPs', 'in one virtual:floatingip reservation')),
        _opt('max_hosts_per_lease', ('hosts', 'in one lease, over all its '
                                     'reservations')),
        _opt('max_instances_per_lease', ('instances', 'in one lease')),
        _opt('max_floatingips_per_lease', ('floating IPs', 'in one lease')),
        _opt('max_networks_per_lease', ('network reservations',
                                        'in one lease')),
    ]

    def inert(self):
        if self.any_option_set():
            return None
        return ('it sets no limit (every [enforcement] max_*_per_reservation '
                'and max_*_per_lease option is 0)')

    def _limits(self, scope):
        group = self.conf.enforcement
        return {resource: getattr(group, 'max_%s_per_%s' % (
            resource, scope), 0) for resource, _, _ in _KINDS}

    def describe(self, probe):
        found = []
        for scope in (measures.RESERVATION, measures.LEASE):
            limits = self._limits(scope)
            for resource, _, noun in _KINDS:
                if limits.get(resource):
                    found.append(measures.Measure(
                        self.name, resource, scope, limits[resource],
                        noun))
        return found

    def _check(self, lease, field):
        lease = self.lease(lease, field)
        self.deny_unaccounted(lease)
        per_reservation = self._limits('reservation')
        totals = {}
        for index, reservation in enumerate(lease.reservations):
            amounts = accounting.reservation_amounts(reservation)
            accounting.add(totals, amounts)
            for resource, rtype, noun in _KINDS:
                limit = per_reservation.get(resource) or 0
                asked = amounts.get(resource, 0)
                if limit and asked > limit:
                    raise self.deny(
                        'Reservation %d (%s) asks for %d %s; at most %d are '
                        'allowed in one reservation.'
                        % (index + 1, reservation.resource_type, asked,
                           noun, limit))
        per_lease = self._limits('lease')
        for resource, rtype, noun in _KINDS:
            limit = per_lease.get(resource) or 0
            asked = totals.get(resource, 0)
            if limit and asked > limit:
                raise self.deny('The lease asks for %d %s in all; at most '
                                '%d are allowed in one lease.'
                                % (asked, noun, limit))

    def check_create(self, context, lease):
        self._check(lease, 'lease')

    def check_update(self, context, current_lease, lease):
        self._check(lease, 'lease')

    def on_end(self, context, lease):
        pass
