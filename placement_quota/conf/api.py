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
"""``[api]``: the enforcement service's HTTP endpoint."""

from oslo_config import cfg
from oslo_middleware.healthcheck import opts as healthcheck_opts
from oslo_middleware import http_proxy_to_wsgi

from placement_quota.conf import _util

GROUP = cfg.OptGroup('api', title='Enforcement service API',
                     help='How the enforcement service listens and who may '
                          'call it.')

opts = [
    cfg.StrOpt(
        'auth_strategy', default='noauth', choices=[
            ('noauth', 'No authentication: for the embedded default and '
                       'for a service reachable only by blazar-manager. '
                       'Callers of the project API have the roles of '
                       'noauth_roles.'),
            ('keystone', 'keystonemiddleware auth_token validates the '
                         'X-Auth-Token of each request (configure '
                         '[keystone_authtoken]); on the enforcement '
                         'endpoints the token must carry one of '
                         'service_roles, on the project API '
                         '(/v1/projects/...) the policy rules decide.')],
        help='How callers of the enforcement API are authenticated.'),
    cfg.ListOpt(
        'service_roles', default=['service'],
        help='With auth_strategy = keystone, a token must carry at least one '
             'of these roles (the role of the blazar service user); '
             'otherwise the request is refused with 403.'),
    cfg.ListOpt(
        'noauth_roles', default=['admin'],
        help='With auth_strategy = noauth: the roles of a caller of the '
             'project API (/v1/projects/...), whose project and user are '
             'its X-Project-Id and X-User-Id headers; the policy rules then '
             'check them. An X-Roles header can lower them, never raise '
             'them: a role it names counts only when these roles grant it '
             'or a role implying it (admin implies member, member implies '
             'reader). The enforcement endpoints ignore it.'),
    cfg.HostAddressOpt(
        'bind_host', default='127.0.0.1',
        help='Address ``placement-quota serve`` listens on.'),
    cfg.PortOpt(
        'bind_port', default=8790,
        help='Port ``placement-quota serve`` listens on.'),
    cfg.IntOpt(
        'threads', default=16, min=1, max=1024,
        help='Worker threads of the WSGI server: requests handled at once.'),
    cfg.IntOpt(
        'workers', default=1, min=1, max=256,
        help='Processes of "placement-quota serve", each with its threads, '
             'sharing the port (SO_REUSEPORT; Linux). Above 1 they need a '
             'Placement in [placement] (the embedded one serves one '
             'process). For Prometheus metrics over all of them, set '
             'PROMETHEUS_MULTIPROC_DIR (see the metrics guide). Under '
             'uWSGI, use its processes instead.'),
    cfg.IntOpt(
        'client_socket_timeout', default=10, min=1,
        help='Seconds an idle keep-alive connection is kept open, and the '
             'longest wait for any one read or write of a client '
             'connection.'),
    cfg.IntOpt(
        'request_read_timeout', default=10, min=1,
        help='Seconds within which a request (its line, headers and body) '
             'must have arrived, counted from its first byte (from the '
             'accept for a new connection); a request still incomplete '
             'then is answered 408 and its connection closed. Request '
             'heads, and bodies of up to 64 KiB, are read before the '
             'request takes a thread, so clients sending slowly hold no '
             'thread; a larger or chunked body holds one for at most this '
             'long. Behind untrusted networks still put a front server '
             '(httpd, nginx) before the service.'),
    cfg.IntOpt(
        'request_queue_size', default=128, min=1,
        help='The listen backlog, and how many complete requests may wait '
             'for a free thread; beyond it a request is answered 503 at '
             'once instead of waiting.'),
    cfg.BoolOpt(
        'metrics', default=True,
        help='Serve GET /metrics (Prometheus text format, no token '
             'needed): decisions by filter and outcome, request latency, '
             'Placement and Nova calls, ledger admissions and lock waits. '
             'With several worker processes set PROMETHEUS_MULTIPROC_DIR '
             '(see the metrics guide). Off: /metrics is a 404.'),
    cfg.IntOpt(
        'max_request_body_size', default=1048576, min=1024,
        help='Largest request body accepted, in bytes; a larger one is '
             'refused with 413. A lease of 1,000 hosts is about 200 KiB.'),
]


def register_opts(conf):
    _util.register(conf, GROUP, opts)
    register_middleware_opts(conf)


def register_middleware_opts(conf):
    """oslo.middleware's options our WSGI apps use: ``[healthcheck]``
    (the health check and its ``disable_by_file`` backend) and
    ``[oslo_middleware] enable_proxy_headers_parsing`` (behind a TLS
    proxy)."""
    conf.register_opts(healthcheck_opts.HEALTHCHECK_OPTS +
                       healthcheck_opts.DISABLE_BY_FILE_OPTS,
                       group='healthcheck')
    conf.register_opts(http_proxy_to_wsgi.OPTS, group='oslo_middleware')


def list_opts():
    return {GROUP: opts}
