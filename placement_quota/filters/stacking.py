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
"""NoStackingFilter: no back-to-back leases of one resource.

A maximum lease length means little when a user can book the next lease
of the same GPUs to start the minute the first one ends ("stacking");
shared clouds delete such leases by hand today. For each resource of
``stacking_resources`` (ledger amount names: ``hosts``, ``instances``,
``class:VCPU``, ``class:CUSTOM_GPU_A100``...; a lease "is of" a resource
when it reserves some of it), two leases of it of one owner (the user, or
the whole project with ``stacking_scope = project``) L and M:

* that overlap (``overlap = min(L.end, M.end) - max(L.start, M.start) >
  0``) are refused when they overlap by more than
  ``stacking_overlap_allowance``;
* that do not are refused when they are less than ``stacking_gap`` apart
  (``max(L.start - M.end, M.start - L.end) < stacking_gap``).

M is any other live entry of the ledger (not denied nor abandoned; an
ended lease counts until its actual end). An allowance lets a lease
follow another with that much overlap; a gap makes overlapping
pointless to allow, and the two cannot be set together (see
:meth:`NoStackingFilter.check_options`).

A later end never clears a conflict (the overlap can only grow, the
separation only shrink), as the extension query needs. Exact under
concurrency: the owner's leases are read in the admission, under the
project's lock, which every admission of the project takes (a user's
leases are within the project).
"""

import dataclasses
import datetime
import typing

from oslo_config import cfg

from placement_quota.filters import ledger_base
from placement_quota.filters import measures
from placement_quota.lease import amounts as accounting

USER = 'user'
PROJECT = 'project'

#: Resource names that are not prefixed (``class:``, ``host:``).
PLAIN_RESOURCES = (accounting.HOSTS, accounting.INSTANCES,
                   accounting.FLOATINGIPS, accounting.NETWORKS)
PREFIXES = (accounting.CLASS_PREFIX, accounting.HOST_PREFIX)


def _seconds(delta):
    return delta.total_seconds()


@dataclasses.dataclass(frozen=True)
class Conflict:
    """Why lease L may not be where it is, because of lease M."""

    #: The other lease's ledger row (``lease_id``, ``name``, ``user_id``,
    #: ``project_id``) and its dates.
    row: typing.Any
    start: datetime.datetime
    end: datetime.datetime
    #: The resources both hold, of ``stacking_resources``.
    resources: tuple
    #: Seconds both hold (0 when they do not overlap).
    overlap: float
    #: Seconds between them (0 when they overlap).
    separation: float
    #: Whether L starts no earlier than M (it follows M): then it must
    #: start on :attr:`moment` or later; else end on it or earlier.
    follows: bool
    moment: datetime.datetime


class NoStackingFilter(ledger_base.LedgerFilter):
    """Deny a lease of a resource too close to another of the same owner."""

    enforcement_opts = [
        cfg.ListOpt(
            'stacking_resources', default=[],
            help='The resources no user (or project, see stacking_scope) '
                 'may hold in leases back to back, as the ledger names '
                 'them: hosts, instances, floatingips, networks, '
                 'class:<RESOURCE CLASS> (class:VCPU, '
                 'class:CUSTOM_GPU_A100...) or host:<RESOURCE CLASS>. A '
                 'lease is of a resource when it reserves some of it. '
                 'Empty: the rule is off.'),
        cfg.StrOpt(
            'stacking_scope', default=USER,
            choices=[(USER, 'a user\'s leases in a project are compared '
                            'with each other'),
                     (PROJECT, 'all the leases of a project are compared '
                               'with each other, whoever made them')],
            help='Whose leases of a resource must be apart.'),
        cfg.IntOpt(
            'stacking_gap', default=0, min=0,
            help='Seconds a lease of a resource must start after the end '
                 'of the same owner\'s previous lease of it (and end '
                 'before the start of their next one). 0: leases may '
                 'follow each other at once (but not overlap, beyond '
                 'stacking_overlap_allowance). Cannot be set with '
                 'stacking_overlap_allowance.'),
        cfg.IntOpt(
            'stacking_overlap_allowance', default=0, min=0,
            help='Seconds two leases of a resource of the same owner may '
                 'overlap; more is refused. An allowance lets a lease '
                 'follow another with that much overlap (a hand-over). '
                 'Cannot be set with stacking_gap.'),
    ]

    def __init__(self, conf, services=None):
        super().__init__(conf, services)
        self.check_options()

    def check_options(self):
        """Refuse what cannot be enforced, naming the option (ValueError:
        the service does not start).

        A gap and an allowance together would let a lease sit right
        after another by overlapping it a little, and refuse it a
        little later: moving its end later could then clear a conflict,
        which the extension query cannot search (and the allowance would
        make the gap moot)."""
        group = self.conf.enforcement
        for resource in group.stacking_resources:
            if resource in PLAIN_RESOURCES or (
                    resource.startswith(PREFIXES) and
                    resource.split(':', 1)[1]):
                continue
            raise ValueError(
                '[enforcement] stacking_resources: %r is not a resource the '
                'ledger counts (%s, class:<RESOURCE CLASS> or '
                'host:<RESOURCE CLASS>).'
                % (resource, ', '.join(PLAIN_RESOURCES)))
        if group.stacking_gap and group.stacking_overlap_allowance:
            raise ValueError(
                '[enforcement] stacking_gap (%d) and '
                'stacking_overlap_allowance (%d) cannot both be set: a '
                'lease could skip the gap by overlapping the previous one.'
                % (group.stacking_gap, group.stacking_overlap_allowance))

    def inert(self):
        if self.conf.enforcement.stacking_resources:
            return None
        return 'it applies to no resource ([enforcement] stacking_resources ' \
               'is empty)'

    @property
    def resources(self):
        return list(self.conf.enforcement.stacking_resources)

    def _owned(self, rows, scope, owner):
        """The rows of ``owner`` (all of them, scope project)."""
        if scope == PROJECT:
            return list(rows)
        return [(interval, row) for interval, row in rows
                if row.user_id == owner]

    # --- the project view -------------------------------------------

    def describe(self, probe):
        resources = self.resources
        group = self.conf.enforcement
        scope, owner = group.stacking_scope, probe.owner
        if not resources or (scope == USER and not owner):
            return []
        gap = datetime.timedelta(seconds=group.stacking_gap)
        allowance = datetime.timedelta(
            seconds=group.stacking_overlap_allowance)
        rows = self._owned(probe.txn.intervals(
            probe.start - gap, probe.end, [probe.project_id]), scope, owner)
        if group.stacking_gap:
            limit, unit = group.stacking_gap, 'seconds between leases'
        else:
            limit, unit = (group.stacking_overlap_allowance,
                           'seconds of overlap')
        found = []
        for resource in resources:
            ends = [interval.end for interval, _ in rows
                    if interval.amounts.get(resource, 0) > 0]
            earliest = None
            if ends:
                earliest = max(ends) + gap - allowance
                if earliest <= probe.start:
                    earliest = None
            found.append(measures.Measure(
                self.name, resource,
                measures.USER if scope == USER else measures.PROJECT,
                limit, unit, project_id=probe.project_id,
                user_id=owner if scope == USER else None,
                earliest_start=earliest))
        return found

    # --- the decision -----------------------------------------------

    def check(self, admission):
        resources = self.resources
        if not resources:
            return
        group = self.conf.enforcement
        scope, owner = group.stacking_scope, admission.owner
        if scope == USER and not owner:
            return
        self.deny_unaccounted(admission.lease)
        amounts = admission.amounts
        held = [r for r in resources if amounts.get(r, 0) > 0]
        if not held:
            return
        gap = datetime.timedelta(seconds=group.stacking_gap)
        rows = self._owned(admission.txn.intervals(
            admission.start - gap, admission.end + gap,
            [admission.project_id], exclude=admission.exclude,
            with_names=True), scope, owner)
        conflicts = []
        for interval, row in rows:
            both = tuple(r for r in held if interval.amounts.get(r, 0) > 0)
            if both:
                found = self.conflict(admission.start, admission.end,
                                      interval, row, both)
                if found is not None:
                    conflicts.append(found)
        if conflicts:
            raise self.deny(self.message(admission, self.worst(conflicts)))

    def conflict(self, start, end, interval, row, resources):
        """The :class:`Conflict` of a lease over ``[start, end)`` with the
        other lease ``interval`` (its ledger ``row``), or None."""
        group = self.conf.enforcement
        gap = datetime.timedelta(seconds=group.stacking_gap)
        allowance = datetime.timedelta(
            seconds=group.stacking_overlap_allowance)
        overlap = min(end, interval.end) - max(start, interval.start)
        separation = max(start - interval.end, interval.start - end)
        if overlap > datetime.timedelta(0):
            if overlap <= allowance:
                return None
        elif separation >= gap:
            return None
        follows = start >= interval.start
        if follows:
            moment = interval.end + gap - allowance
        else:
            moment = interval.start - gap + allowance
        return Conflict(row, interval.start, interval.end, resources,
                        max(0.0, _seconds(overlap)),
                        max(0.0, _seconds(separation)), follows, moment)

    @staticmethod
    def worst(conflicts):
        """The conflict a message names: of the leases the lease follows,
        the one it must start the latest after; else, of those it
        precedes, the one it must end the earliest before."""
        following = [c for c in conflicts if c.follows]
        if following:
            return max(following, key=lambda c: (c.moment, c.row.id))
        return min(conflicts, key=lambda c: (c.moment, c.row.id))

    def message(self, admission, found):
        group = self.conf.enforcement
        row = found.row
        other = ledger_base.lease_label(row.name, row.lease_id) or \
            'entry %d' % row.id
        if group.stacking_scope == USER:
            whose = 'of user %s' % row.user_id
            same = 'the same user'
        else:
            whose = 'of project %s%s' % (
                row.project_id,
                ' (user %s)' % row.user_id if row.user_id else '')
            same = 'the same project'
        both = ', '.join(found.resources)
        if found.overlap:
            if group.stacking_overlap_allowance:
                rule = ('two leases of %s of %s may overlap by at most %s'
                        % (both, same,
                           ledger_base.span(group.stacking_overlap_allowance)))
            else:
                rule = 'two leases of %s of %s may not overlap' % (both, same)
            if group.stacking_gap:
                rule += (', and must be at least %s apart'
                         % ledger_base.span(group.stacking_gap))
            what = ('the lease overlaps lease %s %s (from %s to %s) by %s, '
                    'both holding %s; %s'
                    % (other, whose, ledger_base.when(found.start),
                       ledger_base.when(found.end),
                       ledger_base.span(found.overlap), both, rule))
        elif found.follows:
            what = ('the lease starts %s lease %s %s ends (on %s), both '
                    'holding %s; a lease of it must start at least %s after '
                    'the previous one of %s ends'
                    % (_apart(found.separation, 'after'), other, whose,
                       ledger_base.when(found.end), both,
                       ledger_base.span(group.stacking_gap), same))
        else:
            what = ('the lease ends %s lease %s %s starts (on %s), both '
                    'holding %s; a lease of it must end at least %s before '
                    'the next one of %s starts'
                    % (_apart(found.separation, 'before'), other, whose,
                       ledger_base.when(found.start), both,
                       ledger_base.span(group.stacking_gap), same))
        if found.follows:
            fix = 'start on %s or later' % ledger_base.when(found.moment)
        else:
            fix = 'end on %s or earlier' % ledger_base.when(found.moment)
        return 'No stacking: %s: it must %s.' % (what, fix)


def _apart(seconds, side):
    """``2 hours after`` / ``2 hours before``, or ``when`` when they
    touch."""
    if not seconds:
        return 'when'
    return '%s %s' % (ledger_base.span(seconds), side)
