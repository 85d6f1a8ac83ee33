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
"""What the admin API does to accounts, without HTTP.

:class:`Accounts` keeps accounts in the ledger database (table
``accounts``, :mod:`~placement_quota.accounts.store`), reads their usage
from Placement (:mod:`~placement_quota.accounts.consumers`) and the
ledger, and moves their resources: Placement consumers (allocations
carrying the account as project) and open leases of the ledger.

Errors are :mod:`~placement_quota.accounts.errors`: a message naming the
field and the value, and extra details (``body``).

Moves follow the move-action protocol of "Multi-Tenant Accounting in
OpenStack":

* :meth:`Accounts.move_action` describes what would move, with a tag of
  the resources' state and an ETag of the whole description
  (:mod:`~placement_quota.accounts.moves`);
* :meth:`Accounts.move` moves, optionally only if the ETag still matches
  (``If-Match``). The consumers move in one ``POST /allocations`` carrying
  every consumer's generation, so a consumer that changed in between makes
  Placement refuse the whole write (409) and nothing moves; the leases
  move in the same ledger transaction, holding the source and destination
  locks, and are rolled back if Placement refuses.
"""

import collections
import datetime
import functools
import threading
import time
from urllib import parse

from oslo_log import log as logging

from placement_quota.accounts import consumers as consumers_mod
from placement_quota.accounts import errors
from placement_quota.accounts import ids
from placement_quota.accounts import model
from placement_quota import audit
from placement_quota.accounts import moves
from placement_quota.accounts import schema
from placement_quota.accounts import servers as servers_mod
from placement_quota.accounts import store
from placement_quota.ledger import report as ledger_report
from placement_quota.limits import errors as limit_errors
from placement_quota.limits import sources as limit_sources
from placement_quota.limits import tree as tree_mod
from placement_quota.placement import client as placement_client
from placement_quota.placement import usage as placement_usage

LOG = logging.getLogger(__name__)


class Accounts:
    """The account operations of one configuration.

    :param ledger: the :class:`~placement_quota.ledger.store.Ledger`.
    :param placement: a PlacementClient, or None (usage and consumer moves
        then answer 502 saying Placement is not configured).
    :param limits_source: the LimitSource whose tree limits apply to moves
        (:attr:`placement_quota.services.Services.limits_source`).
    :param manage_limits: False when limits and parents live elsewhere
        (Keystone): a PUT setting them is refused with 409.
    :param servers: a :class:`~placement_quota.accounts.servers.
        NovaServers` listing an account's servers, the first candidates of
        a move-all; None reads every consumer of Placement
        (``[accounts] consumers_from``).
    """

    #: Tries of an unconditional move whose resources change under it.
    MOVE_ATTEMPTS = 3
    #: Move-all actions remembered for a conditional POST (see
    #: :meth:`_remember`): how many, and for how long (seconds).
    SCANS_KEPT = 128
    SCAN_TTL = 600

    def __init__(self, ledger, placement=None, limits_source=None,
                 recovery_period=7 * 86400, move_list_max=1000,
                 workers=8, unregistered_limit=0, manage_limits=True,
                 servers=None):
        self.ledger = ledger
        self.servers = servers
        self._servers_lock = threading.Lock()
        self.placement = placement
        self.limits_source = limits_source
        self.recovery_period = datetime.timedelta(seconds=recovery_period)
        self.move_list_max = move_list_max
        self.workers = workers
        self.unregistered_limit = unregistered_limit
        self.manage_limits = manage_limits
        self._scans = collections.OrderedDict()
        self._scans_lock = threading.Lock()

    @classmethod
    def from_services(cls, services):
        """The accounts of a :class:`placement_quota.services.Services`:
        its ledger, Placement and limits source, and ``[accounts]``."""
        conf = services.conf
        group = conf.accounts
        accounts = cls(
            services.ledger, None, limits_source=services.limits_source,
            recovery_period=group.recovery_period,
            move_list_max=group.move_list_max,
            workers=group.placement_workers,
            unregistered_limit=conf.limits.unregistered_resource_limit,
            manage_limits=conf.limits.source != 'keystone')
        # Made when first needed: listing or deleting accounts reads no
        # Placement, and must not need one.
        accounts._make_placement = lambda: services.placement
        if group.consumers_from != 'scan':
            accounts._make_servers = functools.partial(
                _nova_servers, conf, group.consumers_from)
        return accounts

    @property
    def now(self):
        return self.ledger.clock()

    _make_placement = None
    _make_servers = None

    def _nova(self):
        """The NovaServers of the account's moves, or None (scan)."""
        with self._servers_lock:
            if self._make_servers is not None:
                make, self._make_servers = self._make_servers, None
                self.servers = make()
            return self.servers

    def _candidates(self, source, leases):
        """The candidate consumers of a move-all of ``source`` (see
        :func:`placement_quota.accounts.consumers.of_account`): its
        servers in Nova, then the IDs of its open leases."""
        nova = self._nova()
        if nova is None:
            return ()
        found = [("Nova's servers of the project",
                  functools.partial(nova.of_project, source))]
        in_leases = consumers_mod.lease_candidates(leases)
        if in_leases:
            found.append(('its lease IDs in the ledger', lambda: in_leases))
        return found

    def _client(self):
        if self.placement is None and self._make_placement is not None:
            try:
                self.placement = self._make_placement()
            except placement_client.PlacementError as exc:
                raise errors.SourceUnavailable(str(exc), field='placement')
        if self.placement is None:
            raise errors.SourceUnavailable('No Placement is configured '
                                           '([placement])', field='placement')
        return self.placement

    # --- reading --------------------------------------------------------

    def _live(self, connection, account_id, field='account_id'):
        """The live Account, or NotFound / Gone; purges an account whose
        recovery period has passed."""
        row = store.row(connection, account_id)
        if row is None:
            raise errors.NotFound('No account %r' % account_id, field=field,
                                  value=account_id)
        if row.deleted_at is not None:
            if self._expired(row.deleted_at):
                self._purge(connection, account_id)
                raise errors.NotFound('No account %r' % account_id,
                                      field=field, value=account_id)
            until = model.iso(row.deleted_at + self.recovery_period)
            raise errors.Gone(
                'Account %r was deleted at %s; it can be recovered until %s '
                '(POST /v1/%s/action/recover)'
                % (account_id, model.iso(row.deleted_at), until,
                   parse.quote(account_id, safe='')),
                field=field, value=account_id,
                deleted_at=model.iso(row.deleted_at),
                recoverable_until=until)
        return model.Account.from_row(row)

    def _expired(self, deleted_at):
        return self.now >= deleted_at + self.recovery_period

    def _purge(self, connection, account_id):
        store.purge(connection, account_id)
        LOG.info('Purged account %r: its recovery period has passed',
                 account_id)

    def get(self, account_id):
        """The Account; NotFound or Gone."""
        with self.ledger.transaction() as txn:
            return self._live(txn.connection, account_id)

    def report(self, account_id, start, end, by='project', user_id=None):
        """Usage of the account and its children during ``[start,
        end)`` (:func:`placement_quota.ledger.report.report`)."""
        with self.ledger.reader() as txn:
            self._live(txn.connection, account_id)
            projects = [account_id] + store.children(txn.connection,
                                                     account_id)
            return ledger_report.report(
                txn.connection, self.ledger.dialect, start, end, by,
                projects, user_id, self._limits_now)

    def _limits_now(self, project_ids):
        """The limits source's limits of now, for a report's projects."""
        if self.limits_source is None:
            return {}
        try:
            return limit_sources.limits_now(self.limits_source, project_ids,
                                            ledger_report.LIMITS.values())
        except limit_sources.SourceError as exc:
            raise errors.SourceUnavailable(
                'Cannot read the limits for the report: %s' % exc)

    def show(self, account_id, with_usage=True):
        """The GET representation: the account, children and usage."""
        with self.ledger.transaction() as txn:
            account = self._live(txn.connection, account_id)
            document = account.as_dict()
            document['children'] = store.children(txn.connection,
                                                  account_id)
            if with_usage:
                leases = store.open_leases(txn.connection, [account_id],
                                           self.now)
                document['usage'] = {'reservations': model.reservations(
                    leases, self.now, list(account.limits))}
        if with_usage:
            document['usage']['placement'] = consumers_mod.usage(
                self._client(), account_id)
        return document

    def all(self):
        """Every live account (an Account list, sorted by ID)."""
        with self.ledger.transaction() as txn:
            return [model.Account.from_row(r)
                    for r in store.live_rows(txn.connection)]

    # --- writing --------------------------------------------------------

    def put(self, account_id, body):
        """Create or replace an account: ``(created, Account)``."""
        ids.validate(account_id)
        parent_id, limits, metadata = schema.parse_body(account_id, body)
        # Read before the transaction: the source reads the ledger too.
        registered = self._registered_limits()
        with self.ledger.transaction([store.ACCOUNTS_LOCK]) as txn:
            connection = txn.connection
            row = store.row(connection, account_id)
            if row is not None and row.deleted_at is not None:
                if self._expired(row.deleted_at):
                    self._purge(connection, account_id)
                    row = None
                else:
                    raise errors.Conflict(
                        'Account %r is deleted (recoverable until %s): '
                        'recover it before changing it'
                        % (account_id, model.iso(row.deleted_at +
                                                 self.recovery_period)),
                        field='account_id', value=account_id)
            if not self.manage_limits and (parent_id or limits):
                raise errors.Conflict(
                    '[limits] source is keystone: set the parent and the '
                    'limits of a project in Keystone, not here',
                    field='limits' if limits else 'parent_id')
            self._check_tree(connection, account_id, parent_id, limits,
                             registered)
            if row is None:
                store.insert(connection, account_id, parent_id, limits,
                             metadata, self.now)
                LOG.info('Created account %r (parent %s, limits %s)',
                         account_id, parent_id, limits)
                audit.record('account-create', 'account=%s' % account_id,
                             None, _described(parent_id, limits, metadata))
                return True, self._live(connection, account_id)
            old = model.Account.from_row(row)
            if (old.parent_id, old.limits, old.metadata) != (
                    parent_id, limits, metadata):
                store.update(connection, account_id, parent_id, limits,
                             metadata, self.now)
                LOG.info('Changed account %r (parent %s, limits %s)',
                         account_id, parent_id, limits)
                audit.record('account-set', 'account=%s' % account_id,
                             _described(old.parent_id, old.limits,
                                        old.metadata),
                             _described(parent_id, limits, metadata))
            return False, self._live(connection, account_id)

    def _check_tree(self, connection, account_id, parent_id, limits,
                    registered):
        """Refuse (409) a change that breaks the strict two-level rules."""
        projects = {r.account_id: tree_mod.Project(
            r.account_id, r.parent_id, None, dict(r.limits or {}))
            for r in store.live_rows(connection, ordered=False)}
        if parent_id is not None and parent_id not in projects:
            raise errors.Conflict('parent_id %r is not an account: create '
                                  'it first' % parent_id, field='parent_id',
                                  value=parent_id)
        before = {str(b) for b in self._violations(projects, registered)}
        projects[account_id] = tree_mod.Project(account_id, parent_id, None,
                                                limits)
        new = [v for v in self._violations(projects, registered)
               if str(v) not in before]
        if new:
            raise errors.Conflict(
                'The account would break the strict two-level rules: %s'
                % '; '.join(str(v) for v in new), field='parent_id'
                if isinstance(new[0], limit_errors.HierarchyError)
                else 'limits', violations=[str(v) for v in new])

    def _registered_limits(self):
        if self.limits_source is None:
            return {}
        return self.limits_source.load().registered_limits

    def _violations(self, projects, registered):
        return tree_mod.check(tree_mod.LimitData(
            registered_limits=registered, projects=projects),
            self.unregistered_limit)

    def delete(self, account_id):
        """Mark deleted (recoverable for ``recovery_period``)."""
        with self.ledger.transaction([store.ACCOUNTS_LOCK]) as txn:
            self._live(txn.connection, account_id)
            children = store.children(txn.connection, account_id)
            if children:
                raise errors.Conflict(
                    'Account %r has child accounts %s: delete or re-parent '
                    'them first' % (account_id, ', '.join(
                        repr(c) for c in children)),
                    field='account_id', value=account_id, children=children)
            store.mark_deleted(txn.connection, account_id, self.now)
        LOG.info('Deleted account %r (recoverable for %s)', account_id,
                 self.recovery_period)
        audit.record('account-delete', 'account=%s' % account_id,
                     'live', 'deleted')

    def recover(self, account_id):
        """Bring back a deleted account within its recovery period."""
        with self.ledger.transaction([store.ACCOUNTS_LOCK]) as txn:
            connection = txn.connection
            row = store.row(connection, account_id)
            if row is None or (row.deleted_at is not None and
                               self._expired(row.deleted_at)):
                self._live(connection, account_id)   # 404, purging
            if row.deleted_at is None:
                raise errors.Conflict('Account %r is not deleted'
                                      % account_id, field='account_id',
                                      value=account_id)
            if row.parent_id is not None:
                parent = store.row(connection, row.parent_id)
                if parent is None or parent.deleted_at is not None:
                    raise errors.Conflict(
                        'The parent %r of account %r is gone: recover it '
                        'first' % (row.parent_id, account_id),
                        field='parent_id', value=row.parent_id)
            store.undelete(connection, account_id, self.now)
            LOG.info('Recovered account %r', account_id)
            audit.record('account-recover', 'account=%s' % account_id,
                         'deleted', 'live')
            return self._live(connection, account_id)

    # --- resources of an account ----------------------------------------

    def consumer(self, account_id, consumer_uuid):
        """The consumer's allocations if the account holds them (the
        resource representation), else NotFound."""
        with self.ledger.transaction() as txn:
            self._live(txn.connection, account_id)
        return moves.consumer_document(
            consumer_uuid, self._owned_consumer(account_id, consumer_uuid))

    def _owned_consumer(self, account_id, consumer_uuid):
        found = consumers_mod.read(self._client(), consumer_uuid)
        if found is None or found.get('project_id') != account_id:
            raise errors.NotFound('Account %r has no consumer %s in '
                                  'Placement' % (account_id, consumer_uuid),
                                  field='consumer_uuid', value=consumer_uuid)
        return found

    def lease(self, account_id, lease_id):
        """The open ledger lease ``lease_id`` of the account, else
        NotFound."""
        with self.ledger.transaction() as txn:
            self._live(txn.connection, account_id)
            row = self._lease_row(txn.connection, account_id, lease_id)
        return moves.lease_document(row)

    def _lease_row(self, connection, account_id, lease_id):
        row = store.open_lease(connection, account_id, lease_id)
        if row is None:
            raise errors.NotFound('Account %r has no open lease %s in the '
                                  'ledger' % (account_id, lease_id),
                                  field='lease_id', value=lease_id)
        return row

    # --- moves ----------------------------------------------------------

    def move_action(self, source, dest, consumer=None, lease=None,
                    known=None):
        """The move action of "Multi-Tenant Accounting in OpenStack": what
        would move from ``source`` to ``dest`` (one consumer, one lease, or
        everything), its tag and ETag, and the limits it would break.

        ``known``: see :func:`placement_quota.accounts.consumers.
        of_account`."""
        if dest is None:
            raise errors.Invalid('The query parameter dest (the destination '
                                 'account) is required', field='dest')
        try:
            ids.validate(dest, 'dest')
        except ids.InvalidAccountId as exc:
            raise errors.Invalid(str(exc), field='dest', value=dest)
        if dest == source:
            raise errors.Invalid('dest %r is the account itself' % dest,
                                 field='dest', value=dest)
        with self.ledger.transaction() as txn:
            connection = txn.connection
            src_account = self._live(connection, source)
            dest_account = self._live(connection, dest, field='dest')
            if lease is not None:
                leases = [self._lease_row(connection, source, lease)]
            elif consumer is not None:
                leases = []
            else:
                leases = store.open_leases(connection, [source], self.now)
        if consumer is not None:
            consumers = [(consumer, self._owned_consumer(source, consumer))]
        elif lease is not None:
            consumers = []
        else:
            consumers = consumers_mod.of_account(
                self._client(), source, self.workers, known,
                self._candidates(source, leases))
        over = self._over_limits(source, dest, consumers, leases)
        action = moves.describe(src_account, dest_account, consumers, leases,
                                over, self.move_list_max)
        if consumer is None and lease is None:
            self._remember(source, dest, action)
        return action

    def _remember(self, source, dest, action):
        """Keep the consumers of a move-all action, so that a POST with its
        ETag re-reads them (and the usage) instead of every consumer of the
        cloud. Per process: with several API workers, a POST reaching
        another worker reads everything, with the same result."""
        with self._scans_lock:
            self._scans.pop((source, dest), None)
            self._scans[(source, dest)] = (
                action.etag, [uuid for uuid, _ in action.consumers],
                time.monotonic())
            while len(self._scans) > self.SCANS_KEPT:
                self._scans.popitem(last=False)

    def _recalled(self, source, dest, if_match):
        """The consumers of the move-all action whose ETag is ``if_match``,
        or None."""
        with self._scans_lock:
            found = self._scans.get((source, dest))
        if found is None or not moves.etag_matches(if_match, found[0]):
            return None
        if time.monotonic() - found[2] > self.SCAN_TTL:
            return None
        return found[1]

    def _over_limits(self, source, dest, consumers, leases):
        """Every limit of ``dest`` (and of its tree) the move would pass,
        with the numbers: reads what :class:`moves.LimitCheck` needs."""
        if self.limits_source is None:
            return []
        check = moves.LimitCheck(tree_mod.ProjectTree.from_data(
            self.limits_source.load(), strict=False,
            unregistered_limit=self.unregistered_limit), source, dest)
        if not check.resources:
            return []
        moving = check.moving(consumers)
        used = {}
        if moving:
            used = placement_usage.PlacementUsage(
                self._client(), self.workers).get_usage(check.family, moving)
        existing = []
        now = self.now
        if check.reserved(leases):
            with self.ledger.transaction() as txn:
                existing = store.open_leases(txn.connection, check.family,
                                             self.now)
        return check.over(moving, used, leases, existing, now)

    def move(self, source, dest, consumer=None, lease=None, if_match=None):
        """Move and return the MoveAction that was carried out.

        With ``if_match`` (the ETag of a GET move action, or ``*``),
        PreconditionFailed (412) when anything changed since.
        """
        for attempt in range(self.MOVE_ATTEMPTS):
            action = self._move_once(source, dest, consumer, lease,
                                     if_match)
            if action is not None:
                return action
        raise errors.PreconditionFailed(
            'The resources of account %r kept changing during %d move '
            'attempts; nothing was moved' % (source, self.MOVE_ATTEMPTS),
            field='account_id', value=source)

    def _move_once(self, source, dest, consumer, lease, if_match):
        """The action carried out, or None when an unconditional move met
        a concurrent change (the caller tries again)."""
        known = None
        if if_match is not None and consumer is None and lease is None:
            known = self._recalled(source, dest, if_match)
        action = self.move_action(source, dest, consumer, lease, known)
        if if_match is not None and not moves.etag_matches(if_match,
                                                           action.etag):
            raise errors.PreconditionFailed(
                'The move action changed since its ETag %s was read: its '
                'ETag is now %s; GET the move action again'
                % (if_match, action.etag), field='If-Match', value=if_match,
                etag=action.etag)
        if action.over_limits:
            raise errors.OverLimit(
                'Moving to account %r would pass its limits: %s'
                % (dest, '; '.join(moves.over_text(o)
                                   for o in action.over_limits)),
                field='dest', value=dest, over_limits=action.over_limits)
        try:
            self._apply(source, dest, action)
        except errors.PreconditionFailed:
            if if_match is not None:
                raise
            LOG.info('A resource of account %r changed during its move to '
                     '%r; trying again', source, dest)
            return None
        audit.record('account-move', 'account=%s' % source,
                     'account=%s' % source, 'account=%s' % dest,
                     consumers=len(action.consumers),
                     leases=len(action.leases),
                     **({'consumer': consumer} if consumer else {}),
                     **({'lease': lease} if lease else {}))
        return action

    def _apply(self, source, dest, action):
        # The ledger takes the two locks in its one lock order.
        with self.ledger.transaction([source, dest]) as txn:
            connection = txn.connection
            # The accounts must still be there, and the leases unchanged.
            self._live(connection, source)
            self._live(connection, dest, field='dest')
            for row in action.leases:
                if not store.move_lease(connection, row, source, dest,
                                        txn.now):
                    raise errors.PreconditionFailed(
                        'Lease %s changed while it was moved; nothing was '
                        'moved' % (row.lease_id or row.name),
                        field='lease_id', value=row.lease_id)
            if action.consumers:
                consumers_mod.move(self._client(), dest, action.consumers)
        LOG.info('Moved %d consumer(s) and %d lease(s) from account %r to '
                 '%r', len(action.consumers), len(action.leases), source,
                 dest)


def _nova_servers(conf, mode):
    """The NovaServers of ``[nova]``, or None (moves scan Placement)."""
    try:
        made = servers_mod.NovaServers.from_conf(conf)
    except servers_mod.NovaServersError as exc:
        LOG.warning('Account moves read every consumer of Placement '
                    '([accounts] consumers_from = %s): %s', mode, exc)
        return None
    if made is None:
        LOG.info('[nova] names no Nova: account moves read every consumer '
                 'of Placement ([accounts] consumers_from = %s)', mode)
    return made


def _described(parent_id, limits, metadata):
    """An account's state for the audit log."""
    return 'parent=%s limits=%s metadata=%s' % (
        parent_id, dict(sorted((limits or {}).items())),
        dict(sorted((metadata or {}).items())))
