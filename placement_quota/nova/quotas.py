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
"""Nova's legacy quota sets, read from the Nova API.

One ``GET /os-quota-sets/{project_id}/detail`` per decision gives every
quota's ``limit``, ``in_use`` and ``reserved``; -1 is unlimited. Nova is
not imported: this runs in the enforcement service, which does not need
Nova installed.
"""

from urllib import parse

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
from oslo_log import log as logging

from placement_quota.conf import _util
from placement_quota.conf import nova as nova_conf
from placement_quota import errors as pq_errors
from placement_quota import metrics
from placement_quota import sessions

LOG = logging.getLogger(__name__)


class QuotaSourceError(pq_errors.DependencyError):
    """Nova's quota sets cannot be read; says which project, where, why.

    ``project_id``, ``url`` (the request's, when known) and ``status``
    (Nova's HTTP status, None when Nova did not answer).
    """

    def __init__(self, message, project_id=None, url=None, status=None):
        super().__init__(message)
        self.project_id = project_id
        self.url = url
        self.status = status


class QuotaSourceUnavailable(QuotaSourceError,
                             pq_errors.DependencyUnavailable):
    """Nova did not answer, answered 5xx, or no token could be had from
    Keystone: an outage (503), not a refusal."""

    service = 'nova'


def source_error(message, cause=None, status=None, **details):
    """The QuotaSourceError of a failed Nova call:
    :class:`QuotaSourceUnavailable` when Nova answered 5xx (``status``)
    or did not answer (keystoneauth's ``cause``: see
    :func:`~placement_quota.sessions.is_outage`), else
    :class:`QuotaSourceError` (a refusal, a malformed answer)."""
    down = (status is not None and status >= 500) or (
        status is None and cause is not None and sessions.is_outage(cause))
    cls = QuotaSourceUnavailable if down else QuotaSourceError
    return cls(message, status=status, **details)


def parse_quota_set(body):
    """``{name: (limit, in_use + reserved)}`` of a ``GET
    /os-quota-sets/{id}/detail`` answer (-1 is unlimited); the ``id`` and
    any value that is not a ``{"limit": ...}`` are left out.

    :raises ValueError: ``body`` is not a detailed quota set.
    """
    try:
        quota_set = body['quota_set']
        found = {}
        for name, value in quota_set.items():
            if isinstance(value, dict) and 'limit' in value:
                found[name] = (int(value['limit']),
                               int(value.get('in_use') or 0) +
                               int(value.get('reserved') or 0))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError('not a detailed quota set (%s: %s)'
                         % (type(exc).__name__, exc))
    return found


def _within(seconds):
    if seconds is None:
        return 'in time'
    return 'within %g s ([nova] timeout)' % seconds


class LegacyQuotas:
    """``limits_and_usage(project_id)`` from Nova's quota sets."""

    def __init__(self, adapter, description):
        self.adapter = adapter
        self.description = description
        self.calls = 0

    @classmethod
    def from_conf(cls, conf):
        """From ``[nova]`` (keystoneauth auth, session, adapter)."""
        try:
            conf.nova
        except Exception:
            nova_conf.register_opts(conf)
        group = nova_conf.GROUP.name
        auth = ks_loading.load_auth_from_conf_options(conf, group)
        if auth is None and not conf.nova.endpoint_override:
            raise QuotaSourceError(
                'nova_quota_source = legacy needs the Nova API: set the '
                'keystoneauth options of [nova] (auth_type, auth_url, ...) '
                'or [nova] endpoint_override.')
        session = sessions.from_conf(conf, group, auth)
        adapter = ks_loading.load_adapter_from_conf_options(
            conf, group, session=session, auth=auth, raise_exc=False)
        return cls(adapter, conf.nova.endpoint_override or
                   'Nova of the service catalog (%s)'
                   % (conf.nova.region_name or 'any region'))

    @classmethod
    def from_endpoint(cls, url, headers=None, session=None,
                      timeout=_util.SESSION_TIMEOUT):
        """Straight to the compute endpoint ``url`` (``.../v2.1``), with
        ``headers`` on every request and no Keystone (tests, ``noauth2``).

        :param session: a ``requests.Session`` to send through (to count
            or inspect requests), else a new one.
        """
        sess = ks_session.Session(session=session, timeout=timeout,
                                  additional_headers=dict(headers or {}))
        adapter = ks_adapter.Adapter(sess, endpoint_override=url,
                                     raise_exc=False)
        return cls(adapter, url)

    @property
    def timeout(self):
        """Seconds one attempt waits for Nova (to connect, and for each
        read), or None: the session's ``timeout`` (``[nova] timeout``,
        10 s by default). keystoneauth makes one attempt unless ``[nova]
        connect_retries`` or ``status_code_retries`` are set, so a Nova
        that does not answer holds a decision this long."""
        return getattr(getattr(self.adapter, 'session', None), 'timeout',
                       None)

    def _url(self, path):
        endpoint = self.adapter.endpoint_override
        if endpoint:
            return endpoint.rstrip('/') + path
        return '%s of %s' % (path, self.description)

    def limits_and_usage(self, project_id):
        """``{quota name: (limit, in use + reserved)}`` of a project."""
        with metrics.timed_call(metrics.NOVA_SECONDS, 'quota_set'):
            return self._limits_and_usage(project_id)

    def _limits_and_usage(self, project_id):
        url = '/os-quota-sets/%s/detail' % parse.quote(project_id, safe='')
        self.calls += 1
        try:
            response = self.adapter.get(url,
                                        headers={'Accept':
                                                 'application/json'})
        except ks_exceptions.ConnectTimeout as exc:
            # A read timeout too (keystoneauth raises ConnectTimeout for
            # any requests Timeout).
            raise source_error(
                'Cannot read the Nova quotas of project %s: Nova did not '
                'answer GET %s %s: %s'
                % (project_id, self._url(url), _within(self.timeout), exc),
                exc, project_id=project_id, url=self._url(url)) from exc
        except ks_exceptions.ClientException as exc:
            raise source_error(
                'Cannot read the Nova quotas of project %s: GET %s '
                'failed: %s' % (project_id, self._url(url), exc),
                exc, project_id=project_id, url=self._url(url))
        if response.status_code != 200:
            raise source_error(
                'Cannot read the Nova quotas of project %s: GET %s '
                'answered %d: %s'
                % (project_id, response.url or self._url(url),
                   response.status_code, ' '.join(response.text.split())[
                       :300]),
                project_id=project_id, url=response.url or self._url(url),
                status=response.status_code)
        try:
            return parse_quota_set(response.json())
        except ValueError as exc:
            raise QuotaSourceError(
                'Cannot read the Nova quotas of project %s: the answer to '
                'GET %s is %s' % (project_id, response.url, exc),
                project_id=project_id, url=response.url,
                status=response.status_code)
