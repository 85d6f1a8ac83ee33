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
"""Configuration that would silently do nothing: options set for a filter
that is not enabled, and enabled filters that can never deny."""

import os

import fixtures
import testscenarios
import testtools

from placement_quota import conf as pq_conf
from placement_quota.filters import chain as chain_mod
from placement_quota.filters import no_ops
from placement_quota import services as services_mod

load_tests = testscenarios.load_tests_apply_scenarios


class NoOpsTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def load(self, text):
        """The configuration of the file ``text``, its available filter
        classes and its enabled filters (on a SQLite ledger)."""
        path = os.path.join(self.tmp, 'placement-quota.conf')
        with open(path, 'w') as f:
            f.write('[ledger]\nconnection = sqlite:///%s\n'
                    'count_host_resources = false\n%s'
                    % (os.path.join(self.tmp, 'ledger.sqlite'), text))
        conf = pq_conf.new_config([], config_files=[path])
        available = chain_mod.available_filter_classes(conf)
        services = services_mod.Services(conf)
        self.addCleanup(services.close)
        return conf, available, chain_mod.load_filters(conf, services)

    def unused(self, text):
        conf, available, filters = self.load(text)
        return [(group, option) for group, option, _ in
                no_ops.unused_options(conf, available,
                                      [f.name for f in filters])]

    def inert(self, text):
        conf, available, filters = self.load(text)
        return [name for name, _ in no_ops.inert_filters(filters)]


class TestUnusedOptions(NoOpsTestCase):

    def test_an_option_of_a_filter_not_enabled_is_named(self):
        self.assertEqual([('enforcement', 'max_leases_per_project')],
                         self.unused('[enforcement]\n'
                                     'max_leases_per_project = 1\n'))

    def test_an_option_of_an_enabled_filter_is_not_named(self):
        self.assertEqual([], self.unused(
            '[enforcement]\nenabled_filters = LeaseCountFilter\n'
            'max_leases_per_project = 1\n'))

    def test_an_option_left_unset_is_not_named(self):
        self.assertEqual([], self.unused('[enforcement]\n'
                                         'enabled_filters = CreditFilter\n'))

    def test_an_option_set_to_its_default_value_is_still_named(self):
        self.assertEqual([('enforcement', 'max_hosts_per_reservation')],
                         self.unused('[enforcement]\n'
                                     'max_hosts_per_reservation = 0\n'))

    def test_an_option_of_the_upstream_name_of_an_enabled_filter_counts(self):
        self.assertEqual([], self.unused(
            '[enforcement]\nenabled_filters = MaxLeaseDurationFilter\n'
            'reservation_max_length = 3600\n'))

    def test_an_external_option_without_the_external_filter_is_named(self):
        self.assertEqual([('enforcement_external', 'retries')], self.unused(
            '[enforcement]\nenabled_filters = LeaseCountFilter\n'
            'max_leases_per_project = 1\n'
            '[enforcement_external]\nretries = 3\n'))

    def test_the_warning_names_the_option_its_filter_and_the_chain(self):
        conf, available, filters = self.load(
            '[enforcement]\nmax_leases_per_project = 1\n')
        self.assertEqual(
            '[enforcement] max_leases_per_project is set, but '
            'LeaseCountFilter, the filter that reads it, is not in '
            '[enforcement] enabled_filters (MaximumReservationLengthFilter, '
            'ExternalServiceFilter): the option does nothing.',
            no_ops.option_warnings(conf, available,
                                   [f.name for f in filters])[0])


class TestInertFilters(NoOpsTestCase):

    scenarios = [
        ('external_without_endpoint', {
            'filter': 'ExternalServiceFilter', 'acting': (
                '[enforcement_external]\n'
                'endpoint_url = http://127.0.0.1:9/v1/\n')}),
        ('max_length_without_limit', {
            'filter': 'MaximumReservationLengthFilter',
            'acting': '[enforcement]\nmax_lease_duration = 3600\n'}),
        ('lease_count_without_limit', {
            'filter': 'LeaseCountFilter',
            'acting': '[enforcement]\nmax_leases_per_project = 2\n'}),
        ('size_without_limit', {
            'filter': 'ReservationSizeFilter',
            'acting': '[enforcement]\nmax_networks_per_lease = 1\n'}),
        ('user_limit_without_limit', {
            'filter': 'UserLimitFilter',
            'acting': '[enforcement]\nmax_hosts_per_user = 4\n'}),
    ]

    def test_the_filter_without_its_setting_is_inert(self):
        self.assertEqual([self.filter], self.inert(
            '[enforcement]\nenabled_filters = %s\n' % self.filter))

    def test_the_filter_with_its_setting_acts(self):
        self.assertEqual([], self.inert(
            self.acting + '[enforcement]\nenabled_filters = %s\n'
            % self.filter))


class TestSummary(NoOpsTestCase):

    def test_the_default_chain_enforces_nothing(self):
        conf, available, filters = self.load('')
        self.assertEqual('MaximumReservationLengthFilter (inert), '
                         'ExternalServiceFilter (inert) -- nothing is '
                         'enforced', no_ops.summary(filters))

    def test_a_chain_with_one_acting_filter_marks_only_the_inert_one(self):
        conf, available, filters = self.load(
            '[enforcement]\nreservation_max_length = 3600\n')
        self.assertEqual('MaximumReservationLengthFilter, '
                         'ExternalServiceFilter (inert)',
                         no_ops.summary(filters))

    def test_an_empty_chain_allows_every_lease(self):
        self.assertEqual('none (every lease is allowed)', no_ops.summary([]))

    def test_a_chain_of_inert_filters_says_it_allows_everything(self):
        conf, available, filters = self.load('')
        self.assertEqual(
            'No enabled enforcement filter can deny a lease: the chain '
            'allows everything.',
            no_ops.warnings(conf, available, filters)[-1])

    def test_a_chain_that_can_deny_says_nothing_of_the_kind(self):
        conf, available, filters = self.load(
            '[enforcement]\nenabled_filters = CreditFilter\n')
        self.assertEqual([], no_ops.warnings(conf, available, filters))
