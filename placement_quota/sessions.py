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

requests also looks in the environment at every call (``trust_env``):
proxies (``http_proxy``, ``no_proxy``...), a CA bundle
(``REQUESTS_CA_BUNDLE``, ``CURL_CA_BUNDLE``) and a ``.netrc`` file. Looking
for proxies walks the whole process environment twice a call (0.65 ms of
CPU: about a third of a decision's when it was measured). When the
process starts with no proxy and no ``.netrc`` (:func:`environment_used`),
these sessions stop looking (:func:`skip_environment`), and a CA bundle
named by the environment is read once, at start, instead of at every
call. A process started with a proxy or a ``.netrc`` keeps requests'
behaviour.

:func:`is_outage` is how the adapters built on these sessions (Placement,
Nova, Keystone) tell keystoneauth's "the service is down" from its other
errors, to raise their
:class:`~placement_quota.errors.DependencyUnavailable`.
"""

import os

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session

from placement_quota import errors

#: Connections a session keeps open to each host: one for each call a
#: service process can have in flight.
POOL_SIZE = 64

#: The variables naming a CA bundle that requests reads from the
#: environment.
CA_BUNDLE_VARIABLES = ('REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE')


def environment_used(environ=None):
    """What in the environment requests would look up at every call and
    cannot be read once for all: the names of the proxy variables and of a
    ``.netrc`` file, as a sorted list; empty when none. (A CA bundle
    variable is read once: :func:`ca_bundle`.)"""
    environ = os.environ if environ is None else environ
    found = ['%s_proxy' % scheme for scheme, value in _proxies(environ)]
    if environ.get('NETRC'):
        found.append('NETRC')
    else:
        home = environ.get('HOME')
        if home and any(os.path.exists(os.path.join(home, name))
                        for name in ('.netrc', '_netrc')):
            found.append('.netrc')
    return sorted(set(found))


def ca_bundle(environ=None):
    """The CA bundle requests takes from the environment for a call that
    verifies with its default (``verify=True``): ``REQUESTS_CA_BUNDLE``,
    else ``CURL_CA_BUNDLE``; None when neither is set."""
    environ = os.environ if environ is None else environ
    for name in CA_BUNDLE_VARIABLES:
        if environ.get(name):
            return environ[name]
    return None


def _proxies(environ):
    """``[(scheme, value)]`` of the proxy variables of ``environ``, read
    as urllib (and so requests) reads them: ``<scheme>_proxy`` in either
    case, the lower-case one first."""
    found = {}
    for name, value in environ.items():
        if value and name.lower().endswith('_proxy'):
            scheme = name[:-len('_proxy')].lower()
            if name.islower() or scheme not in found:
                found[scheme] = value
    return sorted(found.items())


def skip_environment(requests_session, environ=None, holder=None):
    """Stop ``requests_session`` (a ``requests.Session``) from reading the
    environment at every call when it holds no proxy and no ``.netrc``
    (:func:`environment_used`); return it. A CA bundle of the environment
    (:func:`ca_bundle`) is read now instead: it becomes the ``verify`` of
    ``holder`` (the keystoneauth Session around it, which passes its own
    at each call; default: ``requests_session``) where that verifies with
    the default (True), as requests would have done at each call."""
    if environment_used(environ):
        return requests_session
    holder = requests_session if holder is None else holder
    bundle = ca_bundle(environ)
    if bundle is not None and holder.verify is True:
        holder.verify = bundle
    requests_session.trust_env = False
    return requests_session


def keep_connections(session, size=POOL_SIZE):
    """Let ``session`` (a keystoneauth Session) keep up to ``size``
    connections open to each host, and not read the environment at each
    call when it holds nothing for it (:func:`skip_environment`); return
    it.

    keystoneauth mounts one ``TCPKeepAliveAdapter`` (TCP keep-alive, its
    TLS settings) with requests' default pool; it is replaced by the same
    adapter with a larger pool. A session whose requests session has
    adapters of the caller's own is left as it is.
    """
    skip_environment(session.session, holder=session)
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
