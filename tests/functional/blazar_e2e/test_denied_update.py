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
"""A denied update never breaks a lease, through a real blazar-manager.

A user extends their lease past the maximum length with
python-blazarclient: Blazar refuses with our filter's message, and the
lease keeps its status (ACTIVE or PENDING) and its end. Both ways our
filters run:

* in-process: a second stock Blazar (API and manager, as
  :class:`tests.fixtures.blazar.BlazarServer` runs them) whose manager
  runs our MaximumReservationLengthFilter itself and, through
  PlacementQuotaChainFilter, a chain of our ledger filters
  (:data:`CHAIN`) on a ledger of its own, all made loadable by
  ``placement_quota.blazar.enforcement.install()`` as
  ``placement-quota-blazar-manager`` does; it shares the environment's
  Keystone and RabbitMQ (a vhost of its own) and starts once per test
  process;
* through the external service: the environment's Blazar, whose own
  ExternalServiceFilter calls our service.
"""

import datetime
import os
import tempfile
import uuid

from testtools import matchers

from blazarclient import exception as blazar_exception

from placement_quota.ledger import store
from tests.functional.blazar_e2e import base
from tests.fixtures import blazar as blazar_fixture
from tests.fixtures import process as processes

#: The in-process Blazar's maximum lease length: a day.
IN_PROCESS_MAX_LENGTH = 86400
#: The chain PlacementQuotaChainFilter runs there: limits past what the
#: other tests reserve (one lease of one instance a project).
CHAIN = ['LeaseCountFilter', 'UserLimitFilter']
MAX_LEASES = 2
MAX_INSTANCES_PER_USER = 1


def _start_in_process_blazar():
    env = base.environment()
    vhost = 'pq-in-process-%s' % uuid.uuid4().hex[:12]
    workdir = tempfile.mkdtemp(prefix='pq-in-process-', dir=env.workdir)
    ledger_url = 'sqlite:///%s' % os.path.join(workdir, 'ledger.sqlite')
    store.Ledger(ledger_url, migrate=True).dispose()
    config_file = os.path.join(workdir, 'placement-quota.conf')
    with open(config_file, 'w') as f:
        f.write('\n'.join([
            '[ledger]', 'connection = %s' % ledger_url,
            'count_host_resources = false',
            '[enforcement]', 'enabled_filters = %s' % ','.join(CHAIN),
            'max_leases_per_project = %d' % MAX_LEASES,
            'max_instances_per_user = %d' % MAX_INSTANCES_PER_USER]) + '\n')
    server = blazar_fixture.BlazarServer(
        env.keystone, transport_url=env.rabbit.add_vhost(vhost),
        in_process_filters=['MaximumReservationLengthFilter',
                            'PlacementQuotaChainFilter'],
        enforcement_options={
            'reservation_max_length': IN_PROCESS_MAX_LENGTH,
            'placement_quota_config_file': config_file},
        test_double_plugin=True,
        event_interval=base.EVENT_INTERVAL).start()
    #: The ledger the manager's chain records into.
    server.ledger_url = ledger_url
    return server


_in_process_blazar = processes.OncePerProcess(
    'Blazar running our filters in-process', _start_in_process_blazar)


class DeniedUpdateTests:
    """The tests, for a Blazar whose longest lease is :attr:`max_length`
    seconds."""

    max_length = None
    #: How our denial names it.
    max_length_text = None

    def status(self, lease_id):
        return self.client.lease.get(lease_id)['status']

    def assertExtensionDenied(self, lease):
        """Extending ``lease`` a minute past the maximum length is refused
        with our message; the lease keeps its status and end."""
        before = self.client.lease.get(lease['id'])
        start = datetime.datetime.fromisoformat(lease['start_date'])
        too_late = start + datetime.timedelta(seconds=self.max_length,
                                              minutes=1)

        error = self.assertRaises(
            blazar_exception.BlazarClientException,
            self.client.lease.update, lease['id'],
            end_date=base.api_date(too_late))

        after = self.client.lease.get(lease['id'])
        # All reported when several fail.
        self.expectThat(str(error), matchers.Contains(
            'exceeds the maximum of %s.' % self.max_length_text))
        # The answer Blazar gives for an ExternalServiceFilterException,
        # either way.
        self.expectThat(error.kwargs.get('code'), matchers.Equals(400))
        self.assertEqual(before['status'], after['status'])
        self.assertEqual(before['end_date'], after['end_date'])
        return after

    def test_denied_extension_keeps_an_active_lease_active(self):
        # Blazar's next event run (every second) starts it.
        lease = self.create_lease(start='now', hours=2)
        base.wait_for('lease %s ACTIVE' % lease['id'],
                      lambda: self.status(lease['id']) == 'ACTIVE')

        after = self.assertExtensionDenied(lease)

        self.assertEqual('ACTIVE', after['status'])


class TestInProcessFilters(DeniedUpdateTests, base.BlazarE2ETestCase):
    """Our filter inside blazar-manager."""

    max_length = IN_PROCESS_MAX_LENGTH
    max_length_text = '1 day (86400 seconds)'

    def blazar_server(self):
        return _in_process_blazar.get()

    def test_denied_extension_keeps_a_pending_lease_pending(self):
        lease = self.create_lease(hours=2)
        self.assertEqual('PENDING', self.status(lease['id']))

        after = self.assertExtensionDenied(lease)

        self.assertEqual('PENDING', after['status'])

    def test_denied_create_creates_nothing(self):
        error = self.assertRaises(blazar_exception.BlazarClientException,
                                  self.create_lease, hours=25)
        self.assertIn('Lease length of 1 day, 1:00:00 (90000 seconds) '
                      'exceeds the maximum of 1 day (86400 seconds).',
                      str(error))
        self.assertEqual(403, error.kwargs.get('code'))
        self.assertEqual([], self.client.lease.list())


class TestOurChainInsideBlazarManager(base.BlazarE2ETestCase):
    """PlacementQuotaChainFilter: our ledger filters decide inside
    blazar-manager in one admission, and record the lease once."""

    def blazar_server(self):
        return _in_process_blazar.get()

    def setUp(self):
        super().setUp()
        self.ledger = store.Ledger(self.blazar_server().ledger_url)
        self.addCleanup(self.ledger.dispose)

    def entries(self):
        with self.ledger.transaction() as txn:
            return txn.leases(self.project)

    def test_an_allowed_lease_is_recorded_once_by_the_chain(self):
        lease = self.create_lease(name='first')

        [entry] = self.entries()
        self.assertEqual(('first', 'pending', 1),
                         (entry.name, entry.state,
                          entry.amounts['instances']))
        self.assertEqual(lease['end_date'][:16],
                         entry.end_date.isoformat()[:16])

    def test_a_lease_past_the_chains_count_is_refused_with_its_message(self):
        # One after another: one instance at a time, as the user may.
        first = base.minute() + datetime.timedelta(hours=1)
        starts = [first + datetime.timedelta(hours=3 * i)
                  for i in range(MAX_LEASES + 1)]
        for start in starts[:-1]:
            self.create_lease(start=start)

        error = self.assertRaises(blazar_exception.BlazarClientException,
                                  self.create_lease, start=starts[-1])

        self.assertIn('at most %d are allowed' % MAX_LEASES, str(error))
        self.assertEqual(403, error.kwargs.get('code'))
        self.assertEqual(MAX_LEASES, len(self.client.lease.list()))

    def test_an_update_the_chain_denies_keeps_the_lease_and_its_entry(self):
        first = self.create_lease(hours=2)
        end = datetime.datetime.fromisoformat(first['end_date'])
        self.create_lease(start=end + datetime.timedelta(hours=1), hours=2)
        before = self.entry(lease_id=None, name=first['name'])

        # Two hours more overlap the second lease: two instances at once.
        error = self.assertRaises(
            blazar_exception.BlazarClientException,
            self.client.lease.update, first['id'],
            end_date=base.api_date(end + datetime.timedelta(hours=2)))

        self.assertIn('at most %d per user' % MAX_INSTANCES_PER_USER,
                      str(error))
        self.assertEqual(400, error.kwargs.get('code'))
        after = self.client.lease.get(first['id'])
        self.assertEqual(('PENDING', first['end_date']),
                         (after['status'], after['end_date']))
        self.assertEqual(before.end_date,
                         self.entry(name=first['name']).end_date)


class TestExternalService(DeniedUpdateTests, base.BlazarE2ETestCase):
    """Blazar's ExternalServiceFilter calling our service (which the other
    end-to-end tests drive further; PENDING, which takes the same path in
    Blazar, is left to the in-process tests)."""

    max_length = base.MAX_LENGTH
    max_length_text = '7 days (604800 seconds)'

    def setUp(self):
        super().setUp()
        # Enough for the lease; the length filter denies first.
        self.give_credits(10000)
