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
"""The Nova request filter: reserved capacity fenced in the Placement query.

``reservation_aggregates(ctxt, request_spec) -> bool`` has the contract of
the functions of ``nova.scheduler.request_filter.ALL_REQUEST_FILTERS``
(wrapped in Nova's ``trace_request_filter`` by :func:`get_request_filter`):
it reads every aggregate once (``nova.objects.AggregateList.get_all``),
makes the decision of :mod:`placement_quota.scheduler.decision` from what
the RequestSpec holds (flavor extra specs, image properties, scheduler
hints, project), and writes it into ``request_spec.requested_destination``
as Nova's ``map_az_to_placement_aggregate`` and ``isolate_aggregates`` do:
``Destination.require_aggregates(group)`` per required group (one
``member_of=in:`` each) and ``Destination.append_forbidden_aggregates``
(``member_of=!in:``), creating the Destination when the spec has none.
It returns True when it ran (False when ``[placement_quota_scheduler]
request_filter_enabled`` is off).

A refused decision (bad metadata the request depends on, an unknown
reservation, a project the reservation does not admit) raises Nova's
``RequestFilterFailed`` with the decision's reason, which nova-scheduler
turns into ``NoValidHost``: we fail closed. Anything unexpected (the
aggregate lookup failing, say) is logged with its traceback and refused
the same way. Warnings about bad metadata that did not change the answer
are logged.

Nova is imported only inside the functions: this module loads anywhere;
it needs Nova only when called. Nova has no plugin point for request
filters; :mod:`placement_quota.scheduler.nova_filters` registers this one.
"""

from oslo_log import log as logging

from placement_quota.scheduler import decision as dec
from placement_quota.scheduler import settings as settings_mod
from placement_quota.conf import scheduler as scheduler_conf

LOG = logging.getLogger(__name__)

#: Attribute set on the function registered in Nova's list, so that a
#: second registration (a reload of this module included) finds it.
MARKER = '_placement_quota_request_filter'

_traced = None


def nova_conf():
    """Nova's ``CONF``, with ``[placement_quota_scheduler]`` registered."""
    import nova.conf

    scheduler_conf.register_opts(nova.conf.CONF)
    return nova.conf.CONF


def _get(obj, name, default=None):
    """A field of a Nova object, ``default`` when unset or None."""
    try:
        if hasattr(obj, 'obj_attr_is_set') and not obj.obj_attr_is_set(name):
            return default
        value = getattr(obj, name)
    except Exception:  # lazy-load failures of unset fields
        return default
    return default if value is None else value


def request_inputs(request_spec):
    """``(extra_specs, image_properties, scheduler_hints, project_id)``
    of a ``nova.objects.RequestSpec``, as the decision reads them."""
    flavor = _get(request_spec, 'flavor')
    extra_specs = dict(_get(flavor, 'extra_specs', {})) if flavor else {}
    image = _get(request_spec, 'image')
    properties = _get(image, 'properties') if image else None
    image_properties = properties.to_dict() if properties is not None else {}
    hints = dict(_get(request_spec, 'scheduler_hints', {}))
    return (extra_specs, image_properties, hints,
            _get(request_spec, 'project_id'))


def load_aggregates(ctxt):
    """Every Nova aggregate, one API database query."""
    from nova import objects

    return objects.AggregateList.get_all(ctxt)


def decide(ctxt, request_spec, settings=None, aggregates=None):
    """The :class:`~placement_quota.scheduler.decision.Decision` of a
    RequestSpec; ``aggregates`` (anything with ``uuid``, ``name``,
    ``metadata``, ``hosts``) defaults to :func:`load_aggregates`."""
    if aggregates is None:
        aggregates = load_aggregates(ctxt)
    index = dec.AggregateIndex(aggregates, settings or dec.DEFAULT_SETTINGS)
    extra_specs, image_properties, hints, project_id = request_inputs(
        request_spec)
    return dec.decide(extra_specs, image_properties, hints, project_id,
                      index)


def apply(decision, request_spec):
    """Write ``decision`` into ``request_spec.requested_destination``;
    True when something was written. The decision must not be refused."""
    from nova import objects

    if decision.refused:
        raise ValueError('a refused decision cannot be applied')
    if not (decision.required or decision.forbidden):
        return False
    if ('requested_destination' not in request_spec or
            request_spec.requested_destination is None):
        request_spec.requested_destination = objects.Destination()
    destination = request_spec.requested_destination
    for group in decision.required:
        destination.require_aggregates(group)
    if decision.forbidden:
        destination.append_forbidden_aggregates(set(decision.forbidden))
    return True


def _instance(request_spec):
    return _get(request_spec, 'instance_uuid', 'unknown')


def reservation_aggregates(ctxt, request_spec):
    """Require or forbid Blazar's aggregates in the Placement query.

    :returns: True when the filter ran, False when it is disabled.
    :raises nova.exception.RequestFilterFailed: the request is refused
        (no valid host); the reason says why.
    """
    from nova import exception

    conf = nova_conf()
    if not conf[scheduler_conf.GROUP.name].request_filter_enabled:
        return False
    try:
        settings = settings_mod.settings_from_conf(conf)
        decision = decide(ctxt, request_spec, settings)
    except Exception as exc:
        LOG.exception('placement-quota request filter: cannot decide '
                      'where instance %s may go; refusing it',
                      _instance(request_spec))
        raise exception.RequestFilterFailed(
            reason='placement-quota could not check reserved capacity: '
                   '%s' % exc)
    for warning in decision.warnings:
        LOG.warning('placement-quota request filter: %s', warning)
    if decision.refused:
        LOG.warning('placement-quota request filter: instance %s of project '
                    '%s %s', _instance(request_spec),
                    _get(request_spec, 'project_id'), decision.reason)
        raise exception.RequestFilterFailed(reason=decision.reason)
    apply(decision, request_spec)
    LOG.debug('placement-quota request filter: instance %s: %s; member_of '
              '%s', _instance(request_spec), decision.reason,
              dec.to_query(decision))
    return True


def get_request_filter():
    """:func:`reservation_aggregates` wrapped in Nova's
    ``trace_request_filter`` (the same object on every call), the
    function :mod:`.nova_filters` puts in ``ALL_REQUEST_FILTERS``."""
    global _traced
    if _traced is None:
        from nova.scheduler import request_filter as nova_request_filter

        traced = nova_request_filter.trace_request_filter(
            reservation_aggregates)
        setattr(traced, MARKER, True)
        _traced = traced
    return _traced
