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
"""The account admin API ("Multi-Tenant Accounting in OpenStack") as its own
WSGI application.

Served on its own port (``placement-quota serve --admin-port``) or by any
WSGI server (:mod:`placement_quota.api.admin.wsgi`), never on the
enforcement service's endpoint. Every call is checked against the
oslo.policy rules of :mod:`placement_quota.api.admin.access` (default: the
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
    GET                  /v1/{account_id}/report?start=&end=[&by=][&user=]

The handlers are thin: parse (:mod:`placement_quota.api.admin.http`:
raw path, query, strict JSON bodies, ``X-Account-*`` headers), call
:class:`~placement_quota.accounts.service.Accounts`, serialize. Its errors
become HTTP answers through their classes' ``http_status``
(:func:`placement_quota.errors.status_of`).

Before authentication, :class:`~placement_quota.api.admin.guard.
RequestGuard` refuses what a web page could send: a ``Host`` the API does
not answer to (DNS rebinding), and on state-changing calls an ``Origin``
not allowed or a body that is not JSON (cross-site requests). Request
bodies are strict JSON: no ``NaN``, ``Infinity``, or number too large for
a float.
"""

from urllib import parse

from keystonemiddleware import auth_token
from oslo_context import context as oslo_context
from oslo_log import log as logging
from oslo_policy import policy as oslo_policy
import webob

from placement_quota.accounts import errors
from placement_quota.accounts import ids
from placement_quota.accounts import service
from placement_quota.api.admin import guard as admin_guard
from placement_quota.api.admin import http as admin_http
from placement_quota.api.enforcement import app as api_app
from placement_quota.api import util
from placement_quota import errors as pq_errors
from placement_quota import audit
from placement_quota.api import healthcheck as pq_healthcheck
from placement_quota.ledger import report as ledger_report
from placement_quota.ledger import errors as ledger_errors
from placement_quota.api.admin import access as policies
from placement_quota import services as services_mod

LOG = logging.getLogger(__name__)


def status_of(error):
    """The HTTP status answering the account error ``error`` (its class's
    ``http_status``: :func:`placement_quota.errors.status_of`)."""
    if not isinstance(error, errors.AccountError):
        raise TypeError('%s is not an account error' % type(error).__name__)
    return pq_errors.status_of(error)


def _unavailable_message(exc):
    """What the admin API answers an outage: which service, and why."""
    if isinstance(exc, ledger_errors.LedgerUnavailable):
        return ('The ledger database did not answer in time; try again '
                'later: %s' % exc)
    return pq_errors.outage(exc)


class AdminAPI:
    """The router and handlers of the admin API."""

    def __init__(self, accounts, enforcer, max_body_size=65536,
                 trust_roles_header=False, noauth_roles=('admin',)):
        self.accounts = accounts
        self.enforcer = enforcer
        self.max_body_size = max_body_size
        self.trust_roles_header = trust_roles_header
        self.noauth_roles = [r.strip() for r in noauth_roles if r.strip()]
        self._noauth_ceiling = util.noauth_ceiling(self.noauth_roles)

    def __call__(self, environ, start_response):
        req = webob.Request(environ)
        try:
            with audit.acting(self.actor(environ)):
                response = self._dispatch(req)
        except util.HTTPError as exc:
            response = exc.response()
        except errors.AccountError as exc:
            response = util.HTTPError(status_of(exc), exc.message,
                                      **exc.body).response()
        except ids.InvalidAccountId as exc:
            response = util.HTTPError(400, str(exc), field=exc.field,
                                      value=exc.value).response()
        except pq_errors.DependencyUnavailable as exc:
            LOG.error('%s %s: the %s did not answer: %s', req.method,
                      req.environ.get('PATH_INFO'), exc.service, exc)
            response = util.HTTPError(
                pq_errors.status_of(exc), _unavailable_message(exc)
            ).response()
        LOG.debug('%s %s %s', req.method, req.environ.get('PATH_INFO'),
                  response.status_int)
        return response(environ, start_response)

    # --- routing ----------------------------------------------------------

    def _dispatch(self, req):
        raw = admin_http.raw_path(req.environ)
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
            # /v1/resel/sub/acct: an example account ID of
            # "Multi-Tenant Accounting in OpenStack"
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
        if rest == ['report']:
            return {'GET': lambda r: self.report(r, a)}
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
                    r, a, kind, self._key(kind, key, field))}
            if rest[2:] == ['action', 'move']:
                return self._move_routes(a, kind, key, field)
        return None

    @staticmethod
    def _key(kind, key, field):
        if kind == 'consumer':
            return admin_http.consumer_uuid(key)
        return admin_http.segment(key, field)

    def _move_routes(self, account_id, kind=None, key=None, field=None):
        def target():
            if kind is None:
                return {}
            return {kind: self._key(kind, key, field)}
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
        the roles of ``noauth_roles``, and ``X-Roles`` only lowers them:
        a role it names counts when
        :func:`~placement_quota.api.util.noauth_ceiling` allows it."""
        context = oslo_context.RequestContext.from_environ(
            environ, overwrite=False)
        roles = [r for r in context.roles if r]
        if not self.trust_roles_header:
            if 'HTTP_X_ROLES' not in environ:
                roles = list(self.noauth_roles)
            else:
                roles = [r for r in roles
                         if r.lower() in self._noauth_ceiling]
        context.roles = roles
        return context.to_policy_values()

    def actor(self, environ):
        """Who a request is made by, for the audit log (``noauth`` first
        when no keystonemiddleware validated the user and project)."""
        credentials = self.credentials(environ)
        return audit.request_actor(credentials['user_id'],
                                   credentials['project_id'],
                                   authenticated=self.trust_roles_header)

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
            'description': 'Account admin API ("Multi-Tenant Accounting '
                           'in OpenStack"): accounts, their limits, usage '
                           'and resource moves.'}]})

    def show(self, req, account_id):
        self.authorize(req, policies.SHOW, account_id)
        document = self.accounts.show(account_id)
        return util.json_response(200, document,
                                  admin_http.account_headers(document))

    def report(self, req, account_id):
        """``GET /v1/{account}/report?start=&end=[&by=][&user=]``."""
        self.authorize(req, policies.SHOW, account_id)
        found = admin_http.query(req, ('start', 'end', 'by', 'user'))
        start = admin_http.date(found, 'start')
        end = admin_http.date(found, 'end')
        by = found.get('by', 'project')
        if by not in ledger_report.BY:
            raise util.HTTPError(400, 'Query parameter by must be one of %s'
                                 % ', '.join(ledger_report.BY), field='by',
                                 value=by)
        if not end > start:
            raise util.HTTPError(400, 'Query parameter end must be after '
                                 'start (%s)' % start.isoformat(),
                                 field='end', value=found['end'])
        user = found.get('user')
        if user is not None:
            user = admin_http.identifier(user, 'user')
        try:
            rows = self.accounts.report(account_id, start, end, by, user)
        except ledger_report.TooManyRows as exc:
            raise util.HTTPError(400, str(exc), field='by', value=by)
        return util.json_response(200, {
            'account': account_id, 'start': start.isoformat(),
            'end': end.isoformat(), 'by': by,
            'rows': [dict(zip(ledger_report.COLUMNS, row.as_tuple()))
                     for row in rows]})

    def head(self, req, account_id):
        self.authorize(req, policies.SHOW, account_id)
        document = self.accounts.show(account_id)
        response = webob.Response(status=204, headerlist=[])
        for name, value in admin_http.account_headers(document).items():
            response.headers[name] = value
        return response

    def put(self, req, account_id):
        self.authorize(req, policies.SET, account_id)
        raw = util.read_json_body(req, self.max_body_size)
        body = admin_http.loads(raw) if raw else {}
        created, _account = self.accounts.put(account_id, body)
        document = self.accounts.show(account_id)
        location = '%s/v1/%s' % (req.application_url, ids.to_url(
            account_id))
        return util.json_response(201 if created else 202, document,
                                  dict(admin_http.account_headers(document),
                                       Location=location))

    def _no_body(self, req):
        """An action takes no body; one sent must still be JSON (a form or
        text body is what a web page would send)."""
        raw = util.read_json_body(req, self.max_body_size)
        if raw.strip():
            admin_http.loads(raw)

    def delete(self, req, account_id):
        self.authorize(req, policies.DELETE, account_id)
        self._no_body(req)
        self.accounts.delete(account_id)
        return webob.Response(status=204, headerlist=[])

    def recover(self, req, account_id):
        self.authorize(req, policies.RECOVER, account_id)
        self._no_body(req)
        self.accounts.recover(account_id)
        document = self.accounts.show(account_id)
        return util.json_response(200, document,
                                  admin_http.account_headers(document))

    def resource(self, req, account_id, kind, key):
        self.authorize(req, policies.SHOW, account_id)
        if kind == 'consumer':
            document = {'consumer': self.accounts.consumer(account_id, key)}
        else:
            document = {'lease': self.accounts.lease(account_id, key)}
        return util.json_response(200, document)

    def move_action(self, req, account_id, consumer=None, lease=None):
        self.authorize(req, policies.MOVE, account_id)
        dest = admin_http.query(req, ('dest',)).get('dest')
        action = self.accounts.move_action(account_id, dest, consumer, lease)
        return util.json_response(200, action.document,
                                  {'ETag': action.etag})

    def move(self, req, account_id, consumer=None, lease=None):
        self.authorize(req, policies.MOVE, account_id)
        self._no_body(req)
        dest = admin_http.query(req, ('dest',)).get('dest')
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
        services = services or services_mod.Services(conf)
        accounts = service.Accounts.from_services(services)
    if enforcer is None:
        enforcer = policies.enforcer(conf)
    group = conf.admin_api
    keystone = group.auth_strategy == 'keystone'
    app = AdminAPI(accounts, enforcer, group.max_request_body_size,
                   trust_roles_header=keystone,
                   noauth_roles=group.noauth_roles)
    if keystone:
        util.check_keystone_authtoken(conf)
        app = auth_token.AuthProtocol(app, {'oslo_config_config': conf})
    # The ledger is what every admin call needs (Placement only moves).
    public = {'/healthcheck': pq_healthcheck.make_app(
        conf, services or pq_healthcheck.Backends(
            ledger=getattr(accounts, 'ledger', None)))}
    hosts = (group.allowed_hosts or
             admin_guard.default_allowed_hosts(group.bind_host))
    guard = admin_guard.RequestGuard(
        _Public(public, app), hosts, group.allowed_origins,
        unchecked=tuple(public))
    return api_app.behind_proxy(
        conf, api_app.RequestId(api_app.FaultBarrier(guard)))


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
                admin_http.raw_path(environ) in self.DOCUMENTS:
            req = webob.Request(environ)
            return AdminAPI.versions(req)(environ, start_response)
        return self.app(environ, start_response)
