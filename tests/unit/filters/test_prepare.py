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
"""Placement is read before the ledger is locked: a hung Placement holds
back only the request that waits for it, never another project's."""

import contextlib
import os
import threading
import time

import fixtures

from placement_quota.filters import placement_capacity
from placement_quota.filters import chain as chain_mod
from placement_quota.placement import client as placement_client
from placement_quota.placement import embedded
from tests.builders import day
from tests.builders import hosts
from tests.builders import instances
from tests.builders import lease
from tests.builders import network
from tests.fixtures import process as processes
from tests import ledger_helpers
from tests.unit.filters import base

#: The most another project's lease may take while Placement hangs (it
#: takes milliseconds; before, it waited for the ledger lock).
UNHELD = 1.0


def nova_limits_from_file(test):
    """NovaQuotaFilter's limits from a file (100 VCPU), its usage from
    Placement."""
    path = os.path.join(test.tmp, 'nova-limits.yaml')
    with open(path, 'w') as f:
        f.write('registered_limits: {class:VCPU: 100}\n')
    test.set(nova_quota_source='file', nova_quota_limits_file=path,
             nova_quota_include_usage=True)


class Background:
    """A call in a thread; :attr:`error` is what it raised."""

    def __init__(self, call, *args, **kwargs):
        self.error = None
        self.thread = threading.Thread(target=self._run,
                                       args=(call, args, kwargs),
                                       daemon=True)
        self.thread.start()

    def _run(self, call, args, kwargs):
        try:
            call(*args, **kwargs)
        except Exception as exc:
            self.error = exc


class TestHungPlacement(base.LedgerTestCase):
    """Project A's lease waits for a Placement that never answers;
    project B's network lease goes through the same chain meanwhile."""

    filter_class = placement_capacity.PlacementCapacityFilter

    def setUp(self):
        super().setUp()
        # The request that waited logs its failure when it is released.
        self.useFixture(fixtures.FakeLogger())

    def placement(self):
        self.hung = self.useFixture(processes.HangingServer())
        return placement_client.PlacementClient.from_endpoint(
            self.hung.url, embedded.NOAUTH_HEADERS, timeout=30)

    def hang(self, chain, body):
        """Project A's call, waiting for Placement when this returns."""
        waiting = Background(self.create, body, project='proj-a', via=chain)
        self.addCleanup(waiting.thread.join, 10)
        self.addCleanup(self.hung.release)
        self.assertTrue(self.hung.called.wait(10))
        return waiting

    def other_projects_lease(self, chain):
        """Project B's network lease: seconds it took."""
        began = time.monotonic()
        self.create(lease(day(2), day(3), network(), name='net'),
                    project='proj-b', via=chain)
        return time.monotonic() - began

    def test_hung_capacity_read_does_not_hold_back_another_project(self):
        chain = self.chain('PlacementCapacityFilter', 'LeaseCountFilter')
        waiting = self.hang(chain, lease(day(2), day(3), instances(2)))
        took = self.other_projects_lease(chain)
        self.assertLess(took, UNHELD)
        self.assertEqual((['pending'], True),
                         (self.states('proj-b'), waiting.thread.is_alive()))

    def test_hung_host_resources_read_does_not_hold_back_another_project(
            self):
        self.set(group='ledger', count_host_resources=True)
        chain = self.chain('LeaseCountFilter')
        waiting = self.hang(chain, lease(day(2), day(3), hosts('h1')))
        took = self.other_projects_lease(chain)
        self.assertLess(took, UNHELD)
        self.assertEqual((['pending'], True),
                         (self.states('proj-b'), waiting.thread.is_alive()))

    def test_hung_filter_run_alone_does_not_hold_back_another_project(self):
        waiting = self.hang(self.filter, lease(day(2), day(3),
                                               instances(2)))
        took = self.other_projects_lease(self.filter)
        self.assertLess(took, UNHELD)
        self.assertEqual((['pending'], True),
                         (self.states('proj-b'), waiting.thread.is_alive()))

    def test_hung_placement_fails_its_own_request_when_it_gives_up(self):
        chain = self.chain('PlacementCapacityFilter')
        waiting = self.hang(chain, lease(day(2), day(3), instances(2)))
        self.hung.release()
        waiting.thread.join(10)
        self.assertIsInstance(waiting.error, chain_mod.ServiceUnavailable)
        self.assertEqual([], self.entries('proj-a'))


class LockWatch:
    """Counts the transactions of ``ledger`` that are open (an admission
    holding its locks), by wrapping its ``transaction``."""

    def __init__(self, ledger):
        self.open = 0
        self._transaction = ledger.transaction
        ledger.transaction = self.transaction

    @contextlib.contextmanager
    def transaction(self, *args, **kwargs):
        with self._transaction(*args, **kwargs) as txn:
            self.open += 1
            try:
                yield txn
            finally:
                self.open -= 1


class NotWhileLocked:
    """Wraps a PlacementClient: a call while an admission is open (the
    ledger locked: the test's :class:`LockWatch`) fails the test."""

    def __init__(self, client, test):
        self.client = client
        self.test = test
        self.calls = 0

    def request(self, *args, **kwargs):
        self.calls += 1
        if self.test.locks.open:
            self.test.fail('Placement was called with the ledger locked: '
                           '%s %s' % args[:2])
        return self.client.request(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.client, name)

    def get(self, url, **kwargs):
        return self.request('GET', url, **kwargs).json()


class TestPlacementBeforeTheLock(ledger_helpers.PlacementHelpers,
                                 base.LedgerTestCase):
    """On a Placement that answers: every call comes before the locks,
    and the check uses what was read."""

    filter_class = placement_capacity.PlacementCapacityFilter

    def placement(self):
        self.guarded = NotWhileLocked(self.in_process_placement(), self)
        return self.guarded

    def setUp(self):
        super().setUp()
        self.locks = LockWatch(self.ledger)
        self.host1, _ = self.compute_node()
        self.host2, _ = self.compute_node()

    def test_capacity_check_in_a_chain_reads_placement_before_locking(self):
        chain = self.chain('PlacementCapacityFilter', 'LeaseCountFilter')
        self.create(lease(day(2), day(3), instances(
            4, vcpus=4, hosts=[self.host1, self.host2])), via=chain)
        self.assertEqual((1, True), (len(self.entries()),
                                     self.guarded.calls > 0))

    def test_capacity_filter_alone_reads_placement_before_locking(self):
        self.create(lease(day(2), day(3), instances(
            4, vcpus=4, hosts=[self.host1, self.host2])))
        self.assertEqual(1, len(self.entries()))

    def test_capacity_denial_uses_what_was_read_before_locking(self):
        chain = self.chain('PlacementCapacityFilter')
        message = self.assertDenied(self.create, lease(day(2), day(3), (
            instances(5, vcpus=4, hosts=[self.host1, self.host2]))),
            via=chain)
        self.assertIn('Only 4 instances', message)

    def test_nova_quota_usage_is_read_before_locking(self):
        nova_limits_from_file(self)
        chain = self.chain('NovaQuotaFilter', 'LeaseCountFilter')
        self.create(lease(day(2), day(3), instances(2, vcpus=4)),
                    via=chain)
        self.assertEqual((1, True), (len(self.entries()),
                                     self.guarded.calls > 0))

    def test_host_resources_are_read_before_locking_and_recorded(self):
        self.set(group='ledger', count_host_resources=True)
        chain = self.chain('LeaseCountFilter')
        self.create(lease(day(2), day(3), hosts(self.host1)), via=chain)
        entry, = self.entries()
        self.assertEqual(8, entry.amounts['host:VCPU'])


class MeetingPlacement(NotWhileLocked):
    """Wraps a PlacementClient: a project usage read and a capacity read
    (the inventories of :attr:`host`) each wait (5 s at most) until the
    other has started, so a request making them one after the other
    fails."""

    def __init__(self, client, test):
        super().__init__(client, test)
        self.meeting = threading.Barrier(2, timeout=5)
        self.host = None

    def request(self, *args, **kwargs):
        path = args[1]
        if path.startswith('/usages?') or \
                path == '/resource_providers/%s/inventories' % self.host:
            self.meeting.wait()
        return super().request(*args, **kwargs)


class TestPreparedSideBySide(ledger_helpers.PlacementHelpers,
                             base.LedgerTestCase):
    """The filters' prepare steps wait on other services: a chain makes
    them at the same time, not one after the other."""

    filter_class = placement_capacity.PlacementCapacityFilter

    def placement(self):
        self.meeting = MeetingPlacement(self.in_process_placement(), self)
        return self.meeting

    def setUp(self):
        super().setUp()
        self.locks = LockWatch(self.ledger)

    def test_nova_quota_and_capacity_are_read_at_the_same_time(self):
        host, self.meeting.host = self.compute_node()
        nova_limits_from_file(self)
        chain = self.chain('NovaQuotaFilter', 'PlacementCapacityFilter')
        self.create(lease(day(2), day(3), instances(1, vcpus=4,
                                                    hosts=[host])),
                    via=chain)
        self.assertEqual((1, False), (len(self.entries()),
                                      self.meeting.meeting.broken))
