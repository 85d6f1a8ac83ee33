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
"""Our filters, as blazar-manager runs them in-process.

Each class here is one of our filters whose denials are Blazar's
exceptions, chosen for what blazar-manager does with each:

``check_create``
    :class:`EnforcementDenied`, a ``blazar.exceptions.NotAuthorized``:
    the manager's ``create_lease`` catches it, no lease is created, and
    the user gets a 403 with our message.
``check_update``
    ``blazar.enforcement.exceptions.ExternalServiceFilterException`` with
    our message: the manager's ``update_lease`` gives the lease its status
    back (ACTIVE, PENDING...) only for an exception whose exact type it
    lists as non-fatal, and sets it to ERROR for any other, a subclass of
    a listed one included. This listed type is the one Blazar's own
    ExternalServiceFilter raises for a denial from our service, so the
    user gets the same answer (400, our message) whichever way our
    filters run.
``on_end``
    never raises a denial: it is logged. Blazar ends or deletes the lease
    whatever enforcement says (it logs anything on-end raises).

A filter that cannot decide (:data:`FAILURES`: the ledger, Placement,
Nova or Keystone down, a payload it cannot read, a filter that failed)
raises ``ExternalServiceFilterException`` with its reason on a create or
an update, as Blazar's ExternalServiceFilter does when our service
answers 400 or 503: no lease is created, an updated lease keeps its
status.

Import this module only where Blazar is installed.
:func:`placement_quota.blazar.enforcement.install` puts :data:`all_filters`
into Blazar's filter namespace (what ``placement-quota-blazar-manager``
does before starting blazar-manager).
"""

import threading

from blazar.enforcement import exceptions as enforcement_exceptions
from blazar.enforcement.filters import external_service_filter
from blazar.enforcement.filters import max_lease_duration_filter
from blazar import exceptions as blazar_exceptions
from oslo_config import cfg
from oslo_log import log as logging

from placement_quota import conf as pq_conf
from placement_quota import errors as pq_errors
from placement_quota import filters
from placement_quota.filters import base
from placement_quota.filters import chain as chain_mod
from placement_quota.lease import errors as lease_errors
from placement_quota import services as services_mod

LOG = logging.getLogger(__name__)


class EnforcementDenied(blazar_exceptions.NotAuthorized):
    """A denial of a create by one of our filters, as Blazar's
    NotAuthorized."""

    msg_fmt = '%(message)s'


def _denied_create(denial):
    return EnforcementDenied(message=str(denial))


def _denied_update(denial):
    # The exact type update_lease lists as non-fatal (see the module's
    # documentation): a subclass would put the lease into ERROR.
    return enforcement_exceptions.ExternalServiceFilterException(
        message=str(denial))


#: What our filters raise when they cannot decide, rather than deny: a
#: service they read is down or answered wrongly, a payload they cannot
#: read, a filter that failed.
FAILURES = (pq_errors.DependencyError, lease_errors.PayloadError,
            chain_mod.FilterError)


def _failed(failure):
    # Not a denial, but what Blazar's ExternalServiceFilter raises when
    # our service answers 400 or 503: the lease keeps its status on an
    # update, nothing is created on a create, and the user reads why.
    return enforcement_exceptions.ExternalServiceFilterException(
        message=str(failure))


def _translating(method, translate):
    def call(self, *args):
        try:
            return method(self, *args)
        except base.EnforcementDenied as denial:
            raise translate(denial) from denial
        except FAILURES as failure:
            LOG.warning('%s could not decide (%s): %s', type(self).__name__,
                        method.__name__, failure)
            raise _failed(failure) from failure
    call.__name__ = method.__name__
    call.__doc__ = method.__doc__
    return call


def _translating_with(translate):
    """A decorator: :func:`_translating` with ``translate``."""
    return lambda method: _translating(method, translate)


def _logging_denials(method):
    def call(self, *args):
        try:
            return method(self, *args)
        except base.EnforcementDenied as denial:
            LOG.warning('%s denied the end of a lease, which Blazar ends '
                        'anyway: %s', type(self).__name__, denial)
    call.__name__ = method.__name__
    call.__doc__ = method.__doc__
    return call


# Options both Blazar's filters and ours read (max_lease_duration,
# external_service_base_endpoint...). Inside blazar-manager they must be
# Blazar's very Opt objects: oslo.config refuses a second, different
# definition of a name, and Blazar's filters do not tolerate that.
_BLAZAR_OPTS = {
    opt.dest: opt for opt in (
        external_service_filter.ExternalServiceFilter.enforcement_opts +
        max_lease_duration_filter.MaxLeaseDurationFilter.enforcement_opts)}


class _ManagerServices:
    """The one :class:`~placement_quota.services.Services` of
    blazar-manager: Blazar builds each filter with its global ``CONF``
    alone, and all of them share one ledger and one Placement client."""

    def __init__(self):
        self._lock = threading.Lock()
        self._services = None

    def __call__(self, conf):
        with self._lock:
            if self._services is None or self._services.conf is not conf:
                self._services = services_mod.Services(conf)
            return self._services


manager_services = _ManagerServices()


def _init(cls):
    def __init__(self, conf, services=None):
        cls.__init__(self, conf, services if services is not None
                     else manager_services(conf))
    return __init__


def for_blazar(cls):
    """A subclass of filter ``cls`` whose denials and shared options are
    Blazar's."""
    methods = {
        'check_create': _translating(cls.check_create, _denied_create),
        'check_update': _translating(cls.check_update, _denied_update),
        'on_end': _logging_denials(cls.on_end),
    }
    methods['__init__'] = _init(cls)
    methods['enforcement_opts'] = [_BLAZAR_OPTS.get(opt.dest, opt)
                                   for opt in cls.enforcement_opts]
    methods['__doc__'] = cls.__doc__
    methods['__module__'] = __name__
    return type(cls.__name__, (cls,), methods)


#: Where PlacementQuotaChainFilter reads our configuration by default.
DEFAULT_CONFIG_FILE = '/etc/placement-quota/placement-quota.conf'


class PlacementQuotaChainFilter:
    """Our whole enforcement chain, as one Blazar filter.

    Blazar calls each filter it loads on its own, so our ledger filters
    enabled one by one in blazar-manager would each admit and record the
    lease alone. This one runs the chain of placement-quota's own
    configuration file (``[enforcement] placement_quota_config_file`` of
    blazar.conf; its ``[enforcement] enabled_filters`` and every other
    option of ours there): every filter decides on one locked ledger
    view and the lease is recorded once, as ``placement-quota serve``
    does -- without a service to run. Its denials are Blazar's exceptions
    as for every class here.
    """

    enforcement_opts = [
        cfg.StrOpt('placement_quota_config_file',
                   default=DEFAULT_CONFIG_FILE,
                   help='placement-quota\'s configuration file, whose '
                        'enforcement chain PlacementQuotaChainFilter runs '
                        'inside blazar-manager (read by that filter '
                        'only).'),
    ]

    def __init__(self, conf=None, chain=None):
        self.conf = conf
        self.register_opts(conf)
        if chain is None:
            ours = pq_conf.new_config(
                [], config_files=[
                    conf.enforcement.placement_quota_config_file])
            chain = chain_mod.FilterChain(ours)
        #: The :class:`~placement_quota.filters.chain.FilterChain` run.
        self.chain = chain

    @classmethod
    def register_opts(cls, conf):
        for opt in cls.enforcement_opts:
            conf.register_opt(opt, 'enforcement')

    @_translating_with(_denied_create)
    def check_create(self, context, lease):
        self.chain.check_create(context, lease)

    @_translating_with(_denied_update)
    def check_update(self, context, current_lease, lease):
        self.chain.check_update(context, current_lease, lease)

    @_logging_denials
    def on_end(self, context, lease):
        self.chain.on_end(context, lease)


all_filters = [for_blazar(cls) for cls in filters.all_filters] + [
    PlacementQuotaChainFilter]
globals().update({cls.__name__: cls for cls in all_filters})
