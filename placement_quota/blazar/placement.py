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
"""What Blazar's instance and flavor plugins write to Placement, in batches.

:class:`BatchingPlacementClient` stands in for Blazar's
``BlazarPlacementClient`` (``blazar.utils.openstack.placement``) in the
plugins. Its reads are Blazar's own; the writes the plugins make
(``create_reservation_class``, ``update_reservation_inventory``,
``delete_reservation_inventory``, ``delete_reservation_class``) are
collected inside :meth:`BatchingPlacementClient.batch` and applied when the
batch ends, through :class:`~placement_quota.placement.reservations.
Transitions`: every host of a reservation in one atomic ``POST
/reshaper``. A batch whose body raises writes nothing. Outside a batch a
write is applied at once, as a batch of one.

All plugins of a process share one :class:`Transitions` (so one cache of
the reservation providers' generations and inventories), built on first
use from Blazar's own configuration: its service user (``[DEFAULT]
os_admin_*``, ``os_auth_*``), ``os_region_name``, ``cafile`` and
``[placement] endpoint_type``, with one keystoneauth session for every
call (Blazar's client builds a new session, and fetches a new token, for
each request).
"""

import collections
import contextlib
import threading

from blazar.utils.openstack import base as blazar_base
from blazar.utils.openstack import exceptions as openstack_ex
from blazar.utils.openstack import placement as blazar_placement
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session
from oslo_config import cfg
from oslo_log import log as logging

from placement_quota.placement import client as placement_client
from placement_quota.placement import reservations

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

_lock = threading.Lock()
_shared = {}


def auth_url(conf):
    """The Keystone URL Blazar's own clients build from its options."""
    url = '%s://%s:%s' % (conf.os_auth_protocol,
                          blazar_base.get_os_auth_host(conf),
                          conf.os_auth_port)
    if conf.os_auth_prefix:
        url += '/%s' % conf.os_auth_prefix
    if conf.os_auth_version:
        url += '/%s' % conf.os_auth_version
    return url


def client_from_blazar_conf(conf=CONF):
    """A :class:`PlacementClient` acting as Blazar's service user, with the
    endpoint from Keystone's catalog as Blazar finds it."""
    auth = v3.Password(auth_url=auth_url(conf),
                       username=conf.os_admin_username,
                       password=conf.os_admin_password,
                       project_name=conf.os_admin_project_name,
                       user_domain_name=conf.os_admin_user_domain_name,
                       project_domain_name=conf.os_admin_project_domain_name)
    session = ks_session.Session(auth=auth, verify=conf.cafile or True)
    adapter = ks_adapter.Adapter(
        session, service_type='placement',
        interface=conf.placement.endpoint_type,
        region_name=conf.os_region_name, raise_exc=False,
        additional_headers={'accept': 'application/json'})
    return placement_client.PlacementClient(adapter, 'Blazar\'s catalog')


def shared_transitions():
    """This process's :class:`Transitions` (built on first call)."""
    with _lock:
        if 'transitions' not in _shared:
            _shared['transitions'] = reservations.Transitions(
                client_from_blazar_conf())
        return _shared['transitions']


class _Batch:
    """Writes collected for the reservations of one lease event."""

    def __init__(self):
        # reservation id -> {host: ('set' | 'add', n) or ('delete', None)}
        self.hosts = collections.OrderedDict()
        self.create_class = set()
        self.delete_class = []
        self.prepare = collections.OrderedDict()

    def host_op(self, reservation_id, host, op, number=None):
        ops = self.hosts.setdefault(reservation_id,
                                    collections.OrderedDict())
        if op == 'add' and host in ops and ops[host][0] != 'delete':
            op, number = ops[host][0], ops[host][1] + number
        ops[host] = (op, number)

    def empty(self):
        return not (self.hosts or self.create_class or self.delete_class
                    or self.prepare)


class BatchingPlacementClient:
    """Blazar's ``BlazarPlacementClient`` for the instance and flavor
    plugins, whose reservation writes go through :class:`Transitions`."""

    def __init__(self, stock=None, transitions=None):
        #: Blazar's own client: every read the plugins make.
        self.stock = stock or blazar_placement.BlazarPlacementClient()
        self._transitions = transitions
        self._local = threading.local()

    def __getattr__(self, name):
        # Reads (list_resource_providers, get_inventory...): Blazar's own.
        return getattr(self.stock, name)

    @property
    def transitions(self):
        if self._transitions is None:
            self._transitions = shared_transitions()
        return self._transitions

    @contextlib.contextmanager
    def batch(self):
        """Collect the writes made inside; apply them at the end, unless
        the body raised. Nested batches join the outer one."""
        if getattr(self._local, 'batch', None) is not None:
            yield self._local.batch
            return
        self._local.batch = batch = _Batch()
        try:
            yield batch
        finally:
            self._local.batch = None
        self._flush(batch)

    @contextlib.contextmanager
    def _one(self):
        with self.batch() as batch:
            yield batch

    # --- what the plugins call ----------------------------------------------

    def create_reservation_class(self, reservation_uuid):
        with self._one() as batch:
            batch.create_class.add(reservation_uuid)

    def delete_reservation_class(self, reservation_uuid):
        with self._one() as batch:
            batch.delete_class.append(reservation_uuid)

    def update_reservation_inventory(self, host_name, reserv_uuid, num,
                                     additional=False):
        with self._one() as batch:
            batch.host_op(reserv_uuid, host_name,
                          'add' if additional else 'set', num)

    def delete_reservation_inventory(self, host_name, reserv_uuid):
        with self._one() as batch:
            batch.host_op(reserv_uuid, host_name, 'delete')

    def prepare(self, reservation_uuid, host_names):
        """Read what we do not know yet of ``host_names``' reservation
        providers now (at reservation creation), so that the lease's start
        and end need no read of them."""
        with self._one() as batch:
            batch.prepare.setdefault(reservation_uuid, []).extend(host_names)

    # --- applying a batch ---------------------------------------------------

    def _flush(self, batch):
        if batch.empty():
            return
        try:
            self._apply(batch)
        except reservations.HostNotFound as exc:
            raise openstack_ex.ResourceProviderNotFound(
                resource_provider=str(exc)) from exc
        except (placement_client.PlacementError,
                reservations.ReservationError) as exc:
            LOG.error('Placement refused the reservation writes: %s', exc)
            raise openstack_ex.InventoryUpdateFailed(
                resource_provider=str(exc)) from exc

    def _apply(self, batch):
        transitions = self.transitions
        for reservation_id in sorted(batch.create_class):
            transitions.classes.ensure(
                reservations.reservation_class(reservation_id))
        hosts = [h for names in batch.prepare.values() for h in names]
        if hosts:
            transitions.client.version  # negotiated once per process
            transitions.providers.refresh(hosts, create=False)
        for reservation_id, ops in batch.hosts.items():
            transitions.change(reservation_id,
                               self._totals(reservation_id, ops))
        for reservation_id in batch.delete_class:
            name = reservations.reservation_class(reservation_id)
            try:
                transitions.classes.delete(name)
            except placement_client.PlacementError as exc:
                # As Blazar's client: logged, never raised.
                LOG.info('Resource class %s not deleted: %s', name,
                         exc.detail)

    def _totals(self, reservation_id, ops):
        """``{host: total or None}`` for :meth:`Transitions.change`; an
        ``additional`` write adds to the host's current total."""
        added = [host for host, (op, _n) in ops.items() if op == 'add']
        current = {}
        if added:
            name = reservations.reservation_class(reservation_id)
            states = self.transitions.providers.refresh(added, create=True)
            current = {host: states[host].inventories.get(name, {}).get(
                'total', 0) for host in added}
        return {host: None if op == 'delete' else number + current.get(
                    host, 0) if op == 'add' else number
                for host, (op, number) in ops.items()}
