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
"""The enforcement service as one WSGI application.

From the outside in: a fault barrier (no traceback ever reaches a client),
request IDs (``X-OpenStack-Request-Id``), ``/healthcheck``, then the
router. The version documents are public; the enforcement endpoints sit
behind keystonemiddleware and a service-role check when
``[api] auth_strategy = keystone``.
"""

import time

from keystonemiddleware import auth_token
from oslo_log import log as logging
from oslo_middleware import healthcheck
from oslo_middleware import request_id
import webob
import webob.dec

from placement_quota.api import enforcement
from placement_quota.api import util

LOG = logging.getLogger(__name__)

ENFORCEMENT_KINDS = ('check-create', 'check-update', 'on-end')


class Router:
    """Map ``(path)`` to a handler; 404 and 405 answered in JSON."""

    def __init__(self, routes):
        self.routes = routes

    @webob.dec.wsgify
    def __call__(self, req):
        methods = self.routes.get(req.path_info.rstrip('/') or '/')
        if methods is None:
            raise util.HTTPError(404, 'No such resource: %s' % req.path_info)
        handler = methods.get(req.method)
        if handler is None:
            allowed = ', '.join(sorted(methods))
            raise util.HTTPError(405, 'Method %s is not allowed on %s; use '
                                 '%s' % (req.method, req.path_info, allowed),
                                 headers={'Allow': allowed})
        return handler(req)


def enforcement_routes(chain, max_body_size):
    handler = enforcement.Enforcement(chain, max_body_size)
    routes = {}
    for kind in ENFORCEMENT_KINDS:
        def post(req, kind=kind):
            return handler(req, kind)
        routes['/v1/' + kind] = routes['/' + kind] = {'POST': post}
    return routes


def public_routes():
    return {'/': {'GET': enforcement.versions},
            '/v1': {'GET': enforcement.version_v1}}


class ServiceRoleCheck:
    """After auth_token: the token must carry one of ``service_roles``."""

    def __init__(self, app, roles):
        self.app = app
        self.roles = frozenset(r.lower() for r in roles)

    @webob.dec.wsgify
    def __call__(self, req):
        roles = {r.strip().lower()
                 for r in req.headers.get('X-Roles', '').split(',')}
        if not roles & self.roles:
            LOG.warning('Refused a request from user %s: token roles %s '
                        'include none of %s', req.headers.get('X-User-Id'),
                        sorted(r for r in roles if r), sorted(self.roles))
            raise util.HTTPError(
                403, 'The token does not carry a role that may call the '
                'enforcement service (needs one of: %s).'
                % ', '.join(sorted(self.roles)))
        return req.get_response(self.app)


class Dispatcher:
    """Send some paths to their own apps, everything else to ``default``.

    The public documents and ``/healthcheck`` go around authentication.
    """

    def __init__(self, apps, default):
        self.apps = apps
        self.default = default

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO', '').rstrip('/') or '/'
        app = self.apps.get(path, self.default)
        return app(environ, start_response)


class FaultBarrier:
    """Turn HTTPError into JSON, and anything unexpected into a JSON 500."""

    def __init__(self, app):
        self.app = app

    @webob.dec.wsgify
    def __call__(self, req):
        started = time.monotonic()
        try:
            response = req.get_response(self.app)
        except util.HTTPError as exc:
            response = exc.response()
        except Exception:
            rid = req.environ.get('openstack.request_id', 'unknown')
            LOG.exception('Unexpected error handling %s %s (request %s)',
                          req.method, req.path_info, rid)
            response = util.json_response(500, {
                'message': 'Internal error; the service log has the '
                           'details (request %s).' % rid})
        LOG.info('%s %s %s %.1fms', req.method, req.path_info,
                 response.status_int, (time.monotonic() - started) * 1000)
        return response


class _HTTPErrors:
    """Render HTTPError raised inside a wsgify app below auth middleware."""

    def __init__(self, app):
        self.app = app

    @webob.dec.wsgify
    def __call__(self, req):
        try:
            return req.get_response(self.app)
        except util.HTTPError as exc:
            return exc.response()


def make_app(conf, chain):
    """The enforcement service WSGI app for ``conf``, running ``chain``."""
    public = _HTTPErrors(Router(public_routes()))
    protected = _HTTPErrors(Router(enforcement_routes(
        chain, conf.api.max_request_body_size)))
    if conf.api.auth_strategy == 'keystone':
        protected = auth_token.AuthProtocol(
            ServiceRoleCheck(protected, conf.api.service_roles),
            {'oslo_config_config': conf})
    apps = dict.fromkeys(public_routes(), public)
    apps['/healthcheck'] = healthcheck.Healthcheck(None, {'backends': ''})
    app = request_id.RequestId(Dispatcher(apps, protected))
    return FaultBarrier(app)
