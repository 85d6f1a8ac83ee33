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
"""Idle reservations (placement_quota/warning/idle.py): a SQLite ledger and
the real Placement, in this process."""

import datetime
import uuid

import sqlalchemy as sa
import testtools

from placement_quota.ledger import models
from placement_quota.ledger import store
from placement_quota.placement import reservations as rsv
from placement_quota.warning import idle
from placement_quota.warning import model
from tests import ledger_helpers
from tests.unit.warning import base

HOUR = base.HOUR
DAY = base.DAY
MINUTE = datetime.timedelta(minutes=1)


class NoBlazar:
    """Stands where Blazar's client would: any use fails the test (a
    lease that must not be ended)."""

    @property
    def lease(self):
        raise AssertionError('Blazar was asked to end a lease')


class IdleCase(base.WarningCase, ledger_helpers.PlacementHelpers):
    """The ledger of :class:`base.WarningCase` and this process's real
    Placement; leases reserving instances on reservation providers, or
    hosts."""

    def setUp(self):
        super().setUp()
        self.in_process_placement()
        self.finder = idle.IdleFinder(self.conf, self.ledger,
                                      self.placement_client)

    # --- Placement -------------------------------------------------------

    def host(self):
        """A compute node with its reservation provider; its name."""
        name, self.node_uuid = self.compute_node()
        self.placement_client.post('/resource_providers', json={
            'name': rsv.provider_name(name),
            'parent_provider_uuid': self.node_uuid})
        return name

    def provider(self, name):
        return self.placement_client.get(
            '/resource_providers?name=%s' % name)['resource_providers'][0]

    def inventory(self, host, reservation_id, total):
        """``total`` instances of the reservation on the host, as Blazar
        writes them at lease start."""
        name = rsv.reservation_class(reservation_id)
        self.placement_client.put('/resource_classes/%s' % name)
        rp = self.provider(rsv.provider_name(host))
        self.placement_client.put(
            '/resource_providers/%s/inventories' % rp['uuid'], json={
                'resource_provider_generation': rp['generation'],
                'inventories': {name: rsv.reservation_inventory(total)}})

    def launch(self, host, reservation_id, project='p1'):
        """An instance of the reservation on the host; its consumer."""
        consumer = str(uuid.uuid4())
        rp = self.provider(rsv.provider_name(host))
        self.placement_client.put('/allocations/%s' % consumer, json={
            'allocations': {rp['uuid']: {'resources': {
                rsv.reservation_class(reservation_id): 1}}},
            'project_id': project, 'user_id': 'u1',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
        return consumer

    def delete(self, consumer):
        self.placement_client.delete('/allocations/%s' % consumer)

    # --- ledger ------------------------------------------------------------

    def instance_lease(self, hosts, start=None, end=None, amount=None,
                       with_id=True, **kwargs):
        """A lease reserving instances on ``hosts`` ({host: count}), the
        inventory Blazar writes in place; ``(row, reservation ID)``."""
        rid = str(uuid.uuid4())
        amount = sum(hosts.values()) if amount is None else amount
        reservation = {'resource_type': 'virtual:instance',
                       'amount': amount, 'vcpus': 1, 'memory_mb': 512,
                       'disk_gb': 1, 'allocations': [
                           {'hypervisor_hostname': h} for h in hosts]}
        if with_id:
            reservation['id'] = rid
        for host, count in hosts.items():
            self.inventory(host, rid, count)
        row = self.entry([reservation], start, end, **kwargs)
        return row, rid

    def host_lease(self, hosts, start=None, end=None, **kwargs):
        return self.entry([{
            'resource_type': 'physical:host', 'id': str(uuid.uuid4()),
            'min': len(hosts), 'max': len(hosts),
            'allocations': [{'hypervisor_hostname': h} for h in hosts]}],
            start, end, **kwargs)

    def entry(self, reservations, start=None, end=None, charged=0,
              hourly=0, name=None, state=None):
        start = start or self.now - HOUR
        end = end or self.now + DAY
        if state is None:
            state = models.ACTIVE if start <= self.now else models.PENDING
        name = name or 'lease-%s' % uuid.uuid4().hex[:8]
        with self.ledger.transaction(['p1'], now=self.now) as txn:
            return txn.insert(
                project_id='p1', user_id='u1', provisional_key='k',
                lease_id=str(uuid.uuid4()), name=name, start_date=start,
                end_date=end, state=state, amounts={},
                lease={'name': name, 'reservations': reservations},
                hourly_rate=store.to_micro(hourly),
                charged=store.to_micro(charged))

    def watch(self):
        t = models.idle_watch
        with self.ledger.reader() as reader:
            return {row.lease_row: row.idle_since for row in
                    reader.connection.execute(sa.select(t))}

    def found(self, **kwargs):
        return {lease.row: lease
                for lease in self.finder.find(self.now, **kwargs)}


class TestWhichLeasesAreIdle(IdleCase):

    def test_a_started_lease_whose_reserved_provider_has_no_allocation_is_listed(self):  # noqa: E501
        host = self.host()
        row, _ = self.instance_lease({host: 2})
        [lease] = self.found().values()
        self.assertEqual((row, (host,), False),
                         (lease.row, lease.hosts, lease.busy))

    def test_a_lease_with_an_allocation_on_its_provider_is_not_listed(self):
        host = self.host()
        row, rid = self.instance_lease({host: 2})
        self.launch(host, rid)
        self.assertNotIn(row, self.found())

    def test_a_lease_with_an_allocation_on_one_of_its_hosts_is_not_listed(self):  # noqa: E501
        a, b = self.host(), self.host()
        row, rid = self.instance_lease({a: 1, b: 1})
        self.launch(b, rid)
        self.assertNotIn(row, self.found())

    def test_a_lease_whose_only_provider_is_fully_used_is_not_listed(self):
        # Placement's candidates do not show a provider without room:
        # fewer instances found than reserved is not idle.
        a, b = self.host(), self.host()
        row, rid = self.instance_lease({a: 1, b: 1})
        self.launch(a, rid)
        self.assertNotIn(row, self.found())

    def test_an_instance_of_another_reservation_on_the_host_does_not_count(self):  # noqa: E501
        host = self.host()
        row, _ = self.instance_lease({host: 1})
        # Another lease's class on the same reservation provider.
        other = str(uuid.uuid4())
        name = rsv.reservation_class(other)
        self.placement_client.put('/resource_classes/%s' % name)
        rp = self.provider(rsv.provider_name(host))
        inventories = self.placement_client.get(
            '/resource_providers/%s/inventories' % rp['uuid'])['inventories']
        inventories[name] = rsv.reservation_inventory(1)
        self.placement_client.put(
            '/resource_providers/%s/inventories' % rp['uuid'], json={
                'resource_provider_generation': rp['generation'],
                'inventories': inventories})
        self.launch(host, other)
        self.assertIn(row, self.found())

    def test_a_host_reservation_whose_hosts_hold_no_allocation_is_listed(self):  # noqa: E501
        host = self.host()
        row = self.host_lease([host])
        self.assertEqual((host,), self.found()[row].hosts)

    def test_a_host_reservation_with_an_instance_on_its_host_is_not_listed(self):  # noqa: E501
        host = self.host()
        row = self.host_lease([host])
        self.allocate(self.node_uuid, 'p1', VCPU=1)
        self.assertNotIn(row, self.found())

    def test_a_host_reservation_on_a_host_placement_does_not_know_is_not_listed(self):  # noqa: E501
        row = self.host_lease(['no-such-host-%s' % uuid.uuid4().hex])
        self.assertNotIn(row, self.found())

    def test_a_lease_not_started_yet_is_not_listed(self):
        host = self.host()
        row, _ = self.instance_lease({host: 1}, start=self.now + HOUR)
        self.assertNotIn(row, self.found())

    def test_a_pending_lease_past_its_start_is_listed(self):
        host = self.host()
        row, _ = self.instance_lease({host: 1}, state=models.PENDING)
        self.assertIn(row, self.found())

    def test_an_ended_lease_is_not_listed(self):
        host = self.host()
        row, _ = self.instance_lease({host: 1}, state=models.TERMINATED)
        self.assertNotIn(row, self.found())

    def test_a_reservation_whose_id_the_ledger_lacks_is_not_listed(self):
        host = self.host()
        row, _ = self.instance_lease({host: 1}, with_id=False)
        self.assertNotIn(row, self.found())

    def test_a_reservation_whose_inventory_is_not_written_is_not_listed(self):  # noqa: E501
        row = self.entry([{'resource_type': 'virtual:instance', 'amount': 1,
                           'id': str(uuid.uuid4())}])
        self.assertNotIn(row, self.found())

    def test_a_lease_with_a_busy_and_an_idle_reservation_is_not_listed(self):  # noqa: E501
        host, other = self.host(), self.host()
        rid = str(uuid.uuid4())
        self.inventory(host, rid, 1)
        row = self.entry([
            {'resource_type': 'virtual:instance', 'amount': 1, 'id': rid},
            {'resource_type': 'physical:host', 'id': str(uuid.uuid4()),
             'allocations': [{'hypervisor_hostname': other}]}])
        self.allocate(self.node_uuid, 'p1', VCPU=1)   # on `other`
        self.assertNotIn(row, self.found())

    def test_credits_at_stake_are_the_unused_part_at_the_lease_rate(self):
        host = self.host()
        row, _ = self.instance_lease({host: 1}, start=self.now - 2 * HOUR,
                                     end=self.now + 8 * HOUR, charged=100,
                                     hourly=10)
        self.assertEqual(80.0, self.found()[row].credits_at_stake)

    def test_a_scan_asks_placement_once_per_reservation_once_names_are_known(self):  # noqa: E501
        for _ in range(3):
            self.instance_lease({self.host(): 1})
        self.host_lease([self.host()])
        self.found()
        before = self.placement_client.calls
        self.assertEqual(4, len(self.found()))
        self.assertEqual(4, self.placement_client.calls - before)


class TestIdleSince(IdleCase):

    def test_a_lease_first_found_idle_is_idle_since_that_scan(self):
        host = self.host()
        row, _ = self.instance_lease({host: 1}, start=self.now - DAY)
        self.assertEqual(self.now, self.found()[row].idle_since)
        self.assertEqual({row: self.now}, self.watch())

    def test_a_lease_started_within_one_scan_interval_is_idle_since_its_start(self):  # noqa: E501
        self.set(scan_interval=60)
        host = self.host()
        start = self.now - datetime.timedelta(seconds=30)
        row, _ = self.instance_lease({host: 1}, start=start)
        self.assertEqual(start, self.found()[row].idle_since)

    def test_a_later_scan_keeps_the_first_idle_since(self):
        host = self.host()
        row, _ = self.instance_lease({host: 1}, start=self.now - DAY)
        first = self.now
        self.found()
        self.now += 10 * MINUTE
        self.assertEqual(first, self.found()[row].idle_since)

    def test_a_scan_finding_the_lease_busy_forgets_it(self):
        host = self.host()
        row, rid = self.instance_lease({host: 1}, start=self.now - DAY)
        self.found()
        consumer = self.launch(host, rid)
        self.now += MINUTE
        self.found()
        self.assertEqual({}, self.watch())
        self.delete(consumer)
        self.now += MINUTE
        self.assertEqual(self.now, self.found()[row].idle_since)

    def test_a_lease_is_reported_once_idle_for_idle_after(self):
        self.set(idle_after=3600)
        host = self.host()
        row, _ = self.instance_lease({host: 1}, start=self.now - DAY)
        self.assertEqual({}, self.found())
        self.now += HOUR - datetime.timedelta(seconds=1)
        self.assertEqual({}, self.found())
        self.now += datetime.timedelta(seconds=1)
        self.assertIn(row, self.found())

    def test_an_ended_lease_is_forgotten(self):
        host = self.host()
        row, _ = self.instance_lease({host: 1}, end=self.now + HOUR)
        self.found()
        self.now += 2 * HOUR
        self.found()
        self.assertEqual({}, self.watch())

    def test_a_preview_writes_nothing(self):
        host = self.host()
        row, _ = self.instance_lease({host: 1}, start=self.now - DAY)
        self.assertIn(row, self.found(record=False))
        self.assertEqual({}, self.watch())


class TestNotices(IdleCase):

    def test_an_idle_lease_gets_one_warning_keyed_by_its_idleness(self):
        self.set(idle_after=600, end_idle_after=3600)
        host = self.host()
        row, _ = self.instance_lease({host: 1}, start=self.now - DAY,
                                     name='quiet')
        self.found()
        self.now += 10 * MINUTE
        [notice] = self.finder.notices(self.finder.find(self.now), self.now)
        since = self.now - 10 * MINUTE
        self.assertEqual(
            (model.IDLE, model.key(model.IDLE, row, since), 'quiet', 'u1'),
            (notice.kind, notice.key, notice.lease_name, notice.user_id))
        self.assertEqual(set(model.FACTS[model.IDLE]), set(notice.facts))
        self.assertEqual(({'hosts': [host],
                           'ends_at': model.iso(since + HOUR)}),
                         {k: notice.facts[k] for k in ('hosts', 'ends_at')})

    def test_an_idle_lease_is_not_said_to_end_when_idle_leases_are_kept(self):
        host = self.host()
        self.instance_lease({host: 1})
        [notice] = self.finder.notices(self.finder.find(self.now), self.now)
        self.assertIsNone(notice.facts['ends_at'])


class TestEndIdle(IdleCase):

    def setUp(self):
        super().setUp()
        self.set(idle_after=600, end_idle_after=3600)

    def idle_for(self, seconds, **kwargs):
        """A lease found idle, then ``seconds`` later; the leases found
        then and its reservation."""
        self.host_name = self.host()
        row, rid = self.instance_lease({self.host_name: 1},
                                       start=self.now - DAY, **kwargs)
        self.finder.find(self.now)
        self.now += datetime.timedelta(seconds=seconds)
        return self.finder.find(self.now), rid

    def test_a_lease_idle_less_than_end_idle_after_is_not_ended(self):
        leases, _ = self.idle_for(3599)
        self.assertEqual([], self.finder.end_idle(leases, self.now,
                                                  NoBlazar()))

    def test_a_lease_that_got_an_allocation_since_the_scan_is_not_ended(self):  # noqa: E501
        leases, rid = self.idle_for(3600)
        self.assertEqual(1, len(leases))
        self.launch(self.host_name, rid)
        self.assertEqual([], self.finder.end_idle(leases, self.now,
                                                  NoBlazar()))

    def test_a_lease_ended_meanwhile_is_not_ended_again(self):
        leases, _ = self.idle_for(3600)
        with self.ledger.transaction(['p1'], now=self.now) as txn:
            txn.update(leases[0].row, state=models.TERMINATED)
        self.assertEqual([], self.finder.end_idle(leases, self.now,
                                                  NoBlazar()))

    def test_nothing_is_ended_when_end_idle_after_is_0(self):
        self.set(end_idle_after=0)
        leases, _ = self.idle_for(7200)
        self.assertEqual([], self.finder.end_idle(leases, self.now,
                                                  NoBlazar()))


class TestBlazarClient(base.WarningCase):

    def test_ending_idle_leases_without_a_blazar_is_a_clear_error(self):
        error = self.assertRaises(ValueError, idle.blazar_client, self.conf)
        self.assertIn('[blazar]', str(error))


class TestBlazarEnd(testtools.TestCase):

    def test_a_lease_past_its_first_minute_is_ended_now(self):
        self.assertEqual(
            ('now', datetime.datetime(2026, 11, 28, 12, 7)),
            idle.blazar_end(datetime.datetime(2026, 11, 28, 12, 7, 30),
                            datetime.datetime(2026, 11, 28, 12, 0)))

    def test_a_lease_in_its_first_minute_ends_at_the_next_one(self):
        self.assertEqual(
            ('2026-11-28 12:01', datetime.datetime(2026, 11, 28, 12, 1)),
            idle.blazar_end(datetime.datetime(2026, 11, 28, 12, 0, 30),
                            datetime.datetime(2026, 11, 28, 12, 0)))


class TestObsolete(IdleCase):

    def warning(self):
        self.host_name = self.host()
        row, self.rid = self.instance_lease({self.host_name: 1},
                                            start=self.now - DAY)
        [notice] = self.finder.notices(self.finder.find(self.now), self.now)
        return row, notice

    def test_a_warning_of_a_lease_still_idle_is_true(self):
        _, notice = self.warning()
        self.assertIsNone(idle.obsolete(self.ledger, notice))

    def test_a_warning_of_a_lease_found_busy_since_is_obsolete(self):
        _, notice = self.warning()
        self.launch(self.host_name, self.rid)
        self.now += MINUTE
        self.finder.find(self.now)
        self.assertEqual('the lease is no longer idle',
                         idle.obsolete(self.ledger, notice))

    def test_a_warning_of_an_ended_lease_is_obsolete(self):
        row, notice = self.warning()
        with self.ledger.transaction(['p1'], now=self.now) as txn:
            txn.update(row, state=models.TERMINATED)
        self.assertEqual('the lease is terminated',
                         idle.obsolete(self.ledger, notice))
