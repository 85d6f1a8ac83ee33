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
"""The filter chain: loading, order, denials, notifications, exemptions."""

import fixtures
from oslo_config import cfg
import testtools

from placement_quota import conf as pq_conf
from placement_quota import filters
from placement_quota.filters import base
from placement_quota.filters import chain as chain_mod
from placement_quota.filters import exemptions as exemptions_mod
from placement_quota import services as services_mod
from tests import spec_examples as spec

CALLS = []


class _Recording(base.BaseFilter):
    deny_on = ()

    def _record(self, method, *args):
        CALLS.append((self.name, method) + args)
        if method in self.deny_on:
            raise self.deny('%s says no' % self.name)

    def check_create(self, context, lease):
        self._record('check_create')

    def check_update(self, context, current_lease, lease):
        self._record('check_update', current_lease.reservations[0].count(
            'max'), lease.reservations[0].count('max'))

    def on_end(self, context, lease):
        self._record('on_end')


class AlphaFilter(_Recording):
    pass


class BetaFilter(_Recording):
    pass


class DenyingFilter(_Recording):
    deny_on = ('check_create', 'check_update')


class FailingFilter(_Recording):
    def check_create(self, context, lease):
        raise RuntimeError('backend down')

    def on_end(self, context, lease):
        CALLS.append((self.name, 'on_end'))
        raise RuntimeError('backend down')


all_filters = [AlphaFilter, BetaFilter, DenyingFilter, FailingFilter]
names_only = ['AlphaFilter']


def all_filters_factory():
    return [BetaFilter]


class ChainTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        del CALLS[:]
        self.conf = pq_conf.new_config([], config_files=[])
        chain_mod.register_filter_opts(self.conf, filters.all_filters)
        self.conf.set_override('available_filters',
                               [__name__ + '.all_filters'], 'enforcement')

    def chain(self, *names, exemptions=None):
        self.conf.set_override('enabled_filters', list(names), 'enforcement')
        return chain_mod.FilterChain(self.conf, exemptions=exemptions)


class TestOrder(ChainTestCase):

    def test_filters_run_in_the_order_written(self):
        self.chain('BetaFilter', 'AlphaFilter').check_create(
            spec.CONTEXT, spec.lease())
        self.assertEqual([('BetaFilter', 'check_create'),
                          ('AlphaFilter', 'check_create')], CALLS)

    def test_reversed_order_is_kept_too(self):
        self.chain('AlphaFilter', 'BetaFilter').check_create(
            spec.CONTEXT, spec.lease())
        self.assertEqual(['AlphaFilter', 'BetaFilter'],
                         [c[0] for c in CALLS])

    def test_no_enabled_filter_allows_everything(self):
        self.chain().check_create(spec.CONTEXT, spec.lease())
        self.assertEqual([], CALLS)


class TestDenial(ChainTestCase):

    def test_first_denial_stops_the_chain(self):
        chain = self.chain('AlphaFilter', 'DenyingFilter', 'BetaFilter')
        self.assertRaises(base.EnforcementDenied, chain.check_create,
                          spec.CONTEXT, spec.lease())
        self.assertEqual(['AlphaFilter', 'DenyingFilter'],
                         [c[0] for c in CALLS])

    def test_denial_message_is_the_filters_message(self):
        chain = self.chain('DenyingFilter')
        denial = self.assertRaises(base.EnforcementDenied,
                                   chain.check_create, spec.CONTEXT,
                                   spec.lease())
        self.assertEqual('DenyingFilter says no', str(denial))
        self.assertEqual('DenyingFilter', denial.filter_name)

    def test_check_update_gets_the_current_and_the_new_lease(self):
        document = spec.check_update()
        self.chain('AlphaFilter').check_update(
            document['context'], document['current_lease'],
            document['lease'])
        self.assertEqual([('AlphaFilter', 'check_update', 2, 3)], CALLS)

    def test_update_can_be_denied(self):
        document = spec.check_update()
        self.assertRaises(
            base.EnforcementDenied, self.chain('DenyingFilter').check_update,
            document['context'], document['current_lease'],
            document['lease'])

    def test_a_failing_filter_is_an_error_not_a_denial(self):
        error = self.assertRaises(chain_mod.FilterError,
                                  self.chain('FailingFilter').check_create,
                                  spec.CONTEXT, spec.lease())
        self.assertEqual('FailingFilter', error.filter_name)
        self.assertIn('backend down', str(error))


class TestOnEnd(ChainTestCase):

    def test_on_end_notifies_every_filter_in_order(self):
        self.chain('BetaFilter', 'AlphaFilter').on_end(spec.CONTEXT,
                                                       spec.lease())
        self.assertEqual([('BetaFilter', 'on_end'),
                          ('AlphaFilter', 'on_end')], CALLS)

    def test_on_end_error_is_logged_and_not_raised(self):
        logger = self.useFixture(fixtures.FakeLogger())
        self.chain('FailingFilter', 'AlphaFilter').on_end(spec.CONTEXT,
                                                          spec.lease())
        self.assertIn('FailingFilter failed in on_end', logger.output)
        self.assertEqual([('FailingFilter', 'on_end'),
                          ('AlphaFilter', 'on_end')], CALLS)


class _Resolver:
    """Stands in for Keystone in these pure tests of the name cache."""

    def __init__(self, answers, fail=False):
        self.answers = answers
        self.fail = fail
        self.calls = 0

    def factory(self, conf):
        return self.resolve

    def resolve(self, name, domain):
        self.calls += 1
        if self.fail:
            raise ConnectionError('keystone unreachable')
        return self.answers.get((name, domain))


class TestExemptions(ChainTestCase):

    def exemptions(self, entries, resolver=None, refresh=300):
        self.conf.set_override('exempted_projects', entries, 'enforcement')
        self.conf.set_override('exempted_projects_refresh', refresh,
                               'enforcement')
        factory = resolver.factory if resolver else None
        return exemptions_mod.Exemptions(self.conf, resolver_factory=factory)

    def test_exempted_project_id_skips_every_filter(self):
        exemptions = self.exemptions([spec.CONTEXT['project_id']])
        self.chain('DenyingFilter', exemptions=exemptions).check_create(
            spec.CONTEXT, spec.lease())
        self.assertEqual([], CALLS)

    def test_other_projects_are_still_checked(self):
        exemptions = self.exemptions(['another-project'])
        self.assertRaises(base.EnforcementDenied,
                          self.chain('DenyingFilter',
                                     exemptions=exemptions).check_create,
                          spec.CONTEXT, spec.lease())

    def test_exempted_project_is_not_notified_on_end(self):
        exemptions = self.exemptions([spec.CONTEXT['project_id']])
        self.chain('AlphaFilter', exemptions=exemptions).on_end(
            spec.CONTEXT, spec.lease())
        self.assertEqual([], CALLS)

    def test_name_at_domain_is_resolved_to_an_id(self):
        resolver = _Resolver({('demo', 'Default'): 'id-of-demo'})
        exemptions = self.exemptions(['demo@Default'], resolver)
        self.assertIn('id-of-demo', exemptions)
        self.assertNotIn('demo', exemptions)

    def test_names_are_resolved_once_per_refresh_period(self):
        resolver = _Resolver({('demo', 'Default'): 'id-of-demo'})
        exemptions = self.exemptions(['demo@Default'], resolver)
        for _ in range(5):
            self.assertIn('id-of-demo', exemptions)
        self.assertEqual(1, resolver.calls)

    def test_project_ids_need_no_resolution(self):
        resolver = _Resolver({}, fail=True)
        exemptions = self.exemptions(['abc', 'demo@Default'], resolver)
        self.assertIn('abc', exemptions)
        self.assertEqual(0, resolver.calls)

    def test_failed_resolution_exempts_nobody_and_is_logged(self):
        logger = self.useFixture(fixtures.FakeLogger())
        exemptions = self.exemptions(
            ['demo@Default'],
            _Resolver({('demo', 'Default'): 'id-of-demo'}, fail=True))
        self.assertNotIn('id-of-demo', exemptions)
        self.assertIn('Cannot resolve exempted projects demo@Default',
                      logger.output)

    def test_refresh_is_not_waited_for_once_names_are_known(self):
        resolver = _Resolver({('demo', 'Default'): 'id-of-demo'})
        exemptions = self.exemptions(['demo@Default'], resolver, refresh=1)
        self.assertIn('id-of-demo', exemptions)
        with exemptions._lock:  # another thread is refreshing
            exemptions._next_resolution = 0
            self.assertIn('id-of-demo', exemptions)
        self.assertEqual(1, resolver.calls)

    def test_entry_without_a_name_or_a_domain_is_refused(self):
        for entry in ('@Default', 'demo@'):
            error = self.assertRaises(ValueError, self.exemptions, [entry])
            self.assertIn(repr(entry), str(error))

    def test_name_with_at_sign_splits_on_the_last_one(self):
        resolver = _Resolver({('team@lab', 'Default'): 'id'})
        self.assertIn('id', self.exemptions(['team@lab@Default'], resolver))


class TestLoading(ChainTestCase):

    def test_unknown_filter_names_the_filter_and_where_it_looked(self):
        error = self.assertRaises(chain_mod.FilterLoadError, self.chain,
                                  'NoSuchFilter')
        self.assertIn("'NoSuchFilter'", str(error))
        self.assertIn(__name__ + '.all_filters', str(error))
        self.assertIn('placement_quota.enforcement.filters', str(error))

    def test_entry_point_filters_are_available_without_listing_module(self):
        chain = self.chain('AlphaFilter', 'MaximumReservationLengthFilter')
        self.assertEqual(['AlphaFilter', 'MaximumReservationLengthFilter'],
                         chain.names)

    def test_upstream_blazar_filter_name_loads(self):
        self.conf.set_override('available_filters', [], 'enforcement')
        chain = self.chain('MaxLeaseDurationFilter')
        self.assertEqual(['MaxLeaseDurationFilter'], chain.names)

    def test_all_filters_may_list_class_names(self):
        self.conf.set_override('available_filters',
                               [__name__ + '.names_only'], 'enforcement')
        self.assertEqual(['AlphaFilter'], self.chain('AlphaFilter').names)

    def test_all_filters_may_be_a_function(self):
        self.conf.set_override('available_filters',
                               [__name__ + '.all_filters_factory'],
                               'enforcement')
        self.assertEqual(['BetaFilter'], self.chain('BetaFilter').names)

    def test_module_that_cannot_be_imported_is_named(self):
        self.conf.set_override('available_filters',
                               ['no_such_package.all_filters'],
                               'enforcement')
        error = self.assertRaises(chain_mod.FilterLoadError, self.chain)
        self.assertIn('no_such_package', str(error))

    def test_missing_attribute_is_named(self):
        self.conf.set_override('available_filters',
                               [__name__ + '.no_such_list'], 'enforcement')
        error = self.assertRaises(chain_mod.FilterLoadError, self.chain)
        self.assertIn("no attribute 'no_such_list'", str(error))

    def test_options_of_every_available_filter_are_registered(self):
        conf = pq_conf.new_config([], config_files=[])
        self.assertRaises(cfg.NoSuchOptError, getattr, conf.enforcement,
                          'max_leases_per_project')
        # The default chain does not enable LeaseCountFilter.
        chain_mod.FilterChain(conf)
        self.assertEqual(0, conf.enforcement.max_leases_per_project)

    def test_a_filter_gets_the_services_of_its_chain(self):
        conf = pq_conf.new_config([], config_files=[])
        conf.set_override('enabled_filters', ['LeaseCountFilter'],
                          'enforcement')
        conf.set_override('connection', 'sqlite://', 'ledger')
        conf.set_override('count_host_resources', False, 'ledger')
        services = services_mod.Services(conf)
        self.addCleanup(services.close)
        chain = chain_mod.FilterChain(conf, services=services)
        self.assertIs(services.ledger, chain.filters[0].ledger)

    def test_bad_option_value_is_a_load_error_naming_the_filter(self):
        self.conf.set_override('available_filters', [], 'enforcement')
        self.conf.set_override('external_service_base_endpoint', 'ftp://x',
                               'enforcement')
        error = self.assertRaises(chain_mod.FilterLoadError, self.chain,
                                  'ExternalServiceFilter')
        self.assertIn('ExternalServiceFilter', str(error))
        self.assertIn('external_service_base_endpoint', str(error))
