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
``accounts``), reads their usage from Placement and the ledger, and moves
their resources: Placement consumers (allocations carrying the account as
project) and open leases of the ledger.

Errors are :class:`AccountError` subclasses carrying the HTTP status the
admin API answers with, a message naming the field and the value, and
extra details (``body``).

Moves follow specs/003's move-action protocol:

* :meth:`Accounts.move_action` describes what would move, with a tag of
  the resources' state and an ETag of the whole description;
* :meth:`Accounts.move` moves, optionally only if the ETag still matches
  (``If-Match``). The consumers move in one ``POST /allocations`` carrying
  every consumer's generation, so a consumer that changed in between makes
  Placement refuse the whole write (409) and nothing moves; the leases
  move in the same ledger transaction, holding the source and destination
  locks, and are rolled back if Placement refuses.
"""

import collections
import concurrent.futures
import dataclasses
import datetime
import hashlib
import json
import threading
import time
import typing

import jsonschema
from oslo_log import log as logging
import sqlalchemy as sa

from placement_quota.accounts import ids
from placement_quota.ledger import models
from placement_quota.ledger import window
from placement_quota.limits import errors as limit_errors
from placement_quota.limits import tree as tree_mod
from placement_quota.placement import capacity
from placement_quota.placement import client as placement_client
from placement_quota.placement import usage as placement_usage

LOG = logging.getLogger(__name__)

#: The ledger lock every change of the account hierarchy takes, so that two
#: concurrent PUTs never build a tree of depth three together.
ACCOUNTS_LOCK = '*accounts'
OPEN_STATES = (models.PENDING, models.ACTIVE)
#: Fields of a GET representation that a PUT accepts and ignores, so that
#: what GET returned can be PUT back.
READ_ONLY = ('id', 'children', 'usage', 'generation', 'created_at',
             'updated_at', 'links')


class AccountError(Exception):
    """An admin API error: HTTP ``status``, message and details."""

    status = 400

    def __init__(self, message, **body):
        super().__init__(message)
        self.message = message
        self.body = body


class Invalid(AccountError):
    status = 400


class NotFound(AccountError):
    status = 404


class Gone(AccountError):
    status = 410


class Conflict(AccountError):
    status = 409


class OverLimit(Conflict):
    """A move would take the destination past a limit."""


class PreconditionFailed(AccountError):
    status = 412


class SourceUnavailable(AccountError):
    """Placement could not be read or written."""

    status = 502


_RESOURCE = {'type': 'string', 'minLength': 1, 'maxLength': 255}
PUT_SCHEMA = {
    'type': 'object',
    'properties': {
        'parent_id': {'oneOf': [{'type': 'string'}, {'type': 'null'}]},
        'limits': {'type': 'object', 'propertyNames': _RESOURCE,
                   'additionalProperties': {'type': 'integer',
                                            'minimum': -1}},
        'metadata': {'type': 'object', 'propertyNames': _RESOURCE,
                     'additionalProperties': {'type': 'string',
                                              'maxLength': 65535}},
    },
    'additionalProperties': False,
}


def _is_integer(checker, value):
    return isinstance(value, int) and not isinstance(value, bool)


_Validator = jsonschema.validators.extend(
    jsonschema.Draft7Validator,
    type_checker=jsonschema.Draft7Validator.TYPE_CHECKER.redefine(
        'integer', _is_integer))


@dataclasses.dataclass
class Account:
    """One account row."""

    account_id: str
    parent_id: typing.Optional[str]
    limits: dict
    metadata: dict
    generation: int
    created_at: datetime.datetime
    updated_at: typing.Optional[datetime.datetime] = None
    deleted_at: typing.Optional[datetime.datetime] = None

    @classmethod
    def from_row(cls, row):
        return cls(row.account_id, row.parent_id, dict(row.limits or {}),
                   dict(row.properties or {}), row.generation,
                   row.created_at, row.updated_at, row.deleted_at)

    def as_dict(self):
        return {'id': self.account_id, 'parent_id': self.parent_id,
                'limits': dict(sorted(self.limits.items())),
                'metadata': dict(sorted(self.metadata.items())),
                'generation': self.generation,
                'created_at': _iso(self.created_at),
                'updated_at': _iso(self.updated_at)}


def _iso(value):
    return value.isoformat() if value is not None else None


def digest(document):
    """SHA-1 of the canonical JSON of ``document`` (hex)."""
    text = json.dumps(document, sort_keys=True, separators=(',', ':'),
                      ensure_ascii=False, default=str)
    return hashlib.sha1(text.encode('utf-8')).hexdigest()


def parse_body(account_id, body):
    """The ``(parent_id, limits, metadata)`` of a PUT body (a dict).

    Read-only fields of a GET representation are accepted and ignored;
    ``id``, when present, must be the account's own.
    """
    if not isinstance(body, dict):
        raise Invalid('The body must be a JSON object, not %s'
                      % type(body).__name__, field='body')
    if 'id' in body and body['id'] != account_id:
        raise Invalid('Field id %r differs from the account ID %r of the '
                      'URL' % (body['id'], account_id), field='id',
                      value=body['id'])
    document = {k: v for k, v in body.items() if k not in READ_ONLY}
    error = next(iter(sorted(_Validator(PUT_SCHEMA).iter_errors(document),
                             key=lambda e: list(map(str, e.path)))), None)
    if error is not None:
        field = '/'.join(str(p) for p in error.absolute_path) or 'body'
        raise Invalid('Field %s: %s' % (field, error.message), field=field,
                      value=error.instance)
    parent_id = document.get('parent_id')
    if parent_id is not None:
        try:
            ids.validate(parent_id, 'parent_id')
        except ids.InvalidAccountId as exc:
            raise Invalid(str(exc), field='parent_id', value=parent_id)
        if parent_id == account_id:
            raise Invalid('parent_id %r is the account itself' % parent_id,
                          field='parent_id', value=parent_id)
    return (parent_id, dict(document.get('limits') or {}),
            dict(document.get('metadata') or {}))


@dataclasses.dataclass
class MoveAction:
    """What a move would do: the representation, its ETag, and the plan."""

    document: dict
    etag: str
    consumers: list      # [(uuid, allocation body of GET /allocations/U)]
    leases: list         # ledger rows
    over_limits: list


class Accounts:
    """The account operations of one configuration.

    :param ledger: the :class:`~placement_quota.ledger.store.Ledger`.
    :param placement: a PlacementClient, or None (usage and consumer moves
        then answer 502 saying Placement is not configured).
    :param limits_source: the LimitSource whose tree limits apply to moves
        (:func:`placement_quota.identity.limits.source_from_conf`).
    :param manage_limits: False when limits and parents live elsewhere
        (Keystone): a PUT setting them is refused with 409.
    """

    #: Tries of an unconditional move whose resources change under it.
    MOVE_ATTEMPTS = 3
    #: Move-all actions remembered for a conditional POST (see
    #: :meth:`_remember`): how many, and for how long (seconds).
    SCANS_KEPT = 128
    SCAN_TTL = 600

    def __init__(self, ledger, placement=None, limits_source=None,
                 recovery_period=7 * 86400, move_list_max=1000,
                 workers=8, unregistered_limit=0, manage_limits=True):
        self.ledger = ledger
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
    def from_conf(cls, conf, placement=None):
        from placement_quota.accounts import source as source_mod
        from placement_quota.conf import accounts as accounts_conf
        from placement_quota import ledger as ledger_mod
        accounts_conf.register_opts_once(conf)
        group = conf.accounts
        if placement is None:
            placement = ledger_mod.placement(conf)
        return cls(ledger_mod.shared(conf), placement,
                   limits_source=source_mod.source_from_conf(conf),
                   recovery_period=group.recovery_period,
                   move_list_max=group.move_list_max,
                   workers=group.placement_workers,
                   unregistered_limit=conf.limits.unregistered_resource_limit,
                   manage_limits=conf.limits.source != 'keystone')

    @property
    def now(self):
        return self.ledger.clock()

    # --- reading --------------------------------------------------------

    def _row(self, connection, account_id):
        t = models.accounts
        return connection.execute(
            sa.select(t).where(t.c.account_id == account_id)).first()

    def _live(self, connection, account_id, field='account_id'):
        """The live Account, or NotFound / Gone; purges an account whose
        recovery period has passed."""
        row = self._row(connection, account_id)
        if row is None:
            raise NotFound('No account %r' % account_id, field=field,
                           value=account_id)
        if row.deleted_at is not None:
            if self._expired(row.deleted_at):
                self._purge(connection, account_id)
                raise NotFound('No account %r' % account_id, field=field,
                               value=account_id)
            raise Gone('Account %r was deleted at %s; it can be recovered '
                       'until %s (POST .../action/recover)'
                       % (account_id, _iso(row.deleted_at),
                          _iso(row.deleted_at + self.recovery_period)),
                       field=field, value=account_id,
                       deleted_at=_iso(row.deleted_at),
                       recoverable_until=_iso(row.deleted_at +
                                              self.recovery_period))
        return Account.from_row(row)

    def _expired(self, deleted_at):
        return self.now >= deleted_at + self.recovery_period

    def _purge(self, connection, account_id):
        t = models.accounts
        connection.execute(t.delete().where(t.c.account_id == account_id))
        LOG.info('Purged account %r: its recovery period has passed',
                 account_id)

    def _children(self, connection, account_id):
        t = models.accounts
        return [r.account_id for r in connection.execute(
            sa.select(t.c.account_id).where(
                t.c.parent_id == account_id, t.c.deleted_at.is_(None))
            .order_by(t.c.account_id))]

    def get(self, account_id):
        """The Account; NotFound or Gone."""
        with self.ledger.transaction() as txn:
            return self._live(txn.connection, account_id)

    def show(self, account_id, with_usage=True):
        """The GET representation: the account, children and usage."""
        with self.ledger.transaction() as txn:
            account = self._live(txn.connection, account_id)
            document = account.as_dict()
            document['children'] = self._children(txn.connection,
                                                  account_id)
            if with_usage:
                document['usage'] = {'reservations': self._reserved(
                    txn, [account_id], list(account.limits))}
        if with_usage:
            document['usage']['placement'] = self._placement_usage(
                account_id)
        return document

    def all(self):
        """Every live account (an Account list, sorted by ID)."""
        t = models.accounts
        with self.ledger.transaction() as txn:
            rows = txn.connection.execute(
                sa.select(t).where(t.c.deleted_at.is_(None))
                .order_by(t.c.account_id))
            return [Account.from_row(r) for r in rows]

    def _reserved(self, txn, project_ids, resources=()):
        """Open leases of ``project_ids`` in the ledger: counts by state,
        what is reserved now and the peak from now on."""
        rows = self._open_leases(txn.connection, project_ids)
        intervals = [window.Interval(r.start_date, r.effective_end,
                                     r.amounts or {}) for r in rows]
        now = self.now
        last = max([i.end for i in intervals], default=now)
        names = set(resources)
        for interval in intervals:
            names.update(interval.amounts)
        current = window.peaks(intervals, now, now + datetime.timedelta(
            microseconds=1), names)
        peak = window.peaks(intervals, now, max(last, now + datetime.
                                                timedelta(microseconds=1)),
                            names)
        return {
            'pending': sum(1 for r in rows if r.state == models.PENDING),
            'active': sum(1 for r in rows if r.state == models.ACTIVE),
            'now': {r: p.amount for r, p in sorted(current.items())},
            'peak': {r: p.as_dict() for r, p in sorted(peak.items())},
        }

    def _open_leases(self, connection, project_ids):
        t = models.leases
        return list(connection.execute(
            sa.select(t).where(t.c.project_id.in_(list(project_ids)),
                               t.c.state.in_(OPEN_STATES),
                               t.c.effective_end > self.now)
            .order_by(t.c.start_date, t.c.id)))

    def _placement_usage(self, account_id):
        client = self._client()
        try:
            found = capacity.project_usages(client, account_id)
        except placement_client.PlacementError as exc:
            raise SourceUnavailable(
                'Cannot read the Placement usage of account %r: %s'
                % (account_id, exc), field='placement')
        return {'resources': dict(sorted(found.resources.items())),
                'consumers': {name: entry.consumer_count for name, entry
                              in sorted((found.consumer_types or {})
                                        .items())}}

    def _client(self):
        if self.placement is None:
            raise SourceUnavailable('No Placement is configured '
                                    '([placement])', field='placement')
        return self.placement

    # --- writing --------------------------------------------------------

    def put(self, account_id, body):
        """Create or replace an account: ``(created, Account)``."""
        ids.validate(account_id)
        parent_id, limits, metadata = parse_body(account_id, body)
        # Read before the transaction: the source reads the ledger too.
        registered = self._registered_limits()
        with self.ledger.transaction([ACCOUNTS_LOCK]) as txn:
            connection = txn.connection
            row = self._row(connection, account_id)
            if row is not None and row.deleted_at is not None:
                if self._expired(row.deleted_at):
                    self._purge(connection, account_id)
                    row = None
                else:
                    raise Conflict(
                        'Account %r is deleted (recoverable until %s): '
                        'recover it before changing it'
                        % (account_id, _iso(row.deleted_at +
                                            self.recovery_period)),
                        field='account_id', value=account_id)
            if not self.manage_limits and (parent_id or limits):
                raise Conflict(
                    '[limits] source is keystone: set the parent and the '
                    'limits of a project in Keystone, not here',
                    field='limits' if limits else 'parent_id')
            self._check_tree(connection, account_id, parent_id, limits,
                             registered)
            t = models.accounts
            now = self.now
            if row is None:
                connection.execute(t.insert().values(
                    account_id=account_id, parent_id=parent_id,
                    limits=limits, properties=metadata, generation=1,
                    created_at=now))
                LOG.info('Created account %r (parent %s, limits %s)',
                         account_id, parent_id, limits)
                return True, self._live(connection, account_id)
            old = Account.from_row(row)
            if (old.parent_id, old.limits, old.metadata) != (
                    parent_id, limits, metadata):
                connection.execute(t.update().where(
                    t.c.account_id == account_id).values(
                        parent_id=parent_id, limits=limits,
                        properties=metadata,
                        generation=t.c.generation + 1, updated_at=now))
                LOG.info('Changed account %r (parent %s, limits %s)',
                         account_id, parent_id, limits)
            return False, self._live(connection, account_id)

    def _check_tree(self, connection, account_id, parent_id, limits,
                    registered):
        """Refuse (409) a change that breaks the strict two-level rules."""
        t = models.accounts
        rows = connection.execute(sa.select(t).where(
            t.c.deleted_at.is_(None)))
        projects = {r.account_id: tree_mod.Project(
            r.account_id, r.parent_id, None, dict(r.limits or {}))
            for r in rows}
        if parent_id is not None and parent_id not in projects:
            raise Conflict('parent_id %r is not an account: create it first'
                           % parent_id, field='parent_id', value=parent_id)
        before = self._violations(projects, registered)
        projects[account_id] = tree_mod.Project(account_id, parent_id, None,
                                                limits)
        new = [v for v in self._violations(projects, registered)
               if str(v) not in
               {str(b) for b in before}]
        if new:
            raise Conflict(
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
        with self.ledger.transaction([ACCOUNTS_LOCK]) as txn:
            self._live(txn.connection, account_id)
            children = self._children(txn.connection, account_id)
            if children:
                raise Conflict(
                    'Account %r has child accounts %s: delete or re-parent '
                    'them first' % (account_id, ', '.join(
                        repr(c) for c in children)),
                    field='account_id', value=account_id, children=children)
            t = models.accounts
            txn.connection.execute(t.update().where(
                t.c.account_id == account_id).values(
                    deleted_at=self.now, generation=t.c.generation + 1))
        LOG.info('Deleted account %r (recoverable for %s)', account_id,
                 self.recovery_period)

    def recover(self, account_id):
        """Bring back a deleted account within its recovery period."""
        with self.ledger.transaction([ACCOUNTS_LOCK]) as txn:
            connection = txn.connection
            row = self._row(connection, account_id)
            if row is None or (row.deleted_at is not None and
                               self._expired(row.deleted_at)):
                self._live(connection, account_id)   # 404, purging
            if row.deleted_at is None:
                raise Conflict('Account %r is not deleted' % account_id,
                               field='account_id', value=account_id)
            if row.parent_id is not None:
                parent = self._row(connection, row.parent_id)
                if parent is None or parent.deleted_at is not None:
                    raise Conflict(
                        'The parent %r of account %r is gone: recover it '
                        'first' % (row.parent_id, account_id),
                        field='parent_id', value=row.parent_id)
            t = models.accounts
            connection.execute(t.update().where(
                t.c.account_id == account_id).values(
                    deleted_at=None, generation=t.c.generation + 1,
                    updated_at=self.now))
            LOG.info('Recovered account %r', account_id)
            return self._live(connection, account_id)

    # --- resources of an account ----------------------------------------

    def consumer(self, account_id, consumer_uuid):
        """The consumer's allocations if the account holds them (the
        resource representation), else NotFound."""
        with self.ledger.transaction() as txn:
            self._live(txn.connection, account_id)
        found = self._read_consumer(consumer_uuid)
        if found is None or found.get('project_id') != account_id:
            raise NotFound('Account %r has no consumer %s in Placement'
                           % (account_id, consumer_uuid),
                           field='consumer_uuid', value=consumer_uuid)
        return _consumer_document(consumer_uuid, found)

    def lease(self, account_id, lease_id):
        """The open ledger lease ``lease_id`` of the account, else
        NotFound."""
        with self.ledger.transaction() as txn:
            self._live(txn.connection, account_id)
            row = self._lease_row(txn.connection, account_id, lease_id)
        return _lease_document(row)

    def _lease_row(self, connection, account_id, lease_id):
        t = models.leases
        row = connection.execute(sa.select(t).where(
            t.c.lease_id == lease_id, t.c.project_id == account_id,
            t.c.state.in_(OPEN_STATES))).first()
        if row is None:
            raise NotFound('Account %r has no open lease %s in the ledger'
                           % (account_id, lease_id), field='lease_id',
                           value=lease_id)
        return row

    def _read_consumer(self, consumer_uuid):
        """``GET /allocations/{uuid}``'s body, or None without
        allocations."""
        try:
            body = self._client().get('/allocations/%s' % consumer_uuid)
        except placement_client.PlacementError as exc:
            if exc.status == 400:
                raise Invalid('%s is not a consumer UUID: %s'
                              % (consumer_uuid, exc.detail),
                              field='consumer_uuid', value=consumer_uuid)
            raise SourceUnavailable('Cannot read consumer %s from '
                                    'Placement: %s' % (consumer_uuid, exc),
                                    field='placement')
        return body if body.get('allocations') else None

    def _consumers_of(self, account_id, known=None):
        """Every consumer whose allocations carry ``account_id``.

        Placement lists no consumers by project, so this reads the
        allocations of every provider, then each consumer once (bounded
        concurrency): one call per provider plus one per consumer. One
        ``GET /usages`` first: an account that uses nothing in Placement
        has no consumer, and costs that one call.

        ``known``: consumer UUIDs the account had a moment ago. They are
        read again, and when those still of the account add up exactly to
        its usage, they are all of them (any other consumer of the account
        would add to its usage); otherwise every consumer is read.
        """
        client = self._client()
        try:
            used = _nonzero(capacity.project_usages(client,
                                                    account_id).resources)
            if not used:
                return []
            with concurrent.futures.ThreadPoolExecutor(
                    max(1, self.workers)) as pool:

                def owned(uuids):
                    """Those of ``uuids`` (read concurrently) that are
                    the account's, with their allocations."""
                    ordered = sorted(uuids)
                    return [(uuid, body) for uuid, body in zip(
                        ordered, pool.map(self._read_consumer, ordered))
                        if body is not None and
                        body.get('project_id') == account_id]

                if known:
                    found = owned(known)
                    if _usage_of(found) == used:
                        return found
                providers = client.get('/resource_providers')[
                    'resource_providers']
                uuids = set()
                for body in pool.map(lambda p: client.get(
                        '/resource_providers/%s/allocations' % p['uuid']),
                        providers):
                    uuids.update(body.get('allocations') or {})
                found = owned(uuids)
        except placement_client.PlacementError as exc:
            raise SourceUnavailable('Cannot list the consumers of account '
                                    '%r in Placement: %s' % (account_id, exc),
                                    field='placement')
        return found

    # --- moves ----------------------------------------------------------

    def move_action(self, source, dest, consumer=None, lease=None,
                    known=None):
        """The move action of specs/003: what would move from ``source``
        to ``dest`` (one consumer, one lease, or everything), its tag and
        ETag, and the limits it would break.

        ``known``: see :meth:`_consumers_of`."""
        if dest is None:
            raise Invalid('The query parameter dest (the destination '
                          'account) is required', field='dest')
        try:
            ids.validate(dest, 'dest')
        except ids.InvalidAccountId as exc:
            raise Invalid(str(exc), field='dest', value=dest)
        if dest == source:
            raise Invalid('dest %r is the account itself' % dest,
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
                leases = self._open_leases(connection, [source])
        if consumer is not None:
            body = self._read_consumer(consumer)
            if body is None or body.get('project_id') != source:
                raise NotFound('Account %r has no consumer %s in Placement'
                               % (source, consumer), field='consumer_uuid',
                               value=consumer)
            consumers = [(consumer, body)]
        elif lease is not None:
            consumers = []
        else:
            consumers = self._consumers_of(source, known)
        action = self._describe(src_account, dest_account, consumers, leases)
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
        if found is None or not _etag_matches(if_match, found[0]):
            return None
        if time.monotonic() - found[2] > self.SCAN_TTL:
            return None
        return found[1]

    def _describe(self, src, dest, consumers, leases):
        consumer_docs = [_consumer_document(u, b) for u, b in consumers]
        lease_docs = [_lease_document(r) for r in leases]
        totals = {}
        for doc in consumer_docs:
            for resources in doc['allocations'].values():
                for rc, amount in resources.items():
                    totals[rc] = totals.get(rc, 0) + amount
        reserved = {}
        for doc in lease_docs:
            for resource, amount in doc['amounts'].items():
                reserved[resource] = reserved.get(resource, 0) + amount
        size = len(consumer_docs) + len(lease_docs)
        resources = {
            'tag': digest({'consumers': consumer_docs,
                           'leases': lease_docs}),
            'size': size,
            'consumers': len(consumer_docs),
            'leases': len(lease_docs),
            'total_usage': dict(sorted(totals.items())),
            'total_reserved': dict(sorted(reserved.items())),
        }
        if size <= self.move_list_max:
            resources['consumer_list'] = consumer_docs
            resources['lease_list'] = lease_docs
        over = self._over_limits(src.account_id, dest.account_id,
                                 consumer_docs, leases)
        document = {'move': {
            'source': src.as_dict(), 'dest': dest.as_dict(),
            'resources': resources,
            'allowed': not over,
            'over_limits': over,
        }}
        return MoveAction(document, '"%s"' % digest(document), consumers,
                          leases, over)

    def _over_limits(self, source, dest, consumer_docs, lease_rows):
        """Every limit of ``dest`` (and of its tree) the move would pass,
        with the numbers."""
        if self.limits_source is None:
            return []
        tree = tree_mod.ProjectTree.from_data(
            self.limits_source.load(), strict=False,
            unregistered_limit=self.unregistered_limit)
        resources = tree.resources()
        if not resources:
            return []
        known = dest in tree
        root = tree.root(dest) if known else dest
        family = tree.family(dest) if known else [dest]
        same_tree = source in family

        def limit(project_id, resource):
            if project_id in tree:
                return tree.effective_limit(project_id, resource)
            return tree.default_limit(resource)

        over = []

        def check(kind, resource, moving, own, whole):
            value = limit(dest, resource)
            if tree_mod.over(own + moving, value):
                over.append({'account': dest, 'scope': 'account',
                             'kind': kind, 'resource': resource,
                             'limit': value, 'usage': own,
                             'moving': moving})
            value = limit(root, resource)
            if root != dest and not same_tree and tree_mod.over(
                    whole + moving, value):
                over.append({'account': root, 'scope': 'tree',
                             'kind': kind, 'resource': resource,
                             'limit': value, 'usage': whole,
                             'moving': moving})

        moving = {}
        for resource in resources:
            if resource == placement_usage.SERVERS:
                amount = sum(1 for d in consumer_docs
                             if d.get('consumer_type') == 'INSTANCE')
            else:
                rc = placement_usage.placement_class(resource)
                amount = 0 if rc is None else sum(
                    r.get(rc, 0) for d in consumer_docs
                    for r in d['allocations'].values())
            if amount:
                moving[resource] = amount
        if moving:
            used = placement_usage.PlacementUsage(
                self._client(), self.workers).get_usage(family, moving)
            for resource, amount in sorted(moving.items()):
                check('placement', resource, amount,
                      used.get(dest, {}).get(resource, 0),
                      sum(u.get(resource, 0) for u in used.values()))
        reserved = set()
        for row in lease_rows:
            reserved.update(r for r, v in (row.amounts or {}).items() if v)
        reserved &= set(resources)
        if reserved:
            now = self.now
            with self.ledger.transaction() as txn:
                existing = self._open_leases(txn.connection, family)
            moved = [window.Interval(r.start_date, r.effective_end,
                                     r.amounts or {}) for r in lease_rows]
            end = max([i.end for i in moved], default=now)
            own = [window.Interval(r.start_date, r.effective_end,
                                   r.amounts or {})
                   for r in existing if r.project_id == dest]
            whole = [window.Interval(r.start_date, r.effective_end,
                                     r.amounts or {}) for r in existing]
            for resource in sorted(reserved):
                after_own = window.peaks(own + moved, now, end, [resource])
                after_whole = window.peaks(whole + moved, now, end,
                                           [resource])
                before_own = window.peaks(own, now, end, [resource])
                before_whole = window.peaks(whole, now, end, [resource])
                moving_peak = window.peaks(moved, now, end, [resource])
                amount = moving_peak[resource].amount
                value = limit(dest, resource)
                if tree_mod.over(after_own[resource].amount, value):
                    over.append({
                        'account': dest, 'scope': 'account',
                        'kind': 'reserved', 'resource': resource,
                        'limit': value,
                        'usage': before_own[resource].amount,
                        'moving': amount,
                        'peak': after_own[resource].as_dict()})
                value = limit(root, resource)
                if root != dest and not same_tree and tree_mod.over(
                        after_whole[resource].amount, value):
                    over.append({
                        'account': root, 'scope': 'tree',
                        'kind': 'reserved', 'resource': resource,
                        'limit': value,
                        'usage': before_whole[resource].amount,
                        'moving': amount,
                        'peak': after_whole[resource].as_dict()})
        return over

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
        raise PreconditionFailed(
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
        if if_match is not None and not _etag_matches(if_match,
                                                      action.etag):
            raise PreconditionFailed(
                'The move action changed since its ETag %s was read: its '
                'ETag is now %s; GET the move action again'
                % (if_match, action.etag), field='If-Match', value=if_match,
                etag=action.etag)
        if action.over_limits:
            raise OverLimit(
                'Moving to account %r would pass its limits: %s'
                % (dest, '; '.join(_over_text(o)
                                   for o in action.over_limits)),
                field='dest', value=dest, over_limits=action.over_limits)
        try:
            self._apply(source, dest, action)
        except PreconditionFailed:
            if if_match is not None:
                raise
            LOG.info('A resource of account %r changed during its move to '
                     '%r; trying again', source, dest)
            return None
        return action

    def _apply(self, source, dest, action):
        t = models.leases
        with self.ledger.transaction(sorted({source, dest})) as txn:
            connection = txn.connection
            # The accounts must still be there, and the leases unchanged.
            self._live(connection, source)
            self._live(connection, dest, field='dest')
            for row in action.leases:
                result = connection.execute(t.update().where(
                    t.c.id == row.id, t.c.project_id == source,
                    t.c.state == row.state,
                    _same_time(t.c.updated_at, row.updated_at)).values(
                        project_id=dest, updated_at=txn.now))
                if result.rowcount != 1:
                    raise PreconditionFailed(
                        'Lease %s changed while it was moved; nothing was '
                        'moved' % (row.lease_id or row.name),
                        field='lease_id', value=row.lease_id)
            if action.consumers:
                self._move_consumers(dest, action.consumers)
        LOG.info('Moved %d consumer(s) and %d lease(s) from account %r to '
                 '%r', len(action.consumers), len(action.leases), source,
                 dest)

    def _move_consumers(self, dest, consumers):
        client = self._client()
        typed = client.supports(placement_client.CONSUMER_TYPES)
        payload = {}
        for uuid, body in consumers:
            entry = {
                'allocations': {
                    rp: {'resources': alloc['resources']}
                    for rp, alloc in body['allocations'].items()},
                'project_id': dest,
                'user_id': body['user_id'],
                'consumer_generation': body.get('consumer_generation'),
            }
            if typed and body.get('consumer_type'):
                entry['consumer_type'] = body['consumer_type']
            payload[uuid] = entry
        try:
            client.post('/allocations', payload)
        except placement_client.Conflict as exc:
            raise PreconditionFailed(
                'A consumer changed in Placement while it was moved '
                '(its generation moved on); nothing was moved: %s'
                % exc.detail, field='consumer_generation')
        except placement_client.PlacementError as exc:
            raise SourceUnavailable('Placement refused the move: %s' % exc,
                                    field='placement')


def _nonzero(amounts):
    return {rc: amount for rc, amount in amounts.items() if amount}


def _usage_of(consumers):
    """What ``[(uuid, GET /allocations/uuid body)]`` add up to, per
    class."""
    totals = collections.Counter()
    for _, body in consumers:
        for allocation in body['allocations'].values():
            totals.update(allocation['resources'])
    return _nonzero(totals)


def _consumer_document(uuid, body):
    return {
        'uuid': uuid,
        'generation': body.get('consumer_generation'),
        'project_id': body.get('project_id'),
        'user_id': body.get('user_id'),
        'consumer_type': body.get('consumer_type'),
        'allocations': {rp: dict(sorted(a['resources'].items()))
                        for rp, a in sorted(body['allocations'].items())},
    }


def _lease_document(row):
    return {
        'lease_id': row.lease_id, 'name': row.name, 'state': row.state,
        'project_id': row.project_id,
        'start_date': _iso(row.start_date),
        'end_date': _iso(row.effective_end),
        'amounts': dict(sorted((row.amounts or {}).items())),
        'updated_at': _iso(row.updated_at or row.created_at),
    }


def _same_time(column, value):
    return column.is_(None) if value is None else column == value


def _etag_matches(header, etag):
    candidates = [c.strip() for c in header.split(',')]
    return '*' in candidates or etag in candidates or \
        any(c.startswith('W/') and c[2:] == etag for c in candidates)


def _over_text(over):
    text = ('%s of %s %r: limit %d, %s %d, moving %d'
            % (over['resource'], 'the tree of' if over['scope'] == 'tree'
               else 'account', over['account'], over['limit'],
               'reserved at the peak' if over['kind'] == 'reserved'
               else 'in use', over['usage'], over['moving']))
    return text
