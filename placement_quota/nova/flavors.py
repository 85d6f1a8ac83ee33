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
"""Nova flavors, read through openstacksdk, cached per flavor ID.

A ``flavor:instance`` reservation names a flavor; what it reserves comes
from the flavor (:mod:`placement_quota.lease.flavor_rules`). The flavor
is read from Nova with openstacksdk on the keystoneauth session of
``[nova]`` (as :mod:`placement_quota.nova.quotas` reaches Nova), kept
``[nova] flavor_cache_ttl`` seconds, and read again when it is not in the
cache or has expired (a flavor Nova did not know is never cached: a flavor
created since is found at once).

Policies never read Nova while they hold ledger locks: the chain resolves
the flavors of a lease before the admission (:meth:`FlavorReader.prefetch`,
a :class:`Prefetched` mapping handed to the admission and to
``accounting.lease_amounts``).

Errors: :class:`FlavorNotFound` (Nova answered 404), :class:`FlavorError`
(Nova refused the read, or its flavor cannot be counted: the chain denies),
:class:`FlavorUnavailable` (Nova unreachable, too slow or answering 5xx: an
outage, the service answers 503 as for Nova's quota sets).
"""

import threading
import time

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import noauth
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from openstack import connection as sdk_connection
from openstack import exceptions as sdk_exceptions
from oslo_log import log as logging

from placement_quota.lease import flavor_rules
from placement_quota.nova import quotas
from placement_quota.conf import _util
from placement_quota.conf import nova as nova_conf
from placement_quota import metrics
from placement_quota import sessions

LOG = logging.getLogger(__name__)


class FlavorError(Exception):
    """A flavor cannot be counted; ``str()`` says which and why."""

    def __init__(self, message, flavor_id=None):
        super().__init__(message)
        self.flavor_id = flavor_id


class FlavorNotFound(FlavorError):
    """Nova does not know the flavor (or does not show it to us)."""


class FlavorUnavailable(quotas.QuotaSourceUnavailable):
    """Nova did not answer, or answered 5xx: an outage (503)."""


def unreadable(message, cause, status=None):
    """What a flavor read that failed otherwise than "not found" or
    "refused" raises: :class:`FlavorUnavailable` when Nova answered 5xx
    or did not answer (keystoneauth's ``cause``,
    :func:`~placement_quota.sessions.is_outage`), else a
    :class:`~placement_quota.nova.quotas.QuotaSourceError` (a missing
    endpoint, an openstacksdk error: a bug or a misconfiguration, 500)."""
    if (status is not None and status >= 500) or sessions.is_outage(cause):
        return FlavorUnavailable(message, status=status)
    return quotas.QuotaSourceError(message, status=status)


class FlavorReader:
    """``get(flavor_id) -> flavor_rules.Flavor``, cached ``ttl`` seconds.

    :param compute: an openstacksdk compute proxy (``conn.compute``).
    """

    def __init__(self, compute, ttl=300, description='Nova',
                 clock=time.monotonic):
        self.compute = compute
        self.ttl = ttl
        self.description = description
        self.clock = clock
        self._cache = {}
        self._lock = threading.Lock()
        #: Flavors read from Nova (not from the cache).
        self.reads = 0

    @classmethod
    def from_conf(cls, conf):
        """From ``[nova]`` (keystoneauth auth and session, adapter options
        for the endpoint) and ``[nova] flavor_cache_ttl``."""
        try:
            conf.nova.flavor_cache_ttl
        except Exception:
            nova_conf.register_opts(conf)
        group = nova_conf.GROUP.name
        auth = ks_loading.load_auth_from_conf_options(conf, group)
        if auth is None and not conf.nova.endpoint_override:
            raise FlavorError(
                'flavor:instance reservations need the Nova API to read '
                'their flavors: set the keystoneauth options of [nova] '
                '(auth_type, auth_url, ...) or [nova] endpoint_override.')
        if auth is None:
            # openstacksdk needs a plugin to find its endpoint.
            auth = noauth.NoAuth(endpoint=conf.nova.endpoint_override)
        session = sessions.from_conf(conf, group, auth)
        return cls.from_session(
            session, conf.nova.endpoint_override,
            ttl=conf.nova.flavor_cache_ttl,
            region_name=conf.nova.region_name,
            interface=(conf.nova.valid_interfaces or [None])[0])

    @classmethod
    def from_session(cls, session, endpoint=None, ttl=300, region_name=None,
                     interface=None):
        """On a keystoneauth ``session``; ``endpoint`` (``.../v2.1``)
        instead of the service catalog's."""
        options = {}
        if endpoint:
            options['compute_endpoint_override'] = endpoint
        if interface:
            options['compute_interface'] = interface
        description = endpoint or ('Nova of the service catalog (%s)'
                                   % (region_name or 'any region'))
        try:
            conn = sdk_connection.Connection(
                session=session, region_name=region_name,
                compute_api_version='2', **options)
            compute = conn.compute
        except (ks_exceptions.ClientException,
                sdk_exceptions.SDKException) as exc:
            # The catalog needs a token: Keystone may be down.
            raise unreadable('Cannot reach the Nova API (%s): %s'
                             % (description, exc), exc) from exc
        return cls(compute, ttl=ttl, description=description)

    @classmethod
    def from_endpoint(cls, url, headers=None, ttl=300,
                      timeout=_util.SESSION_TIMEOUT):
        """Straight to the compute endpoint ``url`` with ``headers`` and no
        Keystone (tests, ``noauth2``: ``X-Auth-Token`` is sent as the
        token)."""
        headers = dict(headers or {})
        token = headers.pop('X-Auth-Token', None)
        auth = (token_endpoint.Token(url, token) if token
                else noauth.NoAuth(endpoint=url))
        session = ks_session.Session(auth=auth, timeout=timeout,
                                     additional_headers=headers)
        return cls.from_session(session, url, ttl=ttl)

    def get(self, flavor_id):
        """The flavor, from the cache when read less than ``ttl`` seconds
        ago, else from Nova."""
        now = self.clock()
        with self._lock:
            cached = self._cache.get(flavor_id)
        if cached is not None and now - cached[0] < self.ttl:
            return cached[1]
        flavor = self._read(flavor_id)
        if self.ttl:
            with self._lock:
                self._cache[flavor_id] = (now, flavor)
        return flavor

    def prefetch(self, flavor_ids):
        """A :class:`Prefetched` of ``flavor_ids``, read now."""
        return Prefetched({i: self.get(i) for i in sorted(set(flavor_ids))})

    def _read(self, flavor_id):
        with metrics.timed_call(metrics.NOVA_SECONDS, 'flavor'):
            return self._read_flavor(flavor_id)

    def _read_flavor(self, flavor_id):
        self.reads += 1
        where = 'GET /flavors/%s of %s' % (flavor_id, self.description)
        try:
            found = self.compute.get_flavor(flavor_id)
            if found.extra_specs is None:
                found = self.compute.fetch_flavor_extra_specs(found)
        except sdk_exceptions.NotFoundException:
            raise FlavorNotFound(
                'Flavor %s does not exist in Nova (%s answered 404); a '
                'flavor:instance reservation needs a flavor Nova knows.'
                % (flavor_id, where), flavor_id)
        except sdk_exceptions.HttpException as exc:
            status = exc.status_code
            message = ('Cannot read flavor %s from Nova: %s answered %s: '
                       '%s' % (flavor_id, where, status,
                               ' '.join(str(exc.details or exc).split())
                               [:300]))
            if status is None or status >= 500:
                raise unreadable(message, exc, status) from exc
            raise FlavorError(message, flavor_id) from exc
        except (ks_exceptions.ClientException,
                sdk_exceptions.SDKException) as exc:
            # A connection error, no endpoint, no token (Keystone 5xx).
            raise unreadable(
                'Cannot read flavor %s from Nova: %s failed: %s'
                % (flavor_id, where, exc), exc) from exc
        body = found.to_dict(computed=False)
        body['id'] = found.id or flavor_id
        body['ram'] = found.ram
        body['ephemeral'] = found.ephemeral
        try:
            return flavor_rules.Flavor.from_dict(body)
        except flavor_rules.MalformedFlavor as exc:
            raise FlavorError(str(exc), flavor_id) from exc


class Prefetched:
    """Flavors read before the ledger locks: ``flavors[id]`` (KeyError for
    one not read), ``in``; never calls Nova."""

    def __init__(self, flavors):
        self.flavors = dict(flavors)

    def __getitem__(self, flavor_id):
        return self.flavors[flavor_id]

    def __contains__(self, flavor_id):
        return flavor_id in self.flavors

    def get(self, flavor_id, default=None):
        return self.flavors.get(flavor_id, default)
