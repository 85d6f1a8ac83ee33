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
"""``/healthcheck`` with real backends: oslo.middleware's healthcheck app
and two plugins of ours (namespace ``oslo.middleware.healthcheck``).

``placement_quota_ledger``
    One ``SELECT 1`` on the ledger database, within the ledger's own
    timeouts. Always on for the enforcement service when a filter uses the
    ledger.
``placement_quota_placement``
    ``GET /`` on the configured Placement (its version document), bounded
    by ``[placement] timeout``. On when an enabled filter reads Placement
    (PlacementCapacityFilter, NovaQuotaFilter counting usage, the ledger
    filters with ``[ledger] count_host_resources``).

oslo.middleware's own options apply (``[healthcheck] detailed``,
``backends``, ``disable_by_file_path``...): :func:`make_app` sets the
default ``backends`` to ``disable_by_file`` plus the checks above, so a
file at ``disable_by_file_path`` takes a node out of its load balancer
(503) without stopping it. A failed check answers 503 with the reason; the
detailed mode adds the error's class. Neither reveals a password: the
ledger is named by its URL with the password hidden.
"""

import threading
import weakref

from oslo_log import log as logging
from oslo_middleware import healthcheck
from oslo_middleware.healthcheck import pluginbase
import sqlalchemy as sa

from placement_quota.conf import api as api_conf
from placement_quota import services as services_mod

LOG = logging.getLogger(__name__)

#: Our plugins, by their entry point names.
LEDGER = 'placement_quota_ledger'
PLACEMENT = 'placement_quota_placement'

# The Services of each configuration an app was made for, by id() of the
# ConfigOpts (which is not hashable), dropped with it: the plugins are made
# by stevedore with the ConfigOpts only, and must check the very ledger and
# Placement the service decides with.
_SERVICES = {}
_SERVICES_LOCK = threading.Lock()


def _bind(conf, services):
    with _SERVICES_LOCK:
        if id(conf) not in _SERVICES:
            weakref.finalize(conf, _SERVICES.pop, id(conf), None)
        _SERVICES[id(conf)] = services


def _services(conf):
    with _SERVICES_LOCK:
        found = _SERVICES.get(id(conf))
    if found is None:
        found = services_mod.Services(conf)
        _bind(conf, found)
    return found


class Backends:
    """What the checks read, when no
    :class:`~placement_quota.services.Services` holds it (an app made on
    ready parts)."""

    def __init__(self, ledger=None, placement=None):
        self.ledger = ledger
        self.placement = placement


def _reason(exc):
    """One line for a failed check (never a traceback)."""
    text = str(getattr(exc, 'orig', None) or exc).strip().splitlines()
    return text[0] if text else exc.__class__.__name__


class LedgerResult(pluginbase.HealthcheckResult):
    """The ledger check's result (the detailed mode shows its class)."""


class PlacementResult(pluginbase.HealthcheckResult):
    """The Placement check's result."""


class _BackendCheck(pluginbase.HealthcheckBaseExtension):
    """A check that :meth:`probe` answers: ``NAME OK (...)``, else
    ``NAME unavailable: <reason>`` and a warning in the log."""

    name = None
    result = pluginbase.HealthcheckResult

    def probe(self, services):
        """Raise when the backend does not answer; return what to say
        of it."""
        raise NotImplementedError

    def healthcheck(self, server_port):
        try:
            said = self.probe(_services(self.oslo_conf))
        except Exception as exc:
            LOG.warning('Health check: %s is unavailable: %s', self.name,
                        _reason(exc))
            return self.result(
                available=False,
                reason='%s unavailable: %s' % (self.name, _reason(exc)),
                details=exc.__class__.__name__)
        return self.result(available=True,
                           reason='%s OK%s' % (self.name, said))


class LedgerCheck(_BackendCheck):
    """The ledger database answers a ``SELECT 1``."""

    name = 'ledger'
    result = LedgerResult

    def probe(self, services):
        ledger = services.ledger
        with ledger.engine.connect() as connection:
            connection.execute(sa.text('SELECT 1'))
        return ' (%s)' % ledger.dialect


class PlacementCheck(_BackendCheck):
    """The configured Placement answers ``GET /``."""

    name = 'placement'
    result = PlacementResult

    def probe(self, services):
        services.placement.get('/')
        return ''


def needs_placement(chain):
    """Whether an enabled filter of ``chain`` reads Placement."""
    conf = chain.conf
    for filter_ in chain.filters:
        name = filter_.__class__.__name__
        if name == 'PlacementCapacityFilter':
            return True
        if (name == 'NovaQuotaFilter'
                and conf.enforcement.nova_quota_include_usage):
            return True
        if (getattr(filter_, 'uses_ledger', False)
                and conf.ledger.count_host_resources):
            return True
    return False


def backends_for(conf, ledger=True, placement=False):
    """``disable_by_file`` (when ``[healthcheck] disable_by_file_path`` is
    set), then the ledger and Placement checks asked for."""
    backends = []
    if conf.healthcheck.disable_by_file_path:
        backends.append('disable_by_file')
    if ledger:
        backends.append(LEDGER)
    if placement:
        backends.append(PLACEMENT)
    return backends


def make_app(conf, services, ledger=True, placement=False):
    """oslo.middleware's healthcheck app on ``conf`` (its
    ``[healthcheck]`` options), checking the ledger and Placement of
    ``services`` as asked, unless ``[healthcheck] backends`` names its
    own."""
    api_conf.register_middleware_opts(conf)
    conf.set_default('backends', backends_for(conf, ledger, placement),
                     group='healthcheck')
    if services is not None:
        _bind(conf, services)
    return healthcheck.Healthcheck(None, conf)


def for_chain(conf, chain):
    """The enforcement service's ``/healthcheck``: the ledger when a filter
    uses it, Placement when a filter reads it."""
    services = chain.services or next(
        (f.services for f in chain.filters
         if getattr(f, 'services', None) is not None), None)
    return make_app(conf, services, ledger=bool(chain.ledger_filters),
                    placement=needs_placement(chain))
