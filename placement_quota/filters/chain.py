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
"""The enforcement filter chain of specs/000.

Filters run in the order of ``[enforcement] enabled_filters``, exactly as
written (upstream Blazar keeps them in a set and loses it). The first denial
stops the chain. ``on_end`` is a notification: every filter is told, and a
filter's error is logged, never raised to Blazar. Projects listed in
``exempted_projects`` skip the chain entirely.
"""

import contextlib
import importlib
import inspect
import threading
import time

from oslo_config import cfg
from oslo_log import log as logging
import stevedore

from placement_quota.conf import enforcement as enforcement_conf
from placement_quota.filters import base
from placement_quota.identity import projects
from placement_quota import lease as lease_model
from placement_quota.ledger import admission as admission_mod
from placement_quota.ledger import models as ledger_models
from placement_quota import services as services_mod

LOG = logging.getLogger(__name__)

# A failed name@domain resolution is retried at most this often.
_RETRY_FAILED_RESOLUTION = 10


class FilterLoadError(Exception):
    """The configured filters cannot be loaded; says what was searched."""


class FilterError(Exception):
    """A filter failed (not denied): a bug or an outage behind it."""

    def __init__(self, filter_name, error):
        self.filter_name = filter_name
        self.error = error
        super().__init__('Enforcement filter %s failed: %s: %s'
                         % (filter_name, type(error).__name__, error))


def _import_attribute(path):
    module_name, _, attr = path.rpartition('.')
    if not module_name:
        raise FilterLoadError('[enforcement] available_filters entry %r is '
                              'not a dotted path such as '
                              '"package.module.all_filters"' % path)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise FilterLoadError('[enforcement] available_filters entry %r: '
                              'cannot import module %s: %s'
                              % (path, module_name, exc))
    try:
        return module, getattr(module, attr)
    except AttributeError:
        raise FilterLoadError('[enforcement] available_filters entry %r: '
                              'module %s has no attribute %r'
                              % (path, module_name, attr))


def _classes_from_path(path):
    module, found = _import_attribute(path)
    if callable(found) and not isinstance(found, type):
        found = found()
    if isinstance(found, type):
        found = [found]
    classes = []
    for item in found:
        if isinstance(item, str):
            item = getattr(module, item, None) or _missing(path, item)
        classes.append(item)
    return classes


def _missing(path, name):
    raise FilterLoadError('[enforcement] available_filters entry %r lists '
                          '%r, which its module does not define'
                          % (path, name))


def available_filter_classes(conf):
    """Map each available filter name to its class.

    Entries of ``available_filters`` come first, in order, then the
    ``placement_quota.enforcement.filters`` entry points of installed
    packages; the first class found under a name wins.
    """
    classes = {}
    for path in conf.enforcement.available_filters:
        for cls in _classes_from_path(path):
            classes.setdefault(cls.__name__, cls)
    manager = stevedore.ExtensionManager(
        enforcement_conf.FILTER_NAMESPACE, invoke_on_load=False,
        on_load_failure_callback=_log_entry_point_failure)
    for extension in manager:
        classes.setdefault(extension.name, extension.plugin)
    return classes


def _log_entry_point_failure(manager, entrypoint, exc):
    LOG.error('Cannot load enforcement filter entry point %s: %s',
              entrypoint, exc)


def register_filter_opts(conf, classes):
    """Register the options of every available filter class, enabled or
    not, so that a value set for any of them is checked."""
    for cls in classes:
        register = getattr(cls, 'register_opts', None)
        if register is not None:
            register(conf)
        else:
            base.register_opts(conf, getattr(cls, 'enforcement_opts', []),
                               'enforcement')


def _takes_services(cls):
    try:
        return 'services' in inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return False


def load_filters(conf, services=None):
    """Instantiate the enabled filters, in order, or say why not.

    ``services`` (a :class:`~placement_quota.services.Services`) is given
    to every filter whose ``__init__`` takes it: all of them share one
    ledger and one Placement client.
    """
    available = available_filter_classes(conf)
    register_filter_opts(conf, available.values())
    if services is None:
        services = services_mod.Services(conf)
    filters = []
    for name in conf.enforcement.enabled_filters:
        cls = available.get(name)
        if cls is None:
            raise FilterLoadError(
                'Unknown enforcement filter %r in [enforcement] '
                'enabled_filters. Searched available_filters %s and the '
                'entry-point namespace %s; available filters: %s.'
                % (name, ', '.join(conf.enforcement.available_filters),
                   enforcement_conf.FILTER_NAMESPACE,
                   ', '.join(sorted(available)) or 'none'))
        try:
            if _takes_services(cls):
                filters.append(cls(conf, services=services))
            else:
                filters.append(cls(conf))
        except (cfg.Error, ValueError) as exc:
            raise FilterLoadError('Enforcement filter %s: %s' % (name, exc))
        except Exception as exc:  # e.g. keystoneauth's NoMatchingPlugin
            raise FilterLoadError('Enforcement filter %s cannot start: %s: '
                                  '%s' % (name, type(exc).__name__, exc))
    return filters


class Exemptions:
    """``[enforcement] exempted_projects``: IDs, or ``name@domain``.

    Names are resolved lazily (the service starts even when Keystone does
    not answer yet), refreshed every ``exempted_projects_refresh`` seconds,
    and a failed resolution keeps the last good answer.
    """

    def __init__(self, conf, resolver_factory=None):
        self.conf = conf
        entries = [e.strip() for e in conf.enforcement.exempted_projects
                   if e.strip()]
        self.ids = frozenset(e for e in entries if '@' not in e)
        self.names = tuple(tuple(e.rsplit('@', 1)) for e in entries
                           if '@' in e)
        for name, domain in self.names:
            if not name or not domain:
                raise ValueError(
                    '[enforcement] exempted_projects entry %r must be a '
                    'project ID or name@domain with both parts'
                    % ('%s@%s' % (name, domain)))
        self._resolver_factory = resolver_factory or _keystone_resolver
        self._resolver = None
        self._resolved = None
        self._next_resolution = 0.0
        self._lock = threading.Lock()

    def __contains__(self, project_id):
        if project_id in self.ids:
            return True
        if not self.names:
            return False
        return project_id in self._resolved_ids()

    def _resolved_ids(self):
        if time.monotonic() < self._next_resolution:
            return self._resolved
        # The first resolution is waited for; a refresh is done by one
        # thread while the others go on with the last known answer.
        if self._lock.acquire(blocking=self._resolved is None):
            try:
                if time.monotonic() >= self._next_resolution:
                    self._resolve()
            finally:
                self._lock.release()
        return self._resolved or frozenset()

    def _resolve(self):
        refresh = self.conf.enforcement.exempted_projects_refresh
        try:
            if self._resolver is None:
                self._resolver = self._resolver_factory(self.conf)
            resolved = set()
            for name, domain in self.names:
                project_id = self._resolver(name, domain)
                if project_id is None:
                    LOG.warning('Exempted project %s@%s does not exist in '
                                'Keystone; it is not exempted.', name, domain)
                else:
                    resolved.add(project_id)
        except Exception as exc:
            LOG.error('Cannot resolve exempted projects %s through Keystone '
                      '(%s); retrying in %d seconds.',
                      ', '.join('@'.join(n) for n in self.names), exc,
                      _RETRY_FAILED_RESOLUTION)
            self._next_resolution = (time.monotonic() +
                                     _RETRY_FAILED_RESOLUTION)
            return
        self._resolved = frozenset(resolved)
        self._next_resolution = (time.monotonic() + refresh if refresh
                                 else float('inf'))
        LOG.info('Exempted projects resolved: %s',
                 ', '.join(sorted(self._resolved)) or 'none')


def _keystone_resolver(conf):
    return projects.ProjectResolver(conf).project_id


class FilterChain:
    """Run the enabled filters in order; used in-process and by the API."""

    def __init__(self, conf, filters=None, exemptions=None, services=None):
        self.conf = conf
        self.services = services
        self.filters = (load_filters(conf, services) if filters is None
                        else filters)
        try:
            self.exemptions = (Exemptions(conf) if exemptions is None
                               else exemptions)
        except ValueError as exc:
            raise FilterLoadError(str(exc))

    @property
    def names(self):
        return [f.name for f in self.filters]

    def _exempt(self, context):
        if context.project_id in self.exemptions:
            LOG.debug('Project %s is exempted from enforcement',
                      context.project_id)
            return True
        return False

    def _run(self, method, context, *leases):
        for filter_ in self.filters:
            try:
                getattr(filter_, method)(context, *leases)
            except base.EnforcementDenied as denial:
                denial.filter_name = denial.filter_name or filter_.name
                LOG.info('%s denied %s for project %s: %s', filter_.name,
                         method, context.project_id, denial)
                raise
            except lease_model.PayloadError:
                raise
            except Exception as exc:
                LOG.exception('Enforcement filter %s failed in %s',
                              filter_.name, method)
                raise FilterError(filter_.name, exc) from exc

    @property
    def ledger_filters(self):
        return [f for f in self.filters if getattr(f, 'uses_ledger', False)]

    @contextlib.contextmanager
    def _admission(self, kind, context, lease, current_lease=None):
        """One ledger admission around the whole chain, when a filter uses
        the ledger: the filters decide on one locked view, and the lease is
        recorded once, after all of them allowed it."""
        ledger_filters = self.ledger_filters
        if not ledger_filters:
            yield None
            return
        locks = []
        for filter_ in ledger_filters:
            try:
                names = filter_.ledger_locks(context)
            except Exception as exc:
                LOG.exception('Enforcement filter %s cannot name its ledger '
                              'locks', filter_.name)
                raise FilterError(filter_.name, exc) from exc
            locks.extend(n for n in names if n not in locks)
        # The cloud-wide lock always comes last (see ledger/store.py).
        locks.sort(key=lambda name: name == ledger_models.GLOBAL_LOCK)
        first = ledger_filters[0]
        try:
            with admission_mod.admit(first.ledger, kind, context, lease,
                                     current_lease, locks,
                                     first.host_resources) as adm:
                yield adm
        except (base.EnforcementDenied, FilterError,
                lease_model.PayloadError):
            raise
        except Exception as exc:
            LOG.exception('The ledger failed during %s for project %s', kind,
                          context.project_id)
            raise FilterError('ledger', exc) from exc

    def check_create(self, context, lease):
        context = lease_model.Context.coerce(context)
        lease = lease_model.Lease.coerce(lease)
        if self._exempt(context):
            return
        try:
            with self._admission(admission_mod.CHECK_CREATE, context, lease):
                self._run('check_create', context, lease)
        except base.EnforcementDenied as denial:
            if self.ledger_filters:
                admission_mod.record_denied(self.ledger_filters[0].ledger,
                                            context, lease, str(denial))
            raise

    def check_update(self, context, current_lease, lease):
        context = lease_model.Context.coerce(context)
        current_lease = lease_model.Lease.coerce(current_lease,
                                                 'current_lease')
        lease = lease_model.Lease.coerce(lease)
        if self._exempt(context):
            return
        with self._admission(admission_mod.CHECK_UPDATE, context, lease,
                             current_lease):
            self._run('check_update', context, current_lease, lease)

    def on_end(self, context, lease):
        context = lease_model.Context.coerce(context)
        lease = lease_model.Lease.coerce(lease)
        if self._exempt(context):
            return
        try:
            with self._admission(admission_mod.ON_END, context, lease):
                self._notify_end(context, lease)
        except FilterError:
            LOG.error('The ledger could not close the lease of project %s; '
                      'the lease ends anyway.', context.project_id)

    def _notify_end(self, context, lease):
        for filter_ in self.filters:
            try:
                filter_.on_end(context, lease)
            except Exception:
                LOG.exception('Enforcement filter %s failed in on_end for '
                              'project %s; the lease ends anyway.',
                              filter_.name, context.project_id)

    def run(self, request):
        """Run a parsed :class:`~placement_quota.lease.Request`."""
        if request.kind == 'check-create':
            self.check_create(request.context, request.lease)
        elif request.kind == 'check-update':
            self.check_update(request.context, request.current_lease,
                              request.lease)
        else:
            self.on_end(request.context, request.lease)
