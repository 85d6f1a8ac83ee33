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
"""``ReservationHostFilter``: the host filter fallback (Nova only).

A drop-in replacement for blazar-nova's ``BlazarFilter`` where the
request filter (:mod:`.request_filter`) cannot be used: the same
decision, answered per host from ``host_state.aggregates``. The decision
-- one ``AggregateList.get_all`` and one prefix scan -- is made once per
request and cached per RequestSpec object (the scheduler passes the same
object for every host, and for every instance of a multi-create), never
once per host.

It never raises into the scheduler: a failure is logged and the host
refused (fail closed), as is every host of a request whose decision is
refused (bad metadata, unknown reservation, project not admitted).

This module imports Nova: only a Nova process imports it, through
``[filter_scheduler] available_filters =
placement_quota.scheduler.nova_filters.all_filters`` (or its own class
path).
"""

import collections
import threading

from nova import context as nova_context
from nova.scheduler import filters
from oslo_log import log as logging

from placement_quota.scheduler import decision as dec
from placement_quota.scheduler import request_filter
from placement_quota.scheduler import settings as settings_mod

LOG = logging.getLogger(__name__)

#: Decisions kept, one per RequestSpec object (requests in flight).
CACHE_SIZE = 64


class ReservationHostFilter(filters.BaseHostFilter):
    """Pass only hosts where reserved capacity admits the request.

    :ivar checks: hosts checked by this instance (``host_passes`` calls).
    :ivar decisions: decisions made (aggregate lookups and prefix scans).
    """

    run_filter_once_per_request = False
    RUN_ON_REBUILD = False

    def __init__(self):
        super().__init__()
        self._lock = threading.Lock()
        self._cache = collections.OrderedDict()
        self.checks = 0
        self.decisions = 0

    def decision_for(self, spec_obj):
        """The request's decision, made on the first host asked about."""
        key = id(spec_obj)
        with self._lock:
            hit = self._cache.get(key)
            # The cache holds the spec itself, so its id is not reused
            # while the entry lives.
            if hit is not None and hit[0] is spec_obj:
                return hit[1]
        decision = self._decide(spec_obj)
        with self._lock:
            self._cache[key] = (spec_obj, decision)
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return decision

    def _decide(self, spec_obj):
        self.decisions += 1
        instance = request_filter._get(spec_obj, 'instance_uuid', 'unknown')
        try:
            conf = request_filter.nova_conf()
            settings = settings_mod.settings_from_conf(conf)
            ctxt = getattr(spec_obj, '_context', None)
            if ctxt is None:
                ctxt = nova_context.get_admin_context()
            decision = request_filter.decide(ctxt, spec_obj, settings)
        except Exception as exc:
            LOG.exception('ReservationHostFilter: cannot decide where '
                          'instance %s may go; refusing every host',
                          instance)
            return dec.Decision(
                dec.REGULAR, errors=['cannot check reserved capacity: %s'
                                     % exc],
                reason='refused (no valid host): cannot check reserved '
                       'capacity: %s' % exc)
        for warning in decision.warnings:
            LOG.warning('ReservationHostFilter: %s', warning)
        if decision.refused:
            LOG.warning('ReservationHostFilter: instance %s of project %s '
                        '%s', instance,
                        request_filter._get(spec_obj, 'project_id'),
                        decision.reason)
        return decision

    def host_passes(self, host_state, spec_obj):
        try:
            decision = self.decision_for(spec_obj)
            self.checks += 1
            uuids = [agg.uuid for agg in (host_state.aggregates or ())]
            passes = decision.admits_host(uuids)
            if not passes and not decision.refused:
                LOG.debug('ReservationHostFilter: %s refused: %s',
                          host_state, decision.reason)
            return passes
        except Exception:
            LOG.exception('ReservationHostFilter: error checking host %s; '
                          'refusing it', getattr(host_state, 'host', '?'))
            return False
