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
"""One admission, planned and run: the only place that does it.

The filters that decide from the ledger (``uses_ledger``) are admitted
together, from ``(services, filters, kind, context, lease)``:

1. :func:`plan`, before any lock -- everything that waits on another
   service:

   * the Nova flavors of the lease's ``flavor:instance`` reservations,
     read once for every filter that counts them (``uses_flavors``; the
     first such filter labels a denial: a flavor Nova does not know, or
     that cannot be counted);
   * the ledger locks the filters need beyond the project's own
     (``ledger_locks``, and ``lease_locks`` of the lease's new state);
   * each filter's ``prepare(context, lease, flavors)`` (Placement,
     Keystone, Nova quotas) and the reserved hosts' resources
     (Placement), side by side (:mod:`placement_quota.concurrency`);

2. :func:`run`: the ledger admission
   (:func:`placement_quota.ledger.admission.admit`): one transaction
   holding those locks, handed to the caller's ``decide``, which runs the
   filters' ``check`` (or ``end``) on it; the entry is recorded once
   ``decide`` returns. The ledger's own refusals (an update of an ended
   lease) become a denial labelled ``ledger``.

   When the database rolls the transaction back because a competing one
   wrote the same rows (:class:`~placement_quota.ledger.errors.
   LedgerConflict`: a deadlock; on Galera, a certification conflict at
   COMMIT or a brute-force abort at any statement), nothing of it was
   kept, and the admission is run again whole -- locks, ledger reads and
   ``decide`` -- after a short random pause, at most ``[ledger]
   conflict_attempts`` times in all; the last conflict is a 503. What the
   plan read before the locks is kept: it was read without them anyway.

:func:`admit` is both. The :class:`~placement_quota.filters.chain.
FilterChain` admits its ledger filters together; a filter run alone
(blazar-manager calls our filters one by one) is admitted alone, the
same way. Nothing is found in a context variable: flavors, what was
prepared and the hosts' resources travel in the :class:`Plan`.

``guard(filter_, kind, context, step)`` is a context manager factory
around each filter's part of the plan (``step`` is ``'flavors'``,
``'locks'`` or ``'prepare'``): the chain uses it to label a failure with
the filter's name; alone, errors pass as they are.
"""

import contextlib
import dataclasses
import functools
import time
import typing

from oslo_log import log as logging

from placement_quota import concurrency
from placement_quota import errors as pq_errors
from placement_quota.filters import base
from placement_quota.lease import amounts as accounting
from placement_quota.lease import flavor_rules
from placement_quota.lease import model as lease_model
from placement_quota.ledger import admission as admission_mod
from placement_quota.ledger.db import engine as ledger_engine
from placement_quota.ledger import errors as ledger_errors
from placement_quota import metrics
from placement_quota.nova import flavors as flavors_mod

LOG = logging.getLogger(__name__)

CHECK_CREATE = admission_mod.CHECK_CREATE
CHECK_UPDATE = admission_mod.CHECK_UPDATE
ON_END = admission_mod.ON_END


def uses_ledger(filter_):
    """Whether ``filter_`` decides from the ledger (is admitted)."""
    return getattr(filter_, 'uses_ledger', False)


def nothing_to_prepare(method):
    """Mark a ``prepare`` method that reads nothing (no thread is spent
    on it)."""
    method.nothing_to_prepare = True
    return method


def _prepares(filter_):
    """Whether ``filter_`` has a prepare step that reads something."""
    return not getattr(type(filter_).prepare, 'nothing_to_prepare', False)


@contextlib.contextmanager
def unguarded(filter_, kind, context, step):
    """The guard of a filter admitted alone: errors pass as they are."""
    yield


@dataclasses.dataclass
class Plan:
    """What an admission needs, read before it locks anything."""

    #: Ledger lock names beyond the project's own, in the filters' order.
    locks: list
    #: The flavors of the lease's flavor:instance reservations
    #: (:class:`~placement_quota.nova.flavors.Prefetched`), or None.
    flavors: typing.Any = None
    #: ``{filter: what its prepare step read}``.
    prepared: dict = dataclasses.field(default_factory=dict)
    #: The reserved hosts' resources, read beforehand (an Outcome: its
    #: failure is raised by :func:`run`, with the ledger's).
    hosts: concurrency.Outcome = concurrency.Outcome(None, None)
    #: The ledger scalars the filters' checks ask for, read in one
    #: statement once the locks are held (``reads_ahead``).
    read_ahead: tuple = ()
    #: The projects whose leases over the lease's window the filters'
    #: checks count (``interval_projects``): read in one statement, which
    #: answers each filter's read of some of them.
    interval_projects: frozenset = frozenset()


def read_hosts(host_resources, lease):
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


def read_flavors(services, filter_, lease, field='lease'):
    """The flavors of ``lease``'s ``flavor:instance`` reservations, read
    now (before the locks) through ``services.flavors``: a
    :class:`~placement_quota.nova.flavors.Prefetched`, or None when the
    lease has none.

    A flavor that cannot be counted is a denial (labelled ``filter_``):
    unknown to Nova, refused by Nova, with malformed or uncounted extra
    specs, or no Nova configured. A reservation without a flavor ID, or
    amounts past the ledger's bounds, is a
    :class:`~placement_quota.lease.errors.PayloadError`. Nova not answering is
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
        reader = services.flavors
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


def plan(services, filters, kind, context, lease, guard=unguarded):
    """The :class:`Plan` of admitting ``filters`` (those that use the
    ledger) for ``kind`` of ``lease``: flavors, locks, prepare steps and
    hosts, read before any lock. The first prepare step that failed is
    raised (through its guard); the others' failures are logged."""
    admitted = [f for f in filters if uses_ledger(f)]
    found = Plan(locks=[])
    counting = [f for f in admitted if getattr(f, 'uses_flavors', False)]
    if kind != ON_END and counting:
        # Before any prepare step: PlacementCapacityFilter's needs the
        # flavors' sizes.
        with guard(counting[0], kind, context, 'flavors'):
            found.flavors = read_flavors(services, counting[0], lease)
    for filter_ in admitted:
        with guard(filter_, kind, context, 'locks'):
            names = list(filter_.ledger_locks(context))
            if kind != ON_END:
                names += filter_.lease_locks(lease)
        found.locks.extend(n for n in names if n not in found.locks)
    if kind == ON_END:
        return found
    found.read_ahead = tuple(sorted({
        name for f in admitted for name in getattr(f, 'reads_ahead', ())}))
    for filter_ in admitted:
        declared = getattr(filter_, 'interval_projects', None)
        if declared is not None:
            with guard(filter_, kind, context, 'locks'):
                found.interval_projects |= frozenset(declared(context))
    # The prepare steps and the hosts' read wait on other services: side
    # by side, before any lock is taken.
    preparing = [f for f in admitted if _prepares(f)]
    calls = [functools.partial(f.prepare, context, lease, found.flavors)
             for f in preparing]
    hosts = functools.partial(read_hosts, services.host_resources, lease)
    if lease.reservations_of(lease_model.HOST):
        calls.append(hosts)
    outcomes = concurrency.side_by_side(calls)
    if len(outcomes) > len(preparing):
        found.hosts = outcomes.pop()
    else:  # no host to read: nothing waits
        found.hosts = concurrency.Outcome(hosts(), None)
    failed = [(f, o.error) for f, o in zip(preparing, outcomes)
              if o.error is not None]
    for filter_, error in failed[1:]:
        # Only the first is raised; the others would go unseen.
        LOG.warning(
            'Enforcement filter %s also failed to prepare %s of project '
            '%s: %s', filter_.name, kind, context.project_id, error)
    for filter_, outcome in zip(preparing, outcomes):
        with guard(filter_, kind, context, 'prepare'):
            found.prepared[filter_] = outcome.get()
    return found


@contextlib.contextmanager
def ledger_denials():
    """The ledger's own refusals (an update of an ended lease) as a
    denial."""
    try:
        yield
    except admission_mod.Denied as exc:
        raise base.EnforcementDenied(str(exc), filter_name='ledger') \
            from None


def conflict(exc):
    """The :class:`~placement_quota.ledger.errors.LedgerConflict` that
    ``exc`` is or was raised from, or None: the admission may then be
    run again (nothing of it was kept). A denial or a bad payload is an
    answer, never run again; as in :func:`placement_quota.errors.
    unavailable`, the first of our errors in the chain decides."""
    if isinstance(exc, (base.EnforcementDenied, lease_model.PayloadError)):
        return None
    for error in pq_errors.causes(exc):
        if isinstance(error, ledger_errors.LedgerConflict):
            return error
        if isinstance(error, pq_errors.DependencyError):
            return None
    return None


def run(services, found, kind, context, lease, decide, current_lease=None,
        record=True):
    """The ledger admission of the :class:`Plan` ``found``: one locked
    transaction (an :class:`~placement_quota.ledger.admission.Admission`)
    handed to ``decide(admission)``, which raises to deny; the entry is
    recorded when it returns (with ``record=False``, a dry run, the
    transaction is rolled back). A conflict runs it all again (see the
    module's docstring), ``decide`` included."""
    host_resources = found.hosts.get()
    attempts = max(1, getattr(services.ledger, 'conflict_attempts', 1))
    for attempt in range(1, attempts + 1):
        try:
            with ledger_denials():
                with admission_mod.admit(
                        services.ledger, kind, context, lease,
                        current_lease, found.locks, host_resources,
                        found.prepared, found.flavors,
                        record=record,
                        read_ahead=found.read_ahead,
                        interval_projects=found.interval_projects) as adm:
                    decide(adm)
            return
        except Exception as exc:
            found_conflict = conflict(exc)
            if found_conflict is None:
                raise
            if attempt == attempts:
                metrics.CONFLICTS.labels('given_up').inc()
                raise ledger_errors.LedgerConflict(
                    'The %s of project %s conflicted with competing '
                    'admissions %d times in a row ([ledger] '
                    'conflict_attempts); try again later.'
                    % (kind, context.project_id, attempts)) from exc
            metrics.CONFLICTS.labels('retried').inc()
            pause = ledger_engine.conflict_pause(attempt)
            LOG.info('The %s of project %s conflicted with a competing '
                     'admission (attempt %d of %d: %s); running it again '
                     'in %.2f s.', kind, context.project_id, attempt,
                     attempts, found_conflict, pause)
            time.sleep(pause)


def admit(services, filters, kind, context, lease, decide,
          current_lease=None, guard=unguarded, record=True):
    """:func:`plan`, then :func:`run`: the admission of ``filters``,
    decided by ``decide(admission)``."""
    found = plan(services, filters, kind, context, lease, guard)
    run(services, found, kind, context, lease, decide, current_lease,
        record)
