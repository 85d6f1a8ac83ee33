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
"""ProjectTreeLimitFilter: strict two-level limits on reserved amounts.

The limits and the project tree of ``[limits]`` (Keystone unified limits of the
reservation service, or the embedded limits file: see limits.rst), the rules of
Keystone's "Strict Two-Level Limits Enforcement Model", applied to what is
reserved over the lease's window:

* the project's peak reserved amount plus the lease's must fit the
  project's limit (for a child, capped at its parent's);
* the peak reserved by the whole tree (the root and all its children)
  plus the lease's must fit the root's limit.

A ``flavor:instance`` reservation counts its instances and what Nova
counts for its flavor (``class:VCPU`` or ``class:PCPU``, ...: the ledger's
amounts). The resources checked are ``tree_limit_resources``, or, when it
is empty, every resource that has a registered or a project limit.
Admissions in one tree take the root's ledger lock, so two children never
pass their parent's limit together.
"""

import threading
import time

from oslo_config import cfg

from placement_quota.filters import ledger_base
from placement_quota.filters import measures
from placement_quota.filters import rolling_cap
from placement_quota.ledger import window
from placement_quota.limits import tree as tree_mod


class ProjectTreeLimitFilter(ledger_base.LedgerFilter):
    """Deny a lease that would take its project or tree past a limit."""

    enforcement_opts = [
        cfg.ListOpt(
            'tree_limit_resources', default=[],
            help='Ledger resources the limits apply to (hosts, instances, '
                 'class:VCPU, class:MEMORY_MB, class:DISK_GB, floatingips, '
                 'networks, host:VCPU...). Empty: every resource that has a '
                 'registered or a project limit; a listed resource without '
                 'one gets [limits] unregistered_resource_limit.'),
    ]

    def __init__(self, conf, services=None):
        super().__init__(conf, services)
        self._lock = threading.Lock()
        self._source = None
        self._built = None   # (monotonic time, tree, source version)
        self._request = threading.local()
        self._resources_known = None   # (tree, its resources)

    def _tree(self):
        """The project tree: built once from a local source (the embedded
        limits file does not change while the service runs), kept for
        ``[limits] cache_ttl`` seconds from Keystone, else read again for every
        request (Keystone's "Strict Two-Level Limits Enforcement Model": limits
        are read before each check)."""
        with self._lock:
            if self._source is None:
                self._source = self.services.limits_source
            source = self._source
            built = self._built
        now = time.monotonic()
        version = source.version()
        if built is not None:
            if version is not None:
                if built[2] == version:
                    return built[1]
            elif source.local:
                return built[1]
            ttl = self.conf.limits.cache_ttl
            if ttl and now - built[0] < ttl:
                return built[1]
        tree = tree_mod.ProjectTree.from_data(
            source.load(), strict=False,
            unregistered_limit=self.conf.limits.unregistered_resource_limit)
        with self._lock:
            self._built = (now, tree, version)
        return tree

    def ledger_locks(self, context):
        tree = self._tree()
        # check() of the same request uses this very tree: one read of the
        # source per request.
        self._request.tree = (context.project_id, tree)
        if context.project_id in tree:
            root = tree.root(context.project_id)
            if root != context.project_id:
                return [root]
        return []

    def interval_projects(self, context):
        """The projects whose leases :meth:`check` counts: the project's
        family (its tree's root and the root's children), read with the
        project's own for the other filters (called after
        :meth:`ledger_locks`, on the tree it read)."""
        handed = getattr(self._request, 'tree', None)
        tree = handed[1] if handed and handed[0] == context.project_id \
            else self._tree()
        if context.project_id not in tree:
            return [context.project_id]
        return tree.family(context.project_id)

    def _tree_resources(self, tree):
        """``tree.resources()``, computed once a tree (the tree this
        filter reads is built anew when its source changes, never
        changed in place)."""
        known = self._resources_known
        if known is None or known[0] is not tree:
            known = (tree, frozenset(tree.resources()))
            self._resources_known = known
        return known[1]

    def _request_tree(self, project_id):
        handed = getattr(self._request, 'tree', None)
        self._request.tree = None
        if handed is not None and handed[0] == project_id:
            return handed[1]
        return self._tree()

    def _resources(self, tree, asked):
        listed = self.conf.enforcement.tree_limit_resources
        names = set(listed) if listed else self._tree_resources(tree)
        return sorted(r for r in asked if r in names and asked[r] > 0)

    def _limit(self, tree, project_id, resource):
        if project_id in tree:
            return tree.effective_limit(project_id, resource)
        return tree.default_limit(resource)

    def scopes(self, tree, admission, resources):
        """``[(scope, project_id, limit_of, intervals)]``: the limits a
        lease of the admission's project must fit, in the order they are
        checked -- the project's own (a child's, capped at its parent's)
        and the root's over the whole tree -- with the intervals that
        count against each (``limit_of(resource)``)."""
        project_id = admission.project_id
        known = project_id in tree
        root = tree.root(project_id) if known else project_id
        family = tree.family(project_id) if known else [project_id]
        found = admission.intervals(family)
        scopes = []
        if root != project_id:
            scopes.append((
                measures.PROJECT, project_id,
                lambda r: self._limit(tree, project_id, r),
                [i for i, row in found if row.project_id == project_id]))
        scopes.append((measures.TREE, root,
                       lambda r: self._limit(tree, root, r),
                       [i for i, row in found]))
        return scopes

    def describe(self, probe):
        tree = self._tree()
        listed = self.conf.enforcement.tree_limit_resources
        # The rolling caps (hours:..., RollingCapFilter's) are limits of
        # the same source, but not on what is held at one moment.
        resources = sorted(set(listed) if listed else {
            r for r in tree.resources() if not rolling_cap.is_cap_name(r)})
        found = []
        for scope, project_id, limit_of, intervals in self.scopes(
                tree, probe, resources):
            now, peaks = measures.now_and_peaks(
                intervals, probe.start, probe.end, resources)
            for resource in resources:
                limit = limit_of(resource)
                if limit == tree_mod.UNLIMITED:
                    continue
                found.append(measures.Measure(
                    self.name, resource, scope, limit, resource,
                    in_use=now[resource], peak=peaks[resource],
                    project_id=project_id))
        return found

    def check(self, admission):
        tree = self._request_tree(admission.project_id)
        self.deny_unaccounted(admission.lease)
        asked = admission.amounts
        resources = self._resources(tree, asked)
        if not resources:
            return
        scopes = [(scope, project_id, limit_of,
                   window.peaks(intervals, admission.start, admission.end,
                                resources))
                  for scope, project_id, limit_of, intervals in self.scopes(
                      tree, admission, resources)]
        for resource in resources:
            amount = asked[resource]
            for scope, project_id, limit_of, peaks in scopes:
                limit = limit_of(resource)
                if tree_mod.over(peaks[resource].amount + amount, limit):
                    what = ('project %s' % project_id
                            if scope == measures.PROJECT
                            else 'the tree of %s' % project_id)
                    raise self.deny(self._message(
                        admission, tree, resource, amount, what,
                        peaks[resource], limit))

    @staticmethod
    def _message(admission, tree, resource, amount, scope, peak, limit):
        project_id = admission.project_id
        parent = (tree.parent(project_id) if project_id in tree else None)
        who = ('Project %s (parent %s)' % (project_id, parent) if parent
               else 'Project %s' % project_id)
        return ('%s is over a limit for %s: the lease asks for %d from %s '
                'to %s; %s has %s; its limit is %d.'
                % (who, resource, amount, ledger_base.when(admission.start),
                   ledger_base.when(admission.end), scope,
                   ledger_base.peak_text(peak), limit))
