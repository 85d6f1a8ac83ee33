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
"""MaximumReservationLengthFilter and its upstream alias."""

import datetime

import testtools

from placement_quota import conf as pq_conf
from placement_quota.filters import base
from placement_quota.filters import max_length
from tests import builders
from tests import spec_examples as spec

DAY = 86400


def lease(seconds, start=datetime.datetime(2020, 5, 13)):
    return builders.lease(start, start + datetime.timedelta(seconds=seconds))


class TestMaximumReservationLength(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.conf = pq_conf.new_config([], config_files=[])

    def filter(self, cls=max_length.MaximumReservationLengthFilter, **opts):
        cls.register_opts(self.conf)
        for name, value in opts.items():
            self.conf.set_override(name, value, 'enforcement')
        return cls(self.conf)

    def test_no_limit_by_default(self):
        self.filter().check_create(spec.CONTEXT, lease(365 * DAY))

    def test_lease_as_long_as_the_limit_is_allowed(self):
        self.filter(reservation_max_length=DAY).check_create(
            spec.CONTEXT, lease(DAY))

    def test_lease_one_second_too_long_is_denied(self):
        self.assertRaises(
            base.EnforcementDenied,
            self.filter(reservation_max_length=DAY).check_create,
            spec.CONTEXT, lease(DAY + 1))

    def test_denial_gives_the_length_and_the_limit(self):
        denial = self.assertRaises(
            base.EnforcementDenied,
            self.filter(reservation_max_length=DAY).check_create,
            spec.CONTEXT, lease(2 * DAY))
        self.assertEqual('Lease length of 2 days (172800 seconds) exceeds '
                         'the maximum of 1 day (86400 seconds).',
                         str(denial))

    def test_update_to_a_shorter_lease_is_allowed(self):
        self.filter(reservation_max_length=DAY).check_update(
            spec.CONTEXT, lease(2 * DAY), lease(DAY))

    def test_update_to_a_longer_lease_is_denied(self):
        self.assertRaises(
            base.EnforcementDenied,
            self.filter(reservation_max_length=DAY).check_update,
            spec.CONTEXT, lease(DAY), lease(2 * DAY))

    def test_spec_example_of_47_hours_is_denied_at_one_day(self):
        self.assertRaises(
            base.EnforcementDenied,
            self.filter(reservation_max_length=DAY).check_create,
            spec.CONTEXT, spec.check_create()['lease'])

    def test_upstream_max_lease_duration_applies_when_ours_is_unset(self):
        self.assertRaises(
            base.EnforcementDenied,
            self.filter(max_lease_duration=DAY).check_create,
            spec.CONTEXT, lease(DAY + 1))

    def test_upstream_minus_one_means_no_limit(self):
        self.filter(max_lease_duration=-1).check_create(spec.CONTEXT,
                                                        lease(365 * DAY))

    def test_reservation_max_length_takes_precedence(self):
        self.filter(reservation_max_length=2 * DAY,
                    max_lease_duration=DAY).check_create(
            spec.CONTEXT, lease(2 * DAY))

    def test_upstream_exempt_project_ids_are_honoured(self):
        self.filter(reservation_max_length=DAY,
                    max_lease_duration_exempt_project_ids=[
                        spec.CONTEXT['project_id']]).check_create(
            spec.CONTEXT, lease(2 * DAY))

    def test_upstream_filter_name_behaves_the_same(self):
        self.assertRaises(
            base.EnforcementDenied,
            self.filter(max_length.MaxLeaseDurationFilter,
                        max_lease_duration=DAY).check_create,
            spec.CONTEXT, lease(DAY + 1))
