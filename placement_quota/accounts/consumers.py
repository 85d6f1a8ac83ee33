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
"""What the accounts read from and write to Placement.

An account's consumers are the Placement consumers whose allocations carry
the account as project. Every function takes the PlacementClient and turns
Placement's failures into account errors: SourceUnavailable (Placement
could not be read or refused a write), Invalid (a malformed consumer
UUID), PreconditionFailed (a consumer changed during a move).

Every value put in a Placement path is percent-encoded (:func:`path`), and
a consumer UUID is checked to be one before any call: a consumer ID from a
client must not reach another Placement resource (``../``) or add a query
(``?``).
"""

import concurrent.futures
import functools
import re
from urllib import parse
import uuid as uuid_lib

from oslo_log import log as logging

from placement_quota.accounts import errors
from placement_quota.accounts import moves
from placement_quota.placement import usage_room
from placement_quota.placement import client as placement_client


LOG = logging.getLogger(__name__)

_UUID_CHARS = re.compile(r'^[0-9a-fA-F-]{32,36}$')


def is_uuid(value):
    """True when ``value`` is a UUID as Placement takes one: 32 hex digits,
    with or without hyphens."""
    if not isinstance(value, str) or not _UUID_CHARS.match(value):
        return False
    try:
        uuid_lib.UUID(value)
    except ValueError:
        return False
    return True


def path(template, *segments):
    """``template`` with each of ``segments`` percent-encoded as one path
    segment (``/``, ``?``, ``#``, ``%`` and ``.`` runs cannot escape it)."""
    return template % tuple(parse.quote(str(s), safe='') for s in segments)


def check_uuid(consumer_uuid):
    """Raise Invalid (naming ``consumer_uuid``) unless it is a UUID."""
    if not is_uuid(consumer_uuid):
        raise errors.Invalid('consumer_uuid %r is not a UUID'
                             % (consumer_uuid,), field='consumer_uuid',
                             value=consumer_uuid)


def read(client, consumer_uuid):
    """``GET /allocations/{uuid}``'s body, or None without allocations."""
    check_uuid(consumer_uuid)
    try:
        body = client.get(path('/allocations/%s', consumer_uuid))
    except placement_client.PlacementError as exc:
        if exc.status == 400:
            raise errors.Invalid('%s is not a consumer UUID: %s'
                                 % (consumer_uuid, exc.detail),
                                 field='consumer_uuid', value=consumer_uuid)
        raise errors.SourceUnavailable('Cannot read consumer %s from '
                                       'Placement: %s' % (consumer_uuid, exc),
                                       field='placement')
    return body if body.get('allocations') else None


def usage(client, account_id):
    """The ``usage.placement`` part of an account's representation: what
    its consumers use, per resource class, and how many of each type."""
    try:
        found = usage_room.project_usages(client, account_id)
    except placement_client.PlacementError as exc:
        raise errors.SourceUnavailable(
            'Cannot read the Placement usage of account %r: %s'
            % (account_id, exc), field='placement')
    return {'resources': dict(sorted(found.resources.items())),
            'consumers': {name: entry.consumer_count for name, entry
                          in sorted((found.consumer_types or {}).items())}}


class CandidatesUnavailable(Exception):
    """A source of candidate consumers (Nova's server list) cannot be read:
    :func:`of_account` reads every consumer instead."""


def lease_candidates(leases):
    """The UUIDs a ledger lease may hold Placement consumers under: each
    lease's ``lease_id`` and its reservations' ``id`` (what is not a UUID
    is left out). ``leases``: rows of the ledger's ``leases`` table."""
    found = set()
    for row in leases:
        found.add(getattr(row, 'lease_id', None))
        body = getattr(row, 'lease', None)
        reservations = (body.get('reservations')
                        if isinstance(body, dict) else None)
        for reservation in reservations or ():
            if isinstance(reservation, dict):
                found.add(reservation.get('id'))
    return sorted(u for u in found if is_uuid(u))


def _amounts(totals):
    return ', '.join('%s=%s' % item for item in sorted(totals.items())) \
        or 'nothing'


def of_account(client, account_id, workers, known=None, candidates=()):
    """Every consumer whose allocations carry ``account_id``: a list of
    ``(uuid, GET /allocations/uuid body)``, sorted by UUID.

    One ``GET /usages`` first: an account that uses nothing in Placement
    has no consumer, and costs that one call. Then candidates are read
    (``GET /allocations/{uuid}`` each, ``workers`` at a time), and when
    those of the account add up exactly to its usage they are all of them
    (any other consumer of the account would add to its usage):

    * ``known``: consumer UUIDs the account had a moment ago;
    * ``candidates``: ``(description, callable)`` pairs tried in order, each
      callable answering more UUIDs (Nova's servers of the account, the
      IDs of its leases) or raising :class:`CandidatesUnavailable`; the
      UUIDs of every source so far are checked together.

    When they do not add up (or a source cannot be read), it says why at
    INFO and scans: Placement lists no consumers by project, so it reads
    the allocations of every provider, then each consumer not read yet,
    one call per provider plus one per consumer.
    """
    reader = functools.partial(read, client)
    bodies = {}
    try:
        used = moves.nonzero(usage_room.project_usages(client,
                                                       account_id).resources)
        if not used:
            return []
        with concurrent.futures.ThreadPoolExecutor(max(1, workers)) as pool:

            def owned(uuids):
                """Those of ``uuids`` that are the account's, with their
                allocations (each consumer read once per call)."""
                new = sorted(set(uuids) - set(bodies))
                bodies.update(zip(new, pool.map(reader, new)))
                return [(uuid, bodies[uuid]) for uuid in sorted(set(uuids))
                        if bodies[uuid] is not None and
                        bodies[uuid].get('project_id') == account_id]

            if known:
                found = owned(known)
                if moves.usage_of(found) == used:
                    return found
            why = None
            tried = set(known or ())
            names = []
            for description, find in candidates:
                try:
                    tried.update(u for u in find() if is_uuid(u))
                except CandidatesUnavailable as exc:
                    why = '%s cannot be read: %s' % (description, exc)
                    break
                names.append(description)
                found = owned(tried)
                if moves.usage_of(found) == used:
                    return found
                why = ('the %d consumer(s) of the account among %s (%d '
                       'UUIDs read) carry %s; it uses %s in Placement' % (
                           len(found), ' and '.join(names), len(tried),
                           _amounts(moves.usage_of(found)),
                           _amounts(used)))
            if why is not None:
                LOG.info('Reading every consumer of Placement to find those '
                         'of account %r: %s', account_id, why)
            providers = client.get('/resource_providers')[
                'resource_providers']
            uuids = set()
            for body in pool.map(lambda p: client.get(path(
                    '/resource_providers/%s/allocations', p['uuid'])),
                    providers):
                uuids.update(body.get('allocations') or {})
            found = owned(uuids)
    except placement_client.PlacementError as exc:
        raise errors.SourceUnavailable(
            'Cannot list the consumers of account %r in Placement: %s'
            % (account_id, exc), field='placement')
    return found


def move(client, dest, consumers):
    """Give ``consumers`` (``[(uuid, GET /allocations/uuid body)]``) to
    ``dest`` in one ``POST /allocations`` carrying each consumer's
    generation: all move, or none (PreconditionFailed when one changed)."""
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
        raise errors.PreconditionFailed(
            'A consumer changed in Placement while it was moved '
            '(its generation moved on); nothing was moved: %s'
            % exc.detail, field='consumer_generation')
    except placement_client.PlacementError as exc:
        raise errors.SourceUnavailable('Placement refused the move: %s' % exc,
                                       field='placement')
