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
  runs our MaximumReservationLengthFilter itself, made loadable by
  ``placement_quota.blazar.enforcement.install()`` as
  ``placement-quota-blazar-manager`` does; it shares the environment's
  Keystone and RabbitMQ (a vhost of its own) and starts once per test
  process;
* through the external service: the environment's Blazar, whose own
  ExternalServiceFilter calls our service.
"""

import datetime
import uuid

from testtools import matchers

from blazarclient import exception as blazar_exception

from tests.functional.blazar_e2e import base
from tests.fixtures import blazar as blazar_fixture
from tests.fixtures import process as processes

#: The in-process Blazar's maximum lease length: a day.
IN_PROCESS_MAX_LENGTH = 86400


def _start_in_process_blazar():
    env = base.environment()
    vhost = 'pq-in-process-%s' % uuid.uuid4().hex[:12]
    return blazar_fixture.BlazarServer(
        env.keystone, transport_url=env.rabbit.add_vhost(vhost),
        in_process_filters=['MaximumReservationLengthFilter'],
        enforcement_options={
            'reservation_max_length': IN_PROCESS_MAX_LENGTH},
        test_double_plugin=True,
        event_interval=base.EVENT_INTERVAL).start()


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
