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
"""The account admin API (specs/003) as its own WSGI application.

Served on its own port (``placement-quota serve --admin-port``) or by any
WSGI server (:mod:`placement_quota.api.admin_wsgi`), never on the
enforcement service's endpoint. Every call is checked against the
oslo.policy rules of :mod:`placement_quota.policies` (default: the
``admin`` role); with ``[admin_api] auth_strategy = keystone`` a token is
validated first by keystonemiddleware.

Resources (``{account_id}`` percent-encoded, see
:mod:`placement_quota.accounts.ids`)::

    GET|HEAD|PUT|DELETE  /v1/{account_id}
    POST                 /v1/{account_id}/action/recover
    GET|POST             /v1/{account_id}/action/move?dest={account_id}
    GET                  /v1/{account_id}/consumers/{consumer_uuid}
    GET|POST             /v1/{account_id}/consumers/{uuid}/action/move?dest=
    GET                  /v1/{account_id}/leases/{lease_id}
    GET|POST             /v1/{account_id}/leases/{lease_id}/action/move?dest=

The handlers are thin: parse, call :class:`~placement_quota.accounts.
service.Accounts`, serialize. Its errors become HTTP answers through one
table, :data:`STATUS`.
"""

import json
from urllib import parse

from keystonemiddleware import auth_token
from oslo_context import context as oslo_context
from oslo_log import log as logging
from oslo_middleware import healthcheck
from oslo_policy import policy as oslo_policy
import webob

from placement_quota.accounts import errors
from placement_quota.accounts import ids
from placement_quota.accounts import service
from placement_quota.api import app as api_app
from placement_quota.api import util
from placement_quota import policies
from placement_quota import services as services_mod

LOG = logging.getLogger(__name__)

HEADER_PREFIX = 'X-Account-'
_UNSAFE = "!$&'()*+,;=:@"

#: The HTTP status of each account error (the nearest class in the error's
#: MRO wins: OverLimit is a Conflict).
STATUS = {
    errors.AccountError: 400,
    errors.Invalid: 400,
    errors.NotFound: 404,
    errors.Gone: 410,
    errors.Conflict: 409,
    errors.OverLimit: 409,
    errors.PreconditionFailed: 412,
    errors.SourceUnavailable: 502,
}


def status_of(error):
    """The HTTP status answering the account error ``error``."""
    for cls in type(error).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    raise TypeError('%s is not an account error' % type(error).__name__)


def _encode(text):
    """A header value: percent-encoded, so that any account ID or
    metadata value fits HTTP's latin-1 headers."""
    return parse.quote(str(text), safe=_UNSAFE + ' ')


def _pairs(mapping):
    return ', '.join('%s=%s' % (_encode(k).replace(',', '%2C')
                                .replace('=', '%3D'),
                                _encode(v).replace(',', '%2C'))
                     for k, v in sorted(mapping.items()))


def account_headers(document):
    """The ``X-Account-*`` headers of a GET representation: what HEAD
    answers, and GET too."""
    headers = {
        'Id': _encode(document['id']),
        'Parent-Id': _encode(document['parent_id'] or ''),
        'Generation': str(document['generation']),
        'Limits': _pairs(document['limits']),
        'Metadata': _pairs(document['metadata']),
        'Children': ', '.join(_encode(c).replace(',', '%2C')
                              for c in document['children']),
        'Created-At': document['created_at'],
        'Updated-At': document['updated_at'] or '',
    }
    usage = document.get('usage') or {}
    if 'placement' in usage:
        headers['Usage'] = _pairs(usage['placement']['resources'])
        headers['Consumers'] = _pairs(usage['placement']['consumers'])
    if 'reservations' in usage:
        reserved = usage['reservations']
        headers['Reserved'] = _pairs(reserved['now'])
        headers['Reserved-Peak'] = _pairs(
            {r: p['amount'] for r, p in reserved['peak'].items()})
        headers['Leases'] = _pairs({'pending': reserved['pending'],
                                    'active': reserved['active']})
    return {HEADER_PREFIX + k: v for k, v in headers.items()}


class Path:
    """The parts of an admin API path, decoded from the raw URL."""

    def __init__(self, account_id, rest):
        self.account_id = account_id
        self.rest = rest


def _raw_path(environ):
    """The path as the client encoded it (``%2F`` still encoded), without
    the script name."""
    raw = environ.get('RAW_URI') or environ.get('REQUEST_URI')
    if raw is None:
        return parse.quote(environ.get('PATH_INFO', '').encode('latin-1'),
                           safe='/' + _UNSAFE)
    raw = raw.split('?', 1)[0]
    if '://' in raw:                     # absolute-form request target
        raw = '/' + raw.split('://', 1)[1].partition('/')[2]
    script = parse.quote(environ.get('SCRIPT_NAME', ''), safe='/')
    if script and raw.startswith(script):
        raw = raw[len(script):]
    return raw


def _segment(text, field):
    """A decoded path segment other than the account ID."""
    try:
        value = parse.unquote(text, errors='strict')
    except UnicodeDecodeError:
        raise util.HTTPError(400, '%s %r is not percent-encoded UTF-8'
                             % (field, text), field=field, value=text)
    if not value:
        raise util.HTTPError(400, '%s must not be empty' % field,
                             field=field)
    return value


def _query(req, allowed):
    """The query parameters, each once, all in ``allowed``."""
    raw = req.environ.get('QUERY_STRING', '')
    try:
        pairs = parse.parse_qsl(raw, keep_blank_values=True,
                                strict_parsing=False, errors='strict')
    except (UnicodeDecodeError, ValueError):
        raise util.HTTPError(400, 'The query string %r is not percent-'
                             'encoded UTF-8' % raw, field='query',
                             value=raw)
    found = {}
    for name, value in pairs:
        if name not in allowed:
            raise util.HTTPError(
                400, 'Unknown query parameter %r; this resource takes %s'
                % (name, ', '.join(allowed) or 'none'), field=name,
                value=value)
        if name in found:
            raise util.HTTPError(400, 'Query parameter %s given twice'
                                 % name, field=name, value=value)
        found[name] = value
    return found


class AdminAPI:
    """The router and handlers of the admin API."""

    def __init__(self, accounts, enforcer, max_body_size=65536,
                 trust_roles_header=False):
        self.accounts = accounts
        self.enforcer = enforcer
        self.max_body_size = max_body_size
        self.trust_roles_header = trust_roles_header

    def __call__(self, environ, start_response):
        req = webob.Request(environ)
        try:
            response = self._dispatch(req)
        except util.HTTPError as exc:
            response = exc.response()
        except errors.AccountError as exc:
            response = util.HTTPError(status_of(exc), exc.message,
                                      **exc.body).response()
        except ids.InvalidAccountId as exc:
            response = util.HTTPError(400, str(exc), field=exc.field,
                                      value=exc.value).response()
        LOG.debug('%s %s %s', req.method, req.environ.get('PATH_INFO'),
                  response.status_int)
        return response(environ, start_response)

    # --- routing ----------------------------------------------------------

    def _dispatch(self, req):
        raw = _raw_path(req.environ)
        parts = raw.split('/')
        if raw in ('', '/'):
            return self._only(req, ('GET',), self.versions)
        if parts[1] != 'v1':
            raise util.HTTPError(404, 'No such resource: %s' % raw)
        if len(parts) == 2 or (len(parts) == 3 and parts[2] == '' and
                               req.method == 'GET'):
            return self._only(req, ('GET',), self.versions)
        try:
            account_id = ids.from_url(parts[2])
        except ids.InvalidAccountId as exc:
            raise util.HTTPError(400, str(exc), field='account_id',
                                 value=exc.value)
        rest = parts[3:]
        if rest and rest[-1] == '':
            rest = rest[:-1]
        route = self._route(account_id, rest)
        if route is None and rest[0] not in ('action', 'consumers',
                                             'leases'):
            # /v1/resel/sub/acct: specs/003's example of an account ID
            # that is invalid because it holds the path separator.
            value = parse.unquote('/'.join(parts[2:]))
            raise util.HTTPError(
                400, 'No such resource, and %r is not an account ID: an '
                'account ID cannot contain the path separator "/"' % value,
                field='account_id', value=value)
        if route is None:
            raise util.HTTPError(404, 'No such resource: %s' % raw)
        methods = route
        return self._only(req, tuple(methods), methods.get(req.method))

    def _route(self, account_id, rest):
        a = account_id
        if not rest:
            return {'GET': lambda r: self.show(r, a),
                    'HEAD': lambda r: self.head(r, a),
                    'PUT': lambda r: self.put(r, a),
                    'DELETE': lambda r: self.delete(r, a)}
        if rest == ['action', 'recover']:
            return {'POST': lambda r: self.recover(r, a)}
        if rest == ['action', 'move']:
            return self._move_routes(a)
        if len(rest) >= 2 and rest[0] in ('consumers', 'leases'):
            kind = 'consumer' if rest[0] == 'consumers' else 'lease'
            field = 'consumer_uuid' if kind == 'consumer' else 'lease_id'
            key = rest[1]
            if len(rest) == 2:
                return {'GET': lambda r: self.resource(
                    r, a, kind, _segment(key, field))}
            if rest[2:] == ['action', 'move']:
                return self._move_routes(a, kind, key, field)
        return None

    def _move_routes(self, account_id, kind=None, key=None, field=None):
        def target():
            if kind is None:
                return {}
            return {kind: _segment(key, field)}
        return {'GET': lambda r: self.move_action(r, account_id,
                                                  **target()),
                'POST': lambda r: self.move(r, account_id, **target())}

    @staticmethod
    def _only(req, allowed, handler):
        if handler is None or req.method not in allowed:
            allow = ', '.join(sorted(allowed))
            raise util.HTTPError(405, 'Method %s is not allowed here; use %s'
                                 % (req.method, allow),
                                 headers={'Allow': allow})
        return handler(req)

    # --- policy -----------------------------------------------------------

    def credentials(self, environ):
        """The policy credentials of a request, from the headers
        keystonemiddleware sets (oslo.context). Without Keystone
        (``trust_roles_header`` False), a request without ``X-Roles`` has
        the ``admin`` role."""
        context = oslo_context.RequestContext.from_environ(
            environ, overwrite=False)
        if 'HTTP_X_ROLES' not in environ and not self.trust_roles_header:
            context.roles = ['admin']
        else:
            context.roles = [r for r in context.roles if r]
        return context.to_policy_values()

    def authorize(self, req, rule, account_id):
        credentials = self.credentials(req.environ)
        target = {'account_id': account_id,
                  'project_id': credentials['project_id']}
        try:
            allowed = self.enforcer.enforce(rule, target, credentials)
        except oslo_policy.PolicyNotRegistered:
            allowed = False
        except oslo_policy.InvalidScope:
            allowed = False
        if not allowed:
            LOG.warning('Policy %s refused %s %s to user %s (roles %s)',
                        rule, req.method, req.environ.get('PATH_INFO'),
                        credentials['user_id'], credentials['roles'])
            raise util.HTTPError(403, 'Policy does not allow %s'
                                 % rule, rule=rule)

    # --- handlers ---------------------------------------------------------

    @staticmethod
    def versions(req):
        return util.json_response(200, {'versions': [{
            'id': 'v1', 'status': 'CURRENT',
            'links': [{'rel': 'self', 'href': req.host_url + '/v1/'}],
            'description': 'Account admin API (specs/003): accounts, '
                           'their limits, usage and resource moves.'}]})

    def show(self, req, account_id):
        self.authorize(req, policies.SHOW, account_id)
        document = self.accounts.show(account_id)
        return util.json_response(200, document,
                                  account_headers(document))

    def head(self, req, account_id):
        self.authorize(req, policies.SHOW, account_id)
        document = self.accounts.show(account_id)
        response = webob.Response(status=204, headerlist=[])
        for name, value in account_headers(document).items():
            response.headers[name] = value
        return response

    def put(self, req, account_id):
        self.authorize(req, policies.SET, account_id)
        raw = util.read_json_body(req, self.max_body_size)
        try:
            body = json.loads(raw.decode('utf-8')) if raw else {}
        except (UnicodeDecodeError, ValueError) as exc:
            raise util.HTTPError(400, 'The body is not JSON: %s' % exc,
                                 field='body')
        created, _account = self.accounts.put(account_id, body)
        document = self.accounts.show(account_id)
        location = '%s/v1/%s' % (req.application_url, ids.to_url(
            account_id))
        return util.json_response(201 if created else 202, document,
                                  dict(account_headers(document),
                                       Location=location))

    def delete(self, req, account_id):
        self.authorize(req, policies.DELETE, account_id)
        self.accounts.delete(account_id)
        return webob.Response(status=204, headerlist=[])

    def recover(self, req, account_id):
        self.authorize(req, policies.RECOVER, account_id)
        self.accounts.recover(account_id)
        document = self.accounts.show(account_id)
        return util.json_response(200, document, account_headers(document))

    def resource(self, req, account_id, kind, key):
        self.authorize(req, policies.SHOW, account_id)
        if kind == 'consumer':
            document = {'consumer': self.accounts.consumer(account_id, key)}
        else:
            document = {'lease': self.accounts.lease(account_id, key)}
        return util.json_response(200, document)

    def move_action(self, req, account_id, consumer=None, lease=None):
        self.authorize(req, policies.MOVE, account_id)
        dest = _query(req, ('dest',)).get('dest')
        action = self.accounts.move_action(account_id, dest, consumer, lease)
        return util.json_response(200, action.document,
                                  {'ETag': action.etag})

    def move(self, req, account_id, consumer=None, lease=None):
        self.authorize(req, policies.MOVE, account_id)
        dest = _query(req, ('dest',)).get('dest')
        if_match = req.environ.get('HTTP_IF_MATCH')
        action = self.accounts.move(account_id, dest, consumer, lease,
                                    if_match=if_match)
        base = '%s/v1/%s' % (req.application_url, ids.to_url(dest))
        if consumer is not None:
            location = '%s/consumers/%s' % (base, parse.quote(consumer))
        elif lease is not None:
            location = '%s/leases/%s' % (base, parse.quote(lease))
        else:
            location = base
        return util.json_response(303, action.document,
                                  {'Location': location})


def make_admin_app(conf, services=None, accounts=None, enforcer=None):
    """The admin API WSGI app of ``conf``, on the accounts of ``services``
    (a :class:`placement_quota.services.Services`, made of ``conf`` when
    None) unless ``accounts`` is given."""
    if accounts is None:
        accounts = service.Accounts.from_services(
            services or services_mod.Services(conf))
    if enforcer is None:
        enforcer = policies.enforcer(conf)
    keystone = conf.admin_api.auth_strategy == 'keystone'
    app = AdminAPI(accounts, enforcer, conf.admin_api.max_request_body_size,
                   trust_roles_header=keystone)
    if keystone:
        util.check_keystone_authtoken(conf)
        app = auth_token.AuthProtocol(app, {'oslo_config_config': conf})
    public = {'/healthcheck': healthcheck.Healthcheck(None, {'backends': ''})}
    return api_app.RequestId(api_app.FaultBarrier(_Public(public, app)))


class _Public:
    """The version documents and ``/healthcheck`` go around
    authentication; everything else to ``app``."""

    DOCUMENTS = ('', '/', '/v1', '/v1/')

    def __init__(self, apps, app):
        self.apps = apps
        self.app = app

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO', '')
        if path in self.apps:
            return self.apps[path](environ, start_response)
        if environ.get('REQUEST_METHOD') == 'GET' and \
                _raw_path(environ) in self.DOCUMENTS:
            req = webob.Request(environ)
            return AdminAPI.versions(req)(environ, start_response)
        return self.app(environ, start_response)
