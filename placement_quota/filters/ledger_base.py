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
:class:`~placement_quota.ledger.admission.Admission`. How an admission is
planned and run is :mod:`placement_quota.filters.admit`'s alone: run by
the chain, all ledger filters share one admission (one locked
transaction; the entry is recorded once, after every filter allowed).
Run alone, as blazar-manager does with in-process filters, a filter is
admitted alone, the same way.

What a filter reads from outside the ledger (Placement) it reads in
:meth:`LedgerFilter.prepare`, which runs before the admission takes its
locks, and is given the Nova flavors of the lease's ``flavor:instance``
reservations read beforehand; :meth:`LedgerFilter.check` finds what it
read with ``admission.prepared_for(self)``. A slow or hung Placement
then never holds a ledger lock that other projects' requests wait for.

The ledger and the Placement client come from the
:class:`~placement_quota.services.Services` the filter is given (the
chain's; inside blazar-manager, :mod:`placement_quota.filters.
blazar_compat` gives the manager's): a ledger filter never builds one.
"""

from placement_quota.filters import admit as admit_mod
from placement_quota.filters import base


def when(moment):
    """``2026-05-13 10:00`` (seconds only when not zero)."""
    if moment is None:
        return 'never'
    if moment.second or moment.microsecond:
        return moment.strftime('%Y-%m-%d %H:%M:%S')
    return moment.strftime('%Y-%m-%d %H:%M')


def span(seconds):
    """``2 days 6 hours``, ``1 hour 30 minutes``, ``45 seconds`` (the
    units that are not zero, largest first); ``0 seconds`` for none."""
    seconds = int(seconds)
    parts = []
    for size, unit in ((86400, 'day'), (3600, 'hour'), (60, 'minute'),
                       (1, 'second')):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append('%d %s%s' % (count, unit, '' if count == 1 else 's'))
    return ' '.join(parts) or '0 seconds'


def lease_label(name, lease_id):
    """``gpu-1 (9f3c...)``, ``gpu-1`` or ``9f3c...``: how a message names
    a lease; None when it has neither name nor ID."""
    if name and lease_id:
        return '%s (%s)' % (name, lease_id)
    return name or lease_id or None


def peak_text(peak):
    """``6 reserved at the peak, from 2026-05-13 10:00 to 2026-05-14
    00:00`` or ``none reserved in the window``."""
    if not peak.amount:
        return 'none reserved then'
    return '%d already reserved at the peak, from %s to %s' % (
        peak.amount, when(peak.at), when(peak.until))


class LedgerFilter(base.BaseFilter):
    """A filter deciding on the ledger's data."""

    uses_ledger = True
    #: Whether it counts the flavors of flavor:instance reservations.
    uses_flavors = True
    #: The ledger scalars its check asks for
    #: (:data:`placement_quota.ledger.store.READ_AHEAD`): the admission
    #: reads those of all its filters in one statement after its locks.
    reads_ahead = ()

    def __init__(self, conf, services=None):
        if services is None:
            raise TypeError(
                '%s decides from the ledger: give it the Services of its '
                'chain (%s(conf, services=...)); inside blazar-manager use '
                'placement_quota.filters.blazar_compat, which does.'
                % (type(self).__name__, type(self).__name__))
        super().__init__(conf, services)
        self.ledger = services.ledger
        # Made now (and so the Placement client, when [ledger]
        # count_host_resources is on): a Placement that cannot be used
        # stops the service at start, not at its first request.
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

    @admit_mod.nothing_to_prepare
    def prepare(self, context, lease, flavors=None):
        """Read what :meth:`check` needs from outside the ledger, before
        the admission locks anything; the admission hands it back
        (``admission.prepared_for(self)``). ``lease`` is the lease to
        check (the new state of an update), ``flavors`` its flavors
        (read before, :func:`~placement_quota.filters.admit.
        read_flavors`). Nothing by default."""
        return None

    def flavors_of(self, lease, flavors=None):
        """``flavors``, else the flavors of ``lease`` read now (a
        prepare step called by itself, not by an admission)."""
        if flavors is not None:
            return flavors
        return admit_mod.read_flavors(self.services, self, lease)

    def check(self, admission):
        """Raise :meth:`deny` to refuse the lease (create or update)."""

    def end(self, admission):
        """The lease ends (the entry is closed after every filter)."""

    def _admit(self, kind, context, lease, decide, current_lease=None):
        """This filter's admission alone, decided by ``decide`` (a chain
        admits its filters together, and calls :meth:`check` and
        :meth:`end` itself)."""
        admit_mod.admit(self.services, [self], kind, self.context(context),
                        lease, decide, current_lease)

    def check_create(self, context, lease):
        self._admit(admit_mod.CHECK_CREATE, context, self.lease(lease),
                    self.check)

    def check_update(self, context, current_lease, lease):
        current_lease = self.lease(current_lease, 'current_lease')
        self._admit(admit_mod.CHECK_UPDATE, context, self.lease(lease),
                    self.check, current_lease)

    def on_end(self, context, lease):
        self._admit(admit_mod.ON_END, context, self.lease(lease), self.end)
