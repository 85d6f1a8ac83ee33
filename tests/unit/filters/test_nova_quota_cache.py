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
"""NovaQuotaFilter with ``nova_quota_max_age``: the project's quota and
usage reused for future leases, within the age, until the project's
generation in the ledger moves (a lease starts or ends, ``quota
refresh``), whichever process moved it. Limits from a file, usage from the
in-process Placement of this test process; the usage changes behind the
filter's back by allocations written in Placement."""

import itertools
import os
import threading
import uuid

import fixtures
import hypothesis
from hypothesis import strategies as st

from placement_quota.filters import base as filters_base
from placement_quota.filters import nova_quota
from placement_quota.ledger import entry_states
from tests import builders
from tests.builders import day
from tests.builders import instances
from tests.builders import lease
from tests import ledger_helpers
from tests.unit.filters import base

LIMITS = """\
model: flat
registered_limits: {servers: 100, class:VCPU: 16}
"""
MAX_AGE = 30


class QuotaCacheTestCase(ledger_helpers.PlacementHelpers,
                         base.LedgerTestCase):

    filter_class = nova_quota.NovaQuotaFilter
    options = {('enforcement', 'nova_quota_source'): 'file',
               ('enforcement', 'nova_quota_max_age'): MAX_AGE}

    def placement(self):
        return self.in_process_placement()

    def setUp(self):
        super().setUp()
        # The in-process Placement lives as long as the test process: a
        # project of its own starts with no usage.
        self.project = 'project-%s' % uuid.uuid4().hex[:8]
        path = os.path.join(self.tmp, 'nova-limits.yaml')
        with open(path, 'w') as f:
            f.write(LIMITS)
        self.set(nova_quota_limits_file=path)
        self.provider = self.compute_node(vcpus=64, memory_mb=65536)[1]
        self.seconds = 0.0
        self.filter.cache.clock = lambda: self.seconds

    def use(self, vcpus):
        """Servers of the project using ``vcpus`` now, behind the
        filter's back."""
        self.allocate(self.provider, self.project, VCPU=vcpus)

    def calls(self):
        return self.placement_client.calls


class TestQuotaCache(QuotaCacheTestCase):

    def test_future_lease_within_max_age_reuses_the_read(self):
        self.create(lease(day(2), day(3), instances(1, vcpus=4), name='a'))
        self.use(10)
        before = self.calls()
        # Live, 10 in use + 8 asked > 16; the read of 'a' said 0 in use.
        self.create(lease(day(5), day(6), instances(2, vcpus=4), name='b'))
        self.assertEqual(before, self.calls())

    def test_read_again_once_older_than_max_age(self):
        self.create(lease(day(2), day(3), instances(1, vcpus=4), name='a'))
        self.use(10)
        self.seconds += MAX_AGE + 1
        message = self.assertDenied(self.create, lease(
            day(5), day(6), instances(2, vcpus=4), name='b'))
        self.assertIn('10 in use now', message)

    def test_lease_starting_now_reads_again(self):
        self.create(lease(day(2), day(3), instances(1, vcpus=4), name='a'))
        self.use(10)
        starts_now = builders.NOW.strftime('%Y-%m-%d %H:%M')
        message = self.assertDenied(self.create, lease(
            starts_now, day(1, 12), instances(2, vcpus=4), name='b'))
        self.assertIn('10 in use now', message)

    def test_max_age_zero_reads_for_every_decision(self):
        self.set(nova_quota_max_age=0)
        self.create(lease(day(2), day(3), instances(1, vcpus=4), name='a'))
        self.use(10)
        self.assertDenied(self.create, lease(
            day(5), day(6), instances(2, vcpus=4), name='b'))

    def test_lease_ended_in_another_process_drops_the_cached_read(self):
        first = lease(day(2), day(3), instances(1, vcpus=4), name='a')
        self.create(first)
        self.use(10)
        # Another service process on the same ledger (its own Services,
        # its own filter and cache) is told the lease ended.
        other = nova_quota.NovaQuotaFilter(self.conf, services=base.Services(
            self.conf, placement=self.placement_client))
        self.addCleanup(other.services.close)
        other.on_end(self.context(), first)
        message = self.assertDenied(self.create, lease(
            day(5), day(6), instances(2, vcpus=4), name='b'))
        self.assertIn('10 in use now', message)

    def test_lease_start_moves_the_projects_generation(self):
        self.create(lease(day(2), day(3), instances(1, vcpus=4), name='a'))
        with self.ledger.transaction([self.project]) as txn:
            before = txn.generation(self.project)
            entry, = txn.leases(self.project)
            entry_states.start(txn, entry)
            self.assertEqual(before + 1, txn.generation(self.project))

    def test_quota_refresh_drops_the_cached_read(self):
        self.create(lease(day(2), day(3), instances(1, vcpus=4), name='a'))
        self.use(10)
        with self.ledger.transaction([self.project]) as txn:
            txn.bump_generation(self.project)
        self.assertDenied(self.create, lease(
            day(5), day(6), instances(2, vcpus=4), name='b'))

    def test_cache_keeps_at_most_its_size(self):
        cache = nova_quota.QuotaCache(size=2, clock=lambda: 0.0)
        for project in ('p1', 'p2', 'p3'):
            cache.put((project, ()), nova_quota.QuotaRead({}, {}))
        self.assertEqual([None, True, True], [
            cache.get((p, ()), 1) and True for p in ('p1', 'p2', 'p3')])


class TestRefreshAhead(QuotaCacheTestCase):
    """A cached read older than half of ``nova_quota_max_age`` answers the
    decision and is read again in the background."""

    def refreshes_done(self):
        for thread in threading.enumerate():
            if thread.name == 'quota-refresh':
                thread.join(10)

    def test_an_old_enough_read_answers_and_is_read_again_behind(self):
        self.create(lease(day(2), day(3), instances(1, vcpus=4), name='a'))
        self.use(10)
        self.seconds += MAX_AGE * nova_quota.REFRESH_AHEAD
        # Answered from the cache (0 in use then): allowed.
        self.create(lease(day(5), day(6), instances(1, vcpus=4), name='b'))
        self.refreshes_done()
        # The read made behind it says 10 in use.
        message = self.assertDenied(self.create, lease(
            day(8), day(9), instances(2, vcpus=4), name='c'))
        self.assertIn('10 in use now', message)

    def test_a_younger_read_is_not_read_again(self):
        self.create(lease(day(2), day(3), instances(1, vcpus=4), name='a'))
        before = self.calls()
        self.seconds += MAX_AGE * nova_quota.REFRESH_AHEAD / 2
        self.create(lease(day(5), day(6), instances(1, vcpus=4), name='b'))
        self.refreshes_done()
        self.assertEqual(before, self.calls())

    def test_a_failed_read_ahead_leaves_the_cached_one(self):
        self.create(lease(day(2), day(3), instances(1, vcpus=4), name='a'))
        self.seconds += MAX_AGE * nova_quota.REFRESH_AHEAD
        log = self.useFixture(fixtures.FakeLogger(
            name='placement_quota.filters.nova_quota'))

        def fails(project_id, classes=()):
            raise RuntimeError('Placement is down')
        self.useFixture(fixtures.MockPatchObject(
            self.filter.reader, 'read', fails))
        self.create(lease(day(5), day(6), instances(1, vcpus=4), name='b'))
        self.refreshes_done()
        self.assertIn('ahead of time failed: Placement is down', log.output)


class TestCachedDecisionsEqualLiveOnes(QuotaCacheTestCase):
    """Whatever the usage does, when every change of it is announced by a
    move of the project's generation (a lease start or end, ``quota
    refresh``), a filter reading through its cache decides as one reading
    for every decision -- each on a ledger of its own, fed the same
    leases."""

    projects = itertools.count()

    @hypothesis.settings(max_examples=40, deadline=None, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(st.lists(st.one_of(
        st.tuples(st.just('use'), st.integers(2, 10)),
        st.tuples(st.just('wait'), st.integers(1, MAX_AGE)),
        st.tuples(st.just('lease'), st.integers(2, 20), st.integers(1, 3),
                  st.integers(2, 8))), min_size=2, max_size=12))
    def test_same_decisions_as_live_reads(self, steps):
        project = '%s-%d' % (self.project, next(self.projects))
        live_conf_ledger = os.path.join(self.tmp, '%s.sqlite' % project)
        self.conf.set_override('connection', 'sqlite:///' + live_conf_ledger,
                               'ledger')
        live_services = base.Services(self.conf,
                                      placement=self.placement_client)
        self.addCleanup(live_services.close)
        live = nova_quota.NovaQuotaFilter(self.conf, services=live_services)
        live.cache.clock = lambda: self.seconds
        live_services.ledger.clock = lambda: self.now
        # A host of this example's own: the examples' servers add up.
        provider = self.compute_node(vcpus=128, memory_mb=65536)[1]
        for n, step in enumerate(steps):
            if step[0] == 'use':
                self.allocate(provider, project, VCPU=step[1])
                with self.ledger.transaction([project]) as txn:
                    txn.bump_generation(project)
            elif step[0] == 'wait':
                self.seconds += step[1]
            else:
                _, start, days, vcpus = step
                body = lease(day(start), day(min(30, start + days)),
                             instances(1, vcpus=vcpus), name='l%d' % n)
                self.assertEqual(self.decide(live, body, project, 0),
                                 self.decide(self.filter, body, project,
                                             MAX_AGE))

    def decide(self, filter_, body, project, max_age):
        self.conf.set_override('nova_quota_max_age', max_age, 'enforcement')
        try:
            filter_.check_create(builders.context(project), body)
        except filters_base.EnforcementDenied as exc:
            return str(exc)
        return 'allowed'
