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
"""Admissions on a SQLite-file ledger: what is recorded when, directly and
through a filter chain of ledger filters."""

import datetime

import fixtures

from placement_quota.filters import base as filters_base
from placement_quota.filters import chain as chain_mod
from placement_quota.filters import lease_count
from placement_quota.lease import model as lease_model
from placement_quota.ledger import admission
from placement_quota.ledger import keys
from placement_quota.ledger import store
from tests.builders import at
from tests.builders import day
from tests.builders import hosts
from tests.builders import instances
from tests.builders import lease
from tests.builders import LEASE_ID
from tests.builders import NOW
from tests import ledger_helpers
from tests.unit.filters import base


class AdmissionTestCase(base.LedgerTestCase):

    def admit(self, kind, body, current=None, project=None):
        context = lease_model.Context.coerce(self.context(project))
        return admission.admit(
            self.ledger, kind, context, lease_model.Lease.coerce(body),
            None if current is None else lease_model.Lease.coerce(
                current, 'current_lease'))

    def admit_create(self, body, project=None):
        with self.admit(admission.CHECK_CREATE, body, project=project):
            pass

    def admit_update(self, current, body, project=None):
        with self.admit(admission.CHECK_UPDATE, body, current, project):
            pass

    def admit_end(self, body, project=None):
        with self.admit(admission.ON_END, body, project=project):
            pass

    def deny_inside(self, kind, body, current=None):
        def denied():
            with self.admit(kind, body, current):
                raise filters_base.EnforcementDenied('no')
        self.assertRaises(filters_base.EnforcementDenied, denied)


class TestCreate(AdmissionTestCase):

    def test_allowed_create_is_recorded_pending_with_its_window(self):
        self.admit_create(lease(day(2), day(4), hosts('a'), name='l'))
        entry, = self.entries()
        self.assertEqual(
            ('pending', at(2), at(4), at(4), 'l', 'u', None),
            (entry.state, entry.start_date, entry.end_date,
             entry.effective_end, entry.name, entry.user_id,
             entry.lease_id))

    def test_allowed_create_records_what_the_lease_reserves(self):
        self.admit_create(lease(day(2), day(4), hosts('a', 'b'),
                                instances(2, vcpus=4, hosts=['cn'])))
        entry, = self.entries()
        self.assertEqual({'hosts': 2, 'instances': 2, 'class:VCPU': 8,
                          'class:MEMORY_MB': 1024, 'class:DISK_GB': 2},
                         entry.amounts)
        self.assertEqual((8, 'cn'), (entry.instance_vcpus,
                                     entry.instance_hosts))

    def test_entry_is_keyed_on_the_fingerprint_of_what_check_create_saw(
            self):
        body = lease(day(2), day(4), name='l')
        self.admit_create(body)
        entry, = self.entries()
        self.assertEqual(
            (keys.fingerprint(self.project, 'u', body),
             keys.shape(self.project, body)),
            (entry.provisional_key, entry.shape_key))

    def test_create_denied_inside_the_admission_records_nothing(self):
        self.deny_inside(admission.CHECK_CREATE, lease(day(2), day(3)))
        self.assertEqual([], self.entries())

    def test_peaks_hold_the_projects_overlapping_leases(self):
        self.admit_create(lease(day(2), day(4), hosts('a', 'b'), name='a'))
        self.admit_create(lease(day(6), day(7), hosts('c'), name='b'))
        with self.admit(admission.CHECK_CREATE,
                        lease(day(3), day(5), name='c')) as adm:
            peak = adm.peaks()['hosts']
        self.assertEqual((2, at(3), at(4)), (peak.amount, peak.at,
                                             peak.until))

    def test_peaks_leave_out_other_projects(self):
        self.admit_create(lease(day(2), day(4), hosts('a')),
                          project='other')
        with self.admit(admission.CHECK_CREATE,
                        lease(day(2), day(4))) as adm:
            self.assertEqual({}, adm.peaks())

    def test_second_entry_with_a_known_lease_id_is_recorded_without_it(self):
        self.admit_create(lease(day(2), day(3), name='a', lease_id=LEASE_ID))
        self.admit_create(lease(day(4), day(5), name='b', lease_id=LEASE_ID))
        self.assertEqual([LEASE_ID, None],
                         [row.lease_id for row in self.entries()])

    def test_priced_create_charges_its_whole_window(self):
        allocation = self.give_credits(100)
        with self.admit(admission.CHECK_CREATE,
                        lease(day(2), day(3), hosts('a'))) as adm:
            adm.price(store.to_micro(2), allocation)
        entry, = self.entries()
        self.assertEqual((48.0, 48.0), (self.spent(allocation),
                                        store.from_micro(entry.charged)))

    def test_unpriced_create_charges_nothing(self):
        self.admit_create(lease(day(2), day(3), hosts('a')))
        entry, = self.entries()
        self.assertEqual((0, 0, None), (entry.charged, entry.hourly_rate,
                                        entry.allocation_id))


class TestUpdate(AdmissionTestCase):

    def test_update_replaces_the_entry_of_the_lease(self):
        first = lease(day(2), day(3), hosts('a'), name='l')
        self.admit_create(first)
        self.now = datetime.datetime(2026, 6, 1, 12)
        self.admit_update(first, lease(day(2), day(5), hosts('a', 'b'),
                                       name='l'))
        entry, = self.entries()
        self.assertEqual((at(5), {'hosts': 2}, self.now),
                         (entry.end_date, entry.amounts, entry.updated_at))

    def test_update_finds_the_entry_it_replaces(self):
        first = lease(day(2), day(3), name='l')
        self.admit_create(first)
        entry, = self.entries()
        with self.admit(admission.CHECK_UPDATE, lease(day(2), day(4),
                                                      name='l'),
                        first) as adm:
            found = adm.exclude
        self.assertEqual(entry.id, found)

    def test_update_leaves_its_own_entry_out_of_the_peaks(self):
        first = lease(day(2), day(4), hosts('a', 'b'), name='l')
        self.admit_create(first)
        with self.admit(admission.CHECK_UPDATE, lease(
                day(2), day(4), hosts('a'), name='l'), first) as adm:
            self.assertEqual({}, adm.peaks())

    def test_update_leaves_its_own_entry_out_of_the_open_leases(self):
        first = lease(day(2), day(4), name='l')
        self.admit_create(first)
        self.admit_create(lease(day(2), day(4), name='m'))
        with self.admit(admission.CHECK_UPDATE, lease(day(2), day(5),
                                                      name='l'),
                        first) as adm:
            self.assertEqual(1, adm.open_leases())

    def test_update_of_a_lease_the_ledger_does_not_hold_records_it(self):
        self.admit_update(lease(day(2), day(3), name='l'),
                          lease(day(2), day(4), name='l'))
        entry, = self.entries()
        self.assertEqual(('pending', at(4)), (entry.state, entry.end_date))

    def test_update_denied_inside_the_admission_leaves_the_entry(self):
        first = lease(day(2), day(3), hosts('a'), name='l')
        self.admit_create(first)
        before = [tuple(row) for row in self.entries()]
        self.deny_inside(admission.CHECK_UPDATE, lease(
            day(2), day(9), hosts('a', 'b'), name='l'), first)
        self.assertEqual(before, [tuple(row) for row in self.entries()])

    def test_update_finds_a_renamed_lease_by_its_id(self):
        self.admit_create(lease(day(2), day(3), name='old'))
        self.admit_update(lease(day(2), day(3), name='old',
                                lease_id=LEASE_ID),
                          lease(day(2), day(3), name='new',
                                lease_id=LEASE_ID))
        self.admit_update(lease(day(2), day(3), name='new',
                                lease_id=LEASE_ID),
                          lease(day(2), day(4), name='new',
                                lease_id=LEASE_ID))
        entry, = self.entries()
        self.assertEqual(('new', LEASE_ID, at(4)),
                         (entry.name, entry.lease_id, entry.end_date))

    def test_priced_update_charges_only_the_difference(self):
        allocation = self.give_credits(100)
        first = lease(day(2), day(3), hosts('a'), name='l')
        with self.admit(admission.CHECK_CREATE, first) as adm:
            adm.price(store.to_micro(1), allocation)
        with self.admit(admission.CHECK_UPDATE, lease(
                day(2), day(4), hosts('a'), name='l'), first) as adm:
            adm.price(store.to_micro(1), allocation)
            self.assertEqual(store.to_micro(24), adm.charge_delta())
        self.assertEqual(48.0, self.spent(allocation))


class TestEnd(AdmissionTestCase):

    def created(self, body=None):
        body = body or lease(day(2), day(4), hosts('a'), name='l')
        self.admit_create(body)
        return body

    def test_on_end_closes_the_entry_now(self):
        body = self.created()
        self.now = datetime.datetime(2026, 6, 3, 6)
        self.admit_end(body)
        entry, = self.entries()
        self.assertEqual(('terminated', self.now, self.now),
                         (entry.state, entry.effective_end, entry.ended_at))

    def test_on_end_before_the_start_closes_it_at_its_start(self):
        body = self.created()
        self.admit_end(body)
        entry, = self.entries()
        self.assertEqual((at(2), NOW),
                         (entry.effective_end, entry.ended_at))

    def test_on_end_after_the_end_date_closes_it_at_its_end_date(self):
        body = self.created()
        self.now = datetime.datetime(2026, 6, 10)
        self.admit_end(body)
        entry, = self.entries()
        self.assertEqual(at(4), entry.effective_end)

    def test_on_end_of_an_unknown_lease_records_nothing_and_says_so(self):
        logger = self.useFixture(fixtures.FakeLogger())
        self.admit_end(lease(day(2), day(4), name='never-seen'))
        self.assertEqual([], self.entries())
        self.assertIn('on-end for a lease of project project-a that the '
                      'ledger does not hold', logger.output)

    def test_repeated_on_end_changes_nothing(self):
        body = self.created()
        self.now = datetime.datetime(2026, 6, 3)
        self.admit_end(body)
        before = [tuple(row) for row in self.entries()]
        self.now = datetime.datetime(2026, 6, 3, 12)
        self.admit_end(body)
        self.assertEqual(before, [tuple(row) for row in self.entries()])

    def test_on_end_gives_its_lease_id_to_an_entry_created_without(self):
        self.created()
        self.admit_end(lease(day(2), day(4), hosts('a'), name='l',
                             lease_id=LEASE_ID))
        entry, = self.entries()
        self.assertEqual(LEASE_ID, entry.lease_id)

    def test_lease_without_a_name_is_found_by_its_content(self):
        body = self.created(lease(day(2), day(4), hosts('a')))
        self.admit_end(body)
        self.assertEqual(['terminated'], self.states())

    def test_lease_without_a_name_and_other_content_is_another_lease(self):
        self.created(lease(day(2), day(4), hosts('a')))
        self.admit_end(lease(day(2), day(4), hosts('a', 'b')))
        self.assertEqual(['pending'], self.states())

    def test_ended_lease_frees_the_rest_of_its_window(self):
        body = self.created()
        self.now = datetime.datetime(2026, 6, 3)
        self.admit_end(body)
        with self.admit(admission.CHECK_CREATE,
                        lease(day(3), day(5), name='m')) as adm:
            self.assertEqual({}, adm.peaks())

    def test_on_end_refunds_the_unused_part_of_the_charge(self):
        allocation = self.give_credits(100)
        body = lease(day(2), day(4), hosts('a'), name='l')
        with self.admit(admission.CHECK_CREATE, body) as adm:
            adm.price(store.to_micro(1), allocation)
        self.now = datetime.datetime(2026, 6, 2, 6)
        self.admit_end(body)
        self.assertEqual(6.0, self.spent(allocation))


class TestDenied(AdmissionTestCase):

    def record_denied(self, body, message='too big'):
        admission.record_denied(
            self.ledger, lease_model.Context.coerce(self.context()),
            lease_model.Lease.coerce(body), message)

    def test_denied_lease_is_recorded_as_denied_with_its_message(self):
        self.record_denied(lease(day(2), day(3), hosts('a'), name='l'))
        entry, = self.entries()
        self.assertEqual(('denied', 'too big', 0, {'hosts': 1}),
                         (entry.state, entry.message, entry.charged,
                          entry.amounts))

    def test_denied_lease_counts_toward_nothing(self):
        self.record_denied(lease(day(2), day(3), hosts('a'), name='l'))
        with self.admit(admission.CHECK_CREATE,
                        lease(day(2), day(3), name='m')) as adm:
            self.assertEqual((0, {}), (adm.open_leases(), adm.peaks()))

    def test_denied_lease_is_never_taken_for_its_retry(self):
        body = lease(day(2), day(3), hosts('a'), name='l')
        self.record_denied(body)
        with self.admit(admission.CHECK_UPDATE, body, body) as adm:
            self.assertIsNone(adm.entry)

    def test_a_failing_record_of_a_denial_is_logged_not_raised(self):
        logger = self.useFixture(fixtures.FakeLogger())
        self.useFixture(fixtures.MockPatchObject(
            self.ledger, 'transaction', side_effect=RuntimeError('down')))
        self.record_denied(lease(day(2), day(3), name='l'))
        self.assertIn('Could not record the denied lease of project '
                      'project-a', logger.output)


class TestChain(AdmissionTestCase):
    """Two ledger filters in one chain share one admission."""

    options = {('enforcement', 'max_leases_per_project'): 5,
               ('enforcement', 'credit_host_rate'): 1.0}

    def setUp(self):
        super().setUp()
        self.both = self.chain('LeaseCountFilter', 'CreditFilter')

    def test_allowed_lease_is_recorded_once(self):
        allocation = self.give_credits(100)
        self.create(lease(day(2), day(3), hosts('a'), name='l'),
                    via=self.both)
        self.assertEqual((1, 24.0), (len(self.entries()),
                                     self.spent(allocation)))

    def test_denied_create_is_recorded_as_denied_with_the_denial(self):
        self.give_credits(1)
        message = self.assertDenied(self.create, lease(
            day(2), day(3), hosts('a'), name='l'), via=self.both)
        entry, = self.entries()
        self.assertEqual(('denied', message), (entry.state, entry.message))

    def test_denial_by_a_later_filter_leaves_nothing_live_or_charged(self):
        allocation = self.give_credits(1)
        self.assertDenied(self.create, lease(day(2), day(3), hosts('a')),
                          via=self.both)
        self.assertEqual(([], 0.0), (self.live_entries(),
                                     self.spent(allocation)))

    def test_denied_update_records_no_denial(self):
        self.give_credits(30)
        first = lease(day(2), day(3), hosts('a'), name='l')
        self.create(first, via=self.both)
        self.assertDenied(self.update, first, lease(
            day(2), day(5), hosts('a'), name='l'), via=self.both)
        self.assertEqual(['pending'], self.states())

    def test_filter_run_alone_records_no_denial(self):
        self.set(max_leases_per_project=1)
        alone = lease_count.LeaseCountFilter(self.conf,
                                             services=self.services)
        self.create(lease(day(2), day(3), name='a'), via=alone)
        self.assertDenied(self.create, lease(day(4), day(5), name='b'),
                          via=alone)
        self.assertEqual(['pending'], self.states())

    def test_on_end_closes_the_entry_once_and_refunds_once(self):
        allocation = self.give_credits(100)
        body = lease(day(2), day(4), hosts('a'), name='l')
        self.create(body, via=self.both)
        self.now = datetime.datetime(2026, 6, 2, 12)
        self.end(body, via=self.both)
        self.assertEqual((['terminated'], 12.0),
                         (self.states(), self.spent(allocation)))

    def test_exempted_project_is_not_recorded(self):
        chain = self.chain('LeaseCountFilter', 'CreditFilter',
                           exempted=[self.project])
        self.create(lease(day(2), day(3), hosts('a')), via=chain)
        self.assertEqual([], self.entries())

    def test_ledger_failure_on_create_is_an_error_naming_the_ledger(self):
        logger = self.useFixture(fixtures.FakeLogger())
        self.useFixture(fixtures.MockPatchObject(
            self.ledger, 'transaction', side_effect=RuntimeError('down')))
        error = self.assertRaises(chain_mod.FilterError, self.create,
                                  lease(day(2), day(3)), via=self.both)
        self.assertEqual('ledger', error.filter_name)
        self.assertIn('The ledger failed during check-create', logger.output)

    def test_ledger_failure_on_end_is_logged_and_the_lease_ends(self):
        logger = self.useFixture(fixtures.FakeLogger())
        self.useFixture(fixtures.MockPatchObject(
            self.ledger, 'transaction', side_effect=RuntimeError('down')))
        self.assertIsNone(self.end(lease(day(2), day(3)), via=self.both))
        self.assertIn('The ledger could not close the lease of project '
                      'project-a', logger.output)

    def test_chain_filters_share_the_services_ledger(self):
        self.assertEqual([self.ledger, self.ledger],
                         [f.ledger for f in self.both.ledger_filters])


OTHER_ID = '8a5a9d5e-0000-4000-8000-000000000002'


class TestLeaseIds(AdmissionTestCase):
    """A check-update may not give a lease an ID another entry holds: a
    400 naming ``lease.id``, and the ledger unchanged."""

    def two_leases(self):
        self.admit_create(lease(day(2), day(3), name='a', lease_id=LEASE_ID))
        second = lease(day(4), day(5), name='b', lease_id=OTHER_ID)
        self.admit_create(second)
        return second

    def test_update_giving_the_id_of_another_entry_is_a_payload_error(self):
        second = self.two_leases()
        error = self.assertRaises(
            lease_model.PayloadError, self.admit_update, second,
            lease(day(4), day(6), name='b', lease_id=LEASE_ID))
        self.assertEqual(('lease.id', LEASE_ID), (error.field, error.value))

    def test_update_giving_the_id_of_another_entry_changes_nothing(self):
        second = self.two_leases()
        before = [tuple(row) for row in self.entries()]
        self.assertRaises(lease_model.PayloadError, self.admit_update,
                          second, lease(day(4), day(6), name='b',
                                        lease_id=LEASE_ID))
        self.assertEqual(before, [tuple(row) for row in self.entries()])

    def test_update_giving_the_id_of_another_projects_entry_is_refused(self):
        self.admit_create(lease(day(2), day(3), name='a', lease_id=LEASE_ID),
                          project='proj-1')
        self.admit_create(lease(day(4), day(5), name='b'))
        self.assertRaises(lease_model.PayloadError, self.admit_update,
                          lease(day(4), day(5), name='b'),
                          lease(day(4), day(6), name='b',
                                lease_id=LEASE_ID))

    def test_update_keeping_its_own_id_is_recorded(self):
        second = self.two_leases()
        self.admit_update(second, lease(day(4), day(6), name='b',
                                        lease_id=OTHER_ID))
        self.assertEqual(at(6), self.entries()[1].end_date)

    def test_on_end_with_another_projects_id_closes_its_own_without(self):
        self.admit_create(lease(day(2), day(3), name='a', lease_id=LEASE_ID),
                          project='proj-1')
        self.admit_create(lease(day(4), day(5), name='b'))
        self.admit_end(lease(day(4), day(5), name='b', lease_id=LEASE_ID))
        self.assertEqual((['pending'], [('terminated', None)]),
                         (self.states('proj-1'),
                          [(row.state, row.lease_id)
                           for row in self.entries()]))

    def test_create_with_the_id_of_another_projects_entry_is_kept_without(
            self):
        self.admit_create(lease(day(2), day(3), name='a', lease_id=LEASE_ID),
                          project='proj-1')
        self.admit_create(lease(day(2), day(3), name='a', lease_id=LEASE_ID))
        entry, = self.entries()
        self.assertEqual(('pending', None), (entry.state, entry.lease_id))


class TestOtherProjects(AdmissionTestCase):
    """A request finds only the leases of its own project, whatever lease
    ID it carries."""

    def test_update_carrying_another_projects_id_does_not_move_it(self):
        body = lease(day(2), day(3), hosts('a'), name='l', lease_id=LEASE_ID)
        self.admit_create(body, project='proj-1')
        self.assertRaises(lease_model.PayloadError, self.admit_update, body,
                          body, project='proj-2')
        self.assertEqual((1, []), (len(self.entries('proj-1')),
                                   self.entries('proj-2')))

    def test_on_end_carrying_another_projects_id_does_not_close_it(self):
        body = lease(day(2), day(3), hosts('a'), name='l', lease_id=LEASE_ID)
        self.admit_create(body, project='proj-1')
        self.admit_end(body, project='proj-2')
        self.assertEqual(['pending'], self.states('proj-1'))

    def test_on_end_carrying_another_projects_id_refunds_nothing(self):
        allocation = self.give_credits(100, project='proj-1')
        body = lease(day(2), day(3), hosts('a'), name='l', lease_id=LEASE_ID)
        with self.admit(admission.CHECK_CREATE, body,
                        project='proj-1') as adm:
            adm.price(store.to_micro(1), allocation)
        self.admit_end(body, project='proj-2')
        self.assertEqual(24.0, self.spent(allocation))


class TestEndedLease(AdmissionTestCase):
    """Blazar never updates an ended lease: an update after on-end is
    denied, and the closed entry stays closed and charged as it was."""

    def ended(self, allocation=None):
        body = lease(day(2), day(4), hosts('a'), name='l', lease_id=LEASE_ID)
        with self.admit(admission.CHECK_CREATE, body) as adm:
            if allocation is not None:
                adm.price(store.to_micro(1), allocation)
        self.now = datetime.datetime(2026, 6, 3)
        self.admit_end(body)
        return body

    def test_update_after_on_end_is_denied(self):
        body = self.ended()
        denial = self.assertRaises(
            admission.Denied, self.admit_update, body,
            lease(day(2), day(5), hosts('a'), name='l', lease_id=LEASE_ID))
        self.assertEqual('Lease %s of project project-a has ended (on '
                         '2026-06-03 00:00); an ended lease cannot be '
                         'updated.' % LEASE_ID, str(denial))

    def test_update_after_on_end_leaves_the_entry_closed(self):
        body = self.ended()
        before = [tuple(row) for row in self.entries()]
        self.assertRaises(admission.Denied, self.admit_update, body, lease(
            day(2), day(5), hosts('a'), name='l', lease_id=LEASE_ID))
        self.assertEqual(before, [tuple(row) for row in self.entries()])

    def test_update_after_on_end_charges_nothing(self):
        allocation = self.give_credits(100)
        body = self.ended(allocation)
        self.assertRaises(admission.Denied, self.admit_update, body, lease(
            day(2), day(5), hosts('a'), name='l', lease_id=LEASE_ID))
        self.assertEqual(24.0, self.spent(allocation))

    def test_second_on_end_after_a_refused_update_changes_nothing(self):
        allocation = self.give_credits(100)
        body = self.ended(allocation)
        self.assertRaises(admission.Denied, self.admit_update, body, lease(
            day(2), day(5), hosts('a'), name='l', lease_id=LEASE_ID))
        before = [tuple(row) for row in self.entries()]
        self.admit_end(body)
        self.assertEqual((before, 24.0), ([tuple(row) for row in
                                           self.entries()],
                                          self.spent(allocation)))


class TestEndedLeaseThroughFilters(AdmissionTestCase):
    """The ledger's refusal is a filter denial (403), in a chain and for a
    filter run alone (blazar-manager)."""

    options = {('enforcement', 'credit_host_rate'): 1.0}

    def ended(self, via):
        self.give_credits(100)
        body = lease(day(2), day(4), hosts('a'), name='l', lease_id=LEASE_ID)
        self.create(body, via=via)
        self.now = datetime.datetime(2026, 6, 3)
        self.end(body, via=via)
        return body

    def test_update_after_on_end_is_denied_by_the_chain(self):
        chain = self.chain('LeaseCountFilter', 'CreditFilter')
        body = self.ended(chain)
        message = self.assertDenied(self.update, body, lease(
            day(2), day(5), hosts('a'), name='l', lease_id=LEASE_ID),
            via=chain)
        self.assertIn('an ended lease cannot be updated', message)

    def test_update_after_on_end_is_denied_by_a_filter_run_alone(self):
        alone = lease_count.LeaseCountFilter(self.conf,
                                             services=self.services)
        body = self.ended(alone)
        denial = self.assertRaises(
            filters_base.EnforcementDenied, self.update, body, lease(
                day(2), day(5), hosts('a'), name='l', lease_id=LEASE_ID),
            via=alone)
        self.assertEqual('ledger', denial.filter_name)


class TestIntervalProjects(AdmissionTestCase):
    """The projects whose intervals the filters count are read once, in
    one statement, whichever of them a filter asks for."""

    def setUp(self):
        super().setUp()
        self.admit_create(lease(day(2), day(4), hosts('a')))
        self.admit_create(lease(day(3), day(5), hosts('b')), project='q')
        self.statements = ledger_helpers.watch_statements(
            self, self.ledger.engine)

    def read_both(self, interval_projects):
        context = lease_model.Context.coerce(self.context())
        with admission.admit(
                self.ledger, admission.CHECK_CREATE, context,
                lease_model.Lease.coerce(lease(day(1), day(6), hosts('c'))),
                interval_projects=interval_projects, record=False) as adm:
            before = len(self.statements)
            own = adm.intervals()
            family = adm.intervals([self.project, 'q'])
            read = len(self.statements) - before
        return ([row.project_id for _, row in own],
                sorted(row.project_id for _, row in family), read)

    def test_the_project_and_its_family_come_from_one_statement(self):
        self.assertEqual(([self.project], sorted([self.project, 'q']), 1),
                         self.read_both({self.project, 'q'}))

    def test_without_them_each_read_is_a_statement(self):
        self.assertEqual(([self.project], sorted([self.project, 'q']), 2),
                         self.read_both(()))
