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
"""Claims racing for the last units of a tree (the verify step of Keystone's
"Strict Two-Level Limits Enforcement Model")."""

import threading

import testtools

from placement_quota.limits import enforcer as enforcer_mod
from placement_quota.limits import errors
from placement_quota.limits import sources
from placement_quota.limits import tree as tree_mod

CORES = 'cores'
ROUNDS = 50


def last_two_cores():
    """A (l=20, u=18) with B and C: room for one claim of 2."""
    return tree_mod.LimitData(
        registered_limits={CORES: 10},
        projects={'A': tree_mod.Project('A', limits={CORES: 20}),
                  'B': tree_mod.Project('B', 'A'),
                  'C': tree_mod.Project('C', 'A')})


class Store:
    """The service's usage records, shared by every thread and enforcer."""

    def __init__(self):
        self.lock = threading.Lock()
        self.usage = {'A': {CORES: 18}}

    def __call__(self, project_id, resources):
        with self.lock:
            own = dict(self.usage.get(project_id, {}))
        return {r: own.get(r, 0) for r in resources}

    def add(self, project_id, amount):
        with self.lock:
            own = self.usage.setdefault(project_id, {})
            own[CORES] = own.get(CORES, 0) + amount

    def tree_total(self):
        with self.lock:
            return sum(u.get(CORES, 0) for u in self.usage.values())


def race(enforcers, store):
    """B and C each claim 2 cores at once; return who got them."""
    barrier = threading.Barrier(2)
    won, lost = [], []

    def meet():
        # The second meeting point: inside the block for a thread that got
        # in (so that two blocks that both got in overlap), after the
        # refusal for one that did not.
        try:
            barrier.wait(timeout=5)
        except threading.BrokenBarrierError:
            pass

    def worker(enforcer, project_id):
        met = False
        barrier.wait()
        try:
            with enforcer.claim(project_id, {CORES: 2}):
                store.add(project_id, 2)
                met = True
                meet()
        except errors.ProjectOverLimit:
            lost.append(project_id)
            if not met:
                meet()
            return
        won.append(project_id)

    threads = [threading.Thread(target=worker, args=(e, p))
               for e, p in zip(enforcers, ('B', 'C'))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return won, lost


class TestLastUnits(testtools.TestCase):

    def assertExactlyOneWins(self, make_enforcer):
        for _ in range(ROUNDS):
            store = Store()
            enforcer = make_enforcer(store)
            won, lost = race([enforcer, enforcer], store)
            self.assertEqual((1, 1), (len(won), len(lost)))
            # The loser's work never happened (its block did not run).
            self.assertEqual(20, store.tree_total())

    def test_exactly_one_of_two_threads_wins_on_the_aggregate_path(self):
        def make(store):
            data = last_two_cores()
            data.usage = {'A': {CORES: 18}}
            return enforcer_mod.Enforcer(sources.EmbeddedSource(data))
        self.assertExactlyOneWins(make)

    def test_exactly_one_of_two_threads_wins_on_the_naive_path(self):
        self.assertExactlyOneWins(lambda store: enforcer_mod.Enforcer(
            sources.EmbeddedSource(last_two_cores()), usage=store,
            aggregate=False))

    def test_exactly_one_wins_with_a_usage_source_and_verify(self):
        self.assertExactlyOneWins(lambda store: enforcer_mod.Enforcer(
            sources.EmbeddedSource(last_two_cores()), usage=store))


class TestSeparateEnforcers(testtools.TestCase):
    """Two enforcers sharing one usage store, as two service processes:
    neither sees the other's claim on enter; verify on exit does."""

    def test_verify_never_leaves_the_tree_over_its_limit(self):
        for _ in range(ROUNDS):
            store = Store()
            enforcers = [enforcer_mod.Enforcer(
                sources.EmbeddedSource(last_two_cores()), usage=store)
                for _ in range(2)]
            won, lost = race(enforcers, store)
            for project_id in lost:
                store.add(project_id, -2)   # the losers undo their work
            self.assertLessEqual(len(won), 1)
            self.assertLessEqual(store.tree_total(), 20)

    def test_without_verify_both_win_and_the_tree_goes_over(self):
        store = Store()
        enforcers = [enforcer_mod.Enforcer(
            sources.EmbeddedSource(last_two_cores()), usage=store,
            verify=False) for _ in range(2)]
        won, _ = race(enforcers, store)
        self.assertEqual(['B', 'C'], sorted(won))
        self.assertEqual(22, store.tree_total())


class TestNaiveReadAndReserveAreOneStep(testtools.TestCase):
    """A whole claim of another thread must not fit between a check's usage
    read and its reservation (the naive path reads usage from the
    service, so the read is slow and may be stale)."""

    def test_a_claim_finishing_during_a_read_is_still_seen(self):
        store = Store()
        first_done = threading.Event()
        reading = threading.Event()
        slow_reader = {}

        class Usage:
            def get_usage(self, project_ids, resources):
                found = {p: store(p, resources) for p in project_ids}
                if slow_reader.get(threading.get_ident()):
                    slow_reader.clear()
                    reading.set()
                    # Give the other claim every chance to run to its end
                    # while this read is in flight.
                    first_done.wait(0.5)
                return found

        enforcer = enforcer_mod.Enforcer(
            sources.EmbeddedSource(last_two_cores()), usage=Usage(),
            aggregate=False)
        results = {}

        def attempt(project_id):
            try:
                with enforcer.claim(project_id, {CORES: 2}):
                    store.add(project_id, 2)
                results[project_id] = 'in'
            except errors.ProjectOverLimit:
                results[project_id] = 'refused'

        def slow():
            slow_reader[threading.get_ident()] = True
            attempt('B')

        def fast():
            reading.wait(5)
            attempt('C')
            first_done.set()

        threads = [threading.Thread(target=slow),
                   threading.Thread(target=fast)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        self.assertEqual(['in', 'refused'], sorted(results.values()))
        self.assertEqual(20, store.tree_total())
