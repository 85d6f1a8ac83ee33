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
"""The account admin API's guard against what a web page could send.

:class:`RequestGuard` runs before authentication and refuses a ``Host`` the
API does not answer to (DNS rebinding), and on state-changing calls an
``Origin`` not allowed or a body that is not JSON (cross-site requests).
:func:`default_allowed_hosts` is ``[admin_api] allowed_hosts`` when empty.
"""

import ipaddress
import socket

from oslo_log import log as logging

from placement_quota.api import util

LOG = logging.getLogger(__name__)


def default_allowed_hosts(bind_host):
    """``[admin_api] allowed_hosts`` when empty: the bind host (unless it
    is every address), the names of loopback, and this host's name."""
    hosts = ['localhost', '127.0.0.1', '::1', socket.gethostname()]
    if bind_host and bind_host not in ('0.0.0.0', '::'):
        hosts.insert(0, bind_host)
    return hosts


def _split_host(text):
    """``(host, port or None)`` of a Host header or an allowed_hosts
    entry, host in lower case without a final dot; ValueError if it is no
    host."""
    text = text.strip().lower()
    if text.startswith('['):
        host, bracket, rest = text[1:].partition(']')
        if not bracket or (rest and not rest.startswith(':')):
            raise ValueError(text)
        port = rest[1:] or None
    elif text.count(':') > 1:         # a bare IPv6 address (configuration)
        host, port = text, None
    else:
        host, _, port = text.partition(':')
        port = port or None
    if port is not None and not port.isdigit():
        raise ValueError(text)
    host = host.rstrip('.')
    if not host or any(c in host for c in ' /\\@?#'):
        raise ValueError(text)
    return host, port


def _is_ip(host):
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class RequestGuard:
    """What a web page could send is refused before authentication.

    * ``Host`` must name this service (``[admin_api] allowed_hosts``): a
      page that points a name of its own at this host (DNS rebinding)
      sends that name. 400.
    * A state-changing call (``PUT``, ``POST``, ``DELETE``) carrying an
      ``Origin`` not in ``allowed_origins`` (browsers add it to cross-site
      requests) is refused with 403, and one with a body or a
      ``Content-Type`` other than ``application/json`` (what an HTML form
      or a simple cross-site request can send) with 415.
    """

    STATE_CHANGING = frozenset(('PUT', 'POST', 'DELETE', 'PATCH'))

    def __init__(self, app, allowed_hosts, allowed_origins=(),
                 unchecked=()):
        self.app = app
        self.any_host = '*' in allowed_hosts
        self.hosts = set()
        self.host_ports = set()
        for entry in allowed_hosts:
            if entry.strip() in ('', '*'):
                continue
            host, port = _split_host(entry)
            (self.hosts if port is None else self.host_ports).add(
                host if port is None else (host, port))
        self.origins = {o.strip().lower().rstrip('/')
                        for o in allowed_origins if o.strip()}
        self.unchecked = frozenset(unchecked)

    def __call__(self, environ, start_response):
        try:
            self.check(environ)
        except util.HTTPError as exc:
            LOG.warning('Refused %s %s from %s: %s',
                        environ.get('REQUEST_METHOD'),
                        environ.get('PATH_INFO'), environ.get('REMOTE_ADDR'),
                        exc)
            return exc.response()(environ, start_response)
        return self.app(environ, start_response)

    def check(self, environ):
        if environ.get('PATH_INFO', '').rstrip('/') in self.unchecked:
            return
        self.check_host(environ.get('HTTP_HOST'))
        if environ.get('REQUEST_METHOD') in self.STATE_CHANGING:
            self.check_origin(environ.get('HTTP_ORIGIN'))
            self.check_content_type(environ)

    def check_host(self, value):
        if value is None or self.any_host:
            return
        try:
            host, port = _split_host(value)
        except ValueError:
            raise util.HTTPError(400, 'The Host header %r is not a host'
                                 % value, field='Host', value=value)
        if host in self.hosts or (host, port) in self.host_ports or \
                _is_ip(host):
            return
        raise util.HTTPError(
            400, 'The Host header %r does not name this service; the admin '
            'API answers to %s ([admin_api] allowed_hosts) and to IP '
            'addresses' % (value, ', '.join(sorted(
                self.hosts | {'%s:%s' % hp for hp in self.host_ports}))),
            field='Host', value=value)

    def check_origin(self, origin):
        if origin is None or origin.strip().lower().rstrip('/') in \
                self.origins:
            return
        raise util.HTTPError(
            403, 'Origin %r may not change accounts: a state-changing call '
            'from a web page needs its origin in [admin_api] '
            'allowed_origins' % origin, field='Origin', value=origin)

    @staticmethod
    def check_content_type(environ):
        content_type = environ.get('CONTENT_TYPE', '')
        media_type = content_type.split(';', 1)[0].strip().lower()
        length = environ.get('CONTENT_LENGTH', '').strip()
        has_body = (length not in ('', '0') or
                    'HTTP_TRANSFER_ENCODING' in environ)
        if media_type == util.JSON or not (media_type or has_body):
            return
        raise util.HTTPError(
            415, 'A %s to the admin API takes a JSON body or none: '
            'Content-Type must be %s, not %s'
            % (environ.get('REQUEST_METHOD'), util.JSON,
               repr(content_type) if content_type else 'missing with a '
               'body'), field='Content-Type', value=content_type)
