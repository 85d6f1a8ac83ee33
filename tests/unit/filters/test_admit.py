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
"""One admission path: a chain admits its ledger filters together, a
filter run alone is admitted alone, the same way, and nothing travels in
a context variable."""

import contextvars

from placement_quota.filters import admit
from placement_quota.filters import lease_count
from placement_quota.filters import user_limit
from placement_quota.ledger import admission
from tests.builders import day
from tests.builders import lease
from tests.unit.filters import base
from tests.unit.filters import test_prepare


class Recorder:
    """A ledger filter's stand-in that keeps what the plan handed it."""

    uses_ledger = True
    uses_flavors = False
    name = 'Recorder'

    def __init__(self):
        self.prepared_with = None
        self.checked = []

    def ledger_locks(self, context):
        return ['root-of-' + context.project_id]

    def lease_locks(self, lease):
        return ['pool-a']

    def prepare(self, context, lease, flavors):
        self.prepared_with = (context.project_id, flavors)
        return 'read before the locks'

    def check(self, adm):
        self.checked.append(adm.prepared_for(self))


class TestOneAdmission(base.LedgerTestCase):

    filter_class = lease_count.LeaseCountFilter
    options = {('enforcement', 'max_leases_per_project'): 5,
               ('enforcement', 'max_leases_per_user'): 5}

    def setUp(self):
        super().setUp()
        self.locks = test_prepare.LockWatch(self.ledger)
        self.opened = 0
        watched = self.locks.transaction

        def counting(*args, **kwargs):
            self.opened += 1
            return watched(*args, **kwargs)
        self.ledger.transaction = counting

    def test_a_chain_admits_its_ledger_filters_in_one_transaction(self):
        chain = self.chain('LeaseCountFilter', 'UserLimitFilter')
        self.create(lease(day(2), day(3)), via=chain)
        self.assertEqual((1, ['pending']), (self.opened, self.states()))

    def test_a_filter_alone_is_admitted_in_a_transaction_of_its_own(self):
        self.create(lease(day(2), day(3)))
        other = user_limit.UserLimitFilter(self.conf, services=self.services)
        self.create(lease(day(4), day(5)), via=other)
        self.assertEqual((2, ['pending', 'pending']),
                         (self.opened, self.states()))

    def test_the_plan_hands_prepare_its_flavors_and_check_what_was_read(
            self):
        recorder = Recorder()
        context = self.filter.context(self.context())
        body = self.filter.lease(lease(day(2), day(3)))
        admit.admit(self.services, [recorder], admit.CHECK_CREATE,
                    context, body, recorder.check)
        self.assertEqual(((self.project, None), ['read before the locks']),
                         (recorder.prepared_with, recorder.checked))

    def test_the_plan_collects_every_filters_locks_once(self):
        found = admit.plan(self.services, [Recorder(), Recorder()],
                           admit.CHECK_CREATE,
                           self.filter.context(self.context()),
                           self.filter.lease(lease(day(2), day(3))))
        self.assertEqual(['root-of-%s' % self.project, 'pool-a'],
                         found.locks)

    def test_on_end_prepares_nothing(self):
        recorder = Recorder()
        found = admit.plan(self.services, [recorder], admit.ON_END,
                           self.filter.context(self.context()),
                           self.filter.lease(lease(day(2), day(3))))
        self.assertEqual((None, {}), (recorder.prepared_with,
                                      found.prepared))

    def test_no_context_variable_is_left_in_the_admission_path(self):
        for module in (admit, admission, base.chain_mod):
            self.assertEqual(
                [], [name for name, value in vars(module).items()
                     if isinstance(value, contextvars.ContextVar)],
                module.__name__)

    def test_a_ledger_filter_without_services_is_refused(self):
        error = self.assertRaises(TypeError, lease_count.LeaseCountFilter,
                                  self.conf)
        self.assertIn('blazar_compat', str(error))
