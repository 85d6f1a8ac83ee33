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
"""Stock Blazar (from PyPI, unpatched) as the client of placement-quota.

1. Blazar's own ExternalServiceFilter calls our running service, with the
   base URLs operators write: ``.../v1/`` and ``.../v1``.
2. Blazar's UsageEnforcement drives our filter classes in-process; they are
   put into its filter namespace inside these tests only, by a patch or by
   ``placement_quota.blazar.enforcement.install()``.
"""

import datetime
import warnings

with warnings.catch_warnings():
    # blazar imports eventlet through futurist, which warns on import.
    warnings.simplefilter('ignore')
    from blazar import context as blazar_context
    from blazar.enforcement import enforcement as blazar_enforcement
    from blazar.enforcement import exceptions as blazar_enforcement_exc
    from blazar.enforcement import filters as blazar_filters
    from blazar.enforcement.filters import external_service_filter
    from blazar.enforcement.filters import max_lease_duration_filter
    from blazar import exceptions as blazar_exc
    import blazar.utils.openstack.keystone  # noqa: F401 - registers options

import fixtures
from oslo_config import cfg
from oslo_config import fixture as config_fixture
import testtools

from placement_quota.blazar import enforcement as pq_enforcement
from placement_quota.filters import base
from placement_quota.filters import blazar_compat
from placement_quota.filters import chain as chain_mod
from placement_quota.lease import errors as lease_errors
from placement_quota.ledger import errors as ledger_errors
from tests.fixtures import enforcement as service_fixture

DAY = 86400
START = datetime.datetime(2030, 5, 13, 0, 0)
HOST = '32af5a7a-e7a3-4883-a643-828e3f63bf54'


def blazar_lease(hours, project_id='a0b86a98b0d343cb948e00689182efd4'):
    """lease_values, reservations and allocations as Blazar's manager has
    them when it calls enforcement (blazar/manager/service.py)."""
    lease_values = {
        'name': 'lease-1', 'start_date': START,
        'end_date': START + datetime.timedelta(hours=hours),
        'user_id': 'c631173edec04bb7a0c3f7711153c06c',
        'project_id': project_id, 'trust_id': 'trust', 'events': [],
        'before_end_date': None,
    }
    reservations = [{'resource_type': 'physical:host', 'min': 1, 'max': 2,
                     'hypervisor_properties': '[]',
                     'resource_properties': '', 'before_end': 'default'}]
    allocations = {'physical:host': [{
        'id': '1', 'hypervisor_hostname': HOST, 'vcpus': 8,
        'memory_mb': 16384, 'local_gb': 100, 'extra': {'gpu': 'a100'}}]}
    return lease_values, reservations, allocations


def formatted(hours):
    """The lease dict Blazar hands each filter (UsageEnforcement's
    format_lease, which uses no instance state)."""
    values, reservations, allocations = blazar_lease(hours)
    return blazar_enforcement.UsageEnforcement.format_lease(
        None, values, reservations, allocations)


CONTEXT = {'user_id': 'c631173edec04bb7a0c3f7711153c06c',
           'project_id': 'a0b86a98b0d343cb948e00689182efd4',
           'auth_url': 'http://127.0.0.1:5000/v3',
           'region_name': 'RegionOne'}


class BlazarTestCase(testtools.TestCase):
    """Blazar's global CONF, reset after each test."""

    def setUp(self):
        super().setUp()
        self.blazar_conf = self.useFixture(config_fixture.Config(cfg.CONF))


class TestStockBlazarExternalServiceFilter(BlazarTestCase):
    """Blazar's ExternalServiceFilter against `placement-quota serve`."""

    base_suffix = '/v1/'

    def setUp(self):
        super().setUp()
        conf = service_fixture.config(
            enabled_filters=('enforcement',
                             ['MaximumReservationLengthFilter']),
            reservation_max_length=('enforcement', DAY))
        service = self.useFixture(service_fixture.EnforcementService(conf))
        cfg.CONF.register_opts(
            external_service_filter.ExternalServiceFilter.enforcement_opts,
            group='enforcement')
        self.blazar_conf.config(
            group='enforcement',
            external_service_base_endpoint=service.url + self.base_suffix)
        self.filter = external_service_filter.ExternalServiceFilter(
            conf=cfg.CONF)

    def test_short_lease_is_allowed(self):
        self.filter.check_create(CONTEXT, formatted(hours=12))

    def test_long_lease_is_denied_with_our_message(self):
        error = self.assertRaises(
            blazar_enforcement_exc.ExternalServiceFilterException,
            self.filter.check_create, CONTEXT, formatted(hours=48))
        self.assertEqual('Lease length of 2 days (172800 seconds) exceeds '
                         'the maximum of 1 day (86400 seconds).', str(error))

    def test_update_to_a_long_lease_is_denied(self):
        error = self.assertRaises(
            blazar_enforcement_exc.ExternalServiceFilterException,
            self.filter.check_update, CONTEXT, formatted(hours=12),
            formatted(hours=30))
        self.assertIn('exceeds the maximum of 1 day', str(error))

    def test_update_to_a_short_lease_is_allowed(self):
        self.filter.check_update(CONTEXT, formatted(hours=48),
                                 formatted(hours=12))

    def test_on_end_is_accepted(self):
        self.filter.on_end(CONTEXT, formatted(hours=48))


class TestStockBlazarWithoutTrailingSlash(
        TestStockBlazarExternalServiceFilter):
    """``.../v1``: Blazar's urljoin drops ``v1`` and calls /check-create,
    which we serve too."""

    base_suffix = '/v1'

    def test_blazar_really_calls_the_path_without_v1(self):
        self.assertTrue(self.filter.check_create_endpoint.endswith(
            '/check-create'))
        self.assertNotIn('/v1/', self.filter.check_create_endpoint)


class TestBlazarUsageEnforcementDrivesOurFilters(BlazarTestCase):
    """Blazar's UsageEnforcement runs our filter classes in-process."""

    def setUp(self):
        super().setUp()
        for cls in blazar_compat.all_filters:
            self.useFixture(fixtures.MonkeyPatch(
                'blazar.enforcement.filters.' + cls.__name__, cls))
        self.useFixture(fixtures.MonkeyPatch(
            'blazar.enforcement.filters.all_filters',
            list(blazar_filters.all_filters) +
            [cls.__name__ for cls in blazar_compat.all_filters]))
        for cls in blazar_compat.all_filters:
            cls.register_opts(cfg.CONF)
        self.blazar_conf.config(os_region_name='RegionOne')
        self.context = blazar_context.BlazarContext(
            user_id=CONTEXT['user_id'], project_id=CONTEXT['project_id'],
            service_catalog=[{'type': 'identity', 'endpoints': [{
                'interface': 'internal', 'region': 'RegionOne',
                'url': 'http://127.0.0.1:5000/v3'}]}])

    def enforcement(self, *names, **options):
        self.blazar_conf.config(group='enforcement',
                                enabled_filters=list(names), **options)
        return blazar_enforcement.UsageEnforcement()

    def test_our_length_filter_allows_a_short_lease(self):
        enforcement = self.enforcement('MaximumReservationLengthFilter',
                                       reservation_max_length=DAY)
        enforcement.check_create(self.context, *blazar_lease(hours=12))

    def test_our_denial_is_the_not_authorized_blazars_manager_catches(self):
        enforcement = self.enforcement('MaximumReservationLengthFilter',
                                       reservation_max_length=DAY)
        error = self.assertRaises(blazar_exc.NotAuthorized,
                                  enforcement.check_create, self.context,
                                  *blazar_lease(hours=25))
        self.assertIn('exceeds the maximum of 1 day', str(error))

    def test_check_update_gets_blazars_current_and_new_lease(self):
        enforcement = self.enforcement('MaximumReservationLengthFilter',
                                       reservation_max_length=DAY)
        current, reservations, allocations = blazar_lease(hours=12)
        new, _, _ = blazar_lease(hours=36)
        error = self.assertRaises(
            blazar_enforcement_exc.ExternalServiceFilterException,
            enforcement.check_update, self.context, current, new,
            allocations, allocations, reservations, reservations)
        self.assertIn('exceeds the maximum of 1 day', str(error))

    def test_update_denial_is_exactly_a_type_update_lease_calls_non_fatal(
            self):
        # blazar.status restores the lease's status only when
        # type(error) is one of update_lease's non_fatal_exceptions: a
        # subclass puts the lease into ERROR.
        enforcement = self.enforcement('MaximumReservationLengthFilter',
                                       reservation_max_length=DAY)
        current, reservations, allocations = blazar_lease(hours=12)
        new, _, _ = blazar_lease(hours=36)
        error = self.assertRaises(
            Exception, enforcement.check_update, self.context, current,
            new, allocations, allocations, reservations, reservations)
        self.assertIs(blazar_enforcement_exc.ExternalServiceFilterException,
                      type(error))
        self.assertEqual('Lease length of 1 day, 12:00:00 (129600 seconds) '
                         'exceeds the maximum of 1 day (86400 seconds).',
                         str(error))

    def test_on_end_with_blazars_stored_lease_is_accepted(self):
        enforcement = self.enforcement('MaximumReservationLengthFilter',
                                       reservation_max_length=DAY)
        values, reservations, allocations = blazar_lease(hours=48)
        values['reservations'] = reservations
        enforcement.on_end(self.context, values, allocations)

    def test_upstream_option_name_works_inside_blazar(self):
        enforcement = self.enforcement('MaxLeaseDurationFilter',
                                       max_lease_duration=3600)
        self.assertRaises(blazar_exc.NotAuthorized, enforcement.check_create,
                          self.context, *blazar_lease(hours=2))

    def test_our_external_filter_inside_blazar_reaches_our_service(self):
        conf = service_fixture.config(
            enabled_filters=('enforcement',
                             ['MaximumReservationLengthFilter']),
            reservation_max_length=('enforcement', DAY))
        service = self.useFixture(service_fixture.EnforcementService(conf))
        blazar_compat.ExternalServiceFilter.register_opts(cfg.CONF)
        enforcement = self.enforcement(
            'ExternalServiceFilter',
            external_service_base_endpoint=service.url + '/v1/')
        enforcement.check_create(self.context, *blazar_lease(hours=12))
        error = self.assertRaises(blazar_exc.NotAuthorized,
                                  enforcement.check_create, self.context,
                                  *blazar_lease(hours=30))
        self.assertIn('exceeds the maximum of 1 day', str(error))


class _EndDenyingFilter(base.BaseFilter):
    """Denies every end (none of ours does)."""

    def check_create(self, context, lease):
        pass

    def check_update(self, context, current_lease, lease):
        pass

    def on_end(self, context, lease):
        raise self.deny('The end is denied.')


class TestOnEndInsideBlazar(BlazarTestCase):

    def test_a_denied_end_is_logged_not_raised(self):
        logger = self.useFixture(fixtures.FakeLogger())
        end_denying = blazar_compat.for_blazar(_EndDenyingFilter)(cfg.CONF)

        self.assertIsNone(end_denying.on_end(CONTEXT, formatted(hours=2)))
        self.assertIn('_EndDenyingFilter denied the end of a lease, which '
                      'Blazar ends anyway: The end is denied.',
                      logger.output)


class _Failing:
    """A chain that cannot decide: it raises ``failure``."""

    def __init__(self, failure):
        self.failure = failure

    def check_create(self, context, lease):
        raise self.failure

    def check_update(self, context, current_lease, lease):
        raise self.failure


class TestAFailureInsideBlazarKeepsTheLease(testtools.TestCase):
    """Our chain inside blazar-manager, unable to decide: Blazar gets the
    exception its update_lease lists as non-fatal (the lease keeps its
    status), with the reason, as through the external service."""

    def raised(self, failure, method='check_update'):
        chain_filter = blazar_compat.PlacementQuotaChainFilter(
            cfg.ConfigOpts(), chain=_Failing(failure))
        args = ({}, {}) if method == 'check_create' else ({}, {}, {})
        return self.assertRaises(Exception, getattr(chain_filter, method),
                                 *args)

    def test_a_ledger_outage_on_an_update(self):
        error = self.raised(ledger_errors.LedgerUnavailable(
            'the ledger database is down'))
        self.assertIs(blazar_enforcement_exc.ExternalServiceFilterException,
                      type(error))
        self.assertIn('the ledger database is down', str(error))

    def test_a_payload_it_cannot_read_on_an_update(self):
        error = self.raised(lease_errors.PayloadError(
            'lease.reservations[0].allocations[0].extra.su_factor',
            'must be a finite number from 0 to 100', 'x'))
        self.assertIs(blazar_enforcement_exc.ExternalServiceFilterException,
                      type(error))
        self.assertIn('su_factor', str(error))

    def test_a_failed_filter_on_a_create(self):
        error = self.raised(chain_mod.FilterError(
            'CreditFilter', RuntimeError('boom')), method='check_create')
        self.assertIs(blazar_enforcement_exc.ExternalServiceFilterException,
                      type(error))


class TestInstall(testtools.TestCase):
    """install() puts our filters into Blazar's filter namespace."""

    def setUp(self):
        super().setUp()
        self.useFixture(config_fixture.Config(cfg.CONF))
        # Blazar's module as it was, after each test.
        self.useFixture(fixtures.MonkeyPatch(
            'blazar.enforcement.filters.all_filters',
            list(blazar_filters.all_filters)))
        before = set(vars(blazar_filters))
        self.addCleanup(lambda: [delattr(blazar_filters, name) for name in
                                 set(vars(blazar_filters)) - before])

    def test_our_filters_load_by_name_in_blazars_enforcement(self):
        pq_enforcement.install()
        cfg.CONF.set_override('enabled_filters',
                              ['MaximumReservationLengthFilter'],
                              'enforcement')

        enforcement = blazar_enforcement.UsageEnforcement()

        self.assertEqual([blazar_compat.MaximumReservationLengthFilter],
                         [type(f) for f in enforcement.enabled_filters])

    def test_blazars_own_filters_keep_their_names(self):
        installed = pq_enforcement.install()

        self.assertIs(external_service_filter.ExternalServiceFilter,
                      blazar_filters.ExternalServiceFilter)
        self.assertIs(max_lease_duration_filter.MaxLeaseDurationFilter,
                      blazar_filters.MaxLeaseDurationFilter)
        self.assertNotIn('ExternalServiceFilter', installed)
        self.assertNotIn('MaxLeaseDurationFilter', installed)

    def test_every_other_filter_of_ours_is_installed(self):
        installed = pq_enforcement.install()

        self.assertEqual(
            [cls.__name__ for cls in blazar_compat.all_filters
             if cls.__name__ not in ('ExternalServiceFilter',
                                     'MaxLeaseDurationFilter')],
            installed)
        for name in installed:
            self.assertIs(getattr(blazar_compat, name),
                          getattr(blazar_filters, name))

    def test_installing_twice_lists_each_name_once(self):
        pq_enforcement.install()
        pq_enforcement.install()

        names = blazar_filters.all_filters
        self.assertEqual(len(names), len(set(names)))
        self.assertIn('CreditFilter', names)


class TestBlazarAndOurFiltersInOneProcess(testtools.TestCase):
    """Inside one blazar-manager both filter sets register the options they
    share (max_lease_duration, external_service_*), in either order."""

    def _load(self, classes):
        conf = cfg.ConfigOpts()
        conf([], default_config_files=[])
        conf.register_opts(
            external_service_filter.ExternalServiceFilter.enforcement_opts,
            group='enforcement')
        conf.set_override('external_service_base_endpoint',
                          'http://127.0.0.1:9/v1/', 'enforcement')
        filters = [cls(conf=conf) for cls in classes]
        conf.set_override('max_lease_duration', 3600, 'enforcement')
        return filters

    def _assert_both_deny_two_hours(self, ours, blazars):
        for f in (ours, blazars):
            self.assertRaises(blazar_exc.BlazarException, f.check_create,
                              CONTEXT, formatted(hours=2))

    def test_ours_loaded_before_blazars(self):
        ours, blazars, _, _ = self._load([
            blazar_compat.MaxLeaseDurationFilter,
            max_lease_duration_filter.MaxLeaseDurationFilter,
            blazar_compat.ExternalServiceFilter,
            external_service_filter.ExternalServiceFilter])
        self._assert_both_deny_two_hours(ours, blazars)

    def test_blazars_loaded_before_ours(self):
        _, _, blazars, ours = self._load([
            external_service_filter.ExternalServiceFilter,
            blazar_compat.ExternalServiceFilter,
            max_lease_duration_filter.MaxLeaseDurationFilter,
            blazar_compat.MaxLeaseDurationFilter])
        self._assert_both_deny_two_hours(ours, blazars)
