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
"""One decision on one lease, from locked ledger data to the recorded entry.

An admission (planned and run by :mod:`placement_quota.filters.admit`)
opens an :class:`Admission` around the filters that use the ledger
(:func:`admit`): one database transaction that locks the
project (and what the policies ask for: the tree root, the capacity
pools, the cloud-wide row), gives each policy the ledger's view of the
lease's time window, and, when every filter allowed it, records the
outcome:

* check-create: a new entry, pending, with its amounts and its charge;
* check-update: the lease's entry replaced by the new state, and the
  difference in cost charged or refunded; a denied update leaves it as it
  was (the transaction is rolled back). An update of a lease the ledger
  closed (on-end came) is denied: Blazar never updates an ended lease, and
  allowing it would revive the entry and charge it again. An update that
  gives the lease an ``id`` another entry holds is refused as a bad
  payload (400, field ``lease.id``): Blazar never changes a lease's ID;
* on-end: the entry closed at the actual end (now, within the lease's
  dates) and the unused part of its charge refunded; a second on-end finds
  it closed and changes nothing (ledger/entry_states.py).

The entry of an update or an end is found by the lease's ID, else by the
fingerprint, else by the shape of the current lease Blazar sends
(ledger/keys.py), and takes the lease's ID there: two leases with one name
keep their own entries, and a renamed lease is still found.

A lease is only ever looked for in the project of the request: a lease ID
of another project finds nothing (:meth:`~placement_quota.ledger.store.
Transaction.find`).

Whatever the policies read from outside the ledger (Placement) they read
before the admission takes its locks, in their ``prepare`` step, and hand
it in (:attr:`Admission.prepared`, a reader of the reserved hosts'
resources read beforehand as ``host_resources``): a slow Placement never
holds a ledger lock.

A filter run on its own (Blazar calling one of our filters in-process)
is admitted alone the same way; run by the chain, it is admitted with
the chain's other ledger filters, in one admission.
"""

import contextlib
import time

from oslo_log import log as logging

from placement_quota.lease import model as lease_model
from placement_quota.lease import amounts as accounting
from placement_quota.ledger import keys
from placement_quota.ledger import models
from placement_quota.ledger import store
from placement_quota.ledger import entry_states as transitions
from placement_quota.ledger import window
from placement_quota import metrics

LOG = logging.getLogger(__name__)

CHECK_CREATE = 'check-create'
CHECK_UPDATE = 'check-update'
ON_END = 'on-end'


class Denied(Exception):
    """The ledger itself refuses the request (an update of an ended
    lease); the filters turn it into their denial (403)."""


class Admission:
    """The ledger's view of one request, inside its locked transaction."""

    def __init__(self, txn, kind, context, lease, current_lease=None,
                 host_resources=None, prepared=None, flavors=None):
        self.txn = txn
        self.kind = kind
        self.context = context
        self.project_id = context.project_id
        self.lease = lease
        self.current_lease = current_lease
        self.host_resources = host_resources
        #: The flavors of its flavor:instance reservations, read before.
        self.flavors = flavors
        #: What each filter's ``prepare`` read before the locks, by filter.
        self.prepared = dict(prepared or {})
        #: Projects whose intervals the filters will count: a read of
        #: some of them reads them all, once (:meth:`intervals`).
        self.interval_projects = frozenset()
        self._amounts = None
        # Set by a pricing policy (CreditFilter): micro-credits per hour,
        # the allocation charged, and whether it priced this request.
        self.priced = False
        self.hourly_rate = 0
        self.allocation_id = None
        #: {resource class: (micro-units an hour, pool allocation ID)} of
        #: the parts charged to credit pools.
        self.pools = {}
        old = current_lease if kind == CHECK_UPDATE else lease
        self.entry = None
        if kind != CHECK_CREATE:
            self.entry = txn.find(
                self.project_id, keys.lease_id(old),
                keys.fingerprint(self.project_id, context.user_id, old),
                keys.shape(self.project_id, old))
        self.name = _text(lease.values.get('name'))
        if self.name is None and kind == CHECK_UPDATE:
            # Blazar's update values carry no name unless it changes.
            self.name = (_text(current_lease.values.get('name')) or
                         (self.entry.name if self.entry is not None
                          else None))
        named = lease
        if self.name is not None and lease.values.get('name') != self.name:
            named = dict(keys.values_of(lease), name=self.name)
        self.key = keys.fingerprint(self.project_id, context.user_id, named)
        self.shape = keys.shape(self.project_id, lease)
        if kind == CHECK_UPDATE:
            self._check_update()

    def _check_update(self):
        """Refuse the updates the ledger cannot record truthfully."""
        entry = self.entry
        if entry is not None and entry.state == models.TERMINATED:
            raise Denied(
                'Lease %s of project %s has ended (on %s); an ended lease '
                'cannot be updated.'
                % (entry.lease_id or entry.name or 'entry %d' % entry.id,
                   self.project_id,
                   entry.effective_end.strftime('%Y-%m-%d %H:%M')))
        new_id = keys.lease_id(self.lease)
        if new_id is None or (entry is not None and
                              entry.lease_id == new_id):
            return
        holder = self.txn.lease_id_holder(new_id)
        if holder is not None and (entry is None or holder.id != entry.id):
            raise lease_model.PayloadError(
                'lease.id', 'is the ID of another lease in the ledger; an '
                'update cannot give it to this lease', new_id)

    def prepared_for(self, filter_):
        """What ``filter_.prepare`` read for this request, or None when it
        was not run (an admission opened without the prepare step)."""
        return self.prepared.get(filter_)

    @property
    def now(self):
        return self.txn.now

    @property
    def start(self):
        return self.lease.start_date

    @property
    def end(self):
        return self.lease.end_date

    @property
    def amounts(self):
        """What the lease (its new state, for an update) reserves."""
        if self._amounts is None:
            self._amounts = accounting.lease_amounts(
                self.lease, self.host_resources, self.flavors)
        return self._amounts

    @property
    def owner(self):
        """The user the lease counts against: its owner (who created it)
        for an update or an end, whoever sends it; the asking user for a
        create. None when the request names no user."""
        if self.entry is not None:
            return self.entry.user_id
        return self.context.user_id

    @property
    def exclude(self):
        """The entry the request replaces, left out of every peak."""
        return None if self.entry is None else self.entry.id

    def intervals(self, project_ids=None, with_lease=False):
        """``[(Interval, row)]`` overlapping the lease's window, of
        ``project_ids`` (default: the project; ``'*'``: every project);
        ``with_lease`` adds the stored lease to each row."""
        if project_ids is None:
            project_ids = [self.project_id]
        elif project_ids == models.GLOBAL_LOCK:
            project_ids = None
        if (project_ids is not None and not with_lease and
                self.interval_projects.issuperset(project_ids)):
            wanted = set(project_ids)
            return [(interval, row) for interval, row in
                    self.txn.intervals(self.start, self.end,
                                       sorted(self.interval_projects),
                                       exclude=self.exclude, remember=True)
                    if row.project_id in wanted]
        return self.txn.intervals(self.start, self.end, project_ids,
                                  exclude=self.exclude,
                                  with_lease=with_lease)

    def peaks(self, project_ids=None, resources=None):
        """``{resource: window.Peak}`` already reserved during the lease's
        window (the lease itself left out)."""
        found = [interval for interval, row in self.intervals(project_ids)]
        return window.peaks(found, self.start, self.end, resources)

    def open_leases(self):
        """Pending and active leases of the project, this one left out."""
        return self.txn.open_count(self.project_id, exclude=self.exclude)

    # --- pricing -------------------------------------------------------

    def price(self, hourly_rate, allocation_id):
        """Record the cost model of this request (micro-credits/hour)."""
        self.priced = True
        self.hourly_rate = hourly_rate
        self.allocation_id = allocation_id

    def price_pools(self, pools):
        """Record the parts of this request charged to credit pools:
        ``{resource class: (micro-units an hour, pool allocation ID)}``."""
        self.pools = dict(pools)

    def pool_charged(self, resource_class, allocation_id):
        """Micro-units the entry was charged already to the pool
        ``allocation_id`` of ``resource_class`` (0 for a create, or a pool
        it was not charged to)."""
        old = transitions.pools_of(self.entry).get(resource_class)
        if old is None or old['allocation_id'] != allocation_id:
            return 0
        return old['charged']

    def pool_charges(self):
        """The ``pool_charges`` of the lease's whole window at the
        recorded pool prices."""
        return {rc: {'allocation_id': allocation_id, 'hourly': hourly,
                     'charged': store.cost(hourly, self.start, self.end)}
                for rc, (hourly, allocation_id) in sorted(self.pools.items())}

    @property
    def previously_charged(self):
        return 0 if self.entry is None else self.entry.charged

    def cost(self):
        """Micro-credits the lease's whole window costs at the price."""
        return store.cost(self.hourly_rate, self.start, self.end)

    def charge_delta(self):
        """Micro-credits this request charges (negative: refunds)."""
        return self.cost() - self.previously_charged

    # --- recording ------------------------------------------------------

    def record(self):
        if self.kind == CHECK_CREATE:
            self._insert()
        elif self.kind == CHECK_UPDATE:
            if self.entry is None:
                LOG.info('Lease %s of project %s is not in the ledger (it '
                         'predates it); recording its new state.',
                         keys.lease_id(self.current_lease) or self.key[:12],
                         self.project_id)
                self._insert()
            else:
                self._replace()
        else:
            self._close()

    def _entry_values(self):
        values = dict(
            project_id=self.project_id,
            lease_id=(keys.lease_id(self.lease) or
                      (keys.lease_id(self.current_lease)
                       if self.current_lease is not None else None)),
            provisional_key=self.key, shape_key=self.shape,
            name=self.name,
            user_id=self.context.user_id,
            start_date=self.start, end_date=self.end,
            effective_end=self.end,
            amounts=self.amounts, lease=self.lease.to_dict())
        if self.priced:
            values.update(hourly_rate=self.hourly_rate,
                          allocation_id=self.allocation_id,
                          pool_charges=self.pool_charges() or None)
        return values

    def _insert(self):
        values = self._entry_values()
        if values['lease_id'] is not None and self.txn.lease_id_holder(
                values['lease_id']) is not None:
            values['lease_id'] = None  # already keyed on another entry
        charge = self.cost() if self.priced else 0
        values.update(state=models.PENDING, charged=charge)
        values.setdefault('hourly_rate', 0)
        row = self.txn.insert(
            charge=(self.allocation_id, charge, models.CHARGE_CREATE),
            **values)
        transitions.charge_pools(self.txn, self.project_id, row, {},
                                 values.get('pool_charges') or {},
                                 models.CHARGE_CREATE)

    def _replace(self):
        values = self._entry_values()
        if self.entry.user_id:
            # The lease stays its creator's, whoever updates it: what
            # counts against a user (their limits, caps, share) follows it.
            values['user_id'] = self.entry.user_id
        if values['lease_id'] is None or self.entry.lease_id is not None:
            values['lease_id'] = self.entry.lease_id
        elif self.txn.lease_id_holder(values['lease_id']) is not None:
            values['lease_id'] = None
        if self.entry.state == models.ABANDONED:
            # Blazar updates the lease: it exists after all.
            transitions.reopen(self.txn, self.entry)
            self.entry = self.txn.entry(self.entry.id)
        if self.priced:
            delta = self.charge_delta()
            values['charged'] = self.entry.charged + delta
            self.txn.charge(self.project_id, self.entry.id,
                            self.allocation_id, delta, models.CHARGE_UPDATE)
            transitions.charge_pools(
                self.txn, self.project_id, self.entry.id,
                transitions.pools_of(self.entry),
                values['pool_charges'] or {}, models.CHARGE_UPDATE)
        self.txn.update(self.entry.id, **values)

    def _close(self):
        entry = self.entry
        if entry is None:
            LOG.info('on-end for a lease of project %s that the ledger does '
                     'not hold; nothing to close.', self.project_id)
            return
        transitions.close(self.txn, entry, self.now,
                          lease_id=keys.lease_id(self.lease))


def _text(value):
    return value if isinstance(value, str) else None


class _DryRun(Exception):
    """Rolls a dry admission's transaction back (never seen outside)."""


@contextlib.contextmanager
def admit(ledger, kind, context, lease, current_lease=None, locks=(),
          host_resources=None, prepared=None, flavors=None, record=True,
          read_ahead=(), interval_projects=()):
    """Open an admission: lock, decide, record.

    The block decides (raising denies); the entry is recorded when it
    returns normally. ``locks`` are taken with the project's own, in the
    ledger's lock order (ledger/db/locks.py). ``prepared`` is ``{filter:
    what its prepare step read}``; ``flavors`` the flavors of its
    ``flavor:instance`` reservations, read before the locks.

    ``record=False`` is a dry run: the block decides on the same locked
    view, then the transaction is rolled back -- no entry, no charge, and
    no lock held once it returns.

    ``read_ahead``: ledger scalars the block will ask for
    (:meth:`~placement_quota.ledger.store.Transaction.read_ahead`), read
    in one statement once the locks are held. ``interval_projects``:
    projects whose intervals the block will count (:meth:`Admission.
    intervals` of any of them reads those of all in one statement).
    """
    started = time.perf_counter()
    try:
        with ledger.transaction([context.project_id] + list(locks)) as txn:
            metrics.LOCK_WAIT_SECONDS.observe(time.perf_counter() - started)
            adm = Admission(txn, kind, context, lease, current_lease,
                            host_resources, prepared, flavors)
            adm.interval_projects = frozenset(interval_projects)
            txn.read_ahead(context.project_id, read_ahead, adm.exclude)
            yield adm
            if not record:
                raise _DryRun()
            adm.record()
    except _DryRun:
        LOG.debug('Dry %s of project %s: decided, nothing recorded.', kind,
                  context.project_id)


def record_denied(ledger, context, lease, message, denied_by=None):
    """Keep a denied create for the record (it counts toward nothing),
    with the name of the filter that denied it."""
    try:
        with ledger.transaction() as txn:
            txn.insert(project_id=context.project_id,
                       lease_id=None,
                       provisional_key=keys.fingerprint(
                           context.project_id, context.user_id, lease),
                       shape_key=keys.shape(context.project_id, lease),
                       name=_text(lease.values.get('name')),
                       user_id=context.user_id,
                       start_date=lease.start_date, end_date=lease.end_date,
                       state=models.DENIED,
                       amounts=accounting.lease_amounts(lease),
                       lease=lease.to_dict(), hourly_rate=0, charged=0,
                       message=message[:4000],
                       denied_by=(denied_by or None) and denied_by[:255])
    except Exception:
        LOG.exception('Could not record the denied lease of project %s',
                      context.project_id)
