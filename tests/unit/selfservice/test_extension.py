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
"""How far a lease may be extended: exact to the minute, and which filter
sets the bound."""

import datetime

import testtools

from placement_quota.selfservice import extension
from placement_quota.selfservice import service
from tests.builders import at
from tests.builders import day
from tests.builders import hosts
from tests.builders import lease
from tests.unit.selfservice import test_view

MINUTE = datetime.timedelta(minutes=1)


class TestExtension(test_view.ViewTestCase):

    def setUp(self):
        super().setUp()
        self.body = lease(day(2), day(3), hosts('a'), lease_id='lease-1')

    def extension(self, lease_id='lease-1'):
        return self.selfservice.extension(self.context(), lease_id)

    def update_to(self, end):
        new = dict(self.body, end_date=end.strftime('%Y-%m-%d %H:%M'))
        self.service_chain.check_update(self.context(), self.body, new)

    def test_credits_bound_the_extension_to_the_minute(self):
        # 100 credits at 1 an hour from day 2: 100 hours; 10 are spent on
        # another lease: 90 hours, so the end may move to day 5 18:00.
        self.give_credits(100)
        self.create_as('u', lease(day(20), day(20, 10), hosts('z')))
        self.create_as('u', self.body)
        found = self.extension()
        self.assertEqual(('2026-06-05T18:00:00Z', 'CreditFilter'),
                         (found['latest_end_date'], found['bound_by']))

    def test_extending_to_the_bound_is_allowed_and_a_minute_more_denied(
            self):
        self.give_credits(100)
        self.create_as('u', self.body)
        found = self.extension()
        latest = datetime.datetime.strptime(found['latest_end_date'],
                                            '%Y-%m-%dT%H:%M:%SZ')
        self.assertDenied(self.update_to, latest + MINUTE)
        self.update_to(latest)

    def test_maximum_length_sets_the_bound_when_it_comes_first(self):
        self.give_credits(10000)
        self.create_as('u', self.body)
        found = self.extension()
        self.assertEqual(('2026-06-09T00:00:00Z',
                          'MaximumReservationLengthFilter'),
                         (found['latest_end_date'], found['bound_by']))

    def test_nothing_to_gain_is_the_current_end(self):
        self.give_credits(24)
        self.create_as('u', self.body)
        found = self.extension()
        self.assertEqual(('2026-06-03T00:00:00Z', 'CreditFilter'),
                         (found['latest_end_date'], found['bound_by']))

    def test_unknown_lease_is_not_found(self):
        error = self.assertRaises(service.NotFound, self.extension, 'nope')
        self.assertEqual(('lease_id', 'nope'), (error.field, error.value))

    def test_another_projects_lease_is_not_found(self):
        self.give_credits(100, project='project-b')
        self.service_chain.check_create(
            {'project_id': 'project-b', 'user_id': 'u'}, self.body)
        self.assertRaises(service.NotFound, self.extension)

    def test_ended_lease_cannot_be_extended(self):
        self.give_credits(100)
        self.create_as('u', self.body)
        self.now = at(4)
        self.assertRaises(service.Conflict, self.extension)

    def test_the_extension_query_records_nothing(self):
        allocation = self.give_credits(100)
        self.create_as('u', self.body)
        self.extension()
        self.assertEqual(24.0, self.spent(allocation))


class Answer:
    def __init__(self, allowed):
        self.allowed = allowed


class TestSearch(testtools.TestCase):

    def search(self, bound, last):
        first = datetime.datetime(2026, 1, 1)
        asked = []

        def evaluate(end):
            asked.append(end)
            return Answer(bound is not None and end <= first + bound * MINUTE)

        latest, _ = extension.search(evaluate, first, first + last * MINUTE)
        return latest and (latest - first) // MINUTE, len(asked)

    def test_finds_the_last_allowed_minute_in_few_evaluations(self):
        latest, asked = self.search(12345, 10 ** 6)
        self.assertEqual(12345, latest)
        # About 2 x log2(10 ** 6) = 40 at most.
        self.assertLessEqual(asked, 40)

    def test_nothing_allowed_is_none(self):
        self.assertEqual((None, 1), self.search(None, 10 ** 6))

    def test_allowed_up_to_the_end_of_the_search_is_its_end(self):
        latest, _ = self.search(10 ** 7, 10 ** 6)
        self.assertEqual(10 ** 6, latest)
