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
"""``placement-quota schedule explain``, run as an operator runs it, on
aggregates as Nova's ``GET /os-aggregates`` returns them."""

import json
from urllib import parse
import uuid

from tests.functional.cmd import test_cli
from tests.functional.scheduler import nova_process

command = test_cli.command

OWNER = 'a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1'
OTHER = 'b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2'
RSV = '5f0c1b1e-5a48-4a42-9f0d-1d1a6b2c3d4e'
FREEPOOL = '11111111-1111-4111-8111-111111111111'
HOST_RSV = '22222222-2222-4222-8222-222222222222'
SSD = '33333333-3333-4333-8333-333333333333'

#: Nova's answer: the free pool, a host reservation's aggregate (its
#: availability zone outside the metadata, as the API also gives it) and
#: an aggregate foreign to Blazar.
NOVA_AGGREGATES = {'aggregates': [
    {'uuid': FREEPOOL, 'name': 'freepool', 'availability_zone': None,
     'metadata': {}, 'hosts': ['free1']},
    {'uuid': HOST_RSV, 'name': RSV, 'availability_zone': 'blazar_' + RSV,
     'metadata': {'blazar:owner': OWNER}, 'hosts': ['resv1']},
    {'uuid': SSD, 'name': 'ssd', 'availability_zone': None,
     'metadata': {'ssd': 'true'}, 'hosts': ['plain1']},
]}


class TestScheduleExplain(test_cli.CLITestCase):

    def explain(self, *args, aggregates=NOVA_AGGREGATES, config=None):
        return command('schedule', 'explain', '-f', 'json',
                       '--aggregates-file',
                       self.write('aggregates.json', aggregates), *args,
                       config=config)

    def decision(self, result, status=0):
        self.assertEqual(status, result.returncode, result.stderr)
        return json.loads(result.stdout)

    def test_regular_request_forbids_every_blazar_aggregate(self):
        out = self.decision(self.explain('--project', OWNER))
        self.assertEqual('regular', out['kind'])
        self.assertEqual(sorted([FREEPOOL, HOST_RSV]), out['forbidden'])
        self.assertEqual('member_of=!in:%s,%s' % tuple(sorted(
            [FREEPOOL, HOST_RSV])), out['placement_query'])
        self.assertEqual('1.32', out['microversion'])

    def test_hint_requires_the_reservation_aggregate(self):
        out = self.decision(self.explain('--hint', 'reservation=' + RSV,
                                         '--project', OWNER))
        self.assertEqual('host-reservation', out['kind'])
        self.assertEqual(['in:' + HOST_RSV], out['required'])
        self.assertEqual('member_of=in:' + HOST_RSV, out['placement_query'])

    def test_preemptible_flavor_requires_the_free_pool(self):
        out = self.decision(self.explain(
            '--flavor-extra-spec', 'blazar:preemptible=true'))
        self.assertEqual('preemptible', out['kind'])
        self.assertEqual(['in:' + FREEPOOL], out['required'])
        self.assertEqual([HOST_RSV], out['forbidden'])

    def test_image_property_names_a_specs_004_reservation(self):
        aggregates = {'aggregates': [
            {'uuid': SSD, 'name': 'pool', 'metadata': {
                'reservation:abc': 'true'}, 'hosts': ['h']}]}
        out = self.decision(self.explain(
            '--image-property', 'reservation:abc=true',
            aggregates=aggregates))
        self.assertEqual(['in:' + SSD], out['required'])

    def test_refused_request_exits_one_with_the_reason(self):
        out = self.decision(self.explain('--hint', 'reservation=' + RSV,
                                         '--project', OTHER), status=1)
        self.assertIn('project %s is not admitted' % OTHER, out['reason'])
        self.assertEqual(1, len(out['errors']))
        self.assertIsNone(out['placement_query'])

    def test_malformed_uuid_is_reported_not_a_crash(self):
        aggregates = [{'uuid': 'not-a-uuid', 'name': 'freepool',
                       'metadata': {}, 'hosts': ['h']}]
        out = self.decision(self.explain(aggregates=aggregates), status=1)
        self.assertIn("malformed UUID 'not-a-uuid'", out['errors'][0])

    def test_free_pool_tagged_as_reservation_is_a_warning_of_regular(self):
        aggregates = [{'uuid': FREEPOOL, 'name': 'freepool',
                       'metadata': {'reservation': RSV}, 'hosts': ['h']}]
        out = self.decision(self.explain(aggregates=aggregates))
        self.assertIn('is the free pool and is also tagged',
                      out['warnings'][0])

    def test_settings_come_from_placement_quota_scheduler_options(self):
        config = self.config('[placement_quota_scheduler]\n'
                             'freepool_name = spare\n')
        aggregates = [{'uuid': FREEPOOL, 'name': 'spare', 'metadata': {},
                       'hosts': ['h']}]
        out = self.decision(self.explain(
            '--flavor-extra-spec', 'blazar:preemptible=true',
            aggregates=aggregates, config=config))
        self.assertEqual(['in:' + FREEPOOL], out['required'])

    def test_table_output_lists_the_fields(self):
        result = command('schedule', 'explain', '--aggregates-file',
                         self.write('aggregates.json', NOVA_AGGREGATES))
        self.assertEqual(0, result.returncode, result.stderr)
        for field in ('kind', 'required', 'forbidden', 'reason', 'errors',
                      'placement_query'):
            self.assertIn('| %s ' % field, result.stdout)

    def test_bad_hint_exits_two(self):
        result = self.explain('--hint', 'reservation')
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertIn("--hint 'reservation': expected KEY=VALUE",
                      result.stderr)

    def test_unreadable_aggregates_file_exits_two(self):
        result = command('schedule', 'explain', '--aggregates-file',
                         self.write('aggregates.json', '{not json'))
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertIn('is not JSON', result.stderr)
        self.assertNotIn('Traceback', result.stderr)


class TestScheduleExplainMatchesNova(test_cli.CLITestCase):
    """The query printed is the ``member_of`` Nova's own code writes."""

    def test_member_of_equals_what_nova_builds_for_the_request(self):
        nova = self.useFixture(nova_process.NovaProcess())
        inst_rsv = str(uuid.uuid4())
        rc = 'CUSTOM_RESERVATION_' + inst_rsv.upper().replace('-', '_')
        inst = str(uuid.uuid4())
        aggregates = list(NOVA_AGGREGATES['aggregates']) + [
            {'uuid': inst, 'name': inst_rsv, 'metadata': {
                'reservation': inst_rsv, 'blazar:owner': OWNER},
             'hosts': ['inst1']}]
        result = command(
            'schedule', 'explain', '-f', 'json', '--project', OWNER,
            '--flavor-extra-spec', 'resources:%s=1' % rc,
            '--aggregates-file', self.write('aggregates.json', aggregates))
        self.assertEqual(0, result.returncode, result.stderr)
        printed = json.loads(result.stdout)['placement_query']
        # Nova's objects keep the availability zone in the metadata.
        nova_aggregates = [{
            'uuid': a['uuid'], 'name': a['name'], 'hosts': a['hosts'],
            'metadata': dict(a['metadata'], **(
                {'availability_zone': a['availability_zone']}
                if a.get('availability_zone') else {}))}
            for a in aggregates]
        answer = nova.schedule(
            {'extra_specs': {'resources:%s' % rc: '1'}}, project_id=OWNER,
            aggregates=nova_aggregates)
        self.assertEqual('member_of=in:' + inst, printed)
        self.assertEqual(
            [v for k, v in parse.parse_qsl(printed)],
            [v for k, v in parse.parse_qsl(answer['query'])
             if k == 'member_of'])
