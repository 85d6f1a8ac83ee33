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
"""RollingCapFilter: at most N resource-hours in any window of length P.

Slurm caps what an association uses over a period (GrpTRESMins, with a
reset or decay period); coral-credits adds weekly and monthly caps. Here:
per project, and per user of a project, at most N hours of a ledger
resource (``hosts``, ``instances``, ``class:VCPU``,
``class:CUSTOM_GPU_A100``, ``floatingips``...) in ANY window ``[t, t +
P)``, P being ``[enforcement] rolling_cap_period``. A reservation counts
over its own time window, and only its part inside the window: a lease
crossing the window's edge counts the hours on this side of it.

The caps are limits of the limits source (``[limits]``: Keystone unified
limits of the reservation service, or the embedded limits file and the
accounts of the admin API), named ``hours:<resource>`` for the project
and ``user_hours:<resource>`` for each user of the project: a registered
limit is the cloud-wide default, a project limit the project's own. A
resource without a limit (or -1) is not capped. Only the resources of
``[enforcement] rolling_cap_resources`` are looked up.

A lease asking ``a`` of a resource over ``[s, e)`` is allowed when every
window overlapping ``[s, e)`` (``t`` from ``s - P`` to ``e``) holds, with
the lease, at most the cap: the scope's live entries (the lease's own, on
an update, left out) plus the lease's ``a`` x its hours in the window.
Computed exactly (:mod:`placement_quota.ledger.rolling`): in
resource-microseconds, integers, against ``cap x 3600 x 10**6``; the
message shows hours to one decimal (four when not a whole tenth). A later
end only adds windows and hours: the filter is monotone in the end date.

Exact under concurrency: the admission holds the project's lock, which
every user of the project takes too.
"""

import datetime
import threading
import time

from oslo_config import cfg

from placement_quota.filters import ledger_base
from placement_quota.filters import measures
from placement_quota.lease import amounts as accounting
from placement_quota.ledger import rolling
from placement_quota.ledger import window
from placement_quota.limits import tree as tree_mod

#: Limit name prefixes: the project's cap, and each user's.
PROJECT_PREFIX = 'hours:'
USER_PREFIX = 'user_hours:'

#: Ledger resource -> what one of it is called in a unit ("host-hours").
_NOUNS = {accounting.HOSTS: 'host', accounting.INSTANCES: 'instance',
          accounting.FLOATINGIPS: 'floating IP',
          accounting.NETWORKS: 'network'}


def is_cap_name(resource):
    """Whether the limit ``resource`` is a rolling cap (not a limit on
    what is reserved at one moment)."""
    return resource.startswith((PROJECT_PREFIX, USER_PREFIX))


def unit(resource):
    """``VCPU-hours`` for ``class:VCPU``, ``host-hours`` for ``hosts``."""
    noun = _NOUNS.get(resource)
    if noun is None:
        noun = (resource[len(accounting.CLASS_PREFIX):]
                if resource.startswith(accounting.CLASS_PREFIX)
                else resource)
    return noun + '-hours'


def hours(value):
    """Resource-microseconds as hours: ``112.0``; four decimals when not
    a whole tenth of an hour (``100.0167``)."""
    if value % (rolling.HOUR // 10) == 0:
        return '%.1f' % (value / rolling.HOUR)
    return '%.4f' % (value / rolling.HOUR)


def period_text(seconds):
    """``7 days``, ``1 day``, ``12 hours``, ``90 seconds``."""
    for size, noun in ((86400, 'day'), (3600, 'hour'), (60, 'minute'),
                       (1, 'second')):
        if seconds % size == 0:
            count = seconds // size
            return '%d %s%s' % (count, noun, '' if count == 1 else 's')


class Caps:
    """The caps in force for one project: ``cap(scope, resource)`` in
    hours, or None when not capped."""

    def __init__(self, registered, own):
        self.registered = dict(registered or {})
        self.own = dict(own or {})

    def cap(self, scope, resource):
        prefix = USER_PREFIX if scope == measures.USER else PROJECT_PREFIX
        name = prefix + resource
        value = self.own.get(name)
        if value is None:
            value = self.registered.get(name)
        if value is None or value == tree_mod.UNLIMITED:
            return None
        return value


class RollingCapFilter(ledger_base.LedgerFilter):
    """Deny a lease past a rolling cap of resource-hours."""

    enforcement_opts = [
        cfg.ListOpt(
            'rolling_cap_resources', default=[],
            help='Ledger resources capped in resource-hours over any '
                 'window of rolling_cap_period (hosts, instances, '
                 'class:VCPU, class:CUSTOM_GPU_A100, floatingips...). '
                 'Each cap is a limit of the limits source ([limits]): '
                 '"hours:<resource>" for a project, "user_hours:<resource>" '
                 'for each user of a project; a registered limit is the '
                 'cloud-wide default, a project limit the project\'s own. '
                 'Empty: RollingCapFilter caps nothing.'),
        cfg.IntOpt(
            'rolling_cap_period', default=604800, min=60,
            help='Length of the rolling window of RollingCapFilter, in '
                 'seconds (default a week): at most the cap is used in '
                 'any window of this length, wherever it starts.'),
    ]

    def __init__(self, conf, services=None):
        super().__init__(conf, services)
        self._lock = threading.Lock()
        #: ``{project_id: (monotonic time, source version, Caps)}``.
        self._cached = {}

    def inert(self):
        if self.conf.enforcement.rolling_cap_resources:
            return None
        return ('it caps nothing ([enforcement] rolling_cap_resources is '
                'empty)')

    def _resources(self):
        return sorted(set(self.conf.enforcement.rolling_cap_resources))

    def caps(self, project_id):
        """The :class:`Caps` of ``project_id``, kept as
        ProjectTreeLimitFilter keeps its tree: while the source's version
        is the same, for good from a local source without one (the
        embedded limits file does not change while the service runs),
        else for ``[limits] cache_ttl`` seconds (read again for every
        request when it is 0)."""
        if not self._resources():
            return Caps({}, {})
        source = self.services.limits_source
        version = source.version()
        now = time.monotonic()
        with self._lock:
            cached = self._cached.get(project_id)
        if cached is not None:
            read_at, seen, found = cached
            if version is not None:
                if seen == version:
                    return found
            elif source.local:
                return found
            else:
                ttl = self.conf.limits.cache_ttl
                if ttl and now - read_at < ttl:
                    return found
        data = source.refresh([project_id])
        project = data.projects.get(project_id)
        found = Caps(data.registered_limits,
                     project.limits if project is not None else {})
        with self._lock:
            self._cached[project_id] = (now, version, found)
        return found

    def prepare(self, context, lease, flavors=None):
        """The caps, read before the admission locks anything: the
        limits source may be Keystone. None are read for a lease that
        asks for none of the capped resources (known without the hosts'
        Placement resources unless a ``host:`` resource is capped)."""
        resources = self._resources()
        if resources and not any(
                r.startswith(accounting.HOST_PREFIX) for r in resources):
            asked = accounting.lease_amounts(lease, None, flavors)
            if not any(asked.get(r, 0) > 0 for r in resources):
                return Caps({}, {})
        return self.caps(context.project_id)

    def prepare_describe(self, project_id):
        return self.caps(project_id)

    def _caps_of(self, admission):
        found = admission.prepared_for(self)
        if found is None:
            found = self.caps(admission.project_id)
        return found

    @property
    def period(self):
        """The window's length, in seconds."""
        return self.conf.enforcement.rolling_cap_period

    @property
    def window(self):
        """The window's length, a timedelta."""
        return datetime.timedelta(seconds=self.period)

    def scopes(self, admission, caps, resources, start, end):
        """``[(scope, who, {resource: cap}, spans of resource)]``: the
        project's caps and the owner's, with the ledger's entries of each
        over ``[start, end)`` (the admission's own left out)."""
        capped = {scope: {r: caps.cap(scope, r) for r in resources
                          if caps.cap(scope, r) is not None}
                  for scope in (measures.PROJECT, measures.USER)}
        owner = admission.owner
        if owner is None:
            capped[measures.USER] = {}
        if not any(capped.values()):
            return []
        rows = admission.txn.intervals(
            start, end, [admission.project_id], exclude=admission.exclude)
        found = []
        for scope, who in ((measures.PROJECT, admission.project_id),
                           (measures.USER, owner)):
            if not capped[scope]:
                continue
            mine = [interval for interval, row in rows
                    if scope == measures.PROJECT or row.user_id == owner]
            found.append((scope, who, capped[scope], {
                resource: spans(mine, resource)
                for resource in capped[scope]}))
        return found

    def describe(self, probe):
        resources = self._resources()
        if not resources:
            return []
        period = self.window
        first, last = probe.start - period, probe.end
        now = probe.now
        found = []
        for scope, who, capped, by_resource in self.scopes(
                probe, self._caps_of(probe), resources,
                min(first, now - period), max(last + period, now)):
            for resource, cap in sorted(capped.items()):
                held = by_resource[resource]
                in_use = rolling.usage(held, rolling.micros(now - period),
                                       rolling.length(period))
                busiest = rolling.busiest(
                    held, rolling.micros(first), rolling.micros(last),
                    rolling.length(period))
                peak = window.Peak(
                    resource, to_hours(busiest.usage),
                    rolling.moment(busiest.start),
                    rolling.moment(busiest.start) + period)
                prefix = USER_PREFIX if scope == measures.USER \
                    else PROJECT_PREFIX
                found.append(measures.Measure(
                    self.name, prefix + resource, scope, cap,
                    unit(resource), in_use=to_hours(in_use), peak=peak,
                    project_id=probe.project_id,
                    user_id=who if scope == measures.USER else None))
        return found

    def check(self, admission):
        resources = self._resources()
        if not resources:
            return
        self.deny_unaccounted(admission.lease)
        asked = {r: admission.amounts.get(r, 0) for r in resources}
        asked = {r: a for r, a in asked.items() if a > 0}
        if not asked:
            return
        period = self.window
        start, end = admission.start, admission.end
        own = (rolling.micros(start), rolling.micros(end))
        length = rolling.length(period)
        for scope, who, capped, by_resource in self.scopes(
                admission, self._caps_of(admission), sorted(asked),
                start - period, end + period):
            for resource, cap in sorted(capped.items()):
                lease_span = (own[0], own[1], asked[resource])
                held = by_resource[resource]
                busiest = rolling.busiest(
                    held + [lease_span], own[0] - length, own[1], length)
                if busiest.usage <= cap * rolling.HOUR:
                    continue
                by_lease = rolling.usage([lease_span], busiest.start,
                                         length)
                raise self.deny(self._message(
                    admission, scope, who, resource, cap, busiest,
                    busiest.usage - by_lease, by_lease))

    def _message(self, admission, scope, who, resource, cap, busiest,
                 already, by_lease):
        who_text = ('Project %s' % who if scope == measures.PROJECT
                    else 'User %s of project %s' % (who,
                                                    admission.project_id))
        at = rolling.moment(busiest.start)
        until = at + self.window
        room = cap * rolling.HOUR - already
        fits = ('%s more fit there' % hours(room) if room > 0
                else 'nothing more fits there')
        return ('%s may use at most %d %s (%s) in any %s; from %s to %s it '
                'would use %s (%s already reserved, %s by this lease): '
                '%s.' % (who_text, cap, unit(resource), resource,
                         period_text(self.period), ledger_base.when(at),
                         ledger_base.when(until), hours(busiest.usage),
                         hours(already), hours(by_lease), fits))


def spans(intervals, resource):
    """``[(start, end, amount)]`` in microseconds of the intervals
    holding ``resource``."""
    return [(rolling.micros(i.start), rolling.micros(i.end),
             i.amounts.get(resource, 0))
            for i in intervals if i.amounts.get(resource, 0)]


def to_hours(value):
    """Resource-microseconds as hours (a float, to four decimals)."""
    return round(value / rolling.HOUR, 4)
