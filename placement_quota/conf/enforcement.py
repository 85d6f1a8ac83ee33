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
"""``[enforcement]``: the filter chain of Blazar's "Flexible Reservation Usage
Enforcement" spec.

Options that belong to one filter (``reservation_max_length``, Blazar's
``external_service_*``...) are declared next to the filter, in its
``enforcement_opts``, as Blazar does; the chain registers them when it
loads the filter.
"""

from oslo_config import cfg

from placement_quota.conf import _util

GROUP = cfg.OptGroup(
    'enforcement', title='Enforcement filter chain',
    help='Which enforcement filters run, in which order, and for whom.')

DEFAULT_FILTER_MODULES = ['placement_quota.filters.all_filters']
FILTER_NAMESPACE = 'placement_quota.enforcement.filters'

opts = [
    cfg.MultiStrOpt(
        'available_filters', default=DEFAULT_FILTER_MODULES,
        help='Where enforcement filter classes are found: the dotted path of '
             'a module attribute named ``all_filters`` (a list of classes '
             'or of class names in that module, or a function returning '
             'one). Can be given several times; earlier entries win a name '
             'conflict. Classes that other packages register in the '
             'entry-point namespace ``%s`` are always available too.'
             % FILTER_NAMESPACE),
    cfg.ListOpt(
        'enabled_filters',
        default=['MaximumReservationLengthFilter', 'ExternalServiceFilter'],
        help='Comma-separated filter names, run in exactly this order. The '
             'first filter that denies a request stops the chain, and its '
             'message is what the user sees. Upstream Blazar names '
             '(MaxLeaseDurationFilter) are accepted.'),
    cfg.ListOpt(
        'exempted_projects', default=[],
        help='Projects no filter applies to: project IDs, or project names '
             'with their domain name as ``name@domain`` (for example '
             '``admin@Default``), resolved through Keystone with the '
             'credentials of the [keystone] group.'),
    cfg.IntOpt(
        'exempted_projects_refresh', default=300, min=0,
        help='Seconds between two resolutions of the ``name@domain`` entries '
             'of exempted_projects (a project can be renamed or re-created). '
             'A failed resolution is retried on the next request, at most '
             'once per 10 seconds, while the last good answer stays in '
             'use. 0 resolves them only once.'),
]

#: ``[enforcement] unknown_reservation_types`` (the counting filters
#: register it where the chain's options are absent: inside Blazar).
UNKNOWN_TYPES_OPT = cfg.StrOpt(
    'unknown_reservation_types', default='deny', choices=[
        ('deny', 'a counting filter denies a lease holding a '
                 'reservation type it cannot account for'),
        ('allow', 'such reservations count as nothing (the behaviour '
                  'before this option existed)')],
    help='What the filters that count reserved amounts '
         '(ReservationSizeFilter, NovaQuotaFilter, '
         'PlacementCapacityFilter, CreditFilter, '
         'ProjectTreeLimitFilter) do with a reservation whose '
         'resource_type they cannot account for (one other than '
         'physical:host, virtual:instance, flavor:instance, '
         'virtual:floatingip and network). The denial names the type '
         'and this option.')
opts.append(UNKNOWN_TYPES_OPT)


def register_opts(conf):
    _util.register(conf, GROUP, opts)


def list_opts():
    return {GROUP: opts}
