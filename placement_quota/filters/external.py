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
"""ExternalServiceFilter: delegate each decision to an HTTP service.

Speaks the external service API of Blazar's "Flexible Reservation Usage
Enforcement" spec (``POST check-create``, ``check-update``, ``on-end``; 204
allows, 403 with ``{"message": ...}`` denies), and improves on upstream
Blazar's filter of the same name: connect and read timeouts, bounded retries on
connection errors and 5xx (never on a 403 or another 4xx, nor after a read
timeout, when the service may already have acted), ``allow_on_error``, and the
token of the service user from a keystoneauth session. Tokens and response
bodies never reach the logs above DEBUG, and the service's text reaches the
user only through a well-formed 403.
"""

import http.cookiejar
import json
from urllib import parse

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_log import log as logging
import requests
import requests.adapters
import tenacity

from placement_quota.conf import external as external_conf
from placement_quota.filters import base
from placement_quota import sessions

LOG = logging.getLogger(__name__)

GENERIC_DENY_MSG = 'External service enforcement filter denied the request.'
UNAVAILABLE_DENY_MSG = ('The reservation usage enforcement service is '
                        'unavailable; the request is denied. Try again '
                        'later or contact your cloud operator.')
KINDS = ('check-create', 'check-update', 'on-end')
_MAX_BACKOFF = 5.0
_POOL_SIZE = 32
_LOGGED_BODY = 512


class _Retryable(Exception):
    """A connection error or a 5xx: worth another try."""


class _Unavailable(Exception):
    """The service gave no usable answer; not retried."""


def _safe_url(url):
    """The URL without any user:password part, for logs."""
    parts = parse.urlsplit(url)
    if '@' not in parts.netloc:
        return url
    return parse.urlunsplit(parts._replace(
        netloc=parts.netloc.rpartition('@')[2]))


def _cause(exc):
    """The most telling exception class behind a requests error."""
    inner = exc.args[0] if exc.args else exc
    inner = getattr(inner, 'reason', inner)  # urllib3's MaxRetryError
    return type(inner).__name__


def _validate_url(url, option):
    parts = parse.urlsplit(url)
    if parts.scheme not in ('http', 'https') or not parts.netloc:
        raise ValueError('%s must be an http(s) URL with a host, not %r'
                         % (option, _safe_url(url)))
    return url


class ExternalServiceFilter(base.BaseFilter):
    """Ask an external HTTP service whether each lease may proceed."""

    # Upstream Blazar's options, under [enforcement], so that a blazar.conf
    # moves over; [enforcement_external] holds the options of Blazar's
    # "Flexible Reservation Usage Enforcement" spec.
    enforcement_opts = [
        cfg.StrOpt(
            'external_service_base_endpoint',
            help='Upstream Blazar\'s name for [enforcement_external] '
                 'endpoint_url, used when that is unset. Joined with '
                 'urljoin() as Blazar does: ``http://h/v1`` gives '
                 '``http://h/check-create``; ``http://h/v1/`` gives '
                 '``http://h/v1/check-create``.'),
        cfg.StrOpt(
            'external_service_check_create_endpoint',
            help='Full URL for check-create, overriding the base URL.'),
        cfg.StrOpt(
            'external_service_check_update_endpoint',
            help='Full URL for check-update, overriding the base URL.'),
        cfg.StrOpt(
            'external_service_on_end_endpoint',
            help='Full URL for on-end, overriding the base URL.'),
        cfg.StrOpt(
            'external_service_token', default='', secret=True,
            help='Upstream Blazar\'s name for [enforcement_external] token.'),
    ]

    def __init__(self, conf, services=None):
        super().__init__(conf, services)
        external_conf.register_opts(conf)
        self.options = conf.enforcement_external
        self.endpoints = self._endpoints()
        self._http = sessions.skip_environment(requests.Session())
        # One connection per concurrent request of our threaded server, and
        # no cookies carried from one project's request to another's.
        self._http.mount('http://', requests.adapters.HTTPAdapter(
            pool_maxsize=_POOL_SIZE))
        self._http.mount('https://', requests.adapters.HTTPAdapter(
            pool_maxsize=_POOL_SIZE))
        self._http.cookies.set_policy(http.cookiejar.DefaultCookiePolicy(
            allowed_domains=[]))
        self._tls = self._tls_options()
        self._keystone = self._keystone_session()
        self._static_token = (self.options.token or
                              conf.enforcement.external_service_token)
        if any(self.endpoints.values()):
            LOG.info('ExternalServiceFilter endpoints: %s', ', '.join(
                '%s=%s' % (k, _safe_url(v))
                for k, v in self.endpoints.items() if v))

    #: The service it calls records what it is asked: a dry run does not
    #: ask it.
    side_effects = True

    def inert(self):
        if self.endpoints.get('check-create') or \
                self.endpoints.get('check-update'):
            return None
        return ('it has no service to ask ([enforcement_external] '
                'endpoint_url, or [enforcement] '
                'external_service_base_endpoint, is unset): it allows every '
                'lease')

    def _endpoints(self):
        legacy = self.conf.enforcement
        try:
            base_url = self.options.endpoint_url
        except ValueError as exc:
            raise ValueError('[enforcement_external] endpoint_url: %s' % exc)
        if base_url:
            _validate_url(base_url, '[enforcement_external] endpoint_url')
            base_url = base_url.rstrip('/') + '/'
            endpoints = {k: base_url + k for k in KINDS}
        elif legacy.external_service_base_endpoint:
            old = _validate_url(legacy.external_service_base_endpoint,
                                '[enforcement] external_service_base_endpoint')
            endpoints = {k: parse.urljoin(old, k) for k in KINDS}
        else:
            endpoints = dict.fromkeys(KINDS)
        overrides = {
            'check-create': legacy.external_service_check_create_endpoint,
            'check-update': legacy.external_service_check_update_endpoint,
            'on-end': legacy.external_service_on_end_endpoint,
        }
        for kind, url in overrides.items():
            if url:
                endpoints[kind] = _validate_url(
                    url, '[enforcement] external_service_%s_endpoint'
                    % kind.replace('-', '_'))
        return endpoints

    def _tls_options(self):
        # requests' default (its session's verify: a CA bundle the
        # environment names, read once by sessions.skip_environment).
        verify = self._http.verify
        if self.options.insecure:
            verify = False
        elif self.options.cafile:
            verify = self.options.cafile
        cert = None
        if self.options.certfile:
            cert = (self.options.certfile, self.options.keyfile)
        return {'verify': verify, 'cert': cert}

    def _keystone_session(self):
        group = external_conf.GROUP.name
        auth = ks_loading.load_auth_from_conf_options(self.conf, group)
        if auth is None:
            return None
        return ks_loading.load_session_from_conf_options(self.conf, group,
                                                         auth=auth)

    def _headers(self):
        headers = {'Content-Type': 'application/json',
                   'Accept': 'application/json'}
        if self._keystone is not None:
            try:
                headers['X-Auth-Token'] = self._keystone.get_token()
            except ks_exceptions.ClientException as exc:
                raise _Unavailable(
                    'cannot be called: Keystone gave no token for the '
                    'service user ([enforcement_external] credentials): '
                    '%s: %s' % (type(exc).__name__, exc))
        elif self._static_token:
            headers['X-Auth-Token'] = self._static_token
        return headers

    # --- the three calls of Blazar's "Flexible Reservation Usage Enforcement"
    # spec ------------------------------------

    def check_create(self, context, lease):
        self._call('check-create', lambda: {
            'context': self.context(context).to_dict(),
            'lease': self.lease(lease).to_dict()})

    def check_update(self, context, current_lease, lease):
        self._call('check-update', lambda: {
            'context': self.context(context).to_dict(),
            'current_lease': self.lease(current_lease,
                                        'current_lease').to_dict(),
            'lease': self.lease(lease).to_dict()})

    def on_end(self, context, lease):
        self._call('on-end', lambda: {
            'context': self.context(context).to_dict(),
            'lease': self.lease(lease).to_dict()})

    # --- transport --------------------------------------------------------

    def _call(self, kind, body):
        """POST ``body()`` (built only when the endpoint is set)."""
        url = self.endpoints[kind]
        if url is None:
            return
        data = json.dumps(body())
        try:
            response = self._post_with_retries(url, data)
            if response.status_code == 401 and self._keystone is not None:
                LOG.info('External service refused our token (401); '
                         'fetching a new one and trying once more.')
                self._keystone.invalidate()
                response = self._post_with_retries(url, data)
        except (_Retryable, _Unavailable) as exc:
            return self._failed(kind, url, str(exc))
        except Exception as exc:  # e.g. Keystone down: no token to send
            return self._failed(kind, url, '%s: %s' % (type(exc).__name__,
                                                       exc))
        status = response.status_code
        if status in (200, 204):
            return
        if status == 403 and kind != 'on-end':
            raise self.deny(self._denial_message(response))
        self._log_body(url, response)
        return self._failed(kind, url, 'answered HTTP %d' % status)

    def _post_with_retries(self, url, data):
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.options.retries + 1),
            wait=tenacity.wait_exponential(
                multiplier=self.options.retry_backoff, max=_MAX_BACKOFF),
            retry=tenacity.retry_if_exception_type(_Retryable),
            before_sleep=self._log_retry, reraise=True)
        return retrying(self._post_once, url, data)

    def _post_once(self, url, data):
        timeout = (self.options.connect_timeout, self.options.read_timeout)
        try:
            # Never follow a redirect: it would carry our token to another
            # host, and turn the POST into a GET whose 200 would allow.
            response = self._http.post(url, data=data, headers=self._headers(),
                                       timeout=timeout, allow_redirects=False,
                                       **self._tls)
        except requests.exceptions.ReadTimeout:
            raise _Unavailable('gave no answer within %.1f seconds'
                               % self.options.read_timeout)
        except requests.exceptions.ConnectTimeout:
            raise _Retryable('accepted no connection within %.1f seconds'
                             % self.options.connect_timeout)
        except requests.exceptions.ConnectionError as exc:
            raise _Retryable('could not be reached: %s' % _cause(exc))
        if response.status_code >= 500:
            self._log_body(url, response)
            raise _Retryable('answered HTTP %d' % response.status_code)
        return response

    @staticmethod
    def _log_retry(state):
        url = state.args[0] if state.args else '?'
        LOG.warning('External enforcement service %s %s; retry %d.',
                    _safe_url(url), state.outcome.exception(),
                    state.attempt_number)

    @staticmethod
    def _log_body(url, response):
        LOG.debug('External enforcement service %s answered %d: %r',
                  _safe_url(url), response.status_code,
                  response.content[:_LOGGED_BODY])

    def _denial_message(self, response):
        try:
            message = response.json()['message']
        except (ValueError, TypeError, KeyError):
            message = None
        if isinstance(message, str) and message.strip():
            return message
        # The body may hold anything: do not show it to the user.
        self._log_body(response.url, response)
        return GENERIC_DENY_MSG

    def _failed(self, kind, url, reason):
        if kind == 'on-end':
            LOG.error('External enforcement service %s %s during on-end; '
                      'the lease ends anyway.', _safe_url(url), reason)
            return
        if self.options.allow_on_error:
            LOG.error('External enforcement service %s %s; allowing %s '
                      'because allow_on_error is set.', _safe_url(url),
                      reason, kind)
            return
        LOG.error('External enforcement service %s %s; denying %s.',
                  _safe_url(url), reason, kind)
        raise self.deny(UNAVAILABLE_DENY_MSG)
