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
"""``openstack reservation quota show``, ``reservation quote`` and
``reservation lease extension``: the real ``openstack`` executable, with
a user's own password, finds the placement-quota service by type
``reservation-quota`` in the real Keystone's catalog and calls its
project API, whose keystonemiddleware validates the user's token."""

import datetime
import json

import requests
import testtools

from placement_quota.osc import plugin
from tests.functional import test_faults
from tests.functional.keystone import test_project_api_keystone as api
from tests.functional.osc import test_plugin as osc


def _date(days_from_now):
    return (datetime.datetime.utcnow() + datetime.timedelta(
        days=days_from_now)).strftime('%Y-%m-%d %H:%M')


class TestSelfServiceCommands(api.ProjectAPIWithKeystone,
                              testtools.TestCase):
    """Run as the member of project A, which holds two leases."""

    @classmethod
    def _start(cls):
        super()._start()
        identity = cls.keystone.admin_conn.identity
        cls.service = identity.create_service(
            type=plugin.SERVICE_TYPE, name='placement-quota')
        identity.create_endpoint(service_id=cls.service.id,
                                 interface='public', url=cls.url,
                                 region_id=cls.keystone.region_name)

    @classmethod
    def _stop(cls):
        if hasattr(cls, 'service'):
            cls.keystone.admin_conn.identity.delete_service(cls.service.id)
        super()._stop()

    def openstack(self, *args, **env):
        ks = self.keystone
        user = self.users['member']
        return osc.openstack('reservation', *args, env=osc._env(
            OS_AUTH_TYPE='password', OS_AUTH_URL=ks.auth_url,
            OS_USERNAME=user.name, OS_PASSWORD=user.password,
            OS_PROJECT_ID=self.project_a,
            OS_USER_DOMAIN_NAME=ks.user_domain_name,
            OS_PROJECT_DOMAIN_NAME=ks.project_domain_name,
            OS_REGION_NAME=ks.region_name, **env))

    def assertSucceeded(self, result):
        self.assertEqual(0, result.returncode, result.stderr)
        return json.loads(result.stdout)

    def test_quota_show_lists_the_limits_of_the_users_project(self):
        rows = self.assertSucceeded(self.openstack('quota', 'show', '-f',
                                                   'json'))
        self.assertIn(
            {'Filter': 'LeaseCountFilter', 'Resource': 'leases',
             'Scope': 'project %s' % self.project_a, 'Limit': 5,
             'In use': 2, 'Peak': '', 'Peak at': '', 'Unit': 'leases'},
            rows)

    def test_quote_takes_the_lease_create_options_and_creates_nothing(
            self):
        quoted = self.assertSucceeded(self.openstack(
            'quote', 'maybe', '--start-date', _date(10), '--end-date',
            _date(11), '--reservation',
            'resource_type=physical:host,min=1,max=1', '-f', 'json'))
        leases = requests.get(
            '%s/v1/projects/%s/leases' % (self.url, self.project_a),
            headers={'X-Auth-Token': self.tokens['member']},
            timeout=30).json()['leases']
        self.assertEqual(
            (True, 'maybe', False),
            (quoted['allowed'], quoted['lease']['name'],
             'maybe' in [lease['name'] for lease in leases]))

    def test_quote_that_would_be_denied_exits_1_naming_the_filter(self):
        result = self.openstack(
            'quote', 'too-long', '--start-date', _date(10), '--end-date',
            _date(20), '--reservation',
            'resource_type=physical:host,min=1,max=1', '-f', 'json')
        self.assertEqual(1, result.returncode, result.stderr)
        quoted = json.loads(result.stdout)
        self.assertEqual((False, 'MaximumReservationLengthFilter'),
                         (quoted['allowed'], quoted['denied_by']))

    def test_lease_extension_of_a_lease_id(self):
        lease_id = self.lease_ids[self.project_a]
        shown = self.assertSucceeded(self.openstack(
            'lease', 'extension', lease_id, '-f', 'json'))
        self.assertEqual((lease_id, 'MaximumReservationLengthFilter'),
                         (shown['lease_id'], shown['bound_by']))

    def test_another_project_is_refused_with_the_rule(self):
        result = self.openstack('quota', 'show', '--project',
                                self.project_b)
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertIn('403', result.stderr)
        self.assertIn('placement_quota:project:show', result.stderr)
        self.assertNotIn('Traceback', result.stderr)

    def test_url_option_is_used_instead_of_the_catalog(self):
        closed = test_faults.closed_port()
        result = self.openstack('quota', 'show',
                                OS_RESERVATION_QUOTA_URL=closed)
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertIn('Cannot reach the placement-quota service',
                      result.stderr)
        self.assertIn(closed, result.stderr)

    def test_quote_without_a_reservation_is_bad_input(self):
        result = self.openstack('quote', 'empty', '--end-date', _date(1))
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertNotIn('Traceback', result.stderr)

    def test_quote_table_lists_each_filters_answer(self):
        result = self.openstack(
            'quote', 'too-long-table', '--start-date', _date(10),
            '--end-date', _date(20), '--reservation',
            'resource_type=physical:host,min=1,max=1')
        self.assertEqual(1, result.returncode, result.stderr)
        self.assertIn('MaximumReservationLengthFilter: denied (',
                      result.stdout)
        self.assertIn('LeaseCountFilter: allowed', result.stdout)

    def test_quota_show_table_names_the_user_of_per_user_limits(self):
        result = self.openstack('quota', 'show')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertIn('user %s' % self.users['member'].id, result.stdout)
