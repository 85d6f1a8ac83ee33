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
"""tools/example_lease.py: request bodies of Blazar's "Flexible
Reservation Usage Enforcement" spec, dated from now."""

import datetime
import json
import os
import subprocess
import sys

import testtools

from placement_quota.lease import model
from tools import example_lease

NOW = datetime.datetime(2027, 3, 1, 9, 30)
SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'tools', 'example_lease.py')


class TestExampleLease(testtools.TestCase):

    def test_start_offset_counts_from_now(self):
        lease = example_lease.build(['--start', '+1h', '--hours', '2'],
                                    now=NOW)['lease']
        self.assertEqual(('2027-03-01 10:30', '2027-03-01 12:30'),
                         (lease['start_date'], lease['end_date']))

    def test_start_may_be_in_the_past(self):
        lease = example_lease.build(['--start=-2d'], now=NOW)['lease']
        self.assertEqual('2027-02-27 09:30', lease['start_date'])

    def test_start_may_be_a_date(self):
        lease = example_lease.build(['--start', '2027-05-01 00:00'],
                                    now=NOW)['lease']
        self.assertEqual('2027-05-01 00:00', lease['start_date'])

    def test_default_lease_has_not_ended_when_written(self):
        lease = example_lease.build([])['lease']
        end = datetime.datetime.strptime(lease['end_date'],
                                         example_lease.DATE_FORMAT)
        self.assertGreater(end, datetime.datetime.now(
            datetime.timezone.utc).replace(tzinfo=None))

    def test_hosts_option_allocates_that_many_hosts(self):
        (reservation,) = example_lease.build(['--hosts', '3'],
                                             now=NOW)['lease']['reservations']
        self.assertEqual(
            ('physical:host', 3, 3,
             ['compute-1', 'compute-2', 'compute-3']),
            (reservation['resource_type'], reservation['min'],
             reservation['max'], [a['hypervisor_hostname']
                                  for a in reservation['allocations']]))

    def test_create_body_is_accepted_by_the_service_schema(self):
        document = example_lease.build(['--floating-ips', '2'], now=NOW)
        request = model.parse_body('check-create', json.dumps(document))
        self.assertEqual(['virtual:floatingip', 'physical:host'],
                         [r['resource_type']
                          for r in document['lease']['reservations']])
        self.assertEqual(NOW + datetime.timedelta(hours=3),
                         request.lease.end_date)

    def test_update_body_changes_only_what_is_asked(self):
        document = example_lease.build(
            ['--update', '--hours', '2', '--new-hours', '72'], now=NOW)
        request = model.parse_body('check-update', json.dumps(document))
        self.assertEqual(
            (datetime.timedelta(hours=2), datetime.timedelta(hours=72)),
            (request.current_lease.end_date - request.current_lease.start_date,
             request.lease.end_date - request.lease.start_date))
        self.assertEqual(document['current_lease']['reservations'],
                         document['lease']['reservations'])

    def test_new_hours_without_update_is_refused(self):
        self.assertRaises(SystemExit, example_lease.build,
                          ['--new-hours', '3'], now=NOW)

    def test_start_that_is_no_date_exits_2(self):
        result = subprocess.run([sys.executable, SCRIPT, '--start',
                                 'tomorrow'], capture_output=True, text=True)
        self.assertEqual((2, ''), (result.returncode, result.stdout))
        self.assertIn('--start', result.stderr)

    def test_script_runs_on_the_standard_library_alone(self):
        # -I -S: no site-packages, no PYTHONPATH: what any python3 has.
        result = subprocess.run([sys.executable, '-I', '-S', SCRIPT,
                                 '--hosts', '2'],
                                capture_output=True, text=True)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual(2, len(json.loads(
            result.stdout)['lease']['reservations'][0]['allocations']))
