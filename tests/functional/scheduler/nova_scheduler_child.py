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
"""The nova-scheduler side of the Nova child process (child only).

Imported by :mod:`.nova_process`'s child for the requests that run our
Nova plugins (``op`` ``filters`` and ``registration``); never imported by a
test module. The first such request gives the child what nova-scheduler
has: Nova's configuration parsed, an API database (SQLite in a temporary
directory, migrated by Nova's own ``db_sync``) and RPC/notifications on
oslo.messaging's fake transport (``Aggregate.create`` notifies).

``filters``: the aggregates of the request replace every aggregate of the
database (``nova.objects.Aggregate.create`` / ``add_host``); the
RequestSpec is built as nova-api builds it; **our request filter, taken
from** ``nova.scheduler.request_filter.ALL_REQUEST_FILTERS`` where
:mod:`placement_quota.scheduler.nova_filters` put it, runs on it (reading
the aggregates with ``AggregateList.get_all``); the Placement query comes
from Nova's ``resources_from_request_spec``. On a second RequestSpec of the
same request, Nova's ``HostFilterHandler`` runs ``ReservationHostFilter``
(loaded by name through ``[filter_scheduler] available_filters``) and,
when asked, blazar-nova's ``BlazarFilter``, over ``HostState`` objects
whose ``aggregates`` are the database's, as ``HostManager`` fills them.
Warnings and errors our code logs are returned.
"""

import atexit
import importlib
import logging
import tempfile
import uuid

AVAILABLE_FILTERS = ['nova.scheduler.filters.all_filters',
                     'placement_quota.scheduler.nova_filters.all_filters']
#: What nova.conf files written before placement_quota.scheduler name (the
#: deprecated placement_quota.compute shim): :func:`registration` loads it.
DEPRECATED_AVAILABLE_FILTERS = [
    'nova.scheduler.filters.all_filters',
    'placement_quota.compute.nova_filters.all_filters']

_state = {}


def _setup():
    if _state:
        return _state
    import nova.conf
    from nova.db.api import api as api_db
    from nova.db import migration
    from nova import objects
    from nova import rpc
    from oslo_messaging import conffixture

    objects.register_all()
    conf = nova.conf.CONF
    conf([], project='nova', default_config_files=[])
    tmp = tempfile.TemporaryDirectory()
    atexit.register(tmp.cleanup)
    conf.set_override('connection', 'sqlite:///%s/nova_api.db' % tmp.name,
                      'api_database')
    api_db.context_manager.configure(connection=conf.api_database.connection)
    migration.db_sync(database='api')
    messaging = conffixture.ConfFixture(conf)
    messaging.setUp()
    messaging.transport_url = 'fake:/'
    conf.set_override('driver', ['noop'], 'oslo_messaging_notifications')
    rpc.init(conf)
    conf.set_override('available_filters', AVAILABLE_FILTERS,
                      'filter_scheduler')
    from placement_quota.scheduler import nova_filters  # noqa: F401 registers
    _state.update(conf=conf, tmp=tmp)
    return _state


class _Captured(logging.Handler):
    """Warnings and errors logged under ``placement_quota``."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append({'level': record.levelname,
                             'message': record.getMessage(),
                             'traceback': bool(record.exc_info)})


def _replace_aggregates(ctxt, wanted):
    from nova import objects

    for agg in objects.AggregateList.get_all(ctxt):
        for host in list(agg.hosts or ()):
            agg.delete_host(host)
        agg.destroy()
    for a in wanted:
        agg = objects.Aggregate(ctxt, name=a['name'],
                                metadata=dict(a['metadata']))
        if a.get('uuid') is not None:
            agg.uuid = a['uuid']
        agg.create()
        for host in a['hosts']:
            agg.add_host(host)


def _settings(conf, settings):
    from placement_quota.conf import scheduler as scheduler_conf

    group = scheduler_conf.GROUP.name
    for opt in scheduler_conf.opts:
        if opt.dest in settings:
            conf.set_override(opt.dest, settings[opt.dest], group)
        else:
            conf.clear_override(opt.dest, group)


def _spec(request):
    from nova import context as nova_context
    from nova import objects

    ctxt = nova_context.RequestContext(
        user_id='user', project_id=request['project_id'], is_admin=False)
    f = request['flavor']
    flavor = objects.Flavor(
        flavorid='f-' + uuid.uuid4().hex[:8], name='flavor',
        vcpus=f.get('vcpus', 1), memory_mb=f.get('memory_mb', 512),
        root_gb=f.get('root_gb', 1), ephemeral_gb=0, swap=0,
        extra_specs=f.get('extra_specs', {}))
    spec = objects.RequestSpec.from_components(
        ctxt, str(uuid.uuid4()),
        {'properties': request.get('image_properties') or {}}, flavor, None,
        None, {'scheduler_hints': request.get('hints') or {}}, None, None,
        project_id=request['project_id'])
    return ctxt, spec


def _ours(filters):
    from placement_quota.scheduler import request_filter

    return [f for f in filters if getattr(f, request_filter.MARKER, False)]


def run_filters(request):
    state = _setup()
    conf = state['conf']
    from nova import context as nova_context
    from nova import exception
    from nova import objects
    from nova.scheduler import filters as host_filters
    from nova.scheduler import host_manager
    from nova.scheduler import request_filter as nova_request_filter
    from nova.scheduler.client import report
    from nova.scheduler import utils as scheduler_utils

    admin = nova_context.get_admin_context()
    _replace_aggregates(admin, request.get('aggregates', ()))
    _settings(conf, request.get('settings') or {})
    captured = _Captured()
    logger = logging.getLogger('placement_quota')
    logger.addHandler(captured)
    try:
        # The request filter, as process_reqspec runs it.
        ctxt, spec = _spec(request)
        ours, = _ours(nova_request_filter.ALL_REQUEST_FILTERS)
        refused = None
        ran = None
        try:
            ran = ours(ctxt, spec)
        except exception.RequestFilterFailed as exc:
            refused = exc.format_message()
        query = None
        if refused is None:
            query = scheduler_utils.resources_from_request_spec(
                ctxt, spec, None).to_querystring()
        destination = spec.requested_destination
        # The host filters, on a RequestSpec of their own.
        aggregates = objects.AggregateList.get_all(admin)
        hosts = sorted({h for a in aggregates for h in a.hosts} |
                       set(request.get('hosts', ())))
        states = []
        for host in hosts:
            hs = host_manager.HostState(host, host, None)
            hs.aggregates = [a for a in aggregates if host in a.hosts]
            states.append(hs)
        handler = host_filters.HostFilterHandler()
        classes = {c.__name__: c for c in handler.get_matching_classes(
            conf.filter_scheduler.available_filters)}
        _, host_spec = _spec(request)
        ours_host = classes['ReservationHostFilter']()
        passed = handler.get_filtered_objects([ours_host], states,
                                              host_spec, 0)
        answer = {
            'ran': ran, 'refused': refused, 'query': query,
            'microversion': report.SAME_SUBTREE_VERSION,
            'requested_destination': None if destination is None else {
                'aggregates': destination.aggregates,
                'forbidden_aggregates': sorted(
                    destination.forbidden_aggregates or ())},
            'host_passes': {hs.host: hs in passed for hs in states},
            'host_filter_checks': ours_host.checks,
            'host_filter_decisions': ours_host.decisions,
        }
        if request.get('blazar_filter'):
            answer['blazar_passes'], answer['blazar_checks'] = (
                _blazar_filter(conf, handler, states, request))
    finally:
        logger.removeHandler(captured)
        _settings(conf, {})
    answer['logged'] = captured.records
    return answer


def _blazar_filter(conf, handler, states, request):
    """blazar-nova's BlazarFilter, preemptibles allowed."""
    from blazarnova.scheduler.filters import blazar_filter

    class CountingBlazarFilter(blazar_filter.BlazarFilter):
        checks = 0

        def host_passes(self, host_state, spec_obj):
            self.checks += 1
            return super().host_passes(host_state, spec_obj)

    conf.set_override('allow_preemptibles', True, 'blazar:physical:host')
    try:
        _, spec = _spec(request)
        blazar = CountingBlazarFilter()
        passed = handler.get_filtered_objects([blazar], states, spec, 0)
        return ({hs.host: hs in passed for hs in states}, blazar.checks)
    finally:
        conf.clear_override('allow_preemptibles', 'blazar:physical:host')


def registration(request):
    """Import and reload nova_filters (and request_filter), then import
    its deprecated path; how many of our request filters Nova's list holds
    after each step, and the host filters Nova loads from the deprecated
    path (what older nova.conf files name)."""
    _setup()
    from nova.scheduler import filters as host_filters
    from nova.scheduler import request_filter as nova_request_filter

    from placement_quota.scheduler import request_filter

    filters = nova_request_filter.ALL_REQUEST_FILTERS
    nova_own = [f for f in filters if f not in _ours(filters)]
    counts = {}
    nova_filters = importlib.import_module(
        'placement_quota.scheduler.nova_filters')
    counts['import'] = len(_ours(filters))
    nova_filters = importlib.import_module(
        'placement_quota.scheduler.nova_filters')
    counts['second import'] = len(_ours(filters))
    importlib.reload(nova_filters)
    counts['reload'] = len(_ours(filters))
    importlib.reload(request_filter)
    importlib.reload(nova_filters)
    counts['reload of request_filter and nova_filters'] = len(
        _ours(filters))
    nova_filters.all_filters()
    counts['all_filters()'] = len(_ours(filters))
    importlib.import_module('placement_quota.compute.nova_filters')
    counts['import of the deprecated path'] = len(_ours(filters))
    handler = host_filters.HostFilterHandler()
    classes = handler.get_matching_classes(DEPRECATED_AVAILABLE_FILTERS)
    names = [c.__name__ for c in classes]
    return {
        'counts': counts,
        'is_current': _ours(filters)[0] is request_filter.get_request_filter(),
        'name': _ours(filters)[0].__name__,
        'nova_filters_unchanged': nova_own == [
            f for f in filters if f not in _ours(filters)],
        'host_filter_names': names,
    }


def handle(request):
    return {'filters': run_filters,
            'registration': registration}[request['op']](request)
