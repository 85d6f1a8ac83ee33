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
"""Move actions from data already read: documents, ETags and limits."""

import datetime
import types

import testtools

from placement_quota.accounts import model
from placement_quota.accounts import moves
from placement_quota.ledger import models
from placement_quota.limits import tree as tree_mod

NOW = datetime.datetime(2026, 5, 1, 12)
RP1 = '11111111-1111-1111-1111-111111111111'
RP2 = '22222222-2222-2222-2222-222222222222'


def account(account_id, **limits):
    return model.Account(account_id, None, limits, {}, 1, NOW)


def consumer(uuid, generation=1, project_id='src', consumer_type='INSTANCE',
             **resources):
    return (uuid, {'allocations': {RP1: {'resources': resources}},
                   'consumer_generation': generation,
                   'project_id': project_id, 'user_id': 'u',
                   'consumer_type': consumer_type})


def lease(lease_id, project_id='src', start=1, hours=2,
          state=models.PENDING, updated_at=None, **amounts):
    start_date = NOW + datetime.timedelta(hours=start)
    return types.SimpleNamespace(
        id=lease_id, lease_id=lease_id, name='lease-%s' % lease_id,
        state=state, project_id=project_id, start_date=start_date,
        effective_end=start_date + datetime.timedelta(hours=hours),
        amounts=amounts, created_at=NOW, updated_at=updated_at)


def tree(registered=None, **projects):
    """A ProjectTree; ``projects``: ID -> (parent, {resource: limit})."""
    return tree_mod.ProjectTree.from_data(tree_mod.LimitData(
        registered_limits=registered or {},
        projects={p: tree_mod.Project(p, parent, None, limits)
                  for p, (parent, limits) in projects.items()}),
        strict=False)


def describe(consumers=(), leases=(), over=(), list_max=1000, dest='dst'):
    return moves.describe(account('src'), account(dest), list(consumers),
                          list(leases), list(over), list_max)


class TestDescribe(testtools.TestCase):

    def test_etag_changes_when_a_consumer_generation_changes(self):
        before = describe([consumer('c1', generation=1, VCPU=2)])
        after = describe([consumer('c1', generation=2, VCPU=2)])
        self.assertNotEqual(before.etag, after.etag)

    def test_tag_changes_when_a_consumer_generation_changes(self):
        before = describe([consumer('c1', generation=1, VCPU=2)])
        after = describe([consumer('c1', generation=2, VCPU=2)])
        self.assertNotEqual(before.document['move']['resources']['tag'],
                            after.document['move']['resources']['tag'])

    def test_etag_changes_when_a_lease_is_updated(self):
        before = describe(leases=[lease('l1', hosts=1)])
        later = NOW + datetime.timedelta(minutes=1)
        after = describe(leases=[lease('l1', updated_at=later, hosts=1)])
        self.assertNotEqual(before.etag, after.etag)

    def test_same_resources_give_the_same_etag(self):
        first = describe([consumer('c1', VCPU=2)], [lease('l1', hosts=1)])
        again = describe([consumer('c1', VCPU=2)], [lease('l1', hosts=1)])
        self.assertEqual(first.etag, again.etag)

    def test_etag_is_a_quoted_digest_of_the_document(self):
        action = describe([consumer('c1', VCPU=2)])
        self.assertEqual('"%s"' % moves.digest(action.document), action.etag)

    def test_tag_does_not_depend_on_the_destination(self):
        one = describe([consumer('c1', VCPU=2)], dest='dst')
        other = describe([consumer('c1', VCPU=2)], dest='elsewhere')
        self.assertEqual(
            (one.document['move']['resources']['tag'], False),
            (other.document['move']['resources']['tag'],
             one.etag == other.etag))

    def test_totals_add_up_every_allocation_of_every_consumer(self):
        two = consumer('c2', VCPU=1)
        two[1]['allocations'][RP2] = {'resources': {'VCPU': 4,
                                                    'MEMORY_MB': 512}}
        action = describe([consumer('c1', VCPU=2, MEMORY_MB=1024), two])
        self.assertEqual({'MEMORY_MB': 1536, 'VCPU': 7},
                         action.document['move']['resources']['total_usage'])

    def test_total_reserved_adds_up_the_amounts_of_the_leases(self):
        action = describe(leases=[lease('l1', hosts=2),
                                  lease('l2', hosts=1, vcpus=8)])
        self.assertEqual(
            {'hosts': 3, 'vcpus': 8},
            action.document['move']['resources']['total_reserved'])

    def test_counts_consumers_and_leases_and_their_sum(self):
        resources = describe([consumer('c1', VCPU=1), consumer('c2', VCPU=1)],
                             [lease('l1', hosts=1)]).document['move'][
                                 'resources']
        self.assertEqual((2, 1, 3), (resources['consumers'],
                                     resources['leases'], resources['size']))

    def test_lists_are_shown_up_to_the_list_maximum(self):
        resources = describe([consumer('c1', VCPU=1)], [lease('l1', hosts=1)],
                             list_max=2).document['move']['resources']
        self.assertEqual(
            (['c1'], ['l1']),
            ([c['uuid'] for c in resources['consumer_list']],
             [le['lease_id'] for le in resources['lease_list']]))

    def test_lists_are_left_out_above_the_list_maximum(self):
        resources = describe([consumer('c1', VCPU=1)], [lease('l1', hosts=1)],
                             list_max=1).document['move']['resources']
        self.assertNotIn('consumer_list', resources)
        self.assertNotIn('lease_list', resources)

    def test_a_move_without_over_limits_is_allowed(self):
        move = describe([consumer('c1', VCPU=1)]).document['move']
        self.assertEqual((True, []), (move['allowed'], move['over_limits']))

    def test_a_move_over_a_limit_is_not_allowed(self):
        over = [{'account': 'dst', 'scope': 'account', 'kind': 'placement',
                 'resource': 'VCPU', 'limit': 1, 'usage': 1, 'moving': 1}]
        action = describe([consumer('c1', VCPU=1)], over=over)
        self.assertEqual((False, over), (action.document['move']['allowed'],
                                         action.over_limits))

    def test_the_action_names_both_accounts(self):
        move = describe(dest='dst').document['move']
        self.assertEqual(('src', 'dst'),
                         (move['source']['id'], move['dest']['id']))


class TestEtagMatches(testtools.TestCase):

    def test_star_if_match_matches_any_etag(self):
        self.assertTrue(moves.etag_matches('*', '"abc"'))

    def test_the_same_etag_matches(self):
        self.assertTrue(moves.etag_matches('"abc"', '"abc"'))

    def test_another_etag_does_not_match(self):
        self.assertFalse(moves.etag_matches('"abd"', '"abc"'))

    def test_one_of_several_etags_matches(self):
        self.assertTrue(moves.etag_matches('"x", "abc" ,"y"', '"abc"'))

    def test_a_weak_etag_matches_its_strong_twin(self):
        self.assertTrue(moves.etag_matches('W/"abc"', '"abc"'))

    def test_an_unquoted_etag_does_not_match_the_quoted_one(self):
        self.assertFalse(moves.etag_matches('abc', '"abc"'))


class TestDocuments(testtools.TestCase):

    def test_consumer_document_sorts_providers_and_classes(self):
        uuid, body = consumer('c1', VCPU=1, MEMORY_MB=2)
        body['allocations'] = {RP2: {'resources': {'VCPU': 1, 'DISK_GB': 3}},
                               RP1: {'resources': {'VCPU': 2}}}
        document = moves.consumer_document(uuid, body)
        self.assertEqual(
            [(RP1, ['VCPU']), (RP2, ['DISK_GB', 'VCPU'])],
            [(rp, list(r)) for rp, r in document['allocations'].items()])

    def test_consumer_document_without_a_type_says_none(self):
        uuid, body = consumer('c1', VCPU=1)
        del body['consumer_type']
        self.assertIsNone(
            moves.consumer_document(uuid, body)['consumer_type'])

    def test_lease_document_without_an_update_dates_from_its_creation(self):
        document = moves.lease_document(lease('l1', hosts=1))
        self.assertEqual(NOW.isoformat(), document['updated_at'])

    def test_lease_document_ends_at_the_effective_end(self):
        row = lease('l1', start=1, hours=3, hosts=1)
        self.assertEqual(
            (row.start_date.isoformat(), row.effective_end.isoformat()),
            (moves.lease_document(row)['start_date'],
             moves.lease_document(row)['end_date']))

    def test_usage_of_adds_up_the_consumers_without_zeros(self):
        self.assertEqual({'VCPU': 3}, moves.usage_of([
            consumer('c1', VCPU=1, MEMORY_MB=0), consumer('c2', VCPU=2)]))

    def test_digest_does_not_depend_on_key_order(self):
        self.assertEqual(moves.digest({'a': 1, 'b': [1, 2]}),
                         moves.digest({'b': [1, 2], 'a': 1}))

    def test_digest_changes_with_a_value(self):
        self.assertNotEqual(moves.digest({'a': 1}), moves.digest({'a': 2}))

    def test_over_text_of_an_account_limit_says_in_use(self):
        self.assertEqual(
            "VCPU of account 'dst': limit 4, in use 3, moving 2",
            moves.over_text({'account': 'dst', 'scope': 'account',
                             'kind': 'placement', 'resource': 'VCPU',
                             'limit': 4, 'usage': 3, 'moving': 2}))

    def test_over_text_of_a_tree_reservation_names_the_tree(self):
        self.assertEqual(
            "hosts of the tree of 'root': limit 4, reserved at the peak 3, "
            "moving 2",
            moves.over_text({'account': 'root', 'scope': 'tree',
                             'kind': 'reserved', 'resource': 'hosts',
                             'limit': 4, 'usage': 3, 'moving': 2}))


class TestLimitCheck(testtools.TestCase):

    def check(self, limits_tree, source='src', dest='dst', consumers=(),
              used=None, leases=(), existing=()):
        found = moves.LimitCheck(limits_tree, source, dest)
        return found.over(found.moving(list(consumers)), used or {},
                          list(leases), list(existing), NOW)

    def test_move_into_account_over_its_limit_reports_the_numbers(self):
        over = self.check(tree(dst=(None, {'VCPU': 4})),
                          consumers=[consumer('c1', VCPU=2)],
                          used={'dst': {'VCPU': 3}})
        self.assertEqual([{'account': 'dst', 'scope': 'account',
                           'kind': 'placement', 'resource': 'VCPU',
                           'limit': 4, 'usage': 3, 'moving': 2}], over)

    def test_move_up_to_the_limit_passes_nothing(self):
        self.assertEqual([], self.check(
            tree(dst=(None, {'VCPU': 4})),
            consumers=[consumer('c1', VCPU=1)], used={'dst': {'VCPU': 3}}))

    def test_an_unlimited_resource_is_never_over(self):
        self.assertEqual([], self.check(
            tree(dst=(None, {'VCPU': -1})),
            consumers=[consumer('c1', VCPU=1000)],
            used={'dst': {'VCPU': 10 ** 6}}))

    def test_move_into_a_child_checks_the_limit_of_its_tree(self):
        over = self.check(
            tree(root=(None, {'VCPU': 10}), dst=('root', {'VCPU': 8}),
                 sibling=('root', {})),
            consumers=[consumer('c1', VCPU=2)],
            used={'root': {'VCPU': 1}, 'dst': {'VCPU': 1},
                  'sibling': {'VCPU': 7}})
        self.assertEqual([('root', 'tree', 9, 10)],
                         [(o['account'], o['scope'], o['usage'], o['limit'])
                          for o in over])

    def test_move_within_one_tree_skips_the_tree_limit(self):
        self.assertEqual([], self.check(
            tree(root=(None, {'VCPU': 10}), dst=('root', {'VCPU': 8}),
                 src=('root', {})),
            consumers=[consumer('c1', VCPU=2)],
            used={'root': {'VCPU': 1}, 'dst': {'VCPU': 1},
                  'src': {'VCPU': 7}}))

    def test_servers_count_the_instance_consumers_only(self):
        found = moves.LimitCheck(tree(dst=(None, {'servers': 5})), 'src',
                                 'dst')
        self.assertEqual({'servers': 2}, found.moving([
            consumer('c1', VCPU=1), consumer('c2', VCPU=1),
            consumer('c3', consumer_type='MIGRATION', VCPU=1)]))

    def test_resources_placement_does_not_count_are_not_moving(self):
        found = moves.LimitCheck(tree({'hosts': 3}, dst=(None, {})), 'src',
                                 'dst')
        self.assertEqual({}, found.moving([consumer('c1', VCPU=4)]))

    def test_an_unknown_destination_has_the_registered_limits(self):
        over = self.check(tree({'VCPU': 2}), dest='newcomer',
                          consumers=[consumer('c1', VCPU=3)])
        self.assertEqual([('newcomer', 2, 0, 3)],
                         [(o['account'], o['limit'], o['usage'], o['moving'])
                          for o in over])

    def test_a_lease_over_the_reserved_limit_reports_the_peak(self):
        over = self.check(tree(dst=(None, {'hosts': 3})),
                          leases=[lease('l1', hosts=2)],
                          existing=[lease('l0', project_id='dst', hosts=2)])
        self.assertEqual(
            [('reserved', 'hosts', 3, 2, 2, 4)],
            [(o['kind'], o['resource'], o['limit'], o['usage'], o['moving'],
              o['peak']['amount']) for o in over])

    def test_leases_that_do_not_overlap_stay_within_the_limit(self):
        self.assertEqual([], self.check(
            tree(dst=(None, {'hosts': 3})),
            leases=[lease('l1', start=1, hours=2, hosts=2)],
            existing=[lease('l0', project_id='dst', start=3, hosts=2)]))

    def test_reserved_names_limited_resources_with_an_amount_only(self):
        found = moves.LimitCheck(tree({'hosts': 3}), 'src', 'dst')
        self.assertEqual({'hosts'}, found.reserved([
            lease('l1', hosts=1, vcpus=4), lease('l2', hosts=0)]))

    def test_family_of_a_child_is_its_root_then_the_children(self):
        found = moves.LimitCheck(
            tree({'VCPU': 1}, root=(None, {}), dst=('root', {})), 'src',
            'dst')
        self.assertEqual((['root', 'dst'], 'root'),
                         (found.family, found.root))


class TestReservations(testtools.TestCase):

    def test_reservations_count_leases_by_state_and_peak(self):
        found = model.reservations(
            [lease('l1', start=-1, state=models.ACTIVE, hosts=1),
             lease('l2', start=0, hosts=2)], NOW, ['VCPU'])
        self.assertEqual(
            (1, 1, {'VCPU': 0, 'hosts': 3}, 3),
            (found['pending'], found['active'], found['now'],
             found['peak']['hosts']['amount']))
