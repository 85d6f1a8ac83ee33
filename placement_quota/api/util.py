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
"""Small helpers shared by our WSGI apps: JSON responses and bodies, and
the check of the Keystone options."""

import json
import math
import socket

import webob

JSON = 'application/json'


class HTTPError(Exception):
    """An error answer: status and a JSON body with at least ``message``."""

    def __init__(self, status, message, headers=None, **extra):
        super().__init__(message)
        self.status = status
        self.body = dict(extra, message=message)
        self.headers = headers or {}

    def response(self):
        return json_response(self.status, self.body, self.headers)


def dumps(document):
    """Strict JSON (RFC 8259) of ``document``: a float that is not finite
    (which ``json.dumps`` would write as the non-JSON ``NaN``, ``Infinity``
    or ``-Infinity``) is written as that word, in a string."""
    try:
        return json.dumps(document, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(document), allow_nan=False)


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return 'NaN' if math.isnan(value) else (
            'Infinity' if value > 0 else '-Infinity')
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def json_response(status, body=None, headers=None):
    response = webob.Response(status=status, headerlist=[])
    if body is not None:
        response.content_type = JSON
        response.charset = 'utf-8'
        response.body = dumps(body).encode('utf-8')
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


class _NoContent:
    """A bare 204: the answer to most enforcement calls, so kept light."""

    status_int = 204

    def __call__(self, environ, start_response):
        start_response('204 No Content', [('Content-Length', '0')])
        return []


_NO_CONTENT = _NoContent()


def no_content():
    return _NO_CONTENT


def read_json_body(req, limit):
    """The request body as bytes, refusing wrong types and oversize ones."""
    content_type = req.content_type
    if content_type and content_type != JSON:
        raise HTTPError(415, 'Content-Type must be %s, not %s'
                        % (JSON, content_type), field='Content-Type',
                        value=content_type)
    length = req.content_length
    if length is not None:
        if length < 0:
            raise HTTPError(400, 'Content-Length must not be negative',
                            field='Content-Length', value=length)
        if length > limit:
            raise _too_large(length, limit)
        body = _read(req, length) if length else b''
        if len(body) < length:
            raise HTTPError(400, 'The request body ended after %d of the %d '
                            'bytes its Content-Length announced'
                            % (len(body), length), field='Content-Length',
                            value=length)
        return body
    if req.environ.get('HTTP_TRANSFER_ENCODING', '').lower() != 'chunked':
        return b''
    body = _read(req, limit + 1)
    if len(body) > limit:
        raise _too_large(None, limit)
    return body


def _read(req, size):
    """Read the body; a client that stalls past the server's request read
    deadline gets 408, one that drops or sends garbage 400."""
    try:
        return req.body_file_raw.read(size)
    except socket.timeout:
        raise HTTPError(408, 'The request body did not arrive in time (the '
                        'server\'s request_read_timeout)', field='body')
    except (OSError, ValueError) as exc:
        raise HTTPError(400, 'The request body could not be read: %s'
                        % (exc or type(exc).__name__), field='body')


def _too_large(length, limit):
    size = 'more than %d' % limit if length is None else str(length)
    return HTTPError(413, 'Request body of %s bytes exceeds the limit of %d '
                     'bytes ([api] max_request_body_size)' % (size, limit),
                     field='body', value=length)


def check_keystone_authtoken(conf):
    """Refuse to start with auth_strategy = keystone but no Keystone: every
    request would fail later."""
    group = conf.keystone_authtoken
    missing = [name for name in ('www_authenticate_uri', 'auth_type')
               if not getattr(group, name, None)]
    if missing:
        raise ValueError(
            '[api] auth_strategy is keystone but [keystone_authtoken] %s %s '
            'not set' % (' and '.join(missing),
                         'is' if len(missing) == 1 else 'are'))


#: The roles each of Keystone's default roles implies.
IMPLIED_ROLES = {'admin': ('member', 'reader'), 'member': ('reader',)}


def noauth_ceiling(roles):
    """The roles an ``X-Roles`` header may name under noauth when the API
    grants ``roles``: those and the roles they imply (lower case)."""
    ceiling = set()
    for role in roles:
        role = role.lower()
        ceiling.add(role)
        ceiling.update(IMPLIED_ROLES.get(role, ()))
    return frozenset(ceiling)
