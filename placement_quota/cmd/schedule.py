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
"""``placement-quota schedule explain``: where a request may go, and why.

For a flavor's extra specs, an image's properties, scheduler hints and a
project, the decision of :mod:`placement_quota.scheduler.decision` -- kind,
required and forbidden aggregates, reason, errors -- and the ``member_of``
part of the ``GET /allocation_candidates`` query Nova sends once the
request filter has run (exactly what Nova's ``RequestGroup`` writes for
the RequestSpec's ``requested_destination``). Names and prefixes come from
``[placement_quota_scheduler]`` in placement-quota.conf (the options
nova-scheduler reads from nova.conf).

The aggregates come from ``--aggregates-file`` (the JSON of Nova's
``GET /os-aggregates``, or a list of aggregates), or from the Nova API
with openstacksdk when placement-quota has a ``[nova]`` group with
credentials. Exit status 0 when the request can be placed, 1 when it is
refused (no valid host), 2 on bad input.
"""

import collections

from cliff import show
from keystoneauth1 import loading as ks_loading
import openstack
from oslo_config import cfg

from placement_quota.cmd import common
from placement_quota.cmd import main
from placement_quota.scheduler import aggregates as aggregates_mod
from placement_quota.scheduler import decision as dec
from placement_quota.scheduler import settings as settings_mod
from placement_quota.conf import nova as nova_conf
from placement_quota.conf import scheduler as scheduler_conf

PLACED, REFUSED = 0, 1

FIELDS = ('kind', 'required', 'forbidden', 'reason', 'errors', 'warnings',
          'reservation_ids', 'placement_query', 'microversion')


def _pairs(values, what):
    """``K=V`` arguments as (key, value) pairs."""
    pairs = []
    for value in values or ():
        key, sep, val = value.partition('=')
        if not sep or not key:
            main.fail('%s %r: expected KEY=VALUE' % (what, value))
        pairs.append((key, val))
    return pairs


def microversion(decision):
    """The lowest Placement microversion the ``member_of`` needs."""
    if decision.forbidden:
        return '1.32'
    if len(decision.required) > 1:
        return '1.24'
    if decision.required:
        return '1.21'
    return None


def _nova_aggregates(conf):
    """The aggregates from the Nova API, with the ``[nova]`` options."""
    try:
        conf[nova_conf.GROUP.name]
    except (cfg.NoSuchOptError, KeyError):
        nova_conf.register_opts(conf)
    group = nova_conf.GROUP.name
    auth = ks_loading.load_auth_from_conf_options(conf, group)
    if auth is None:
        main.fail('no --aggregates-file given, and [%s] has no credentials '
                  'to read the aggregates from the Nova API.' % group)
    session = ks_loading.load_session_from_conf_options(conf, group,
                                                        auth=auth)
    options = conf[group]
    conn = openstack.connection.Connection(
        session=session,
        region_name=getattr(options, 'region_name', None),
        compute_interface=getattr(options, 'interface', None) or 'public')
    try:
        return aggregates_mod.from_nova_api(conn)
    except Exception as exc:
        main.fail('cannot read the aggregates from the Nova API: %s' % exc)


class ScheduleExplain(common.Guarded, show.ShowOne):
    """Explain where Nova may place a request, given Blazar's aggregates.

    Prints the decision of the placement-quota request filter (kind,
    required and forbidden aggregates, reason, errors) and the member_of
    query it makes Nova send to Placement. Exit status 1 when the request
    is refused (no valid host).
    """

    #: The openstack shell needs no Keystone for it (see
    #: placement_quota.osc.plugin: Placement uses its session on demand).
    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--flavor-extra-spec', action='append', metavar='KEY=VALUE',
            dest='extra_specs',
            help='A flavor extra spec; may be repeated.')
        parser.add_argument(
            '--image-property', action='append', metavar='KEY=VALUE',
            dest='image_properties',
            help='An image property (as the RequestSpec holds it: Nova '
                 'drops properties it does not know); may be repeated.')
        parser.add_argument(
            '--hint', action='append', metavar='KEY=VALUE', dest='hints',
            help='A scheduler hint; may be repeated, a repeated key gives '
                 'a list (as "openstack server create --hint" does).')
        parser.add_argument(
            '--project', metavar='PROJECT_ID',
            help='The project making the request.')
        parser.add_argument(
            '--aggregates-file', metavar='PATH',
            help='JSON of the aggregates: Nova\'s GET /os-aggregates '
                 'answer, or a list of {uuid, name, metadata, hosts}. '
                 'Default: read them from the Nova API ([nova] options).')
        return parser

    def take_action(self, parsed_args):
        conf = main.config(self)
        scheduler_conf.register_opts(conf)
        try:
            settings = settings_mod.settings_from_conf(conf)
        except (cfg.Error, ValueError) as exc:
            main.fail('bad [%s] configuration: %s'
                      % (scheduler_conf.GROUP.name, exc))
        hints = collections.defaultdict(list)
        for key, value in _pairs(parsed_args.hints, '--hint'):
            hints[key].append(value)
        if parsed_args.aggregates_file:
            try:
                aggs = aggregates_mod.from_file(parsed_args.aggregates_file)
            except aggregates_mod.AggregatesError as exc:
                main.fail(str(exc))
        else:
            aggs = _nova_aggregates(conf)
        decision = dec.decide(
            dict(_pairs(parsed_args.extra_specs, '--flavor-extra-spec')),
            dict(_pairs(parsed_args.image_properties, '--image-property')),
            dict(hints), parsed_args.project,
            dec.AggregateIndex(aggs, settings))
        self.exit_status = REFUSED if decision.refused else PLACED
        structured = parsed_args.formatter in ('json', 'yaml')
        values = {
            'kind': decision.kind,
            'required': ['in:' + ','.join(sorted(group))
                         for group in decision.required],
            'forbidden': sorted(decision.forbidden),
            'reason': decision.reason,
            'errors': list(decision.errors),
            'warnings': list(decision.warnings),
            'reservation_ids': list(decision.reservation_ids),
            'placement_query': dec.to_query(decision),
            'microversion': microversion(decision),
        }
        if not structured:
            for key, value in values.items():
                if isinstance(value, list):
                    values[key] = '\n'.join(value)
                elif value is None:
                    values[key] = ('(refused: no query is sent)'
                                   if key == 'placement_query' else '')
        return FIELDS, tuple(values[f] for f in FIELDS)

    def run(self, parsed_args):
        self.exit_status = PLACED
        super().run(parsed_args)
        return self.exit_status
