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
"""Read the two sides: Placement, the ledger, and Blazar when configured.

Placement, in as few calls as its API allows (it has no bulk inventory
read):

1. ``GET /resource_providers``: every provider with its parent and
   generation, once;
2. ``GET /resource_classes``: the ``CUSTOM_RESERVATION_*`` classes, once;
3. ``GET /resource_providers?required=COMPUTE_STATUS_DISABLED``: the
   disabled compute nodes, once (instead of the traits of each);
4. per reservation provider, concurrently (``max_concurrency``):
   ``GET .../inventories``, skipped when the provider's generation is 0
   (a provider never written has neither inventory nor allocation), and
   ``GET .../allocations`` only when it has an inventory (allocations need
   one).

So a cloud whose reservation providers are mostly idle costs 3 calls plus
about one per provider that ever held a reservation.
"""

import concurrent.futures

from blazarclient import client as blazar_client
from blazarclient import exception as blazar_exceptions
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from oslo_log import log as logging
import sqlalchemy as sa

from placement_quota.conf import reconcile as reconcile_conf
from placement_quota import errors as pq_errors
from placement_quota.ledger import models
from placement_quota.placement import client as placement_client
from placement_quota.placement import reservations as rsv
from placement_quota.reconcile import model as m
from placement_quota.reconcile import progress
from placement_quota import sessions

LOG = logging.getLogger(__name__)

REQUIRED_TRAITS = (1, 18)


def read_placement(client, max_concurrency=8, show_progress=True):
    """The :class:`~.model.PlacementState` of ``client``'s Placement."""
    before = client.calls
    providers = {}
    for rp in client.get('/resource_providers')['resource_providers']:
        providers[rp['name']] = m.Provider(
            uuid=rp['uuid'], name=rp['name'],
            parent_uuid=rp.get('parent_provider_uuid'),
            generation=rp['generation'])
    classes = {rc['name'] for rc in
               client.get('/resource_classes')['resource_classes']
               if rc['name'].startswith(rsv.CLASS_PREFIX)}
    disabled = set()
    if client.supports(REQUIRED_TRAITS):
        try:
            disabled = {rp['uuid'] for rp in client.get(
                '/resource_providers?required=%s' % m.DISABLED_TRAIT)[
                    'resource_providers']}
        except placement_client.PlacementError as exc:
            LOG.warning('Cannot list the disabled compute nodes: %s', exc)
    to_read = [rp for rp in providers.values() if rp.is_reservation_provider]
    for rp in to_read:
        rp.inventories = {}
    to_read = [rp for rp in to_read if rp.generation]
    bar = progress.bar(len(to_read), 'Reading reservation providers',
                       enabled=show_progress)
    try:
        with concurrent.futures.ThreadPoolExecutor(
                max(1, max_concurrency)) as pool:
            for future in concurrent.futures.as_completed(
                    [pool.submit(_read_provider, client, rp)
                     for rp in to_read]):
                future.result()
                bar.advance()
    finally:
        bar.close()
    return m.PlacementState(providers=providers, classes=classes,
                            disabled=disabled, calls=client.calls - before)


def _read_provider(client, rp):
    try:
        rp.inventories = client.get('/resource_providers/%s/inventories'
                                    % rp.uuid)['inventories']
        if not rp.inventories:
            return
        allocations = client.get('/resource_providers/%s/allocations'
                                 % rp.uuid)['allocations']
    except placement_client.NotFound:
        rp.inventories = {}   # deleted meanwhile
        return
    for consumer, body in sorted(allocations.items()):
        for name, used in body['resources'].items():
            rp.usages[name] = rp.usages.get(name, 0) + used
            rp.consumers.setdefault(name, []).append(consumer)


def read_ledger(ledger):
    """``(reservations, entries)``: the reservations of every entry that
    counts (neither denied nor abandoned), and every entry that is not
    denied (an abandoned one may still be matched to a lease Blazar did
    create)."""
    t = models.leases
    query = sa.select(t.c.id, t.c.project_id, t.c.lease_id,
                      t.c.provisional_key, t.c.shape_key, t.c.name,
                      t.c.start_date, t.c.end_date, t.c.effective_end,
                      t.c.state, t.c.lease, t.c.charged, t.c.hourly_rate,
                      t.c.created_at).where(t.c.state != models.DENIED)
    reservations, entries = [], []
    with ledger.engine.connect() as connection:
        for row in connection.execute(query):
            reservations.extend(m.reservations_of(row))
            entries.append(m.entry_of(row))
    return reservations, entries


class BlazarReader:
    """Blazar's lease list, through python-blazarclient.

    Blazar's own client (``blazarclient.client.Client``, API v1) on a
    keystoneauth session of ``[blazar]`` (service type ``reservation``,
    the adapter options for region, interface and endpoint); its one call,
    ``lease.list()`` (``GET /leases``), answers every project's leases to
    an admin, with their reservations (IDs and status). Tested against the
    real Blazar API (``blazar`` from PyPI) checking tokens with the real
    Keystone.
    """

    def __init__(self, client, description):
        self.client = client
        self.description = description

    @classmethod
    def from_conf(cls, conf):
        """None unless ``[blazar]`` has an ``auth_type`` or an
        ``endpoint_override``."""
        group = reconcile_conf.BLAZAR_GROUP.name
        options = conf[group]
        auth = ks_loading.load_auth_from_conf_options(conf, group)
        if auth is None and not options.endpoint_override:
            return None
        session = ks_loading.load_session_from_conf_options(conf, group,
                                                            auth=auth)
        adapter = ks_loading.load_adapter_from_conf_options(
            conf, group, session=session, auth=auth)
        client = blazar_client.Client(
            '1', session=session, service_type=adapter.service_type,
            service_name=adapter.service_name, interface=adapter.interface,
            region_name=adapter.region_name,
            endpoint_override=adapter.endpoint_override)
        return cls(client, options.endpoint_override or
                   'Blazar of the service catalog')

    def leases(self):
        """Every lease Blazar has, as its API shows them.

        :raises BlazarError: when Blazar cannot be asked.
        """
        try:
            leases = self.client.lease.list()
        except (ks_exceptions.Unauthorized,
                ks_exceptions.AuthorizationFailure) as exc:
            raise BlazarError('Cannot authenticate for Blazar at %s with '
                              'the [blazar] credentials: %s'
                              % (self.description, exc))
        except ks_exceptions.ClientException as exc:
            cls = (BlazarUnavailable if sessions.is_outage(exc)
                   else BlazarError)
            raise cls('Cannot reach Blazar at %s: %s'
                      % (self.description, exc))
        except blazar_exceptions.BlazarClientException as exc:
            raise BlazarError('Blazar at %s refused GET /leases (%s): %s'
                              % (self.description, exc.kwargs.get('code'),
                                 exc))
        except (ValueError, KeyError, TypeError) as exc:
            raise BlazarError('Blazar at %s answered GET /leases without a '
                              'lease list: %s' % (self.description, exc))
        if not isinstance(leases, list):
            raise BlazarError('Blazar at %s answered GET /leases without a '
                              'lease list' % self.description)
        return leases


class BlazarError(pq_errors.DependencyError):
    """Blazar cannot be asked, or answered what is not a lease list."""


class BlazarUnavailable(BlazarError, pq_errors.DependencyUnavailable):
    """Blazar (or Keystone, for its token) is down or did not answer."""

    service = 'blazar'
