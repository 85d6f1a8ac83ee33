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
"""The wiring: what one configuration shares, built once and passed down.

``placement-quota serve``, the WSGI entry points, the CLI and the filters
run inside blazar-manager (:mod:`placement_quota.filters.blazar_compat`)
each build one :class:`Services` from their configuration and hand it to
what they create: the filter chain and its filters, the admin API's
accounts, reconcile. Everything in it is made on first use, so a command
that never reaches Placement never starts the embedded one (a ledger filter
takes :attr:`Services.host_resources`, and so the Placement client, when it
loads, unless ``[ledger] count_host_resources`` is off)::

    services = Services(conf)
    chain = FilterChain(conf, services=services)
    ...
    services.close()

Nothing is looked up in a process-wide registry: two configurations in
one process (tests do that) get two ledgers and two Placement clients.
"""

import threading

from placement_quota.accounts import source as accounts_source
from placement_quota.nova import flavors
from placement_quota import conf as pq_conf
from placement_quota.identity import limits as identity_limits
from placement_quota.identity import projects
from placement_quota.ledger import store
from placement_quota.limits import enforcer as enforcer_mod
from placement_quota.limits import sources
from placement_quota.limits import tree as tree_mod
from placement_quota.placement import client as placement_client
from placement_quota.placement import directory
from placement_quota.placement import hosts


def limits_source(conf):
    """The limits source ``[limits]`` describes, cached if ``cache_ttl``.

    Keystone unified limits (``source = keystone``), or the embedded
    limits file and ``registered_limits``, overlaid by the accounts of the
    admin API when ``[limits] accounts`` is on.

    Raises :class:`~placement_quota.limits.sources.SourceError` for a
    limits file that cannot be read or is malformed, and ValueError for a
    bad ``registered_limits`` value.
    """
    group = conf.limits
    if group.source == 'keystone':
        source = identity_limits.KeystoneLimitSource.from_conf(conf)
    else:
        registered = _registered_limits(group.registered_limits or {})
        if group.limits_file:
            source = sources.EmbeddedSource.from_file(
                group.limits_file, registered_limits=registered)
        else:
            source = sources.EmbeddedSource(
                tree_mod.LimitData(registered_limits=registered))
        if group.accounts:
            source = accounts_source.AccountsSource(
                source, accounts_source.ledger_if_present(conf))
    if group.cache_ttl:
        source = sources.CachingSource(source, group.cache_ttl)
    return source


def _registered_limits(values):
    registered = {}
    for resource, value in values.items():
        try:
            registered[resource] = int(value)
        except (TypeError, ValueError):
            raise ValueError(
                '[limits] registered_limits: the limit of %s must be an '
                'integer, not %r' % (resource, value)) from None
        if registered[resource] < -1:
            raise ValueError(
                '[limits] registered_limits: the limit of %s must be at '
                'least -1 (unlimited), not %r' % (resource, value))
    return registered


def enforcer(conf, usage=None, source=None):
    """An :class:`~placement_quota.limits.enforcer.Enforcer` as
    ``[limits]`` says: its source (:func:`limits_source` unless ``source``
    is given), ``usage_calculation``, ``verify_claims`` and
    ``unregistered_resource_limit``.

    ``usage`` is the usage callback or ``get_usage`` object; the naive
    calculation needs one (ValueError otherwise).
    """
    group = conf.limits
    return enforcer_mod.Enforcer(
        source if source is not None else limits_source(conf),
        usage=usage, aggregate=group.usage_calculation == 'aggregate',
        verify=group.verify_claims,
        unregistered_limit=group.unregistered_resource_limit)


class Services:
    """The shared objects of one configuration, each made on first use.

    :param conf: the ConfigOpts; groups it lacks are registered (Blazar's
        configuration object, inside blazar-manager, has none of ours).
    :param placement: a ready PlacementClient to use instead of
        ``[placement]`` (tests, tools).
    :param flavors: a ready
        :class:`~placement_quota.nova.flavors.FlavorReader` to use
        instead of ``[nova]`` (tests, tools).
    :param placement_fallback: called when ``[placement]`` configures no
        Placement: ``(keystoneauth Adapter, description)`` or None for the
        embedded default. The ``openstack`` client plugin passes the
        shell's session this way.
    :param embedded_default: whether the embedded Placement is used when
        ``[placement]`` configures none and does not choose it
        (``embedded = true``): True for the services (``serve``, the WSGI
        apps, filters in blazar-manager), False for the other commands,
        which then refuse (``PlacementClient.from_conf``).
    """

    def __init__(self, conf, placement=None, placement_fallback=None,
                 flavors=None, embedded_default=True):
        pq_conf.register_missing(conf)
        self.conf = conf
        self.embedded_default = embedded_default
        self._placement = placement
        self._flavors = flavors
        self._placement_fallback = placement_fallback
        self._lock = threading.RLock()
        self._made = {}

    def _once(self, name, make):
        with self._lock:
            if name not in self._made:
                self._made[name] = make()
            return self._made[name]

    @property
    def ledger(self):
        """The :class:`~placement_quota.ledger.store.Ledger` of
        ``[database] connection`` (one engine for every filter)."""
        return self._once('ledger',
                          lambda: store.Ledger.from_conf(self.conf))

    @property
    def placement(self):
        """The PlacementClient: ``[placement]``, else the fallback, else
        the embedded one (when chosen or ``embedded_default``)."""
        if self._placement is not None:
            return self._placement
        return self._once('placement', lambda: (
            placement_client.PlacementClient.from_conf(
                self.conf, fallback=self._placement_fallback,
                embedded_default=self.embedded_default)))

    @property
    def host_resources(self):
        """The reader of reserved hosts' VCPU/RAM/disk, or None when
        ``[ledger] count_host_resources`` is off."""
        if not self.conf.ledger.count_host_resources:
            return None
        return self._once('host_resources', lambda: hosts.HostResources(
            self.placement, ttl=self.conf.ledger.host_resources_cache_ttl,
            directory=self.provider_directory))

    @property
    def provider_directory(self):
        """Provider names to UUIDs and the sharing providers' classes
        (:class:`~placement_quota.placement.directory.ProviderDirectory`),
        from :attr:`placement`."""
        return self._once('provider_directory', lambda: (
            directory.ProviderDirectory(self.placement)))

    @property
    def flavors(self):
        """The Nova flavor reader of ``[nova]``
        (:class:`~placement_quota.nova.flavors.FlavorReader`, cached
        ``[nova] flavor_cache_ttl``); raises
        :class:`~placement_quota.nova.flavors.FlavorError` when
        ``[nova]`` names no Nova."""
        if self._flavors is not None:
            return self._flavors
        return self._once('flavors', lambda: (
            flavors.FlavorReader.from_conf(self.conf)))

    @property
    def limits_source(self):
        """The project limits of ``[limits]`` (:func:`limits_source`)."""
        return self._once('limits_source',
                          lambda: limits_source(self.conf))

    def enforcer(self, usage=None):
        """A strict two-level enforcer on :attr:`limits_source`."""
        return enforcer(self.conf, usage=usage, source=self.limits_source)

    @property
    def project_resolver(self):
        """``name@domain`` to project ID, through ``[keystone]``."""
        return self._once('project_resolver', lambda: (
            projects.ProjectResolver(self.conf).project_id))

    def close(self):
        """Release what was made (the ledger's connections)."""
        with self._lock:
            made, self._made = self._made, {}
        ledger = made.get('ledger')
        if ledger is not None:
            ledger.dispose()
