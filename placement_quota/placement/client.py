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
"""The Placement client: the one place placement-quota talks to Placement.

* One keystoneauth session, reused, built from ``[placement]``; or, when no
  Placement is configured, the session a caller passes as ``fallback``
  (the ``openstack`` client plugin gives its authenticated session), else
  the embedded default (the real
  openstack-placement code in-process, served on a loopback port).
* The microversion is negotiated once against the server's range: the
  highest we know (:data:`MAX_VERSION`) that the server offers; a server
  below :data:`MIN_VERSION` is refused.
* Errors are typed (:class:`PlacementError` and subclasses) and carry
  Placement's status, error code and detail.
* The global request id of the request being served (see
  :func:`request_context`) is sent as ``X-OpenStack-Request-Id``.
* The session keeps up to :data:`~placement_quota.sessions.POOL_SIZE`
  connections open to Placement, not requests' 10
  (:func:`~placement_quota.sessions.keep_connections`).
"""

import contextlib
import contextvars
import json as jsonlib
import re
import threading
import time

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
from oslo_log import log as logging
import tenacity

from placement_quota.conf import placement as placement_conf
from placement_quota import errors as pq_errors
from placement_quota import metrics
from placement_quota.placement import embedded
from placement_quota import sessions

LOG = logging.getLogger(__name__)

MIN_VERSION = (1, 29)   # nested providers in allocation candidates
RESHAPER = (1, 30)
FORBIDDEN_AGGREGATES = (1, 32)
CONSUMER_TYPES = (1, 38)
MAX_VERSION = (1, 39)

#: Characters of an answer above which :meth:`PlacementClient.get_items`
#: decodes its list one item at a time.
ITEMWISE_ABOVE = 1 << 16
_DECODER = jsonlib.JSONDecoder()
_ITEMS_START = re.compile(r'\s*\{\s*"([^"\\]*)"\s*:\s*\[\s*')
_ITEMS_SEPARATOR = re.compile(r'\s*,\s*')
_ITEMS_END = re.compile(r'\s*\]\s*\}\s*\Z')

#: Seconds above which a Placement call's worst wait (see
#: :func:`wait_bound`) is warned about when the client is made.
REASONABLE_WAIT = 30
# keystoneauth's delays between retries without a fixed delay.
_RETRY_DELAY_START = 0.5
_RETRY_DELAY_MAX = 60.0

_global_request_id = contextvars.ContextVar('placement_quota_request_id',
                                            default=None)


@contextlib.contextmanager
def request_context(global_request_id):
    """Send ``global_request_id`` with every Placement call in this block."""
    token = _global_request_id.set(global_request_id)
    try:
        yield
    finally:
        _global_request_id.reset(token)


class PlacementError(pq_errors.DependencyError):
    """Placement answered an error.

    ``status`` (HTTP), ``code`` (Placement's error code such as
    ``placement.concurrent_update``, or None), ``detail`` (its message),
    ``method`` and ``url`` of the request.
    """

    def __init__(self, status, code, detail, method, url):
        self.status = status
        self.code = code
        self.detail = detail
        self.method = method
        self.url = url
        super().__init__('Placement %s %s answered %d%s: %s' % (
            method, url, status, ' (%s)' % code if code else '', detail))


class NotFound(PlacementError):
    pass


class Forbidden(PlacementError):
    pass


class Conflict(PlacementError):
    pass


class ConcurrentUpdate(Conflict):
    """A generation conflict: re-read and try again."""


class InUse(Conflict):
    """An inventory, class or provider still has allocations."""


class Unavailable(PlacementError, pq_errors.DependencyUnavailable):
    """Placement could not be reached or answered 5xx."""

    service = 'placement'


class Unreachable(Unavailable):
    """The request got no answer: the connection failed (refused, reset,
    no route), or nothing came back within the session's ``timeout``.

    ``timeout`` is the seconds waited when it timed out (None when the
    connection failed); ``where`` the client's description (its
    endpoint).
    """

    def __init__(self, detail, method, url, timeout=None, where=None):
        super().__init__(0, None, detail, method, url)
        self.timeout = timeout
        self.where = where
        at = ' at %s' % where if where else ''
        if timeout is not None:
            text = ('Placement%s did not answer %s %s within %s s '
                    '([placement] timeout): %s'
                    % (at, method, url, _seconds(timeout), detail))
        else:
            text = ('Cannot connect to Placement%s for %s %s: %s'
                    % (at, method, url, _connect_reason(detail)))
        Exception.__init__(self, text)


def _seconds(value):
    return '%g' % value


def _connect_reason(detail):
    """The address and the operating system's reason (``http://host:port/:
    [Errno 111] Connection refused``) out of keystoneauth's long connection
    error, else all of it."""
    found = re.search(r'\[Errno -?\d+\][^)"\']*', detail)
    if found is None:
        return detail
    address = re.search(r'connection to (\S+?):? ', detail)
    reason = found.group(0).strip()
    return '%s: %s' % (address.group(1), reason) if address else reason


class AuthFailure(PlacementError):
    """The request never reached Placement: keystoneauth could not get a
    token (wrong credentials, Keystone down) or find Placement in the
    service catalog."""

    def __init__(self, detail, method, url):
        super().__init__(0, None, detail, method, url)
        Exception.__init__(self, 'Cannot authenticate to reach Placement '
                           'for %s %s: %s' % (method, url, detail))


class AuthUnavailable(AuthFailure, pq_errors.DependencyUnavailable):
    """No token because Keystone is down or did not answer in time."""

    service = 'keystone'


def auth_failure(exc, method, url):
    """What keystoneauth's ``exc`` (no token, no endpoint) raises:
    :class:`AuthUnavailable` when Keystone is down
    (:func:`~placement_quota.sessions.is_outage`), else
    :class:`AuthFailure`."""
    cls = AuthUnavailable if sessions.is_outage(exc) else AuthFailure
    return cls(str(exc), method, url)


class NotConfigured(PlacementError):
    """``[placement]`` names no usable Placement: none at all where the
    embedded one was not chosen, an auth plugin keystoneauth cannot load,
    or contradictory options. The message says what to configure."""

    def __init__(self, detail):
        super().__init__(0, None, detail, 'GET', '/')
        Exception.__init__(self, detail)


#: What a command says when no Placement is configured and the embedded
#: one was not chosen.
NOT_CONFIGURED = (
    'no Placement is configured: set [placement] auth_type and its '
    'credentials (auth_url, username, password...) or endpoint_override to '
    'use the cloud\'s Placement, or [placement] embedded = true (or '
    '--embedded) to use the embedded one')


class VersionTooOld(PlacementError):
    """The server's highest microversion is below what we need."""


_BY_STATUS = {403: Forbidden, 404: NotFound, 409: Conflict}
_BY_CODE = {
    'placement.concurrent_update': ConcurrentUpdate,
    'placement.inventory.inuse': InUse,
    'placement.resource_provider.inuse': InUse,
    # POST /reshaper answers 400 with this code for a provider that is gone.
    'placement.resource_provider.not_found': NotFound,
}


def _error(response, method, url):
    code, detail = None, response.text or ''
    try:
        error = response.json()['errors'][0]
        code = error.get('code')
        detail = error.get('detail') or detail
    except (ValueError, KeyError, IndexError, TypeError):
        pass
    if response.status_code >= 500:
        cls = Unavailable
    elif code in _BY_CODE:
        cls = _BY_CODE[code]
    elif response.status_code == 409 and 'generation conflict' in detail:
        cls = ConcurrentUpdate
    elif response.status_code == 409 and 'in use' in detail.lower():
        cls = InUse
    else:
        cls = _BY_STATUS.get(response.status_code, PlacementError)
    return cls(response.status_code, code, ' '.join(detail.split()), method,
               url)


def wait_bound(timeout, connect_retries=0, connect_retry_delay=None,
               status_code_retries=0, status_code_retry_delay=None):
    """The longest one Placement call waits, in seconds (None when
    ``timeout`` is None): every attempt keystoneauth makes (one, plus
    ``connect_retries`` after a failed or timed-out connection or read,
    plus ``status_code_retries`` after a 503 or 429) waiting up to
    ``timeout``, plus keystoneauth's delays between them (the fixed delay
    when set, else 0.5 s doubling up to 60 s). With the defaults (10 s,
    no retries) it is 10 s. A caller's request fails at its first call
    that gives up, so this also bounds a whole enforcement request's wait
    for a Placement that does not answer."""
    if timeout is None:
        return None
    attempts = 1 + connect_retries + status_code_retries
    delays = (_delays(connect_retries, connect_retry_delay) +
              _delays(status_code_retries, status_code_retry_delay))
    return attempts * float(timeout) + delays


def _delays(retries, fixed):
    if fixed is not None:
        return retries * float(fixed)
    total, delay = 0.0, _RETRY_DELAY_START
    for _ in range(retries):
        total += delay
        delay = min(delay * 2, _RETRY_DELAY_MAX)
    return total


def version_string(version):
    return '%d.%d' % version


def parse_version(text):
    major, minor = text.split('.')
    return int(major), int(minor)


def choose_version(low, high):
    """The microversion to use with a server offering ``low``..``high``:
    the highest both know.

    :raises VersionTooOld: when the server is older than MIN_VERSION, or
        its range and ours do not meet.
    """
    if high < MIN_VERSION:
        raise VersionTooOld(
            200, None, 'Placement offers microversions up to %s; '
            'placement-quota needs at least %s'
            % (version_string(high), version_string(MIN_VERSION)), 'GET', '/')
    chosen = min(high, MAX_VERSION)
    if chosen < low:
        raise VersionTooOld(
            200, None, 'Placement requires at least microversion %s; '
            'placement-quota knows up to %s'
            % (version_string(low), version_string(MAX_VERSION)), 'GET', '/')
    return chosen


class PlacementClient:
    """Talk to one Placement with one session and one microversion.

    Build it with :meth:`from_conf` (production, and the embedded default),
    or :meth:`from_endpoint` (tests and tools: a noauth2 Placement).
    """

    def __init__(self, adapter, description):
        self._adapter = adapter
        self.description = description
        self._version = None
        self._lock = threading.Lock()
        self._calls_lock = threading.Lock()
        self.calls = 0

    @classmethod
    def from_conf(cls, conf, fallback=None, embedded_default=True):
        """From ``[placement]``; when it configures no Placement (neither
        auth options nor ``endpoint_override``), ``fallback()`` -- a
        ``(keystoneauth Adapter, description)`` pair, or None -- else the
        embedded Placement, if ``[placement] embedded`` chose it or
        ``embedded_default`` allows it (``serve``). The ``openstack``
        client plugin passes the session of the shell's credentials as
        ``fallback``.

        :raises NotConfigured: no Placement where the embedded one is not
            allowed, an auth plugin that cannot be loaded, or ``embedded``
            set together with auth options or ``endpoint_override``.
        """
        group = placement_conf.GROUP.name
        options = conf[group]
        try:
            auth = ks_loading.load_auth_from_conf_options(conf, group)
        except ks_exceptions.NoMatchingPlugin:
            raise NotConfigured(
                '[placement] auth_type = %s: keystoneauth has no such auth '
                'plugin (password, v3applicationcredential, admin_token... '
                'or leave it unset)' % options.auth_type) from None
        except ks_exceptions.ClientException as exc:
            raise NotConfigured('[placement] auth_type = %s: %s'
                                % (options.auth_type, exc)) from None
        if options.embedded and (auth is not None or
                                 options.endpoint_override):
            raise NotConfigured(
                '[placement] embedded = true and %s are both set: choose '
                'the embedded Placement or the cloud\'s'
                % ('endpoint_override' if options.endpoint_override
                   else 'auth_type'))
        if auth is None and not options.endpoint_override:
            found = None
            if fallback is not None and not options.embedded:
                found = fallback()
            if found is not None:
                client = cls(*found)
            elif options.embedded or embedded_default:
                client = cls.embedded(options.embedded_state_dir)
            else:
                raise NotConfigured(NOT_CONFIGURED)
            LOG.info('Placement: %s', client.description)
            return client
        session = sessions.from_conf(conf, group, auth)
        adapter = ks_loading.load_adapter_from_conf_options(
            conf, group, session=session, auth=auth, raise_exc=False)
        client = cls(adapter, options.endpoint_override or 'Placement of '
                     'the service catalog (%s)' % (options.region_name or
                                                   'any region'))
        LOG.info('Placement: %s', placement_conf.describe(conf))
        client._warn_if_unbounded()
        return client

    # --- how long a call may wait -------------------------------------

    @property
    def timeout(self):
        """Seconds one attempt of a call waits for Placement (to connect,
        and for each read), or None for no limit: the session's
        ``timeout`` (``[placement] timeout``)."""
        session = getattr(self._adapter, 'session', None)
        return getattr(session, 'timeout', None)

    @property
    def wait_bound(self):
        """The longest one call may wait for a Placement that does not
        answer, in seconds (None: no limit); see :func:`wait_bound`."""
        adapter = self._adapter
        return wait_bound(
            self.timeout,
            getattr(adapter, 'connect_retries', None) or 0,
            getattr(adapter, 'connect_retry_delay', None),
            getattr(adapter, 'status_code_retries', None) or 0,
            getattr(adapter, 'status_code_retry_delay', None))

    def _warn_if_unbounded(self):
        bound = self.wait_bound
        if bound is None:
            LOG.warning('[placement] timeout is not set: a Placement that '
                        'accepts connections and never answers holds '
                        'enforcement requests forever.')
        elif bound > REASONABLE_WAIT:
            LOG.warning('A Placement that does not answer holds an '
                        'enforcement request for up to %.0f s ([placement] '
                        'timeout %s s, connect_retries and '
                        'status_code_retries with their delays); Blazar '
                        'waits for the answer. Lower them to stay under '
                        '%d s.', bound, _seconds(self.timeout),
                        REASONABLE_WAIT)

    @classmethod
    def from_endpoint(cls, endpoint, headers=None, timeout=30):
        """A Placement at ``endpoint`` with fixed headers (noauth2)."""
        session = sessions.keep_connections(
            ks_session.Session(timeout=timeout))
        adapter = ks_adapter.Adapter(
            session, service_type='placement', endpoint_override=endpoint,
            additional_headers=dict(headers or {}), raise_exc=False)
        return cls(adapter, endpoint)

    @classmethod
    def embedded(cls, state_dir):
        """The embedded default: real Placement code on SQLite, in-process,
        served on a loopback port (started once per process)."""
        endpoint = embedded.serve_in_thread(
            embedded.sqlite_connection(state_dir))
        client = cls.from_endpoint(endpoint, embedded.NOAUTH_HEADERS)
        client.description = ('the embedded Placement at %s (database in '
                              '%s)' % (endpoint, state_dir))
        return client

    # --- microversions ------------------------------------------------------

    @property
    def version(self):
        """The negotiated microversion, a ``(major, minor)`` tuple."""
        if self._version is None:
            with self._lock:
                if self._version is None:
                    self._version = self._negotiate()
        return self._version

    def supports(self, version):
        return self.version >= version

    def _negotiate(self):
        response = self._send('GET', '/', None, None)
        if response.status_code >= 500:
            raise _error(response, 'GET', '/')
        try:
            doc = response.json()['versions'][0]
            low = parse_version(doc['min_version'])
            high = parse_version(doc['max_version'])
        except (ValueError, KeyError, IndexError, TypeError):
            raise PlacementError(response.status_code, None,
                                 'no version document at the root',
                                 'GET', '/')
        chosen = choose_version(low, high)
        LOG.debug('Placement %s: microversions %s to %s; using %s',
                  self.description, version_string(low),
                  version_string(high), version_string(chosen))
        return chosen

    # --- requests -------------------------------------------------------

    def request(self, method, url, json=None, version=None,
                ok=(200, 201, 204)):
        """Send a request; return the response, or raise PlacementError.

        ``version`` overrides the negotiated microversion (a tuple).
        """
        version = version or self.version
        response = self._send(method, url, json, version)
        if response.status_code not in ok:
            raise _error(response, method, url)
        return response

    def _send(self, method, url, json, version):
        headers = {'Accept': 'application/json'}
        request_id = _global_request_id.get()
        kwargs = {}
        if request_id:
            kwargs['global_request_id'] = request_id
        if version is not None:
            kwargs['microversion'] = version_string(version)
        with self._calls_lock:
            self.calls += 1
        outcome = 'unreachable'
        started = time.perf_counter()
        try:
            response = self._adapter.request(url, method, json=json,
                                             headers=headers, **kwargs)
            outcome = ('ok' if response.status_code < 400 else
                       metrics.status_class(response.status_code))
            return response
        except ks_exceptions.ConnectTimeout as exc:
            # A read timeout too: keystoneauth raises ConnectTimeout for
            # any requests Timeout.
            raise Unreachable(str(exc), method, url, timeout=self.timeout,
                              where=self.description)
        except ks_exceptions.ConnectionError as exc:
            raise Unreachable(str(exc), method, url, where=self.description)
        except ks_exceptions.ClientException as exc:
            outcome = 'auth'
            raise auth_failure(exc, method, url)
        finally:
            metrics.PLACEMENT_SECONDS.labels(method, outcome).observe(
                time.perf_counter() - started)

    def get(self, url, **kwargs):
        return self.request('GET', url, **kwargs).json()

    def get_items(self, url, key, pick=None):
        """``[pick(item) for item in self.get(url)[key]]``; a large
        answer decoded item by item (:func:`decode_items`), not holding
        the interpreter lock for the whole of it."""
        content = self.request('GET', url).content
        if len(content) <= ITEMWISE_ABOVE:
            return [(pick or _same)(item)
                    for item in jsonlib.loads(content)[key]]
        return decode_items(content.decode('utf-8'), key, pick)

    def post(self, url, json, **kwargs):
        return self.request('POST', url, json=json, **kwargs)

    def put(self, url, json=None, **kwargs):
        return self.request('PUT', url, json=json, **kwargs)

    def delete(self, url, **kwargs):
        return self.request('DELETE', url, **kwargs)


def decode_items(text, key, pick=None):
    """``[pick(item) for item in json.loads(text)[key]]`` (``pick``
    defaults to the item itself), for an answer ``{"<key>": [...]}``
    decoded one item at a time: one ``json.loads`` of a large answer holds
    the interpreter lock all along (about 0.3 s for the 7.8 MB listing of
    10,000 resource providers), stopping every other thread of the
    process; between two items the lock can pass to them. Any other shape
    of answer is decoded whole."""
    pick = pick or _same
    start = _ITEMS_START.match(text)
    if start is not None and start.group(1) == key:
        items, position = [], start.end()
        if _ITEMS_END.match(text, position):
            return items
        try:
            while True:
                item, position = _DECODER.raw_decode(text, position)
                items.append(pick(item))
                separator = _ITEMS_SEPARATOR.match(text, position)
                if separator is None:
                    break
                position = separator.end()
        except ValueError:
            pass  # decoded whole below, to raise what json.loads raises
        else:
            if _ITEMS_END.match(text, position):
                return items
    return [pick(item) for item in jsonlib.loads(text)[key]]


def _same(item):
    return item


def retry_on_conflict(attempts, reread=None):
    """Retry a write on :class:`ConcurrentUpdate` up to ``attempts`` times.

    ``reread(exc)`` runs before each retry (re-read the generation the
    conflict names).
    """
    def before_sleep(state):
        exc = state.outcome.exception()
        LOG.info('Placement generation conflict (%s); re-reading and '
                 'retrying (%d).', exc.detail, state.attempt_number)
        if reread is not None:
            reread(exc)

    return tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts + 1),
        wait=tenacity.wait_random_exponential(multiplier=0.01, max=0.5),
        retry=tenacity.retry_if_exception_type(ConcurrentUpdate),
        before_sleep=before_sleep, reraise=True)
