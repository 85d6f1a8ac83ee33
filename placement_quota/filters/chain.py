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

When filters use the ledger, the chain admits them together
(:mod:`placement_quota.filters.admit`): their prepare steps (what they
read from Placement, and the reserved hosts' resources) first, then one
ledger admission (one locked transaction) around their checks: nothing
waits for Placement while the ledger is locked.

A service the decision needs that is down or does not answer in time is
an outage, not a bug: its adapter raises a
:class:`~placement_quota.errors.DependencyUnavailable` (the ledger
database not answering, locked past its timeout, full, read-only or gone;
Placement refusing connections, not answering within ``[placement]
timeout``, answering 5xx, or no token from Keystone; Nova's quota sets or
flavors, or Keystone's limits, unreachable or 5xx), and the chain raises
:class:`ServiceUnavailable` (the API answers 503 with the reason); any
other failure is :class:`FilterError` (500). doc/source/failures.rst
lists every fault with its answer and time bound.
"""

import contextlib
import importlib
import inspect

from oslo_config import cfg
from oslo_log import log as logging
import stevedore

from placement_quota.conf import enforcement as enforcement_conf
from placement_quota import errors
from placement_quota.filters import admit as admit_mod
from placement_quota.filters import base
from placement_quota.filters import exemptions as exemptions_mod
from placement_quota.lease import model as lease_model
from placement_quota.ledger import admission as admission_mod
from placement_quota import metrics
from placement_quota import services as services_mod

LOG = logging.getLogger(__name__)


class FilterLoadError(Exception):
    """The configured filters cannot be loaded; says what was searched."""


class FilterError(Exception):
    """A filter failed (not denied): a bug behind it (500)."""

    http_status = 500

    def __init__(self, filter_name, error):
        self.filter_name = filter_name
        self.error = error
        super().__init__('Enforcement filter %s failed: %s: %s'
                         % (filter_name, type(error).__name__, error))


class ServiceUnavailable(errors.DependencyUnavailable):
    """A service the decision needs (the ledger database, Placement, Nova,
    Keystone) is down or did not answer in time: the request was given
    up, nothing was decided; the message says why (the API answers
    503)."""

    @classmethod
    def of(cls, exc):
        """The ServiceUnavailable the outage ``exc`` is
        (:func:`placement_quota.errors.outage`), or None."""
        found = errors.unavailable(exc)
        if found is None:
            return None
        return cls(errors.outage(found), service=found.service)


#: What an outage's message ends with.
GIVEN_UP = errors.GIVEN_UP


def outage(exc):
    """The message of the :class:`ServiceUnavailable` that ``exc`` means,
    or None when it is no outage
    (:func:`placement_quota.errors.outage`)."""
    return errors.outage(exc)


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


def load_filters(conf, services):
    """Instantiate the enabled filters, in order, or say why not.

    ``services`` (a :class:`~placement_quota.services.Services`) is given
    to every filter whose ``__init__`` takes it: all of them share one
    ledger and one Placement client.
    """
    available = available_filter_classes(conf)
    register_filter_opts(conf, available.values())
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


def _services_of(filters):
    """The one Services the given ledger filters share, or None."""
    found = {id(f.services): f.services for f in filters
             if admit_mod.uses_ledger(f)}
    if len(found) > 1:
        raise FilterLoadError('The ledger filters of a chain must share one '
                              'Services (one ledger); these have %d.'
                              % len(found))
    return next(iter(found.values()), None)


class FilterChain:
    """Run the enabled filters in order; used in-process and by the API.

    ``services``: the :class:`~placement_quota.services.Services` the
    filters are loaded with and admitted on. Without it, the chain makes
    the Services of ``conf`` (or, given ``filters``, uses the one they
    were made with).

    ``record=False`` makes a dry chain (``placement-quota check`` without
    ``--record``): it decides exactly as the service does, on the same
    locked ledger view, then rolls the admission back -- no entry, no
    charge, no denial kept, no lock held after -- and does not ask the
    filters with ``side_effects`` (:attr:`not_asked`).
    """

    def __init__(self, conf, filters=None, exemptions=None, services=None,
                 record=True):
        self.conf = conf
        self.record = record
        if filters is None:
            if services is None:
                services = services_mod.Services(conf)
            filters = load_filters(conf, services)
        elif services is None:
            services = _services_of(filters)
        self.services = services
        self.filters = filters
        try:
            self.exemptions = (exemptions_mod.Exemptions(conf)
                               if exemptions is None
                               else exemptions)
        except ValueError as exc:
            raise FilterLoadError(str(exc))

    @property
    def names(self):
        return [f.name for f in self.filters]

    @property
    def ledger_filters(self):
        return [f for f in self.filters if admit_mod.uses_ledger(f)]

    @property
    def not_asked(self):
        """The filters a dry chain does not ask (asking changes something
        elsewhere: ExternalServiceFilter's service records it)."""
        if self.record:
            return []
        return [f for f in self.filters if getattr(f, 'side_effects', False)]

    def _asked(self, dry=False):
        """The filters asked: all, but those with ``side_effects`` when
        the chain is dry (or this admission, ``dry``)."""
        if dry and self.record:
            return [f for f in self.filters
                    if not getattr(f, 'side_effects', False)]
        skipped = self.not_asked
        return [f for f in self.filters if f not in skipped]

    def _exempt(self, context):
        if context.project_id in self.exemptions:
            LOG.debug('Project %s is exempted from enforcement',
                      context.project_id)
            return True
        return False

    def _run(self, method, context, leases, adm, allowed=None,
             outcomes=None):
        """Each filter's ``method`` in order (the ledger filters'
        ``check`` on the admission ``adm``): the first denial stops --
        unless ``outcomes`` (a dict) is given: then every filter is asked
        (those with ``side_effects`` excepted), and ``outcomes[filter]``
        is its denial, or None when it allowed.

        ``allowed`` (a set kept across the attempts of one admission) holds
        the filters that do not use the ledger and allowed the lease
        already: an admission run again after a conflict does not ask them
        again (their answer does not depend on the ledger, and asking may
        change something elsewhere). A conflict passes as it is, to be
        run again."""
        for filter_ in self._asked(dry=outcomes is not None):
            if allowed is not None and filter_ in allowed:
                continue
            try:
                if adm is not None and admit_mod.uses_ledger(filter_):
                    filter_.check(adm)
                else:
                    getattr(filter_, method)(context, *leases)
                    if allowed is not None:
                        allowed.add(filter_)
                if outcomes is not None:
                    outcomes[filter_] = None
            except base.EnforcementDenied as denial:
                denial.filter_name = denial.filter_name or filter_.name
                if outcomes is not None:
                    outcomes[filter_] = denial
                    continue
                LOG.info('%s denied %s for project %s: %s', filter_.name,
                         method, context.project_id, denial)
                raise
            except (lease_model.PayloadError, ServiceUnavailable):
                raise
            except Exception as exc:
                if admit_mod.conflict(exc) is not None:
                    raise   # the admission runs again
                unavailable = ServiceUnavailable.of(exc)
                if unavailable is not None:
                    LOG.error('Enforcement filter %s gave %s of project %s '
                              'up: %s', filter_.name, method,
                              context.project_id, unavailable)
                    raise unavailable from exc
                LOG.exception('Enforcement filter %s failed in %s',
                              filter_.name, method)
                raise FilterError(filter_.name, exc) from exc

    def _admission(self, kind, context, lease, decide, current_lease=None,
                   record=None, plan=None):
        """``decide(admission)`` in one ledger admission around the whole
        chain, when a filter uses the ledger (else ``decide(None)``): the
        filters decide on one locked view, and the lease is recorded once,
        after all of them allowed it (unless the chain, or ``record=False``,
        makes it dry). A conflict runs ``decide`` again
        (:func:`~placement_quota.filters.admit.run`). ``plan``: the
        :class:`~placement_quota.filters.admit.Plan` of this lease, made
        now when None. Returns the plan used (None without ledger
        filters)."""
        if not self.ledger_filters:
            decide(None)
            return None
        record = self.record if record is None else record
        if plan is None:
            plan = admit_mod.plan(self.services, self.ledger_filters, kind,
                                  context, lease, guard=self._guard)
        try:
            admit_mod.run(self.services, plan, kind, context, lease, decide,
                          current_lease, record)
            if record:
                metrics.ADMISSIONS.labels('recorded').inc()
        except (base.EnforcementDenied, lease_model.PayloadError):
            metrics.ADMISSIONS.labels('denied').inc()
            raise
        except (FilterError, ServiceUnavailable):
            metrics.ADMISSIONS.labels('failed').inc()
            raise
        except Exception as exc:
            metrics.ADMISSIONS.labels('failed').inc()
            unavailable = ServiceUnavailable.of(exc)
            if unavailable is not None:
                LOG.error('Gave %s of project %s up: %s', kind,
                          context.project_id, unavailable)
                raise unavailable from exc
            LOG.exception('The ledger failed during %s for project %s', kind,
                          context.project_id)
            raise FilterError('ledger', exc) from exc
        return plan

    @contextlib.contextmanager
    def _guard(self, filter_, kind, context, step):
        """Errors of ``filter_``'s part of the plan, before the ledger
        admission (the flavors it counts, its locks' names, its prepare
        step), as :class:`ServiceUnavailable` when a service is down, else
        :class:`FilterError`."""
        try:
            yield
        except (base.EnforcementDenied, lease_model.PayloadError):
            raise
        except Exception as exc:
            unavailable = ServiceUnavailable.of(exc)
            if unavailable is not None:
                if step == 'flavors':
                    LOG.error('Gave %s of project %s up reading its '
                              'flavors: %s', kind, context.project_id,
                              unavailable)
                else:
                    LOG.error('Enforcement filter %s gave %s of project %s '
                              'up before the ledger admission: %s',
                              filter_.name, kind, context.project_id,
                              unavailable)
                raise unavailable from exc
            if step == 'flavors':
                LOG.exception('Cannot read the flavors of a lease of '
                              'project %s', context.project_id)
            else:
                LOG.exception('Enforcement filter %s cannot prepare its '
                              'ledger admission', filter_.name)
            raise FilterError(filter_.name, exc) from exc

    def check_create(self, context, lease):
        context = lease_model.Context.coerce(context)
        lease = lease_model.Lease.coerce(lease)
        if self._exempt(context):
            return
        allowed = set()
        try:
            self._admission(
                admission_mod.CHECK_CREATE, context, lease,
                lambda adm: self._run('check_create', context, (lease,),
                                      adm, allowed))
        except base.EnforcementDenied as denial:
            if self.ledger_filters and self.record:
                admission_mod.record_denied(
                    self.services.ledger, context, lease, str(denial),
                    denied_by=denial.filter_name)
            raise

    def check_update(self, context, current_lease, lease):
        context = lease_model.Context.coerce(context)
        current_lease = lease_model.Lease.coerce(current_lease,
                                                 'current_lease')
        lease = lease_model.Lease.coerce(lease)
        if self._exempt(context):
            return
        allowed = set()
        self._admission(
            admission_mod.CHECK_UPDATE, context, lease,
            lambda adm: self._run('check_update', context,
                                  (current_lease, lease), adm, allowed),
            current_lease)

    def on_end(self, context, lease):
        context = lease_model.Context.coerce(context)
        lease = lease_model.Lease.coerce(lease)
        if self._exempt(context):
            return
        told = set()
        try:
            self._admission(
                admission_mod.ON_END, context, lease,
                lambda adm: self._notify_end(context, lease, adm, told))
        except (FilterError, ServiceUnavailable):
            LOG.error('The ledger could not close the lease of project %s; '
                      'the lease ends anyway.', context.project_id)

    def _notify_end(self, context, lease, adm, told):
        """Each filter's end (the ledger filters' ``end`` on ``adm``);
        ``told`` (kept across the attempts of one admission) holds the
        other filters already told, which a re-run does not tell again."""
        for filter_ in self._asked():
            if filter_ in told:
                continue
            try:
                if adm is not None and admit_mod.uses_ledger(filter_):
                    filter_.end(adm)
                else:
                    filter_.on_end(context, lease)
                    told.add(filter_)
            except Exception as exc:
                if admit_mod.conflict(exc) is not None:
                    raise   # the admission runs again
                LOG.exception('Enforcement filter %s failed in on_end for '
                              'project %s; the lease ends anyway.',
                              filter_.name, context.project_id)

    def evaluate(self, kind, context, lease, current_lease=None,
                 inspect=None, plan=None):
        """Ask every filter about a create (``kind`` CHECK_CREATE) or an
        update of ``lease``, in one dry admission, and record nothing:
        an :class:`Evaluation`. Unlike a check, a denial does not stop
        the others from being asked; the decision is the first denial, in
        the chain's order, as a check would make it. Filters with
        ``side_effects`` are not asked. ``inspect(admission)``, when
        given, is called on the admission after the filters (its answer
        is :attr:`Evaluation.found`). Outages and failures raise as in a
        check; a bad payload raises :class:`~placement_quota.lease.model.
        PayloadError`. ``plan``: the :class:`~placement_quota.filters.
        admit.Plan` of an earlier evaluation of a lease that differs only
        in its dates (what is read before the locks does not depend on
        them), to use instead of planning again (:attr:`Evaluation.plan`
        is the one used)."""
        context = lease_model.Context.coerce(context)
        lease = lease_model.Lease.coerce(lease)
        if current_lease is not None:
            current_lease = lease_model.Lease.coerce(current_lease,
                                                     'current_lease')
        if self._exempt(context):
            return Evaluation(self.filters, {}, exempt=True)
        if kind == admission_mod.CHECK_CREATE:
            method, leases = 'check_create', (lease,)
        else:
            method, leases = 'check_update', (current_lease, lease)
        outcomes, allowed, found = {}, set(), {}

        def decide(adm):
            self._run(method, context, leases, adm, allowed, outcomes)
            if inspect is not None and adm is not None:
                found['found'] = inspect(adm)

        try:
            plan = self._admission(kind, context, lease, decide,
                                   current_lease, record=False, plan=plan)
        except base.EnforcementDenied as denial:
            # Refused before the filters were asked on the ledger (a
            # flavor that cannot be counted; an update of an ended lease).
            by = next((f for f in self.filters
                       if f.name == denial.filter_name), None)
            return Evaluation(self.filters, outcomes, refused=(by, denial))
        return Evaluation(self.filters, outcomes,
                          found=found.get('found'), plan=plan)

    def run(self, request):
        """Run a parsed :class:`~placement_quota.lease.model.Request`."""
        if request.kind == 'check-create':
            self.check_create(request.context, request.lease)
        elif request.kind == 'check-update':
            self.check_update(request.context, request.current_lease,
                              request.lease)
        else:
            self.on_end(request.context, request.lease)


#: An outcome of :class:`Evaluation`: the filter was not asked.
NOT_ASKED = object()


class Evaluation:
    """What every filter of a chain answered about one lease
    (:meth:`FilterChain.evaluate`)."""

    def __init__(self, filters, outcomes, exempt=False, refused=None,
                 found=None, plan=None):
        self.filters = list(filters)
        #: The admission's :class:`~placement_quota.filters.admit.Plan`
        #: (None: no ledger filter, or refused before one was made).
        self.plan = plan
        self.exempt = exempt
        #: ``(filter or None, denial)`` when the admission refused the
        #: lease before asking the filters on the ledger.
        self.refused = refused
        #: What the evaluation's ``inspect`` found.
        self.found = found
        self.outcomes = {f: outcomes.get(f, NOT_ASKED) for f in filters}
        if refused is not None and refused[0] is not None:
            self.outcomes[refused[0]] = refused[1]

    @property
    def denial(self):
        """The first denial, in the chain's order (what a check would
        raise), or None when every filter asked allowed."""
        if self.refused is not None:
            return self.refused[1]
        for filter_ in self.filters:
            outcome = self.outcomes[filter_]
            if isinstance(outcome, base.EnforcementDenied):
                return outcome
        return None

    @property
    def allowed(self):
        return self.denial is None
