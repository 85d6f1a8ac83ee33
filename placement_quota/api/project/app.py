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
"""The self-service project API, mounted in the enforcement service.

``placement-quota serve`` (:func:`placement_quota.api.enforcement.app.
make_app`) sends every path under ``/v1/projects/`` here::

    GET   /v1/projects/{project_id}/limits[?user_id=][&days=]
    POST  /v1/projects/{project_id}/quote
    GET   /v1/projects/{project_id}/leases
    GET   /v1/projects/{project_id}/leases/{lease_id}/extension
    GET   /v1/projects/{project_id}/usage[?days=]

The callers are a project's users, not a service: with ``[api]
auth_strategy = keystone`` keystonemiddleware validates their tokens
(no service-role check), and the oslo.policy rules of
:mod:`placement_quota.api.project.access` decide on the token's roles and
project. Under noauth the credentials are the ``X-Project-Id``,
``X-User-Id`` and ``X-Roles`` headers, roles capped by ``[api]
noauth_roles`` as the admin API caps them.

The handlers are thin: parse the raw path (``%2F`` stays inside its
segment), check the policy, call :class:`~placement_quota.selfservice.
service.SelfService`, serialize. Errors are JSON: 400 names the field
and value, 403 the rule, 405 carries ``Allow``; the facade's errors
become their classes' ``http_status``
(:func:`placement_quota.errors.status_of`).
"""

from keystonemiddleware import auth_token
from oslo_context import context as oslo_context
from oslo_log import log as logging
from oslo_policy import policy as oslo_policy
import webob

from placement_quota.api.admin import http as admin_http
from placement_quota.api.project import access
from placement_quota.api import util
from placement_quota import errors as pq_errors
from placement_quota.filters import chain as chain_mod
from placement_quota.lease import model as lease_model
from placement_quota.selfservice import service

LOG = logging.getLogger(__name__)

#: Every path under it is this API's.
PREFIX = '/v1/projects/'

#: Route templates: the segments after ``/v1/projects/{project_id}/``
#: (``*``: the lease ID), by method the handler's name and its rule.
ROUTES = {
    ('limits',): {'GET': ('limits', access.SHOW)},
    ('quote',): {'POST': ('quote', access.QUOTE)},
    ('leases',): {'GET': ('leases', access.LEASES)},
    ('leases', '*', 'extension'): {'GET': ('extension', access.EXTENSION)},
    ('usage',): {'GET': ('usage', access.USAGE)},
}


def _template(rest):
    """The key of :data:`ROUTES` matching the segments ``rest``, or
    None."""
    for key in ROUTES:
        if len(key) == len(rest) and all(
                k == '*' or k == r for k, r in zip(key, rest)):
            return key
    return None


def route_label(path):
    """The route a path is, for the request metrics
    (``/v1/projects/{project_id}/limits``...), or None when it is none of
    this API's."""
    if not path.startswith(PREFIX):
        return None
    rest = path[len(PREFIX):].rstrip('/').split('/')[1:]
    key = _template(rest)
    if key is None:
        return None
    return PREFIX + '{project_id}/' + '/'.join(
        '{lease_id}' if k == '*' else k for k in key)


class ProjectAPI:
    """The router and handlers of the project API."""

    def __init__(self, selfservice, enforcer, max_body_size=1048576,
                 trust_roles_header=False, noauth_roles=('admin',)):
        self.selfservice = selfservice
        self.enforcer = enforcer
        self.max_body_size = max_body_size
        self.trust_roles_header = trust_roles_header
        self.noauth_roles = [r.strip() for r in noauth_roles if r.strip()]
        self._noauth_ceiling = util.noauth_ceiling(self.noauth_roles)

    def __call__(self, environ, start_response):
        req = webob.Request(environ)
        try:
            response = self._dispatch(req)
        except util.HTTPError as exc:
            response = exc.response()
        except lease_model.PayloadError as exc:
            response = util.HTTPError(pq_errors.status_of(exc), str(exc),
                                      **_extra(exc)).response()
        except service.NotFound as exc:
            response = util.HTTPError(pq_errors.status_of(exc), str(exc),
                                      field=exc.field,
                                      value=exc.value).response()
        except service.Conflict as exc:
            response = util.HTTPError(pq_errors.status_of(exc),
                                      str(exc)).response()
        except chain_mod.FilterError as exc:
            response = util.HTTPError(
                pq_errors.status_of(exc), 'Enforcement filter %s failed; '
                'the service log has the details (request %s).'
                % (exc.filter_name, _request_id(req)),
                filter=exc.filter_name).response()
        except pq_errors.DependencyUnavailable as exc:
            LOG.error('%s %s: the %s did not answer: %s', req.method,
                      environ.get('PATH_INFO'), exc.service, exc)
            response = util.HTTPError(
                pq_errors.status_of(exc),
                pq_errors.outage(exc) or str(exc)).response()
        LOG.debug('%s %s %s', req.method, environ.get('PATH_INFO'),
                  response.status_int)
        return response(environ, start_response)

    # --- routing ----------------------------------------------------------

    def _dispatch(self, req):
        raw = admin_http.raw_path(req.environ)
        if not raw.startswith(PREFIX):
            raise util.HTTPError(404, 'No such resource: %s' % raw)
        parts = raw[len(PREFIX):].split('/')
        if parts[-1] == '' and len(parts) > 1:
            parts = parts[:-1]
        if parts == ['']:
            raise util.HTTPError(404, 'No such resource: %s; the project '
                                 'API is under /v1/projects/{project_id}/'
                                 % raw)
        project_id = admin_http.segment(parts[0], 'project_id')
        rest = parts[1:]
        key = _template(rest)
        if key is None:
            raise util.HTTPError(404, 'No such resource: %s' % raw)
        methods = ROUTES[key]
        if req.method not in methods:
            allow = ', '.join(sorted(methods))
            raise util.HTTPError(405, 'Method %s is not allowed on %s; use '
                                 '%s' % (req.method, raw, allow),
                                 headers={'Allow': allow})
        lease_id = None
        if '*' in key:
            lease_id = admin_http.segment(rest[key.index('*')], 'lease_id')
        name, rule = methods[req.method]
        credentials = self.credentials(req.environ)
        self.authorize(req, rule, credentials, project_id)
        handler = getattr(self, name)
        if lease_id is None:
            return handler(req, credentials, project_id)
        return handler(req, credentials, project_id, lease_id)

    # --- policy -----------------------------------------------------------

    def credentials(self, environ):
        """The policy credentials of a request, from the headers
        keystonemiddleware sets (oslo.context). Under noauth
        (``trust_roles_header`` False) a request without ``X-Roles`` has
        the roles of ``noauth_roles``, and ``X-Roles`` only lowers them,
        as in the admin API; the roles they imply are added, as Keystone
        adds them to a token (member: reader too)."""
        context = oslo_context.RequestContext.from_environ(
            environ, overwrite=False)
        roles = [r for r in context.roles if r]
        if not self.trust_roles_header:
            if 'HTTP_X_ROLES' not in environ:
                roles = list(self.noauth_roles)
            else:
                roles = [r for r in roles
                         if r.lower() in self._noauth_ceiling]
            # What Keystone puts in a token: the roles implied too.
            roles = sorted(util.noauth_ceiling(roles))
        context.roles = roles
        return context.to_policy_values()

    def authorize(self, req, rule, credentials, project_id, **target):
        """403 naming ``rule`` unless it allows ``credentials`` on the
        project ``project_id`` (and the rest of ``target``)."""
        target = dict(target, project_id=project_id)
        try:
            allowed = self.enforcer.enforce(rule, target, credentials)
        except (oslo_policy.PolicyNotRegistered, oslo_policy.InvalidScope):
            allowed = False
        if not allowed:
            LOG.warning('Policy %s refused %s %s to user %s of project %s '
                        '(roles %s)', rule, req.method,
                        req.environ.get('PATH_INFO'),
                        credentials['user_id'], credentials['project_id'],
                        credentials['roles'])
            raise util.HTTPError(403, 'Policy does not allow %s' % rule,
                                 rule=rule)

    # --- handlers ---------------------------------------------------------

    def limits(self, req, credentials, project_id):
        found = admin_http.query(req, ('user_id', 'days'))
        user_id = credentials['user_id']
        if 'user_id' in found:
            asked = admin_http.identifier(found['user_id'], 'user_id')
            if asked != user_id:
                self.authorize(req, access.OTHER_USER, credentials,
                               project_id, user_id=asked)
            user_id = asked
        return util.json_response(200, self.selfservice.view(
            project_id, user_id, days=_days(found)))

    def quote(self, req, credentials, project_id):
        admin_http.query(req, ())
        raw = util.read_json_body(req, self.max_body_size)
        if not raw.strip():
            raise util.HTTPError(400, 'The body must be a lease, as '
                                 'Blazar\'s POST /v1/leases takes',
                                 field='body')
        body = admin_http.loads(raw)
        context = lease_model.Context(project_id=project_id,
                                      user_id=credentials['user_id'])
        return util.json_response(200, self.selfservice.quote(context, body))

    def extension(self, req, credentials, project_id, lease_id):
        admin_http.query(req, ())
        context = lease_model.Context(project_id=project_id,
                                      user_id=credentials['user_id'])
        return util.json_response(200, self.selfservice.extension(
            context, lease_id))

    def leases(self, req, credentials, project_id):
        admin_http.query(req, ())
        return util.json_response(200, self.selfservice.leases(project_id))

    def usage(self, req, credentials, project_id):
        found = admin_http.query(req, ('days',))
        return util.json_response(200, self.selfservice.usage(
            project_id, days=_days(found)))


def _days(found):
    """The ``days`` query parameter as given (the facade checks it), or
    None for the configured default; given empty, a 400."""
    days = found.get('days')
    if days is not None and not days.strip():
        raise util.HTTPError(400, 'Query parameter days must be a whole '
                             'number of days', field='days', value=days)
    return days


def _extra(exc):
    extra = exc.to_dict()
    extra.pop('message')
    return extra


def _request_id(req):
    return req.environ.get('openstack.request_id', 'unknown')


def make_project_app(conf, chain, selfservice=None, enforcer=None):
    """The project API WSGI app of ``conf`` on the filters of ``chain``
    (the enforcement service's), behind keystonemiddleware when ``[api]
    auth_strategy = keystone``."""
    if selfservice is None:
        selfservice = service.SelfService(chain)
    if enforcer is None:
        enforcer = access.enforcer(conf)
    keystone = conf.api.auth_strategy == 'keystone'
    app = ProjectAPI(selfservice, enforcer, conf.api.max_request_body_size,
                     trust_roles_header=keystone,
                     noauth_roles=conf.api.noauth_roles)
    if keystone:
        util.check_keystone_authtoken(conf)
        app = auth_token.AuthProtocol(app, {'oslo_config_config': conf})
    return app
