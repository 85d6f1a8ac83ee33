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
"""The facade the project API calls: :class:`SelfService`."""

import contextlib

from oslo_log import log as logging

from placement_quota.filters import chain as chain_mod
from placement_quota.filters import base
from placement_quota.lease import model as lease_model
from placement_quota.ledger import models
from placement_quota.ledger import store
from placement_quota.selfservice import extension as extension_mod
from placement_quota.selfservice import quote as quote_mod
from placement_quota.selfservice import view
from placement_quota import services as services_mod

LOG = logging.getLogger(__name__)

MAX_DAYS = 366


class NotFound(Exception):
    """No such lease in the project (404)."""

    http_status = 404

    def __init__(self, message, field, value):
        self.field = field
        self.value = value
        super().__init__(message)


class Conflict(Exception):
    """The lease cannot be asked about: it has ended (409)."""

    http_status = 409


def check_days(days, field='days'):
    """``days`` as an int from 1 to :data:`MAX_DAYS`, else a
    :class:`~placement_quota.lease.model.PayloadError` naming ``field``."""
    if isinstance(days, str):
        try:
            days = int(days, 10)
        except ValueError:
            raise lease_model.PayloadError(
                field, 'must be a whole number of days from 1 to %d'
                % MAX_DAYS, days) from None
    if isinstance(days, bool) or not isinstance(days, int) or \
            not 1 <= days <= MAX_DAYS:
        raise lease_model.PayloadError(
            field, 'must be a whole number of days from 1 to %d' % MAX_DAYS,
            days)
    return days


class SelfService:
    """What a project's members may read and ask, on the filters of
    ``chain`` (the :class:`~placement_quota.filters.chain.FilterChain` of
    the service) and its ledger."""

    def __init__(self, chain):
        self.chain = chain
        self.conf = chain.conf
        self.services = chain.services or services_mod.Services(chain.conf)

    @property
    def ledger(self):
        return self.services.ledger

    @contextlib.contextmanager
    def _guard(self, filter_):
        """A filter's failure while describing, as in a check: an outage
        is :class:`~placement_quota.filters.chain.ServiceUnavailable`
        (503), anything else :class:`~placement_quota.filters.chain.
        FilterError` (500)."""
        try:
            yield
        except (chain_mod.ServiceUnavailable, lease_model.PayloadError,
                base.EnforcementDenied):
            raise
        except Exception as exc:
            unavailable = chain_mod.ServiceUnavailable.of(exc)
            if unavailable is not None:
                raise unavailable from exc
            LOG.exception('Enforcement filter %s failed to describe its '
                          'limits', filter_.name)
            raise chain_mod.FilterError(filter_.name, exc) from exc

    @contextlib.contextmanager
    def _reader(self):
        try:
            with self.ledger.reader() as txn:
                yield txn
        except (chain_mod.ServiceUnavailable, chain_mod.FilterError,
                lease_model.PayloadError, NotFound, Conflict):
            raise
        except Exception as exc:
            unavailable = chain_mod.ServiceUnavailable.of(exc)
            if unavailable is not None:
                raise unavailable from exc
            raise

    def view(self, project_id, user_id, days=None):
        """The project's limits (every enabled filter's), its credits
        and the filters (see the project API reference)."""
        days = check_days(self.conf.self_service.usage_days
                          if days is None else days)
        found = view.limits(self.chain.filters, self._reader, project_id,
                            user_id, days, self._guard)
        found['exempt'] = project_id in self.chain.exemptions
        return found

    def usage(self, project_id, days=None):
        days = check_days(self.conf.self_service.usage_days
                          if days is None else days)
        with self._reader() as txn:
            return view.usage(txn, project_id, days)

    def leases(self, project_id):
        with self._reader() as txn:
            return view.leases(txn, project_id)

    def quote(self, context, body):
        """What each filter would answer to a create of ``body`` (Blazar's
        lease body) by ``context``, and its price; nothing recorded."""
        context = lease_model.Context.coerce(context)
        return quote_mod.quote(self.chain, context, body,
                               self.ledger.clock())

    def extension(self, context, lease_id):
        """The latest end date every filter allows an update of lease
        ``lease_id`` of ``context``'s project to have, now."""
        context = lease_model.Context.coerce(context)
        with self._reader() as txn:
            entry = txn.find(context.project_id, lease_id)
            now = txn.now
        if entry is None or entry.state in models.NOT_COUNTED:
            raise NotFound('Project %s has no lease %s in the ledger.'
                           % (context.project_id, lease_id),
                           'lease_id', lease_id)
        if store.state_at(entry, now) == models.TERMINATED:
            raise Conflict('Lease %s of project %s has ended (on %s); an '
                           'ended lease cannot be extended.'
                           % (lease_id, context.project_id,
                              entry.effective_end.strftime(
                                  '%Y-%m-%d %H:%M')))
        return extension_mod.extension(
            self.chain, context, entry, now,
            self.conf.self_service.extension_search_days)
