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
"""The connections a keystoneauth session keeps open.

requests keeps 10 connections to a host. A service process has more calls
in flight than that under load -- the prepare steps of its decisions side
by side (:data:`placement_quota.concurrency.MAX_WORKERS`), the reads of
each decision's hosts, the capacity view's refresh, quota reads ahead of
time -- and a connection past the pool is closed after its call (urllib3
logs "Connection pool is full, discarding connection") and opened again
for the next: with TLS, a handshake a call. The sessions placement-quota
builds to Placement, Nova and Keystone from its configuration
(:func:`from_conf`) keep :data:`POOL_SIZE`.

:func:`is_outage` is how the adapters built on these sessions (Placement,
Nova, Keystone) tell keystoneauth's "the service is down" from its other
errors, to raise their
:class:`~placement_quota.errors.DependencyUnavailable`.
"""

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session

from placement_quota import errors

#: Connections a session keeps open to each host: one for each call a
#: service process can have in flight.
POOL_SIZE = 64


def keep_connections(session, size=POOL_SIZE):
    """Let ``session`` (a keystoneauth Session) keep up to ``size``
    connections open to each host; return it.

    keystoneauth mounts one ``TCPKeepAliveAdapter`` (TCP keep-alive, its
    TLS settings) with requests' default pool; it is replaced by the same
    adapter with a larger pool. A session whose requests session has
    adapters of the caller's own is left as it is.
    """
    mounted = session.session.adapters
    old = next(iter(mounted.values()), None)
    if type(old) is not ks_session.TCPKeepAliveAdapter:
        return session
    settings = {name: getattr(old, name) for name in
                ('tls_ciphers', 'tls_min_version') if hasattr(old, name)}
    adapter = ks_session.TCPKeepAliveAdapter(pool_maxsize=size, **settings)
    for scheme, current in list(mounted.items()):
        if current is old:
            session.session.mount(scheme, adapter)
    return session


def from_conf(conf, group, auth):
    """keystoneauth's session of the options of ``group`` (timeouts, TLS),
    with ``auth``, keeping :data:`POOL_SIZE` connections open to each
    host."""
    return keep_connections(
        ks_loading.load_session_from_conf_options(conf, group, auth=auth))


def is_outage(exc):
    """Whether keystoneauth's error ``exc`` (or what it was raised from
    or while handling) says the service -- or Keystone, for a token --
    is down: a connection refused, reset or timed out, or a 5xx answer.
    A 4xx (credentials refused, forbidden), a missing endpoint or a
    configuration error is no outage. The first keystoneauth error found
    decides."""
    for error in errors.causes(exc):
        if isinstance(error, ks_exceptions.ConnectionError):
            return True
        if isinstance(error, ks_exceptions.HttpError):
            return (error.http_status or 0) >= 500
    return False
