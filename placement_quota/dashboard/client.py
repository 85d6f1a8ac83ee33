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
"""The self-service project API, called with the Horizon user's token.

Every call goes through a keystoneauth session whose auth plugin is the
user's token (from openstack_auth) and the API's endpoint: the
``reservation-quota`` endpoint of the user's catalog in the user's
region, or the ``PLACEMENT_QUOTA_API_URL`` setting when it is set (a
deployment whose catalog does not list the service). An endpoint may
be registered with or without its ``/v1``.

Settings read: ``PLACEMENT_QUOTA_API_URL``, ``PLACEMENT_QUOTA_API_TIMEOUT``
(seconds, default 30), and Horizon's ``OPENSTACK_SSL_NO_VERIFY`` and
``OPENSTACK_SSL_CACERT``.
"""

from urllib import parse

from django.conf import settings
from django.utils.translation import gettext as _
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from openstack_dashboard.api import base

SERVICE_TYPE = 'reservation-quota'
DEFAULT_TIMEOUT = 30


class ApiError(Exception):
    """The API refused or could not answer: :attr:`status` (None when no
    answer came), the message to show, and for a 400 the :attr:`field` of
    the lease it names (and its :attr:`value`)."""

    def __init__(self, message, status=None, field=None, value=None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.field = field
        self.value = value


def configured_endpoint():
    """The ``PLACEMENT_QUOTA_API_URL`` setting, or None."""
    return getattr(settings, 'PLACEMENT_QUOTA_API_URL', None) or None


def endpoint(request):
    """The API's root URL, ending in ``/v1``, for this user."""
    url = configured_endpoint()
    if not url:
        try:
            url = base.url_for(request, SERVICE_TYPE)
        except Exception:
            raise ApiError(_('The service catalog has no %s endpoint for '
                             'this region.') % SERVICE_TYPE)
    url = url.rstrip('/')
    if not url.endswith('/v1'):
        url += '/v1'
    return url


def _session(request, url):
    verify = not getattr(settings, 'OPENSTACK_SSL_NO_VERIFY', False)
    if verify and getattr(settings, 'OPENSTACK_SSL_CACERT', None):
        verify = settings.OPENSTACK_SSL_CACERT
    auth = token_endpoint.Token(url, request.user.token.id)
    return ks_session.Session(
        auth=auth, verify=verify,
        timeout=getattr(settings, 'PLACEMENT_QUOTA_API_TIMEOUT',
                        DEFAULT_TIMEOUT))


def _call(request, method, path, **kwargs):
    url = endpoint(request)
    sess = _session(request, url)
    try:
        response = sess.request(url + path, method, raise_exc=False,
                                **kwargs)
    except ks_exceptions.ConnectionError:
        raise ApiError(_('The reservation quota service could not be '
                         'reached.'))
    except ks_exceptions.ClientException as exc:
        raise ApiError(_('The reservation quota service did not answer: '
                         '%s') % exc)
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code >= 400:
        message = body.get('message') if isinstance(body, dict) else None
        if not message:
            message = _('The reservation quota service answered %d.') % (
                response.status_code)
        raise ApiError(message, status=response.status_code,
                       field=body.get('field') if isinstance(body, dict)
                       else None,
                       value=body.get('value') if isinstance(body, dict)
                       else None)
    if not isinstance(body, dict):
        raise ApiError(_('The reservation quota service answered %d '
                         'without a JSON object.') % response.status_code,
                       status=response.status_code)
    return body


def _project_path(request, *parts):
    return '/projects/%s%s' % (
        parse.quote(request.user.project_id, safe=''),
        ''.join('/' + parse.quote(p, safe='') for p in parts))


def limits(request):
    """GET /v1/projects/{project}/limits of the user's project (the
    caller's own user limits)."""
    return _call(request, 'GET', _project_path(request, 'limits'))


def leases(request):
    """GET /v1/projects/{project}/leases."""
    return _call(request, 'GET', _project_path(request, 'leases'))


def usage(request, days=30):
    """GET /v1/projects/{project}/usage?days=N."""
    return _call(request, 'GET', _project_path(request, 'usage'),
                 params={'days': days})


def quote(request, lease):
    """POST /v1/projects/{project}/quote of ``lease`` (Blazar's lease
    body)."""
    return _call(request, 'POST', _project_path(request, 'quote'),
                 json=lease)
