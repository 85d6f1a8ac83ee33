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
"""``[enforcement] exempted_projects`` resolved through a real Keystone.

The chain runs MaximumReservationLengthFilter with a one-hour limit, so a
two-day lease is denied unless its project is exempted.
"""

import logging
import uuid

import fixtures
import testtools

from placement_quota.filters import base
from placement_quota.filters import chain as chain_mod
from tests import builders
from tests.fixtures import enforcement as enforcement_fixture
from tests.fixtures import keystone

KEYSTONE = 'keystone'


ONE_HOUR_LEASE = builders.lease('2030-01-01T00:00:00', '2030-01-01T01:00:00')
TWO_DAY_LEASE = builders.lease('2030-01-01T00:00:00', '2030-01-03T00:00:00')


def _context(project_id):
    return {'project_id': project_id, 'user_id': uuid.uuid4().hex}


class ExemptionsTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.logs = self.useFixture(fixtures.FakeLogger(level=logging.INFO))
        self.conf = enforcement_fixture.new_config(config_files=[])
        self.conf.set_override('enabled_filters',
                               ['MaximumReservationLengthFilter'],
                               'enforcement')
        self.conf.set_override('reservation_max_length', 3600,
                               'enforcement')

    def chain(self, *exempted):
        self.conf.set_override('exempted_projects', list(exempted),
                               'enforcement')
        return chain_mod.FilterChain(self.conf)

    def assertAllowed(self, chain, project_id):
        self.assertIsNone(chain.check_create(_context(project_id),
                                             TWO_DAY_LEASE))

    def assertDenied(self, chain, project_id):
        denial = self.assertRaises(base.EnforcementDenied,
                                   chain.check_create, _context(project_id),
                                   TWO_DAY_LEASE)
        self.assertEqual('MaximumReservationLengthFilter',
                         denial.filter_name)


class TestExemptedProjectIDs(ExemptionsTestCase):
    """Project IDs need no Keystone: [keystone] is left unconfigured."""

    def test_project_id_entry_is_exempted(self):
        project_id = uuid.uuid4().hex
        self.assertAllowed(self.chain(project_id), project_id)

    def test_project_id_entry_does_not_exempt_other_projects(self):
        chain = self.chain(uuid.uuid4().hex)
        self.assertDenied(chain, uuid.uuid4().hex)

    def test_project_id_entry_logs_no_keystone_error(self):
        project_id = uuid.uuid4().hex
        self.assertAllowed(self.chain(project_id), project_id)
        self.assertNotIn('Cannot resolve', self.logs.output)


class TestExemptedProjectNames(ExemptionsTestCase):
    """``name@domain`` entries, resolved with the admin's credentials."""

    def setUp(self):
        super().setUp()
        self.keystone = self.useFixture(keystone.KeystoneFixture())
        self.project = self.keystone.create_project()
        self.other = self.keystone.create_project()
        self.keystone.set_admin_options(self.conf, KEYSTONE)
        self.conf.set_override('region_name', self.keystone.region_name,
                               KEYSTONE)

    def test_name_at_domain_entry_is_exempted(self):
        chain = self.chain('%s@Default' % self.project.name)
        self.assertAllowed(chain, self.project.id)

    def test_name_at_domain_entry_does_not_exempt_other_projects(self):
        chain = self.chain('%s@Default' % self.project.name)
        self.assertDenied(chain, self.other.id)

    def test_name_at_domain_and_id_entries_work_together(self):
        chain = self.chain('%s@Default' % self.project.name, self.other.id)
        self.assertAllowed(chain, self.project.id)
        self.assertAllowed(chain, self.other.id)

    def test_exempted_project_skips_check_update_too(self):
        chain = self.chain('%s@Default' % self.project.name)
        self.assertIsNone(chain.check_update(
            _context(self.project.id), ONE_HOUR_LEASE, TWO_DAY_LEASE))

    def test_unknown_name_exempts_nobody(self):
        chain = self.chain('%s@Default' % keystone.unique_name('pq-missing'))
        self.assertDenied(chain, self.project.id)

    def test_unknown_name_logs_a_warning(self):
        missing = keystone.unique_name('pq-missing')
        chain = self.chain('%s@Default' % missing)
        self.assertDenied(chain, self.project.id)
        self.assertIn('Exempted project %s@Default does not exist'
                      % missing, self.logs.output)

    def test_unknown_domain_exempts_nobody(self):
        chain = self.chain('%s@%s' % (self.project.name,
                                      keystone.unique_name('pq-domain')))
        self.assertDenied(chain, self.project.id)


class TestExemptedProjectNamesWithoutKeystone(ExemptionsTestCase):
    """``name@domain`` entries while [keystone] has no credentials."""

    def test_name_at_domain_entry_exempts_nobody(self):
        chain = self.chain('admin@Default')
        self.assertDenied(chain, uuid.uuid4().hex)

    def test_chain_still_allows_what_the_filters_allow(self):
        chain = self.chain('admin@Default')
        self.assertIsNone(chain.check_create(_context(uuid.uuid4().hex),
                                             ONE_HOUR_LEASE))

    def test_resolution_failure_is_logged_not_raised(self):
        chain = self.chain('admin@Default')
        self.assertDenied(chain, uuid.uuid4().hex)
        self.assertIn('Cannot resolve exempted projects admin@Default',
                      self.logs.output)

    def test_id_entries_still_work_beside_an_unresolvable_name(self):
        project_id = uuid.uuid4().hex
        chain = self.chain('admin@Default', project_id)
        self.assertAllowed(chain, project_id)
