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

From the outside in: oslo.middleware's ``http_proxy_to_wsgi`` when
``[oslo_middleware] enable_proxy_headers_parsing`` is on, request IDs
(``X-OpenStack-Request-Id``, on every answer, errors included), a fault
barrier (no traceback ever reaches a client), ``/healthcheck``
(oslo.middleware's, checking the ledger and Placement:
:mod:`placement_quota.api.healthcheck`) and ``/metrics`` (Prometheus:
:mod:`placement_quota.metrics`), then the routers. The version
documents are public; the enforcement endpoints sit behind
keystonemiddleware and a service-role check when ``[api] auth_strategy =
keystone``. The paths under ``/v1/projects/`` are the self-service
project API (:mod:`placement_quota.api.project`), for a project's users:
behind keystonemiddleware of its own, without the service-role check, its
policy rules decide.
"""

import random
import re
import time
import uuid

from keystonemiddleware import auth_token
from oslo_log import log as logging
from oslo_middleware import http_proxy_to_wsgi
import webob

from placement_quota.api.enforcement import handler as enforcement
from placement_quota.api.project import app as project_api
from placement_quota.api import util
from placement_quota.conf import api as api_conf
from placement_quota.api import healthcheck as pq_healthcheck
from placement_quota import metrics

LOG = logging.getLogger(__name__)

ENFORCEMENT_KINDS = ('check-create', 'check-update', 'on-end')

# The layers below are plain WSGI callables: one webob Request and one
# Response per call, built by the router. Each extra webob layer costs
# more than validating a lease (tools/bench/enforcement.py).


class Router:
    """Map a path to its handlers by method; 404 and 405 in JSON.

    A handler takes a webob Request and returns a Response, or raises
    :class:`~placement_quota.api.util.HTTPError`.
    """

    def __init__(self, routes):
        self.routes = routes

    def __call__(self, environ, start_response):
        started = time.monotonic()
        req = webob.Request(environ)
        try:
            response = self._dispatch(req)
        except util.HTTPError as exc:
            response = exc.response()
        LOG.debug('%s %s %s %.1fms', req.method, environ.get('PATH_INFO'),
                  response.status_int, (time.monotonic() - started) * 1000)
        return response(environ, start_response)

    def _dispatch(self, req):
        # PATH_INFO as the server gave it (latin-1): webob's path_info
        # raises on a path that is not UTF-8.
        path = req.environ.get('PATH_INFO', '')
        methods = self.routes.get(path.rstrip('/') or '/')
        if methods is None:
            raise util.HTTPError(404, 'No such resource: %s' % path)
        handler = methods.get(req.method)
        if handler is None:
            allowed = ', '.join(sorted(methods))
            raise util.HTTPError(405, 'Method %s is not allowed on %s; use '
                                 '%s' % (req.method, path, allowed),
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

    def __call__(self, environ, start_response):
        roles = {r.strip().lower()
                 for r in environ.get('HTTP_X_ROLES', '').split(',')}
        if roles & self.roles:
            return self.app(environ, start_response)
        LOG.warning('Refused a request from user %s: token roles %s include '
                    'none of %s', environ.get('HTTP_X_USER_ID'),
                    sorted(r for r in roles if r), sorted(self.roles))
        error = util.HTTPError(
            403, 'The token does not carry a role that may call the '
            'enforcement service (needs one of: %s).'
            % ', '.join(sorted(self.roles)))
        return error.response()(environ, start_response)


class Dispatcher:
    """Send some paths to their own apps, the paths under a prefix of
    ``prefixes`` to its app, everything else to ``default``.

    The public documents and ``/healthcheck`` go around authentication.
    """

    def __init__(self, apps, default, prefixes=None):
        self.apps = apps
        self.default = default
        self.prefixes = tuple((prefixes or {}).items())

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO', '').rstrip('/') or '/'
        app = self.apps.get(path)
        if app is None:
            app = self.default
            for prefix, prefixed in self.prefixes:
                if path == prefix or path.startswith(prefix + '/'):
                    app = prefixed
                    break
        return app(environ, start_response)


def new_request_id():
    """``req-`` and a random (version 4) UUID, as oslo.context makes
    them, drawn from the random module's generator rather than
    ``os.urandom``: a request id must be unique, not secret, and
    ``uuid.uuid4()`` is a system call each time -- about 10 us of the
    service's CPU a request on a busy server (measured with
    tools/bench/enforcement.py), against 1 us. The module's generator is
    seeded from ``os.urandom`` and seeded again in each forked process
    (``serve --workers``), so workers do not repeat each other's ids."""
    return 'req-' + str(uuid.UUID(int=random.getrandbits(128), version=4))


_GLOBAL_REQUEST_ID = re.compile(r'^req-[a-f0-9]{8}(-[a-f0-9]{4}){3}'
                                r'-[a-f0-9]{12}$')


class RequestId:
    """``X-OpenStack-Request-Id`` on every answer, as oslo.middleware's
    RequestId does: ``openstack.request_id`` in the environ, and a valid
    incoming id kept as ``openstack.global_request_id``."""

    HEADER = 'X-OpenStack-Request-Id'

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        request_id = new_request_id()
        environ['openstack.request_id'] = request_id
        incoming = environ.get('HTTP_X_OPENSTACK_REQUEST_ID')
        if incoming and _GLOBAL_REQUEST_ID.match(incoming):
            environ['openstack.global_request_id'] = incoming

        def start(status, headers, exc_info=None):
            headers.append((self.HEADER, request_id))
            return start_response(status, headers, exc_info)

        return self.app(environ, start)


class FaultBarrier:
    """Anything unexpected becomes a JSON 500; no traceback leaves."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        try:
            return self.app(environ, start_response)
        except Exception:
            request_id = environ.get('openstack.request_id', 'unknown')
            LOG.exception('Unexpected error handling %s %s (request %s)',
                          environ.get('REQUEST_METHOD'),
                          environ.get('PATH_INFO'), request_id)
            response = util.json_response(500, {
                'message': 'Internal error; the service log has the '
                           'details (request %s).' % request_id})
            return response(environ, start_response)


def make_app(conf, chain):
    """The enforcement service WSGI app for ``conf``, running ``chain``."""
    documents = public_routes()
    public = Router(documents)
    protected = Router(enforcement_routes(chain,
                                          conf.api.max_request_body_size))
    if conf.api.auth_strategy == 'keystone':
        protected = auth_token.AuthProtocol(
            ServiceRoleCheck(protected, conf.api.service_roles),
            {'oslo_config_config': conf})
        util.check_keystone_authtoken(conf)
    apps = dict.fromkeys(documents, public)
    apps['/healthcheck'] = pq_healthcheck.for_chain(conf, chain)
    projects = project_api.make_project_app(conf, chain)
    dispatcher = Dispatcher(apps, protected,
                            {project_api.PREFIX.rstrip('/'): projects})
    if conf.api.metrics:
        apps['/metrics'] = metrics.metrics_app
        dispatcher = metrics.RequestMetrics(
            dispatcher, list(apps) + list(enforcement_routes(chain, 0)),
            route_of=project_api.route_label)
    return behind_proxy(conf, RequestId(FaultBarrier(dispatcher)))


def behind_proxy(conf, app):
    """``app`` behind oslo.middleware's ``http_proxy_to_wsgi`` when
    ``[oslo_middleware] enable_proxy_headers_parsing`` is on: the scheme,
    host and path prefix a TLS proxy forwards (``Forwarded``,
    ``X-Forwarded-Proto``...) become the request's, so the links the
    service writes are the proxy's. Off, nothing is added to each
    request."""
    api_conf.register_middleware_opts(conf)
    if not conf.oslo_middleware.enable_proxy_headers_parsing:
        return app
    return http_proxy_to_wsgi.HTTPProxyToWSGI(app, conf)
