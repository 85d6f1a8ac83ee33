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
"""Each warning recorded once in the ledger, then sent once.

A scan records what is due (:func:`record`): one row per key, whatever
number of processes scan at once -- the key is unique, and a duplicate
insert is ignored by the database (``ON CONFLICT DO NOTHING`` on SQLite
and PostgreSQL, ``INSERT IGNORE`` on MariaDB). Only then is anything
sent: a warning that is not in the ledger is never sent, and one that is
is sent by the one process that claims it (:func:`claim`: a conditional
update, which only one process can win) until ``claimed_until``. Each
channel done is recorded (:func:`done`) as soon as it is, so a retry of
the other one does not send it again; a failed attempt is retried later
with backoff (:func:`failed_attempt`), and after the last one the
warning is marked failed -- listed, never dropped silently.

A process claims one warning at a time, and every write it makes about
it afterwards holds only while its claim does (:func:`done`,
:func:`finished` and :func:`failed_attempt` check ``claimed_until``): a
send slower than ``claim_timeout`` loses the warning to another process,
which sends it again (``[warnings] claim_timeout`` must exceed the
longest send: the configuration check asks for 4 x ``smtp_timeout``).
What remains: a process that stops between a channel's send and its
:func:`done` (a crash inside that window, milliseconds) leaves the
warning to be sent again by another after ``claim_timeout``. At most
once per channel cannot be had without the receiving side's help; the
mail's ``Message-ID`` and the notification's ``key`` let the receiver
drop such a duplicate.
"""

import dataclasses
import datetime

from oslo_log import log as logging
import sqlalchemy as sa

from placement_quota.ledger.db import locks
from placement_quota.ledger import errors
from placement_quota.ledger import models
from placement_quota.warning import model

LOG = logging.getLogger(__name__)

T = models.warnings
#: Times :func:`record` is tried when it conflicts with another process.
CONFLICT_ATTEMPTS = 3


@dataclasses.dataclass
class RecordedWarning:
    """One row of the ``warnings`` table."""

    id: int
    notice: model.Notice
    state: str
    channels_done: dict
    attempts: int
    last_error: str
    created_at: datetime.datetime
    next_attempt_at: datetime.datetime
    claimed_until: datetime.datetime
    sent_at: datetime.datetime

    @classmethod
    def from_row(cls, row):
        notice = model.Notice(
            kind=row.kind, key=row.key, project_id=row.project_id,
            user_id=row.user_id, lease_id=row.lease_id,
            lease_name=row.lease_name, due_at=row.due_at,
            facts=dict(row.facts or {}), subject=row.subject,
            level=row.level)
        return cls(id=row.id, notice=notice, state=row.state,
                   channels_done=dict(row.channels_done or {}),
                   attempts=row.attempts, last_error=row.last_error,
                   created_at=row.created_at,
                   next_attempt_at=row.next_attempt_at,
                   claimed_until=row.claimed_until, sent_at=row.sent_at)

    def as_dict(self):
        found = self.notice.as_dict()
        found.update(id=self.id, state=self.state,
                     channels_done=dict(self.channels_done),
                     attempts=self.attempts, last_error=self.last_error,
                     created_at=model.iso(self.created_at),
                     sent_at=model.iso(self.sent_at))
        return found


def recorded(reader, keys):
    """Those of ``keys`` recorded already (an IN list: a preview's few)."""
    keys = sorted(set(keys))
    if not keys:
        return set()
    return {row[0] for row in reader.connection.execute(
        sa.select(T.c.key).where(T.c.key.in_(keys)))}


def levels(reader, subjects=None, since=None, kinds=None):
    """``{subject: highest level recorded}`` in one statement: of the
    warnings created at or after ``since`` (all when None), of ``kinds``
    (all when None), of ``subjects`` (all when None; at most a few
    hundred: it is an IN list)."""
    query = sa.select(T.c.subject, sa.func.max(T.c.level)).group_by(
        T.c.subject)
    if since is not None:
        query = query.where(T.c.created_at >= since)
    if kinds is not None:
        query = query.where(T.c.kind.in_(list(kinds)))
    if subjects is not None:
        subjects = sorted(set(subjects))
        if not subjects:
            return {}
        query = query.where(T.c.subject.in_(subjects))
    return {subject: level for subject, level in
            reader.connection.execute(query)}


def _values(notice, now):
    if len(notice.subject) > 255:
        raise ValueError('warning subject longer than 255 characters: %r'
                         % notice.subject[:80])
    return {'key': notice.key, 'kind': notice.kind,
            'subject': notice.subject, 'level': float(notice.level),
            'project_id': notice.project_id, 'user_id': notice.user_id,
            'lease_id': notice.lease_id,
            'lease_name': (notice.lease_name or None) and
            notice.lease_name[:255],
            'facts': notice.facts, 'state': models.WARNING_PENDING,
            'channels_done': {}, 'attempts': 0, 'last_error': None,
            'created_at': now, 'due_at': notice.due_at or now,
            'next_attempt_at': now, 'claimed_until': None,
            'sent_at': None}


def record(ledger, notices, now):
    """Record ``notices`` not recorded yet; return how many rows were
    inserted (others were there already: another scan, another process).
    One statement, whatever their number."""
    # In one order: two processes inserting the same keys in different
    # orders would deadlock on PostgreSQL.
    notices = sorted({n.key: n for n in notices}.values(),
                     key=lambda n: n.key)
    if not notices:
        return 0
    rows = [_values(n, now) for n in notices]
    for attempt in range(CONFLICT_ATTEMPTS):
        try:
            with ledger.transaction(now=now) as txn:
                inserted = txn.connection.execute(
                    locks.insert_ignoring_duplicates(ledger.dialect, T),
                    rows).rowcount
            break
        except errors.LedgerConflict:
            # Another process recorded some of them at the same moment
            # on another Galera node: once theirs is committed, ours
            # ignores them.
            if attempt + 1 == CONFLICT_ATTEMPTS:
                raise
    if inserted is None or inserted < 0:
        inserted = len(notices)   # the driver cannot tell
    return inserted


def claim(ledger, now, claim_timeout, limit=100, ids=None):
    """The pending warnings due at ``now`` that this process now holds
    until ``now + claim_timeout`` (no other process claims them before),
    oldest first, at most ``limit``; ``ids``: only those rows."""
    until = now + datetime.timedelta(seconds=claim_timeout)
    free = sa.and_(T.c.state == models.WARNING_PENDING,
                   T.c.next_attempt_at <= now,
                   sa.or_(T.c.claimed_until.is_(None),
                          T.c.claimed_until < now))
    query = sa.select(T.c.id).where(free).order_by(T.c.id).limit(limit)
    if ids is not None:
        query = query.where(T.c.id.in_(list(ids)))
    with ledger.reader() as reader:
        candidates = [row.id for row in reader.connection.execute(query)]
    held = []
    for row_id in candidates:
        try:
            with ledger.transaction(now=now) as txn:
                won = txn.connection.execute(
                    T.update().where(T.c.id == row_id, free)
                    .values(claimed_until=until)).rowcount == 1
                if won:
                    row = txn.connection.execute(
                        sa.select(T).where(T.c.id == row_id)).one()
        except errors.LedgerConflict:
            # Another process claimed it at the same moment (a Galera
            # cluster refuses the second commit): theirs.
            continue
        if won:
            held.append(RecordedWarning.from_row(row))
    return held


def _held(row_id, held_until):
    """The row ``row_id``, while this process's claim (until
    ``held_until``; None: no condition) holds it."""
    condition = T.c.id == row_id
    if held_until is not None:
        condition = sa.and_(condition,
                            T.c.state == models.WARNING_PENDING,
                            T.c.claimed_until == held_until)
    return condition


def done(ledger, row_id, channel, text, now, held_until=None):
    """Record that ``channel`` delivered warning ``row_id`` (``text``:
    what it did). False when the claim until ``held_until`` was lost (it
    expired and another process took the warning): then nothing is
    written."""
    with ledger.transaction(now=now) as txn:
        current = txn.connection.execute(
            sa.select(T.c.channels_done).where(_held(row_id, held_until))
        ).first()
        if current is None:
            return False
        channels_done = dict(current[0] or {})
        channels_done[channel] = text
        txn.connection.execute(T.update().where(T.c.id == row_id).values(
            channels_done=channels_done))
    return True


def finished(ledger, row_id, now, state=models.WARNING_SENT, error=None,
             held_until=None):
    """Warning ``row_id`` is done: sent on every channel (or, with
    ``state``, obsolete or failed); released. False when the claim until
    ``held_until`` was lost (nothing written)."""
    values = {'state': state, 'claimed_until': None}
    if state == models.WARNING_SENT:
        values['sent_at'] = now
    if error is not None:
        values['last_error'] = error[:2000]
    with ledger.transaction(now=now) as txn:
        return txn.connection.execute(
            T.update().where(_held(row_id, held_until))
            .values(**values)).rowcount == 1


def failed_attempt(ledger, row_id, error, now, delay, give_up,
                   held_until=None):
    """An attempt at warning ``row_id`` failed with ``error``: try again
    ``delay`` seconds from ``now``, or (``give_up``) mark it failed.
    Returns the number of attempts so far (None when the claim until
    ``held_until`` was lost: nothing written)."""
    with ledger.transaction(now=now) as txn:
        attempts = txn.connection.execute(
            sa.select(T.c.attempts).where(_held(row_id, held_until))
        ).scalar()
        if attempts is None:
            return None
        values = {'attempts': attempts + 1, 'last_error': error[:2000],
                  'claimed_until': None,
                  'next_attempt_at': now + datetime.timedelta(
                      seconds=delay)}
        if give_up:
            values['state'] = models.WARNING_FAILED
        txn.connection.execute(T.update().where(T.c.id == row_id)
                               .values(**values))
    return attempts + 1


def listing(ledger, state=None, project_id=None, kind=None, limit=100):
    """The recorded warnings, newest first."""
    query = sa.select(T).order_by(T.c.id.desc()).limit(limit)
    if state is not None:
        query = query.where(T.c.state == state)
    if project_id is not None:
        query = query.where(T.c.project_id == project_id)
    if kind is not None:
        query = query.where(T.c.kind == kind)
    with ledger.reader() as reader:
        return [RecordedWarning.from_row(row)
                for row in reader.connection.execute(query)]


def counts(ledger):
    """``{state: number of warnings}``."""
    with ledger.reader() as reader:
        return {state: number for state, number in reader.connection.execute(
            sa.select(T.c.state, sa.func.count()).group_by(T.c.state))}
