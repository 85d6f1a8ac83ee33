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
"""``[placement_quota_scheduler]``: the Nova scheduler side.

The names and prefixes :class:`placement_quota.scheduler.settings.Settings`
carries, as options. Registered on Nova's configuration by
:mod:`placement_quota.scheduler.nova_filters` (so they are read from
``nova.conf`` in nova-scheduler), and on placement-quota's own by
``placement-quota schedule explain``.
"""

import types

from oslo_config import cfg

from placement_quota.conf import _util

GROUP = cfg.OptGroup(
    'placement_quota_scheduler', title='Reserved capacity in the scheduler',
    help='How the placement-quota request filter and ReservationHostFilter '
         'recognise Blazar reservations, the free pool and preemptible '
         'requests in flavors, images, scheduler hints and aggregate '
         'metadata.')

#: The defaults of :class:`placement_quota.scheduler.settings.Settings`
#: (stock Blazar's and Nova's), repeated here because conf imports nothing
#: above it; tests/unit/scheduler/test_options.py checks they are the same.
_D = types.SimpleNamespace(
    required_prefix='reservation:', forbidden_prefixes=('reservation:',),
    freepool_name='freepool', az_prefixes=('blazar_', 'blazar:'),
    owner_key='blazar:owner', reservation_key='reservation',
    tenant_key_prefix='filter_tenant_id', reservation_hint='reservation',
    reservation_class_prefix='CUSTOM_RESERVATION_',
    preemptible_key='blazar:preemptible', allow_preemptibles=True)

opts = [
    cfg.BoolOpt(
        'request_filter_enabled', default=True,
        help='Whether the request filter registered by '
             'placement_quota.scheduler.nova_filters adds member_of '
             '(required and forbidden aggregates) to the Placement query. '
             'False leaves requests untouched (the host filter, if enabled, '
             'still applies).'),
    cfg.StrOpt(
        'required_prefix', default=_D.required_prefix,
        help='placement_req_required_member_prefix of Placement\'s "Support '
             'filtering by forbidden aggregate membership" spec: a flavor '
             'extra spec or image property <prefix><reservation id> asks '
             'for the aggregate whose metadata has the same key.'),
    cfg.ListOpt(
        'forbidden_prefixes', default=list(_D.forbidden_prefixes),
        help='placement_req_default_forbidden_member_prefix of Placement\'s '
             '"Support filtering by forbidden aggregate membership" spec: '
             'aggregates with a metadata key starting with one of these are '
             'kept out of reach of requests without a reservation.'),
    cfg.StrOpt(
        'freepool_name', default=_D.freepool_name,
        help='Name of the free pool aggregate (Blazar\'s [nova] '
             'aggregate_freepool_name); preemptible requests go there, '
             'regular requests never.'),
    cfg.ListOpt(
        'az_prefixes', default=list(_D.az_prefixes),
        help='Availability zone prefixes of Blazar\'s host reservation '
             'aggregates ([physical:host] blazar_az_prefix, and the legacy '
             '"blazar:").'),
    cfg.StrOpt(
        'owner_key', default=_D.owner_key,
        help='Aggregate metadata key naming the owner project (Blazar\'s '
             '[nova] blazar_owner).'),
    cfg.StrOpt(
        'reservation_key', default=_D.reservation_key,
        help='Aggregate metadata key of instance reservation aggregates; '
             'Blazar\'s flavors ask for it as '
             'aggregate_instance_extra_specs:<key>.'),
    cfg.StrOpt(
        'tenant_key_prefix', default=_D.tenant_key_prefix,
        help='Aggregate metadata keys listing admitted projects '
             '(comma-separated), as Nova\'s AggregateMultiTenancyIsolation '
             'reads them.'),
    cfg.StrOpt(
        'reservation_hint', default=_D.reservation_hint,
        help='Scheduler hint carrying a host reservation id.'),
    cfg.StrOpt(
        'reservation_class_prefix', default=_D.reservation_class_prefix,
        help='Resource class prefix of instance reservations '
             '(resources:CUSTOM_RESERVATION_<ID>=1 in Blazar\'s flavors).'),
    cfg.StrOpt(
        'preemptible_key', default=_D.preemptible_key,
        help='Flavor extra spec (or image property) marking a preemptible '
             'request.'),
    cfg.BoolOpt(
        'allow_preemptibles', default=_D.allow_preemptibles,
        help='Whether preemptible requests go to the free pool. False '
             'makes them regular requests.'),
]

#: Options that are settings.Settings fields (all but the switch).
SETTINGS_FIELDS = tuple(o.dest for o in opts
                        if o.dest != 'request_filter_enabled')


def register_opts(conf):
    """Register the group on ``conf``; a second call does nothing."""
    try:
        conf[GROUP.name]
    except (cfg.NoSuchOptError, KeyError):
        _util.register(conf, GROUP, opts)


def list_opts():
    return {GROUP: opts}
