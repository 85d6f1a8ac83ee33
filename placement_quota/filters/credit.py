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
"""CreditFilter: leases paid in credits, charged up front, refunded on end.

The cost of a lease is its hours times the hourly rate of its reservations
(Chameleon's balance service model, extended with Placement resource
classes as in StackHPC's coral-credits):

* ``physical:host``: ``credit_host_rate`` per host, times the host's
  ``credit_host_factor_key`` extra capability (Chameleon's ``su_factor``,
  1.0 when the host has none; Blazar sends it in the request, so a factor
  that is not a finite number from 0 to ``max_su_factor`` is a bad
  request, :class:`~placement_quota.lease.model.PayloadError`);
* ``virtual:instance``: ``amount`` x (``credit_instance_rate`` + the
  ``credit_class_rates`` of its VCPU, MEMORY_MB and DISK_GB);
* ``flavor:instance``: the same, on the classes Blazar reserves in
  Placement for one instance of its flavor
  (``flavor_rules.placement_resources``: PCPU, custom classes... each at
  its ``credit_class_rates`` rate, 0 when it has none);
* ``virtual:floatingip``: ``credit_floatingip_rate`` per IP;
* ``network``: ``credit_network_rate`` per network.

A project's credits are its allocation in force at the lease's start
(``placement-quota credits add``); a lease may not end after that
allocation expires. The whole cost is charged when the lease is created;
an update charges or refunds the difference; on-end refunds the part after
the actual end (everything, for a lease that never started), once.

Credit pools per resource class (``credit_pool_classes``, as StackHPC's
coral-credits keeps them): a project's allocation may instead be a pool of
one resource class C, holding C-hours (``placement-quota credits add
--resource-class C``). For each pooled class the lease reserves (its
instances' ``class:C`` amount plus its hosts' ``host:C`` inventories, which
the ledger counts with ``[ledger] count_host_resources``), the lease is
charged that amount times its hours to the project's pool of C in force at
its start, and that class's ``credit_class_rates`` rate is not charged in
credits; the rest of its cost goes to the general allocation as before.
Each pool is charged, charged the difference on update, and refunded on
end on its own (``leases.pool_charges``, ledger/entry_states.py), exactly
once. Users' shares bound the general credits only.
"""

import re

import math
from typing import Mapping

from oslo_config import cfg
import os_resource_classes as orc

from placement_quota.filters import ledger_base
from placement_quota.filters import measures
from placement_quota.lease import amounts as accounting
from placement_quota.ledger import entry_states
from placement_quota.ledger import shares
from placement_quota.ledger import store
from placement_quota.lease import model as lease_model

#: Placement's custom resource class names (the standard ones are
#: os_resource_classes.STANDARDS).
CUSTOM_CLASS = re.compile(r'^CUSTOM_[A-Z0-9_]{1,248}$')


def is_resource_class(name):
    """Whether ``name`` is a resource class name Placement accepts: a
    standard one, or ``CUSTOM_`` and upper-case letters, digits and
    ``_``."""
    return isinstance(name, str) and (
        name in orc.STANDARDS or bool(CUSTOM_CLASS.match(name)))


def pool_units(amounts, resource_class):
    """Units of ``resource_class`` a lease's ledger amounts reserve: its
    instances' (``class:C``) and its hosts' (``host:C``, counted with
    ``[ledger] count_host_resources``)."""
    return (amounts.get(accounting.CLASS_PREFIX + resource_class, 0) +
            amounts.get(accounting.HOST_PREFIX + resource_class, 0))


def host_factor(allocation, key, maximum, field):
    """The rate factor of a host allocation: its ``extra`` capability
    ``key`` (or the allocation's own ``key``), 1.0 when it has none.

    The factor comes with the request (Blazar sends the host's extra
    capabilities), so it is checked like the payload: a factor that is not
    a finite number from 0 to ``maximum`` raises
    :class:`~placement_quota.lease.model.PayloadError` naming ``field`` (the
    allocation's path) and the value.
    """
    extra = allocation.get('extra')
    if isinstance(extra, Mapping) and extra.get(key) is not None:
        value, field = extra[key], '%s.extra.%s' % (field, key)
    elif allocation.get(key) is not None:
        value, field = allocation[key], '%s.%s' % (field, key)
    else:
        return 1.0
    factor = None
    # Blazar keeps extra capabilities as strings: "2.5" is a factor too.
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        try:
            factor = float(value)
        except (ValueError, OverflowError):
            pass
    if factor is None or not math.isfinite(factor) or not (
            0 <= factor <= maximum):
        raise lease_model.PayloadError(
            field, 'must be a finite number from 0 to %g ([enforcement] '
            'max_su_factor)' % maximum, value)
    return factor


def hourly_rate(lease, group, field='lease', flavors=None, pooled=()):
    """Credits per hour of ``lease`` under the ``[enforcement]`` rates
    (``flavors``: those of its ``flavor:instance`` reservations, read from
    Nova beforehand; KeyError for one missing). The classes of ``pooled``
    are charged to their pools, not in credits: their rates count 0.

    Raises :class:`~placement_quota.lease.model.PayloadError` for a host factor
    out of bounds (see :func:`host_factor`); ``field`` is the lease's path.
    """
    rate = 0.0
    class_rates = {k: float(v) for k, v in group.credit_class_rates.items()
                   if k not in pooled}
    for index, reservation in enumerate(lease.reservations):
        rtype = reservation.resource_type
        if rtype == lease_model.HOST:
            if reservation.allocations:
                rate += sum(group.credit_host_rate * host_factor(
                    a, group.credit_host_factor_key, group.max_su_factor,
                    '%s.reservations[%d].allocations[%d]' % (field, index, i))
                    for i, a in enumerate(reservation.allocations))
            else:
                rate += (group.credit_host_rate *
                         accounting.host_count(reservation))
        elif rtype in (lease_model.INSTANCE, lease_model.FLAVOR):
            per_instance = group.credit_instance_rate
            size = (accounting.flavor_size(reservation, flavors)
                    if rtype == lease_model.FLAVOR
                    else accounting.instance_size(reservation))
            for rc, amount in size.items():
                per_instance += class_rates.get(rc, 0.0) * amount
            rate += reservation.count('amount', 1) * per_instance
        elif rtype == lease_model.FLOATINGIP:
            rate += (group.credit_floatingip_rate *
                     reservation.count('amount', 1))
        elif rtype == lease_model.NETWORK:
            rate += group.credit_network_rate
    return rate


def credits(micro):
    """``12.50`` from micro-credits."""
    return '%.2f' % store.from_micro(micro)


def _validate_class_rates(rates):
    for rc, value in rates.items():
        try:
            if float(value) < 0:
                raise ValueError
        except ValueError:
            raise ValueError('[enforcement] credit_class_rates: the rate of '
                             '%s must be a number >= 0 (got %r)' % (rc,
                                                                    value))


def _validate_pool_classes(classes):
    for rc in classes:
        if not is_resource_class(rc):
            raise ValueError(
                '[enforcement] credit_pool_classes: %r is not a resource '
                'class name (a standard class such as VCPU, or CUSTOM_ '
                'followed by A-Z, 0-9 and _)' % rc)


class CreditFilter(ledger_base.LedgerFilter):
    """Deny a lease whose cost exceeds the project's remaining credits."""

    enforcement_opts = [
        cfg.FloatOpt('credit_host_rate', default=1.0, min=0,
                     help='Credits per hour of one reserved physical host, '
                          'before its factor.'),
        cfg.StrOpt('credit_host_factor_key', default='su_factor',
                   help='Extra capability of a host that multiplies its '
                        'rate (Chameleon\'s su_factor); 1.0 when a host '
                        'does not have it.'),
        cfg.FloatOpt('max_su_factor', default=100.0, min=0,
                     help='Largest host factor (the '
                          'credit_host_factor_key extra capability) '
                          'accepted. Blazar sends the factor in the '
                          'request, so a lease whose factor is not a '
                          'finite number from 0 to this value is refused '
                          'as a bad request (400) rather than priced.'),
        cfg.FloatOpt('credit_instance_rate', default=0.0, min=0,
                     help='Credits per hour of one reserved instance, on '
                          'top of its resource classes.'),
        cfg.DictOpt('credit_class_rates', default={},
                    help='Credits per hour of one unit of a resource class '
                         'of a reserved instance, e.g. '
                         '``VCPU:1.0,MEMORY_MB:0.001,DISK_GB:0.0``.'),
        cfg.FloatOpt('credit_floatingip_rate', default=0.0, min=0,
                     help='Credits per hour of one reserved floating IP.'),
        cfg.FloatOpt('credit_network_rate', default=0.0, min=0,
                     help='Credits per hour of one reserved network.'),
        cfg.ListOpt('credit_pool_classes', default=[],
                    help='Resource classes charged to credit pools instead '
                         'of credits, e.g. ``VCPU,CUSTOM_GPU_A100``. A '
                         'lease reserving N units of such a class C (its '
                         'instances\' class:C amount plus, with [ledger] '
                         'count_host_resources, its hosts\' C inventory) '
                         'is charged N x its hours to the project\'s pool '
                         'of C in force at its start ("placement-quota '
                         'credits add --resource-class C"), and denied '
                         'when the pool lacks them or the project has '
                         'none; C\'s credit_class_rates rate is then not '
                         'charged in credits. Empty (the default): one '
                         'currency, the credits.'),
    ]

    def __init__(self, conf, services=None):
        super().__init__(conf, services)
        _validate_class_rates(conf.enforcement.credit_class_rates)
        _validate_pool_classes(conf.enforcement.credit_pool_classes)

    @property
    def pool_classes(self):
        """The resource classes charged to pools (in their order)."""
        return tuple(dict.fromkeys(
            self.conf.enforcement.credit_pool_classes or ()))

    def rate_of(self, admission):
        """Micro-credits an hour of the admission's lease (its new state,
        for an update)."""
        self.deny_unaccounted(admission.lease)
        return store.to_micro(hourly_rate(
            admission.lease, self.conf.enforcement,
            flavors=admission.flavors, pooled=self.pool_classes))

    def pool_rates_of(self, admission):
        """``{resource class: micro-units an hour}`` of the admission's
        lease in each pooled class it reserves."""
        amounts = admission.amounts
        found = {}
        for rc in self.pool_classes:
            units = pool_units(amounts, rc)
            if units > 0:
                found[rc] = store.to_micro(units)
        return found

    @staticmethod
    def pool_of(admission, resource_class):
        """The pool of ``resource_class`` the admission's lease is charged
        to: the one its entry was charged to (an update), else the
        project's pool of that class in force at the lease's start; None
        when there is none."""
        txn = admission.txn
        old = entry_states.pools_of(admission.entry).get(resource_class)
        if old is not None:
            found = _allocation_by_id(txn, admission.project_id,
                                      old['allocation_id'])
            if found is not None:
                return found
        return txn.allocation(admission.project_id, admission.start,
                              resource_class)

    @staticmethod
    def allocation_of(admission):
        """The allocation the admission's lease is charged to: the one
        its entry was charged to (an update), else the project's
        allocation in force at the lease's start; None when there is
        none."""
        txn = admission.txn
        entry = admission.entry
        if entry is not None and entry.allocation_id is not None:
            found = _allocation_by_id(txn, admission.project_id,
                                      entry.allocation_id)
            if found is not None:
                return found
        return txn.allocation(admission.project_id, admission.start,
                              share_of=admission.owner or None)

    def check(self, admission):
        self._check_credits(admission)
        self._check_pools(admission)

    def _check_credits(self, admission):
        rate_micro = self.rate_of(admission)
        rate = store.from_micro(rate_micro)
        txn = admission.txn
        entry = admission.entry
        allocation = self.allocation_of(admission)
        cost = store.cost(rate_micro, admission.start, admission.end)
        hours = store.hours(admission.start, admission.end)
        rate_text = '%.4g' % rate
        what = ('%s credits (%.2f hours at %s %s an hour)'
                % (credits(cost), hours, rate_text,
                   'credit' if rate_text == '1' else 'credits'))
        if allocation is None:
            if cost > 0:
                raise self.deny(
                    'The lease costs %s, and project %s has no credit '
                    'allocation in force on %s.'
                    % (what, admission.project_id,
                       ledger_base.when(admission.start)))
            admission.price(rate_micro, None)
            return
        if (allocation.end_date is not None and
                admission.end > allocation.end_date):
            raise self.deny(
                'The lease ends on %s, after the credit allocation of '
                'project %s expires on %s.'
                % (ledger_base.when(admission.end), admission.project_id,
                   ledger_base.when(allocation.end_date)))
        admission.price(rate_micro, allocation.id)
        delta = admission.charge_delta()
        remaining = allocation.amount - txn.spent(allocation.id)
        if delta > remaining:
            if entry is not None:
                asked = ('The update costs %s more (the lease now costs %s)'
                         % (credits(delta), what))
            else:
                asked = 'The lease costs %s' % what
            raise self.deny(
                '%s; project %s has %s credits left of its allocation of '
                '%s.' % (asked, admission.project_id, credits(remaining),
                         credits(allocation.amount)))
        self._check_share(admission, delta, what)

    def _check_pools(self, admission):
        """Each pooled class the lease reserves is paid by the project's
        pool of that class."""
        txn = admission.txn
        hours = store.hours(admission.start, admission.end)
        priced = {}
        for rc, hourly in self.pool_rates_of(admission).items():
            cost = store.cost(hourly, admission.start, admission.end)
            what = '%s %s-hours (%s for %.2f hours)' % (
                credits(cost), rc, '%g' % store.from_micro(hourly), hours)
            allocation = self.pool_of(admission, rc)
            if allocation is None:
                raise self.deny(
                    'The lease uses %s, and project %s has no %s pool in '
                    'force on %s.' % (what, admission.project_id, rc,
                                      ledger_base.when(admission.start)))
            if (allocation.end_date is not None and
                    admission.end > allocation.end_date):
                raise self.deny(
                    'The lease ends on %s, after the %s pool of project %s '
                    'expires on %s.'
                    % (ledger_base.when(admission.end), rc,
                       admission.project_id,
                       ledger_base.when(allocation.end_date)))
            priced[rc] = (hourly, allocation.id)
            delta = cost - admission.pool_charged(rc, allocation.id)
            remaining = allocation.amount - txn.spent(allocation.id)
            if delta > remaining:
                if admission.entry is not None:
                    asked = ('The update uses %s %s-hours more (the lease '
                             'now uses %s)' % (credits(delta), rc, what))
                else:
                    asked = 'The lease uses %s' % what
                raise self.deny(
                    '%s; project %s has %s left of its %s pool of %s.'
                    % (asked, admission.project_id, credits(remaining), rc,
                       credits(allocation.amount)))
        admission.price_pools(priced)

    def pools_price_of(self, admission):
        """``[{'resource_class', 'units', 'hours', 'cost', 'charge',
        'balance', 'balance_after', 'allocation_id'}]`` of the
        admission's lease in each pool it would be charged to (the
        balances None without a pool)."""
        found = []
        hours = store.hours(admission.start, admission.end)
        for rc, hourly in self.pool_rates_of(admission).items():
            cost = store.cost(hourly, admission.start, admission.end)
            allocation = self.pool_of(admission, rc)
            charge = cost - (0 if allocation is None else
                             admission.pool_charged(rc, allocation.id))
            pool = {'resource_class': rc,
                    'units': store.from_micro(hourly),
                    'hours': round(hours, 4),
                    'cost': store.from_micro(cost),
                    'charge': store.from_micro(charge),
                    'balance': None, 'balance_after': None,
                    'allocation_id': None}
            if allocation is not None:
                balance = (allocation.amount -
                           admission.txn.spent(allocation.id))
                pool.update(balance=store.from_micro(balance),
                            balance_after=store.from_micro(balance - charge),
                            allocation_id=allocation.id)
            found.append(pool)
        return found

    def pools_balance_of(self, probe):
        """``[{'resource_class', 'allocation', 'spent', 'balance'}]`` of
        the project's pools of the pooled classes in force at
        ``probe.start`` (resource-hours)."""
        txn = probe.txn
        found = []
        for rc in self.pool_classes:
            allocation = txn.allocation(probe.project_id, probe.start, rc)
            if allocation is None:
                continue
            spent = txn.spent(allocation.id)
            found.append({
                'resource_class': rc,
                'allocation': {
                    'id': allocation.id,
                    'amount': store.from_micro(allocation.amount),
                    'start_date': measures.iso(allocation.start_date),
                    'end_date': measures.iso(allocation.end_date)},
                'spent': store.from_micro(spent),
                'balance': store.from_micro(allocation.amount - spent)})
        return found

    def price_of(self, admission):
        """What the admission's lease costs, for a quote: ``{'cost',
        'hourly_rate', 'hours', 'charge', 'balance', 'balance_after',
        'allocation_id', 'pools'}`` (credits; ``charge`` is what this
        request charges: the cost, less what an update's lease was charged
        already; the balances are None without an allocation; ``pools``,
        only when ``credit_pool_classes`` is set: :meth:`pools_price_of`)."""
        rate_micro = self.rate_of(admission)
        cost = store.cost(rate_micro, admission.start, admission.end)
        charge = cost - admission.previously_charged
        allocation = self.allocation_of(admission)
        found = {'cost': store.from_micro(cost),
                 'hourly_rate': store.from_micro(rate_micro),
                 'hours': round(store.hours(admission.start, admission.end),
                                4),
                 'charge': store.from_micro(charge),
                 'balance': None, 'balance_after': None,
                 'allocation_id': None}
        if self.pool_classes:
            found['pools'] = self.pools_price_of(admission)
        if allocation is not None:
            balance = allocation.amount - admission.txn.spent(allocation.id)
            found.update(balance=store.from_micro(balance),
                         balance_after=store.from_micro(balance - charge),
                         allocation_id=allocation.id)
        return found

    def balance_of(self, probe):
        """The project's credits at ``probe.start`` (now), for the
        project view: ``{'allocation', 'spent', 'balance', 'user',
        'pools'}`` (credits; ``pools``, only when ``credit_pool_classes``
        is set: :meth:`pools_balance_of`), or None
        when neither an allocation nor a pool is in force then (without
        an allocation but with pools, ``allocation``, ``spent`` and
        ``balance`` are None)."""
        txn = probe.txn
        allocation = txn.allocation(probe.project_id, probe.start)
        pools = self.pools_balance_of(probe)
        if allocation is None and not pools:
            return None
        found = {'allocation': None, 'spent': None, 'balance': None,
                 'user': None}
        if self.pool_classes:
            found['pools'] = pools
        if allocation is not None:
            spent = txn.spent(allocation.id)
            found.update(
                allocation={
                    'id': allocation.id,
                    'amount': store.from_micro(allocation.amount),
                    'start_date': measures.iso(allocation.start_date),
                    'end_date': measures.iso(allocation.end_date)},
                spent=store.from_micro(spent),
                balance=store.from_micro(allocation.amount - spent))
        owner = probe.owner
        if owner:
            connection = txn.connection
            share = shares.share(connection, probe.project_id, owner)
            user_spent = shares.spent(connection, probe.project_id, owner)
            found['user'] = {
                'user_id': owner,
                'share': None if share is None else store.from_micro(share),
                'spent': store.from_micro(user_spent),
                'left': (None if share is None else
                         store.from_micro(max(0, share - user_spent)))}
        return found

    def _check_share(self, admission, delta, what):
        """The lease's owner may not spend past their share of the
        project's credits (ledger/shares.py), when one is set."""
        owner = admission.owner
        if not owner or delta <= 0:
            return
        share = admission.txn.share(admission.project_id, owner)
        if share is None:
            return
        spent = shares.spent(admission.txn.connection, admission.project_id,
                             owner)
        if spent + delta > share:
            raise self.deny(
                'The lease costs %s; user %s of project %s has spent %s of '
                'their share of %s credits (%s left).'
                % (what if admission.entry is None else
                   '%s more' % credits(delta), owner, admission.project_id,
                   credits(spent), credits(share),
                   credits(max(0, share - spent))))


def _allocation_by_id(txn, project_id, allocation_id):
    for allocation in txn.allocations(project_id):
        if allocation.id == allocation_id:
            return allocation
    return None
