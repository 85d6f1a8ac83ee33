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
"""The filter protocol of Blazar's "Flexible Reservation Usage Enforcement"
spec, compatible with Blazar's ``BaseFilter``.

A filter is a class with ``enforcement_opts`` (options registered under
``[enforcement]``), ``__init__(conf)`` and three methods:

* ``check_create(context, lease)``: raise :class:`EnforcementDenied` to deny;
* ``check_update(context, current_lease, lease)``: the same, for an update;
* ``on_end(context, lease)``: a notification; its errors are only logged.

The arguments may be our :class:`~placement_quota.lease.model.Context` and
:class:`~placement_quota.lease.model.Lease`, or the plain dicts Blazar's
``UsageEnforcement`` passes when it drives a filter in-process;
:meth:`BaseFilter.context` and :meth:`BaseFilter.lease` accept both.
"""

import abc

from oslo_config import cfg
from oslo_log import log as logging

from placement_quota.conf import enforcement as enforcement_conf
from placement_quota.lease import model as lease_model
from placement_quota.lease import amounts as accounting

LOG = logging.getLogger(__name__)


class EnforcementDenied(Exception):
    """A filter denied the request; ``str(exc)`` is shown to the user.

    Inside blazar-manager, use :mod:`placement_quota.filters.blazar_compat`,
    which turns it into the exceptions Blazar's manager expects.
    """

    code = http_status = 403

    def __init__(self, message, filter_name=None):
        self.message = message
        self.filter_name = filter_name
        super().__init__(message)

    def __str__(self):
        return self.message


class BaseFilter(metaclass=abc.ABCMeta):
    """Base class of enforcement filters."""

    #: oslo.config options of this filter, registered under [enforcement].
    enforcement_opts = []

    #: Whether asking this filter changes something outside this process
    #: (ExternalServiceFilter: the service it calls records what it is
    #: asked). A dry run (``placement-quota check`` without ``--record``)
    #: does not ask such a filter, and says so.
    side_effects = False

    def __init__(self, conf, services=None):
        """``services``: the :class:`~placement_quota.services.Services`
        of the chain (the ledger, Placement...); a filter that needs one
        and is given none makes its own."""
        self.conf = conf
        self.services = services
        self.register_opts(conf)
        # Read every option once so that a bad value stops the service at
        # start-up, naming the option, rather than failing each request.
        for opt in self.enforcement_opts:
            getattr(conf.enforcement, opt.dest)

    @classmethod
    def register_opts(cls, conf):
        register_opts(conf, cls.enforcement_opts, 'enforcement')

    @property
    def name(self):
        return type(self).__name__

    @staticmethod
    def context(value):
        return lease_model.Context.coerce(value)

    @staticmethod
    def lease(value, field='lease'):
        return lease_model.Lease.coerce(value, field)

    def inert(self):
        """Why this filter, as configured, can never deny a lease (it
        sets no limit, or has nowhere to ask), as a sentence; None when it
        can. Said at start: an enabled filter must not silently do
        nothing."""
        return None

    def any_option_set(self):
        """Whether any of this filter's ``enforcement_opts`` has a value
        other than 0 or empty (for a filter whose options are limits, 0
        meaning none: it sets a limit)."""
        return any(getattr(self.conf.enforcement, opt.dest)
                   for opt in self.enforcement_opts)

    def describe(self, probe):
        """The limits this filter enforces on ``probe``'s project (and on
        the user asking, ``probe.owner``), with what counts against them
        now and at the peak of ``probe``'s window: a list of
        :class:`~placement_quota.filters.measures.Measure`. ``probe`` is
        an :class:`~placement_quota.ledger.admission.Admission` of an
        empty lease over that window, on a ledger reader (no lock). A
        filter that sets no such limit describes none (the default)."""
        return []

    def deny(self, message):
        """Return the denial to raise, labelled with this filter's name."""
        return EnforcementDenied(message, filter_name=self.name)

    def deny_unaccounted(self, lease):
        """Deny ``lease`` when it holds a reservation type that
        :mod:`~placement_quota.lease.amounts` cannot count, unless
        ``[enforcement] unknown_reservation_types = allow``: a counting
        filter never counts a reservation as nothing silently."""
        found = accounting.unaccounted_types(lease)
        if not found:
            return
        register_opts(self.conf, [enforcement_conf.UNKNOWN_TYPES_OPT],
                      'enforcement')
        if self.conf.enforcement.unknown_reservation_types == 'allow':
            return
        raise self.deny(
            'The lease holds a reservation of type %s, which %s cannot '
            'account for (it counts %s); [enforcement] '
            'unknown_reservation_types = deny refuses such leases.'
            % (', '.join(found), self.name,
               ', '.join(accounting.KNOWN_TYPES)))

    @abc.abstractmethod
    def check_create(self, context, lease):
        """Deny a new lease by raising :class:`EnforcementDenied`."""

    @abc.abstractmethod
    def check_update(self, context, current_lease, lease):
        """Deny an update (``lease`` is the new state) by raising."""

    @abc.abstractmethod
    def on_end(self, context, lease):
        """Take note that a lease ended (or was deleted before starting)."""


def register_opts(conf, opts, group):
    """Register ``opts``; one already registered under the name is kept.

    When our filters run inside blazar-manager, Blazar's own filters may
    have registered the options both accept (``max_lease_duration``...)
    with other help texts; the value is what matters, so we share it.
    """
    for opt in opts:
        try:
            conf.register_opt(opt, group)
        except cfg.DuplicateOptError:
            LOG.debug('Option [%s] %s is already registered; sharing it.',
                      group, opt.dest)
