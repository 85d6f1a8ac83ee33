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
"""The enforcement filter chain of Blazar's "Flexible Reservation Usage
Enforcement" spec.

Filters run in the order of ``[enforcement] enabled_filters``, exactly as
written (upstream Blazar keeps them in a set and loses it). The first denial
stops the chain. ``on_end`` is a notification: every filter is told, and a
filter's error is logged, never raised to Blazar. Projects listed in
``exempted_projects`` skip the chain entirely.

When filters use the ledger, the chain first runs their ``prepare`` step
(what they read from Placement, and the reserved hosts' resources), then
opens one ledger admission (one locked transaction) around the filters:
nothing waits for Placement while the ledger is locked.

A service the decision needs that is down or does not answer in time is
an outage, not a bug: :func:`outage` recognizes it (the ledger database
not answering, locked past its timeout, full, read-only or gone;
Placement refusing connections, not answering within ``[placement]
timeout``, answering 5xx, or no token from Keystone; Nova's quota sets or
Keystone's limits unreachable or 5xx) and the chain raises
:class:`ServiceUnavailable` (the API answers 503 with the reason); any
other failure is :class:`FilterError` (500). doc/source/failures.rst
lists every fault with its answer and time bound.
"""

import contextlib
import functools
import importlib
import inspect

from keystoneauth1 import exceptions as ks_exceptions
from oslo_config import cfg
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc
import stevedore

from placement_quota.nova import quotas as nova_quotas
from placement_quota import concurrency
from placement_quota.conf import enforcement as enforcement_conf
from placement_quota.filters import base
from placement_quota.filters import exemptions as exemptions_mod
from placement_quota.filters import ledger_base
from placement_quota.lease import model as lease_model
from placement_quota.ledger import admission as admission_mod
from placement_quota.ledger import errors as ledger_errors
from placement_quota import metrics
from placement_quota.placement import client as placement_client
from placement_quota import services as services_mod

LOG = logging.getLogger(__name__)


class FilterLoadError(Exception):
    """The configured filters cannot be loaded; says what was searched."""


class FilterError(Exception):
    """A filter failed (not denied): a bug or an outage behind it."""

    def __init__(self, filter_name, error):
        self.filter_name = filter_name
        self.error = error
        super().__init__('Enforcement filter %s failed: %s: %s'
                         % (filter_name, type(error).__name__, error))


class ServiceUnavailable(Exception):
    """A service the decision needs (the ledger database, Placement, Nova,
    Keystone) is down or did not answer in time: the request was given
    up, nothing was decided; the message says why (the API answers
    503)."""


#: What an outage's message ends with.
GIVEN_UP = ('The request was given up and nothing was decided; try again '
            'later.')

#: SQLite's primary result codes that mean the ledger file cannot be
#: used now (not a bug in a statement): busy or locked, an I/O error, the
#: disk full, the file or its directory gone or unwritable (including
#: SQLITE_READONLY_DBMOVED: the file was removed while open).
_SQLITE_OUTAGES = frozenset((
    3,    # SQLITE_PERM
    5,    # SQLITE_BUSY
    6,    # SQLITE_LOCKED
    8,    # SQLITE_READONLY
    10,   # SQLITE_IOERR
    13,   # SQLITE_FULL
    14,   # SQLITE_CANTOPEN
))


def _causes(exc):
    """``exc`` and what it was raised from or while handling, in order."""
    seen = []
    while exc is not None and len(seen) < 16 and not any(
            exc is known for known in seen):
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def _sentence(text):
    text = ' '.join(str(text).split())
    return text if text.endswith('.') else text + '.'


def _database_outage(error, where):
    """The message for a database error that means the ledger cannot be
    used now, else None."""
    orig = getattr(error, 'orig', None)
    if getattr(error, 'connection_invalidated', False):
        lines = str(orig).strip().splitlines() or [type(orig).__name__]
        return 'Lost the connection to %s: %s' % (where, lines[0])
    # Python 3.11+ gives the (extended) result code.
    code = getattr(orig, 'sqlite_errorcode', None)
    if code is None or code & 0xff not in _SQLITE_OUTAGES:
        return None
    return '%s cannot be used: %s (%s)' % (
        where[:1].upper() + where[1:], orig,
        getattr(orig, 'sqlite_errorname', code))


def outage(exc, ledger=None):
    """The message of the :class:`ServiceUnavailable` that ``exc`` means,
    or None when it is no outage (a bug, a misconfiguration, a refusal
    the service must not get): the first of ``exc`` and its causes that
    says which service failed decides. ``ledger`` (a
    :class:`~placement_quota.ledger.store.Ledger`) names the database."""
    where = 'the ledger database'
    if ledger is not None:
        where = 'the ledger database at %s' % ledger.describe()
    for error in _causes(exc):
        message = None
        if isinstance(error, ledger_errors.LedgerUnavailable):
            message = _sentence(error)
            if 'try again' in message:
                return message
        elif isinstance(error, placement_client.AuthFailure):
            pass  # no token: Keystone down (an outage) or refusing us
        elif isinstance(error, placement_client.PlacementError):
            # A 4xx is Placement refusing what we sent: ours to fix.
            if not (isinstance(error, placement_client.Unavailable) or
                    error.status >= 500):
                return None
            message = _sentence(error)
        elif isinstance(error, nova_quotas.QuotaSourceError):
            if error.status is not None and error.status >= 500:
                message = _sentence(error)
            elif error.status is not None:
                return None
            # else: look at why (a connection error, or a configuration)
        elif isinstance(error, ks_exceptions.ConnectionError):
            message = _sentence(exc)
        elif isinstance(error, ks_exceptions.HttpError):
            if (error.http_status or 0) >= 500:
                message = _sentence(exc)
            else:
                return None
        elif isinstance(error, sa_exc.DBAPIError):
            found = _database_outage(error, where)
            if found is None:
                return None
            message = _sentence(found)
        if message is not None:
            return '%s %s' % (message, GIVEN_UP)
    return None


def _ledger_of(filter_):
    return getattr(filter_, 'ledger', None)


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


def _prepares(filter_):
    """Whether ``filter_`` has a prepare step of its own."""
    return type(filter_).prepare is not ledger_base.LedgerFilter.prepare


def _prepare(filter_, context, lease, flavors):
    with ledger_base.flavors_prefetched(flavors):
        return filter_.prepare(context, lease)


class FilterChain:
    """Run the enabled filters in order; used in-process and by the API."""

    def __init__(self, conf, filters=None, exemptions=None, services=None):
        self.conf = conf
        self.services = services
        self.filters = (load_filters(conf, services) if filters is None
                        else filters)
        try:
            self.exemptions = (exemptions_mod.Exemptions(conf)
                               if exemptions is None
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
            except (lease_model.PayloadError, ServiceUnavailable):
                raise
            except Exception as exc:
                message = outage(exc, _ledger_of(filter_))
                if message is not None:
                    LOG.error('Enforcement filter %s gave %s of project %s '
                              'up: %s', filter_.name, method,
                              context.project_id, message)
                    raise ServiceUnavailable(message) from exc
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
        flavors = None
        counting = [f for f in ledger_filters
                    if getattr(f, 'uses_flavors', False)]
        if kind != admission_mod.ON_END and counting:
            # Before any prepare step: PlacementCapacityFilter's needs the
            # flavors' sizes (ledger_base.lease_flavors finds them).
            flavors = self._prefetch(counting[0], kind, context, lease)
        for filter_ in ledger_filters:
            with self._preparing(filter_, kind, context):
                names = list(filter_.ledger_locks(context))
                if kind != admission_mod.ON_END:
                    names += filter_.lease_locks(lease)
            locks.extend(n for n in names if n not in locks)
        first = ledger_filters[0]
        prepared, host_resources = {}, concurrency.Outcome(None, None)
        if kind != admission_mod.ON_END:
            # The prepare steps and the hosts' read wait on other
            # services: side by side, before any lock is taken.
            preparing = [f for f in ledger_filters if _prepares(f)]
            calls = [functools.partial(_prepare, f, context, lease, flavors)
                     for f in preparing]
            read_hosts = functools.partial(ledger_base.prefetch_hosts,
                                           first.host_resources, lease)
            if lease.reservations_of(lease_model.HOST):
                calls.append(read_hosts)
            outcomes = concurrency.side_by_side(calls)
            if len(outcomes) > len(preparing):
                host_resources = outcomes.pop()
            else:  # no host to read: nothing waits
                host_resources = concurrency.Outcome(read_hosts(), None)
            failed = [(f, o.error) for f, o in zip(preparing, outcomes)
                      if o.error is not None]
            for filter_, error in failed[1:]:
                # Only the first is raised; the others would go unseen.
                LOG.warning('Enforcement filter %s also failed to prepare '
                            '%s of project %s: %s', filter_.name, kind,
                            context.project_id, error)
            for filter_, outcome in zip(preparing, outcomes):
                with self._preparing(filter_, kind, context):
                    prepared[filter_] = outcome.get()
        try:
            # The ledger takes the locks in its own order (ledger/db/locks.py)
            host_resources = host_resources.get()
            with ledger_base.ledger_denials():
                with admission_mod.admit(
                        first.ledger, kind, context, lease, current_lease,
                        locks, host_resources, prepared, flavors) as adm:
                    yield adm
            metrics.ADMISSIONS.labels('recorded').inc()
        except (base.EnforcementDenied, lease_model.PayloadError):
            metrics.ADMISSIONS.labels('denied').inc()
            raise
        except (FilterError, ServiceUnavailable):
            metrics.ADMISSIONS.labels('failed').inc()
            raise
        except Exception as exc:
            metrics.ADMISSIONS.labels('failed').inc()
            message = outage(exc, first.ledger)
            if message is not None:
                LOG.error('Gave %s of project %s up: %s', kind,
                          context.project_id, message)
                raise ServiceUnavailable(message) from exc
            LOG.exception('The ledger failed during %s for project %s', kind,
                          context.project_id)
            raise FilterError('ledger', exc) from exc

    @contextlib.contextmanager
    def _preparing(self, filter_, kind, context):
        """Errors of ``filter_`` before the ledger admission (its locks'
        names, its prepare step) as :class:`ServiceUnavailable` when a
        service is down, else :class:`FilterError`."""
        try:
            yield
        except (base.EnforcementDenied, lease_model.PayloadError):
            raise
        except Exception as exc:
            message = outage(exc, filter_.ledger)
            if message is not None:
                LOG.error('Enforcement filter %s gave %s of project %s '
                          'up before the ledger admission: %s',
                          filter_.name, kind, context.project_id, message)
                raise ServiceUnavailable(message) from exc
            LOG.exception('Enforcement filter %s cannot prepare its '
                          'ledger admission', filter_.name)
            raise FilterError(filter_.name, exc) from exc

    def _prefetch(self, filter_, kind, context, lease):
        """The flavors of ``lease`` (ledger_base.prefetch_flavors), Nova
        not answering turned into :class:`ServiceUnavailable`."""
        try:
            return ledger_base.prefetch_flavors(filter_, lease)
        except (base.EnforcementDenied, lease_model.PayloadError):
            raise
        except Exception as exc:
            message = outage(exc)
            if message is not None:
                LOG.error('Gave %s of project %s up reading its flavors: '
                          '%s', kind, context.project_id, message)
                raise ServiceUnavailable(message) from exc
            LOG.exception('Cannot read the flavors of a lease of project '
                          '%s', context.project_id)
            raise FilterError(filter_.name, exc) from exc

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
                admission_mod.record_denied(
                    self.ledger_filters[0].ledger, context, lease,
                    str(denial), denied_by=denial.filter_name)
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
        except (FilterError, ServiceUnavailable):
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
        """Run a parsed :class:`~placement_quota.lease.model.Request`."""
        if request.kind == 'check-create':
            self.check_create(request.context, request.lease)
        elif request.kind == 'check-update':
            self.check_update(request.context, request.current_lease,
                              request.lease)
        else:
            self.on_end(request.context, request.lease)
