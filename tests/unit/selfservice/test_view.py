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
"""The project view: every limit of every enabled filter, from the
filters' own numbers, on a SQLite ledger."""

from placement_quota.filters import credit
from placement_quota.ledger import shares
from placement_quota.ledger import store
from placement_quota.selfservice import service
from tests.builders import at
from tests.builders import day
from tests.builders import hosts
from tests.builders import lease
from tests.unit.filters import base

ALL = ('LeaseCountFilter', 'UserLimitFilter',
       'MaximumReservationLengthFilter', 'ReservationSizeFilter',
       'CreditFilter')


class ViewTestCase(base.LedgerTestCase):

    filter_class = credit.CreditFilter
    options = {('enforcement', 'max_leases_per_project'): 3,
               ('enforcement', 'max_leases_per_user'): 5,
               ('enforcement', 'max_hosts_per_user'): 4,
               ('enforcement', 'reservation_max_length'): 7 * 86400,
               ('enforcement', 'max_hosts_per_reservation'): 2,
               ('enforcement', 'credit_host_rate'): 1.0}

    def setUp(self):
        super().setUp()
        self.service_chain = self.chain(*ALL)
        self.selfservice = service.SelfService(self.service_chain)

    def create_as(self, user, body):
        self.service_chain.check_create(
            {'project_id': self.project, 'user_id': user}, body)

    def share(self, user, amount):
        with self.ledger.transaction() as txn:
            shares.set_share(txn.connection, self.project, user,
                             store.to_micro(amount), txn.now)

    def limits(self, user='u', days=30):
        return self.selfservice.view(self.project, user, days)

    def measure(self, found, filter_name, resource, scope):
        matches = [m for m in found['limits']
                   if (m['filter'], m['resource'], m['scope']) ==
                   (filter_name, resource, scope)]
        self.assertEqual(1, len(matches), found['limits'])
        return matches[0]


class TestProjectView(ViewTestCase):

    def test_lease_count_shows_the_limit_and_the_open_leases(self):
        self.give_credits(1000)
        self.create_as('u', lease(day(1, 1), day(2), hosts('a')))
        self.create_as('v', lease(day(3), day(4), hosts('b')))
        found = self.measure(self.limits(), 'LeaseCountFilter', 'leases',
                             'project')
        self.assertEqual((3, 2), (found['limit'], found['in_use']))

    def test_per_user_count_is_the_callers_own(self):
        self.give_credits(1000)
        self.create_as('u', lease(day(1, 1), day(2), hosts('a')))
        self.create_as('v', lease(day(3), day(4), hosts('b')))
        self.create_as('v', lease(day(5), day(6), hosts('b')))
        found = self.measure(self.limits('v'), 'UserLimitFilter', 'leases',
                             'user')
        self.assertEqual((5, 2, 'v'), (found['limit'], found['in_use'],
                                       found['user_id']))

    def test_per_user_hosts_show_now_and_the_peak_of_the_window(self):
        self.give_credits(1000)
        self.create_as('u', lease(day(1), day(3), hosts('a')))
        self.create_as('u', lease(day(2), day(4), hosts('b', 'c')))
        found = self.measure(self.limits('u'), 'UserLimitFilter', 'hosts',
                             'user')
        self.assertEqual(1, found['in_use'])
        self.assertEqual({'amount': 3, 'at': '2026-06-02T00:00:00Z',
                          'until': '2026-06-03T00:00:00Z'}, found['peak'])

    def test_peak_is_what_the_filter_then_decides_with(self):
        # The view says user u has 3 hosts at the peak, limit 4: one more
        # host over that window fits, two do not.
        self.give_credits(1000)
        self.create_as('u', lease(day(1), day(3), hosts('a')))
        self.create_as('u', lease(day(2), day(4), hosts('b', 'c')))
        found = self.measure(self.limits('u'), 'UserLimitFilter', 'hosts',
                             'user')
        room = found['limit'] - found['peak']['amount']
        self.assertEqual(1, room)
        self.assertDenied(self.create_as, 'u',
                          lease(day(2), day(3), hosts('d', 'e')))
        self.create_as('u', lease(day(2), day(3), hosts('d')))

    def test_lengths_and_sizes_are_listed_without_usage(self):
        found = self.limits()
        length = self.measure(found, 'MaximumReservationLengthFilter',
                              'lease_length', 'lease')
        size = self.measure(found, 'ReservationSizeFilter', 'hosts',
                            'reservation')
        self.assertEqual((7 * 86400, 'seconds', None),
                         (length['limit'], length['unit'], length['in_use']))
        self.assertEqual(2, size['limit'])

    def test_credits_show_allocation_spent_and_balance(self):
        self.give_credits(100, end=at(20))
        self.create_as('u', lease(day(2), day(3), hosts('a')))
        credits = self.limits()['credits']
        self.assertEqual((100.0, 24.0, 76.0, '2026-06-20T00:00:00Z'),
                         (credits['allocation']['amount'], credits['spent'],
                          credits['balance'],
                          credits['allocation']['end_date']))

    def test_credits_show_the_callers_share(self):
        self.give_credits(100)
        self.share('v', 30)
        self.create_as('v', lease(day(2), day(2, 10), hosts('a')))
        user = self.limits('v')['credits']['user']
        self.assertEqual({'user_id': 'v', 'share': 30.0, 'spent': 10.0,
                          'left': 20.0}, user)

    def test_no_allocation_is_no_credits(self):
        self.assertIsNone(self.limits()['credits'])

    def test_every_filter_is_listed_with_whether_it_can_deny(self):
        names = [f['name'] for f in self.limits()['filters']]
        self.assertEqual(list(ALL), names)

    def test_days_out_of_range_name_the_field(self):
        error = self.assertRaises(Exception, self.limits, 'u', 0)
        self.assertEqual('days', error.field)


class TestUsageAndLeases(ViewTestCase):

    def test_usage_is_a_series_of_steps_over_the_window(self):
        self.give_credits(1000)
        self.create_as('u', lease(day(2), day(4), hosts('a')))
        self.create_as('u', lease(day(3), day(5), hosts('b', 'c')))
        found = self.selfservice.usage(self.project, 30)
        self.assertEqual(
            [{'at': '2026-06-01T00:00:00Z', 'amount': 0},
             {'at': '2026-06-02T00:00:00Z', 'amount': 1},
             {'at': '2026-06-03T00:00:00Z', 'amount': 3},
             {'at': '2026-06-04T00:00:00Z', 'amount': 2},
             {'at': '2026-06-05T00:00:00Z', 'amount': 0}],
            found['resources']['hosts'])

    def test_leases_show_what_each_was_charged_and_refunded(self):
        self.give_credits(1000)
        body = lease(day(2), day(3), hosts('a'), lease_id='lease-1')
        self.create_as('u', body)
        self.now = at(2, 12)
        self.service_chain.on_end(self.context(), body)
        found = self.selfservice.leases(self.project)['leases']
        self.assertEqual([('lease-1', 24.0, 12.0)],
                         [(f['lease_id'], f['charged'], f['refunded'])
                          for f in found])


class TestTreeAndNovaLimits(ViewTestCase):
    """Strict two-level limits (registered for every project) and Nova's
    quota (from a limits file, without Nova's own usage)."""

    def setUp(self):
        super().setUp()
        path = self.tmp + '/nova-limits.yaml'
        with open(path, 'w') as f:
            f.write('registered_limits:\n  servers: 4\n')
        self.set(registered_limits={'hosts': 5}, group='limits')
        self.set(tree_limit_resources=['hosts'], nova_quota_source='file',
                 nova_quota_limits_file=path,
                 nova_quota_include_usage=False)
        self.service_chain = self.chain('ProjectTreeLimitFilter',
                                        'NovaQuotaFilter')
        self.selfservice = service.SelfService(self.service_chain)
        self.create_as('u', lease(day(1), day(3), hosts('a', 'b')))
        self.create_as('u', lease(day(2), day(4), hosts('c')))

    def test_tree_limit_shows_the_roots_limit_and_the_trees_peak(self):
        found = self.measure(self.limits(), 'ProjectTreeLimitFilter',
                             'hosts', 'tree')
        self.assertEqual((5, 2, 3, self.project),
                         (found['limit'], found['in_use'],
                          found['peak']['amount'], found['project_id']))

    def test_nova_quota_counts_reserved_hosts_as_servers(self):
        found = self.measure(self.limits(), 'NovaQuotaFilter', 'servers',
                             'project')
        self.assertEqual((4, 2, 3), (found['limit'], found['in_use'],
                                     found['peak']['amount']))

    def test_the_room_the_view_shows_is_the_room_the_check_gives(self):
        # Nova's quota leaves 4 - 3 = 1 server at the peak.
        self.assertDenied(self.create_as, 'u',
                          lease(day(2), day(3), hosts('d', 'e')))
        self.create_as('u', lease(day(2), day(3), hosts('d')))
