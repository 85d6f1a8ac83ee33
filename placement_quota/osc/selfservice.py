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
"""The self-service commands of the ``openstack`` shell.

``openstack reservation quota show``, ``openstack reservation quote`` and
``openstack reservation lease extension`` call the project API of the
placement-quota service (``/v1/projects/{project_id}/...``: see the
project API reference) as the user of the shell, with the shell's
keystoneauth session: the service is found in the catalog by type
``reservation-quota`` (or given with ``--os-reservation-quota-url``), and
the service's policy decides what the user's token may read.

``reservation quote`` takes exactly the options of python-blazarclient's
``openstack reservation lease create`` (it subclasses that command and
builds the same lease body), and creates nothing: it asks whether the
lease would be allowed and what it would cost.

Exit status, as every placement-quota command: 0 answered (``quote``: the
lease would be allowed), 1 ``quote``'s lease would be denied, 2 no answer
(bad input, refused by the policy, the service unreachable) with one line
``placement-quota: ...`` on stderr.
"""

import re
from urllib import parse

from blazarclient import command as blazar_command
from blazarclient import utils as blazar_utils
from blazarclient.v1.shell_commands import leases as blazar_leases
from cliff import lister
from cliff import show
from keystoneauth1 import exceptions as ks_exceptions
from openstackclient.identity import common as identity_common
from osc_lib import exceptions as osc_exceptions

from placement_quota.cmd import main
from placement_quota.osc import plugin

_PROJECTS = '/v1/projects/%s'


def _quote(segment):
    return parse.quote(segment, safe='')


def _call(command, method, path, **kwargs):
    """The JSON answer of ``method path`` to the project API, as the
    shell's user; a CommandError saying what the service answered
    otherwise."""
    api = command.app.client_manager.reservation_quota.project_api()
    try:
        response = api.request(path, method, **kwargs)
    except ks_exceptions.EndpointNotFound:
        raise osc_exceptions.CommandError(
            'No endpoint of type %s in the service catalog: register the '
            'placement-quota service (openstack service create --name '
            'placement-quota %s; openstack endpoint create ...) or give '
            'its URL with --os-reservation-quota-url'
            % (plugin.SERVICE_TYPE, plugin.SERVICE_TYPE))
    except ks_exceptions.ConnectionError as exc:
        raise osc_exceptions.CommandError(
            'Cannot reach the placement-quota service: %s' % exc)
    try:
        document = response.json()
    except ValueError:
        document = None
    if response.status_code >= 400:
        message = (document or {}).get('message') if isinstance(
            document, dict) else None
        raise osc_exceptions.CommandError(
            'placement-quota answered %d: %s' % (
                response.status_code, message or response.text.strip()
                or response.reason))
    if not isinstance(document, dict):
        raise osc_exceptions.CommandError(
            'placement-quota answered %d without a JSON document'
            % response.status_code)
    return document


class _Guarded:
    """Failures exit 2 with one line on stderr (as
    :class:`placement_quota.cmd.common.Guarded`): the shell's exit 1 would
    read as "the answer is no"."""

    #: The user's own token: the shell authenticates before the command.
    auth_required = True

    def run(self, parsed_args):
        try:
            return super().run(parsed_args)
        except BrokenPipeError:
            raise
        except Exception as exc:
            main.fail(getattr(exc, 'message', None) or str(exc) or
                      type(exc).__name__)


def _project_id(command, name_or_id):
    """The ID of the project ``name_or_id``; the token's project when
    None. A name the user may not look up is taken as an ID (as
    python-openstackclient does)."""
    if name_or_id is None:
        return command.app.client_manager.auth_ref.project_id
    return identity_common.find_project(
        command.app.client_manager.identity, name_or_id).id


def _user_id(command, name_or_id):
    if name_or_id is None:
        return None
    return identity_common.find_user(
        command.app.client_manager.identity, name_or_id).id


def _text(value):
    return '' if value is None else value


def _amount(value):
    if value is None:
        return ''
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _show(parsed_args, document, flat):
    """ShowOne columns and values of ``document``: as they are for the
    machine formats (json, yaml), ``flat(document)`` for the others."""
    if parsed_args.formatter in ('table', 'value', 'shell'):
        document = flat(document)
    return tuple(zip(*sorted(document.items()))) or ((), ())


class QuotaShow(_Guarded, lister.Lister):
    """The limits of a project (and of a user in it): each enabled
    filter's limit, what is in use now and the peak of the coming days,
    and the credits left."""

    COLUMNS = ('Filter', 'Resource', 'Scope', 'Limit', 'In use', 'Peak',
               'Peak at', 'Unit')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--project', metavar='<project>',
            help='Project (name or ID); default: the project of the '
                 'token.')
        parser.add_argument(
            '--user', metavar='<user>',
            help='User (name or ID) whose per-user limits to show; '
                 'default: yourself. Another user needs the '
                 'placement_quota:project:other_user rule (admin).')
        parser.add_argument(
            '--days', type=int, metavar='<days>',
            help='Days ahead over which the peak is sought (default: the '
                 'service\'s [self_service] usage_days).')
        return parser

    def take_action(self, parsed_args):
        project_id = _project_id(self, parsed_args.project)
        query = {}
        user_id = _user_id(self, parsed_args.user)
        if user_id is not None:
            query['user_id'] = user_id
        if parsed_args.days is not None:
            query['days'] = parsed_args.days
        path = (_PROJECTS % _quote(project_id)) + '/limits'
        if query:
            path += '?' + parse.urlencode(query)
        document = _call(self, 'GET', path)
        return self.COLUMNS, [self._row(limit)
                              for limit in document.get('limits', [])] + \
            self._credit_rows(document.get('credits'))

    @staticmethod
    def _row(limit):
        peak = limit.get('peak') or {}
        scope = limit.get('scope')
        who = limit.get('user_id') if scope == 'user' else \
            limit.get('project_id')
        return (limit.get('filter'), limit.get('resource'),
                '%s %s' % (scope, who) if who else scope,
                _amount(limit.get('limit')), _amount(limit.get('in_use')),
                _amount(peak.get('amount')), _text(peak.get('at')),
                _text(limit.get('unit')))

    @staticmethod
    def _credit_rows(credits):
        if not credits:
            return []
        allocation = credits.get('allocation') or {}
        rows = []
        if allocation:
            rows.append(('CreditFilter', 'credits', 'project',
                         _amount(allocation.get('amount')),
                         _amount(credits.get('spent')), '', '', 'credits'))
        for pool in credits.get('pools') or []:
            rc = pool.get('resource_class')
            rows.append(('CreditFilter', '%s pool' % rc, 'project',
                         _amount((pool.get('allocation') or {}).get(
                             'amount')),
                         _amount(pool.get('spent')), '', '',
                         '%s-hours' % rc))
        user = credits.get('user')
        if user and user.get('share') is not None:
            rows.append(('CreditFilter', 'credits',
                         'user %s' % user.get('user_id'),
                         _amount(user.get('share')),
                         _amount(user.get('spent')), '', '', 'credits'))
        return rows


class Quote(_Guarded, blazar_leases.CreateLeaseBase):
    """Ask whether a lease would be allowed, and what it would cost,
    without creating it: the options of "openstack reservation lease
    create". Exits 1 when it would be denied."""

    allowed = None

    def run(self, parsed_args):
        status = super().run(parsed_args)
        return 1 if status == 0 and self.allowed is False else status

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--project', metavar='<project>',
            help='Project (name or ID) the lease would be in; default: the '
                 'project of the token.')
        return parser

    @staticmethod
    def lease_body(params):
        """Blazar's ``POST /v1/leases`` body of what
        ``CreateLeaseBase.args2body`` parsed (as python-blazarclient's
        ``lease.create`` sends it)."""
        body = {'name': params['name'], 'start_date': params['start'],
                'end_date': params['end'],
                'reservations': params['reservations'],
                'events': params['events']}
        if params.get('before_end'):
            body['before_end_date'] = params['before_end']
        return body

    def get_data(self, parsed_args):
        body = self.lease_body(self.args2body(parsed_args))
        project_id = _project_id(self, parsed_args.project)
        document = _call(self, 'POST', (_PROJECTS % _quote(project_id))
                         + '/quote', json=body)
        self.allowed = document.get('allowed')
        return _show(parsed_args, document, self._flat)

    @staticmethod
    def _flat(document):
        found = dict(document)
        lease = found.pop('lease', None) or {}
        for key in ('name', 'start_date', 'end_date'):
            found[key] = lease.get(key)
        found['filters'] = '\n'.join(
            '%s: %s%s' % (f.get('name'), {True: 'allowed', False: 'denied',
                                          None: 'not asked'}.get(
                                              f.get('allowed')),
                          ' (%s)' % f['message'] if f.get('message') else '')
            for f in found.get('filters') or [])
        credits = found.pop('credits', None)
        if credits:
            for key, value in credits.items():
                if key != 'pools':
                    found['credits_' + key] = _amount(value)
            for pool in credits.get('pools') or []:
                # credits_pool_VCPU: "80 VCPU-hours, 20 left after"
                after = pool.get('balance_after')
                found['credits_pool_%s' % pool.get('resource_class')] = (
                    '%s %s-hours, %s' % (
                        _amount(pool.get('charge')),
                        pool.get('resource_class'),
                        'no pool' if after is None
                        else '%s left after' % _amount(after)))
        return {k: _text(v) for k, v in found.items()}


class LeaseExtension(_Guarded, show.ShowOne):
    """How far a lease could be extended now, and which filter would
    refuse more."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            'lease', metavar='<lease>',
            help='Lease (name or ID); a name is looked up in Blazar, as '
                 '"openstack reservation lease show" does.')
        parser.add_argument(
            '--project', metavar='<project>',
            help='Project (name or ID) of the lease; default: the project '
                 'of the token.')
        return parser

    def take_action(self, parsed_args):
        lease_id = _lease_id(self, parsed_args.lease)
        project_id = _project_id(self, parsed_args.project)
        document = _call(self, 'GET', '%s/leases/%s/extension' % (
            _PROJECTS % _quote(project_id), _quote(lease_id)))
        return _show(parsed_args, document,
                     lambda d: {k: _text(v) for k, v in d.items()})


def _lease_id(command, name_or_id):
    """The ID of the lease ``name_or_id``: a UUID as it is, a name
    looked up in Blazar's lease list as python-blazarclient does."""
    if re.match('^%s$' % blazar_command.UUID_PATTERN, name_or_id):
        return name_or_id
    try:
        blazar = command.app.client_manager.reservation
        return blazar_utils.find_resource_id_by_name_or_id(
            blazar, 'lease', name_or_id, None, blazar_command.UUID_PATTERN)
    except ks_exceptions.EndpointNotFound:
        raise osc_exceptions.CommandError(
            'Cannot look up the lease named %r: no Blazar (type '
            'reservation) in the service catalog; give the lease ID'
            % name_or_id)
