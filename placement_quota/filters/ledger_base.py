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
"""Base of the filters that decide from the ledger (and record into it).

A ledger filter implements :meth:`LedgerFilter.check` (create and update)
and optionally :meth:`LedgerFilter.end`, both on an
:class:`~placement_quota.ledger.admission.Admission`. Run by the chain, all
ledger filters share one admission (one locked transaction; the entry is
recorded once, after every filter allowed). Run alone, as blazar-manager
does with in-process filters, each opens its own.

What a filter reads from outside the ledger (Placement) it reads in
:meth:`LedgerFilter.prepare`, which runs before the admission takes its
locks (the chain runs every ledger filter's, then opens the admission);
:meth:`LedgerFilter.check` finds it again with
``admission.prepared_for(self)``. A slow or hung Placement then never
holds a ledger lock that other projects' requests wait for. The reserved
hosts' resources are read the same way (:func:`prefetch_hosts`), and so
are the Nova flavors of ``flavor:instance`` reservations
(:func:`prefetch_flavors`, before every filter's ``prepare``, which finds
them with :func:`lease_flavors`; the admission hands them to
``accounting.lease_amounts``).

The ledger and the host resource reader come from the
:class:`~placement_quota.services.Services` the filter is given; a filter
built with ``conf`` alone makes its own.
"""

import contextlib
import contextvars

from placement_quota.lease import flavor_rules
from placement_quota.nova import flavors as flavors_mod
from placement_quota.filters import base
from placement_quota.lease import amounts as accounting
from placement_quota.ledger import admission as admission_mod
from placement_quota.lease import model as lease_model
from placement_quota import services as services_mod


def when(moment):
    """``2026-05-13 10:00`` (seconds only when not zero)."""
    if moment is None:
        return 'never'
    if moment.second or moment.microsecond:
        return moment.strftime('%Y-%m-%d %H:%M:%S')
    return moment.strftime('%Y-%m-%d %H:%M')


def peak_text(peak):
    """``6 reserved at the peak, from 2026-05-13 10:00 to 2026-05-14
    00:00`` or ``none reserved in the window``."""
    if not peak.amount:
        return 'none reserved then'
    return '%d already reserved at the peak, from %s to %s' % (
        peak.amount, when(peak.at), when(peak.until))


def prefetch_hosts(host_resources, lease):
    """The resources of the hosts ``lease`` reserves, read now (before
    the locks) from ``host_resources`` (a
    :class:`~placement_quota.placement.hosts.HostResources`): a reader
    that never calls Placement. None stays None."""
    if host_resources is None:
        return None
    names = []
    for reservation in lease.reservations_of(lease_model.HOST):
        names.extend(accounting.host_names(reservation))
    prefetch = getattr(host_resources, 'prefetch', None)
    if prefetch is None:  # a plain callable: nothing to read beforehand
        return host_resources
    return prefetch(names)


#: The flavors the chain read for the request being prepared.
_FLAVORS = contextvars.ContextVar('placement_quota_flavors', default=None)


def prefetch_flavors(filter_, lease, field='lease'):
    """The flavors of ``lease``'s ``flavor:instance`` reservations, read
    now (before the locks) through ``filter_.services.flavors``: a
    :class:`~placement_quota.nova.flavors.Prefetched`, or None when the
    lease has none.

    A flavor that cannot be counted is a denial (labelled ``filter_``):
    unknown to Nova, refused by Nova, with malformed or uncounted extra
    specs, or no Nova configured. A reservation without a flavor ID, or
    amounts past the ledger's bounds, is a
    :class:`~placement_quota.lease.model.PayloadError`. Nova not answering is
    :class:`~placement_quota.nova.flavors.FlavorUnavailable` (503).
    """
    found = accounting.flavor_ids(lease)
    if not found:
        return None
    for index, reservation, flavor_id in found:
        if flavor_id is None:
            raise lease_model.PayloadError(
                '%s.reservations[%d].flavor_id' % (field, index),
                'is required for a flavor:instance reservation',
                has_value=False)
    try:
        reader = filter_.services.flavors
        flavors = reader.prefetch(f for _, _, f in found)
        for flavor in flavors.flavors.values():
            flavor_rules.placement_resources(flavor)
            flavor_rules.nova_resources(flavor)
    except flavors_mod.FlavorError as exc:
        raise filter_.deny(_flavor_denial(exc, found, field)) from None
    except flavor_rules.MalformedFlavor as exc:
        raise filter_.deny(
            '%s %s cannot count this flavor; it is refused.'
            % (_flavor_denial(exc, found, field), filter_.name)) from None
    accounting.check_flavor_totals(lease, flavors, field)
    return flavors


def _flavor_denial(exc, found, field):
    flavor_id = getattr(exc, 'flavor_id', None)
    for index, _, fid in found:
        if fid == flavor_id:
            return '%s.reservations[%d].flavor_id: %s' % (field, index, exc)
    return str(exc)


@contextlib.contextmanager
def flavors_prefetched(flavors):
    """Make ``flavors`` what :func:`lease_flavors` finds meanwhile."""
    token = _FLAVORS.set(flavors)
    try:
        yield flavors
    finally:
        _FLAVORS.reset(token)


def lease_flavors(filter_, lease):
    """The flavors of ``lease`` the chain read before the prepare step,
    else read now (:func:`prefetch_flavors`)."""
    found = _FLAVORS.get()
    if found is not None:
        return found
    return prefetch_flavors(filter_, lease)


@contextlib.contextmanager
def ledger_denials():
    """The ledger's own refusals (an update of an ended lease) as a
    denial."""
    try:
        yield
    except admission_mod.Denied as exc:
        raise base.EnforcementDenied(str(exc), filter_name='ledger') \
            from None


class LedgerFilter(base.BaseFilter):
    """A filter deciding on the ledger's data."""

    uses_ledger = True
    #: Whether it counts the flavors of flavor:instance reservations.
    uses_flavors = True

    def __init__(self, conf, services=None):
        if services is None:
            services = services_mod.Services(conf)
        super().__init__(conf, services)
        self.ledger = services.ledger
        self.host_resources = services.host_resources

    def ledger_locks(self, context):
        """Ledger lock names needed beyond the project's own (a tree
        root...); see also :meth:`lease_locks`."""
        return []

    def lease_locks(self, lease):
        """Ledger lock names a create or update of ``lease`` (its new
        state) needs beyond :meth:`ledger_locks` (capacity pools...).
        None by default."""
        return []

    def prepare(self, context, lease):
        """Read what :meth:`check` needs from outside the ledger, before
        the admission locks anything; the admission hands it back
        (``admission.prepared_for(self)``). ``lease`` is the lease to
        check (the new state of an update). Nothing by default."""
        return None

    def check(self, admission):
        """Raise :meth:`deny` to refuse the lease (create or update)."""

    def end(self, admission):
        """The lease ends (the entry is closed after every filter)."""

    @contextlib.contextmanager
    def _admit(self, kind, context, lease, current_lease=None):
        context = self.context(context)
        if admission_mod.current() is not None:
            # The chain's admission: it ran the prepare step.
            with admission_mod.admit(self.ledger, kind, context,
                                     lease) as adm:
                yield adm
            return
        prepared = {}
        host_resources = flavors = None
        locks = list(self.ledger_locks(context))
        if kind != admission_mod.ON_END:
            locks += self.lease_locks(lease)
            if self.uses_flavors:
                flavors = prefetch_flavors(self, lease)
            with flavors_prefetched(flavors):
                prepared[self] = self.prepare(context, lease)
            host_resources = prefetch_hosts(self.host_resources, lease)
        with ledger_denials():
            with admission_mod.admit(
                    self.ledger, kind, context, lease, current_lease,
                    locks=locks,
                    host_resources=host_resources,
                    prepared=prepared, flavors=flavors) as adm:
                yield adm

    def check_create(self, context, lease):
        lease = self.lease(lease)
        with self._admit(admission_mod.CHECK_CREATE, context,
                         lease) as adm:
            self.check(adm)

    def check_update(self, context, current_lease, lease):
        current_lease = self.lease(current_lease, 'current_lease')
        lease = self.lease(lease)
        with self._admit(admission_mod.CHECK_UPDATE, context, lease,
                         current_lease) as adm:
            self.check(adm)

    def on_end(self, context, lease):
        lease = self.lease(lease)
        with self._admit(admission_mod.ON_END, context, lease) as adm:
            self.end(adm)
