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
"""Move actions ("Multi-Tenant Accounting in OpenStack") from data already
read: no I/O here.

:func:`describe` turns the consumers and leases a move would carry into
the move action's representation, with a tag of the resources' state and
an ETag of the whole description (:func:`etag`, :func:`etag_matches` for
``If-Match``). :class:`LimitCheck` says which limits of the destination
(and of its tree) a move would pass, given the Placement usage and the
open leases the caller read.

Consumers are ``(uuid, body)`` pairs, ``body`` being Placement's answer to
``GET /allocations/{uuid}``; leases are rows of the ledger's ``leases``
table (anything with their attributes).
"""

import collections
import dataclasses
import hashlib
import json

from placement_quota.accounts import model
from placement_quota.ledger import window
from placement_quota.limits import tree as tree_mod
from placement_quota.placement import usage as placement_usage


@dataclasses.dataclass
class MoveAction:
    """What a move would do: the representation, its ETag, and the plan."""

    document: dict
    etag: str
    consumers: list      # [(uuid, allocation body of GET /allocations/U)]
    leases: list         # ledger rows
    over_limits: list


# --- documents --------------------------------------------------------------

def nonzero(amounts):
    """``amounts`` without its zeros."""
    return {rc: amount for rc, amount in amounts.items() if amount}


def usage_of(consumers):
    """What ``[(uuid, GET /allocations/uuid body)]`` add up to, per
    class."""
    totals = collections.Counter()
    for _, body in consumers:
        for allocation in body['allocations'].values():
            totals.update(allocation['resources'])
    return nonzero(totals)


def consumer_document(uuid, body):
    """The representation of a consumer of an account."""
    return {
        'uuid': uuid,
        'generation': body.get('consumer_generation'),
        'project_id': body.get('project_id'),
        'user_id': body.get('user_id'),
        'consumer_type': body.get('consumer_type'),
        'allocations': {rp: dict(sorted(a['resources'].items()))
                        for rp, a in sorted(body['allocations'].items())},
    }


def lease_document(row):
    """The representation of an open lease of an account."""
    return {
        'lease_id': row.lease_id, 'name': row.name, 'state': row.state,
        'project_id': row.project_id,
        'start_date': model.iso(row.start_date),
        'end_date': model.iso(row.effective_end),
        'amounts': dict(sorted((row.amounts or {}).items())),
        'updated_at': model.iso(row.updated_at or row.created_at),
    }


def digest(document):
    """SHA-1 of the canonical JSON of ``document`` (hex)."""
    text = json.dumps(document, sort_keys=True, separators=(',', ':'),
                      ensure_ascii=False, default=str)
    return hashlib.sha1(text.encode('utf-8')).hexdigest()


def etag(document):
    """The (strong) ETag of a representation."""
    return '"%s"' % digest(document)


def etag_matches(header, etag):
    """Does the ``If-Match`` header value ``header`` match ``etag``?
    ``*`` matches any; a weak ``W/"..."`` matches its strong twin."""
    candidates = [c.strip() for c in header.split(',')]
    return '*' in candidates or etag in candidates or \
        any(c.startswith('W/') and c[2:] == etag for c in candidates)


def describe(src, dest, consumers, leases, over_limits, list_max):
    """The :class:`MoveAction` moving ``consumers`` and ``leases`` from
    the Account ``src`` to the Account ``dest``, which would pass
    ``over_limits``. The lists of consumers and leases are in the
    representation when they hold ``list_max`` items at most."""
    consumer_docs = [consumer_document(u, b) for u, b in consumers]
    lease_docs = [lease_document(r) for r in leases]
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
        'tag': digest({'consumers': consumer_docs, 'leases': lease_docs}),
        'size': size,
        'consumers': len(consumer_docs),
        'leases': len(lease_docs),
        'total_usage': dict(sorted(totals.items())),
        'total_reserved': dict(sorted(reserved.items())),
    }
    if size <= list_max:
        resources['consumer_list'] = consumer_docs
        resources['lease_list'] = lease_docs
    document = {'move': {
        'source': src.as_dict(), 'dest': dest.as_dict(),
        'resources': resources,
        'allowed': not over_limits,
        'over_limits': over_limits,
    }}
    return MoveAction(document, etag(document), consumers, leases,
                      over_limits)


def over_text(over):
    """One over-limit entry of a move action, in words."""
    return ('%s of %s %r: limit %d, %s %d, moving %d'
            % (over['resource'], 'the tree of' if over['scope'] == 'tree'
               else 'account', over['account'], over['limit'],
               'reserved at the peak' if over['kind'] == 'reserved'
               else 'in use', over['usage'], over['moving']))


# --- limits -----------------------------------------------------------------

class LimitCheck:
    """The limits of the destination of a move, and of its tree.

    :param tree: the :class:`~placement_quota.limits.tree.ProjectTree` of
        the limits source.
    :param source: the account the resources leave.
    :param dest: the account they go to. Unknown to the tree, it is a
        root with the default limits.

    The caller reads what :meth:`over` needs: the Placement usage of
    :attr:`family` for the resources :meth:`moving` names, and the open
    leases of :attr:`family` when :meth:`reserved` names resources.
    """

    def __init__(self, tree, source, dest):
        self.tree = tree
        self.dest = dest
        #: Every resource with a limit (sorted).
        self.resources = tree.resources()
        known = dest in tree
        self.root = tree.root(dest) if known else dest
        #: The root of the destination's tree, then its children.
        self.family = tree.family(dest) if known else [dest]
        #: A move inside one tree changes nothing of the tree's total.
        self.same_tree = source in self.family

    def limit(self, project_id, resource):
        if project_id in self.tree:
            return self.tree.effective_limit(project_id, resource)
        return self.tree.default_limit(resource)

    def moving(self, consumers):
        """What ``consumers`` hold of each limited resource Placement
        counts (servers: consumers of type INSTANCE), without zeros."""
        moving = {}
        for resource in self.resources:
            if resource == placement_usage.SERVERS:
                amount = sum(1 for _, body in consumers
                             if body.get('consumer_type') == 'INSTANCE')
            else:
                rc = placement_usage.placement_class(resource)
                amount = 0 if rc is None else sum(
                    a['resources'].get(rc, 0) for _, body in consumers
                    for a in body['allocations'].values())
            if amount:
                moving[resource] = amount
        return moving

    def reserved(self, leases):
        """The limited resources the lease rows ``leases`` reserve."""
        found = set()
        for row in leases:
            found.update(r for r, v in (row.amounts or {}).items() if v)
        return found & set(self.resources)

    def over(self, moving=None, used=None, leases=(), existing=(),
             now=None):
        """Every limit the move would pass, with the numbers: a list of
        ``{'account', 'scope' ('account' or 'tree'), 'kind' ('placement'
        or 'reserved'), 'resource', 'limit', 'usage', 'moving'}`` (and
        ``'peak'`` for a reservation).

        :param moving: :meth:`moving` of the consumers that move.
        :param used: the Placement usage of :attr:`family` for those
            resources, ``{project_id: {resource: amount}}``.
        :param leases: the lease rows that move.
        :param existing: the open lease rows of :attr:`family`.
        :param now: the ledger's time; the peaks are from now on.
        """
        over = []
        used = used or {}
        for resource, amount in sorted((moving or {}).items()):
            own = used.get(self.dest, {}).get(resource, 0)
            whole = sum(u.get(resource, 0) for u in used.values())
            over.extend(self._check('placement', resource, amount,
                                    (own, own + amount, None),
                                    (whole, whole + amount, None)))
        reserved = self.reserved(leases)
        if reserved:
            over.extend(self._reservations(reserved, leases, existing, now))
        return over

    def _check(self, kind, resource, moving, own, whole):
        """The limits of the destination (``own``) and of its tree
        (``whole``) that the move passes: each an ``(in use before, total
        after, peak or None)`` triple."""
        found = []
        for account, scope, (usage, after, peak) in (
                (self.dest, 'account', own), (self.root, 'tree', whole)):
            if scope == 'tree' and (self.root == self.dest or
                                    self.same_tree):
                continue
            value = self.limit(account, resource)
            if tree_mod.over(after, value):
                entry = {'account': account, 'scope': scope, 'kind': kind,
                         'resource': resource, 'limit': value,
                         'usage': usage, 'moving': moving}
                if peak is not None:
                    entry['peak'] = peak
                found.append(entry)
        return found

    def _reservations(self, reserved, leases, existing, now):
        found = []
        moved = [model.interval(r) for r in leases]
        end = max([i.end for i in moved], default=now)
        own = [model.interval(r) for r in existing
               if r.project_id == self.dest]
        whole = [model.interval(r) for r in existing]
        for resource in sorted(reserved):
            def peak(intervals):
                return window.peaks(intervals, now, end,
                                    [resource])[resource]
            after_own, after_whole = peak(own + moved), peak(whole + moved)
            found.extend(self._check(
                'reserved', resource, peak(moved).amount,
                (peak(own).amount, after_own.amount, after_own.as_dict()),
                (peak(whole).amount, after_whole.amount,
                 after_whole.as_dict())))
        return found
