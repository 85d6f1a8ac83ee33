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
"""Warnings to a user of stock Blazar: the mail they get before their
lease ends, before their project's credits run out, and when their lease
sits idle (and is ended for it).

The user creates leases with python-blazarclient against the real Blazar
API (see :mod:`tests.functional.blazar_e2e.base`); their e-mail address
is their Keystone user's. What ``placement-quota listen`` runs with
``[warnings] enabled`` is run here: our lifecycle listener, turning
Blazar's ``lease.event.before_end_lease`` into a warning, beside the
dispatcher (:class:`~placement_quota.warning.dispatch.Dispatcher`), which
scans the ledger every second and sends what is due by e-mail, to a real
SMTP server in the test (:class:`~tests.fixtures.smtp.SmtpSink`), and as
an oslo.messaging notification on the environment's broker; idle
reservations are looked for in a real Placement, and ended through
Blazar's API.
"""

import datetime
import functools
import json
import threading
import time
import uuid

from placement_quota.ledger import models
from placement_quota.lifecycle import listener as listener_mod
from placement_quota.placement import client as placement_client
from placement_quota.placement import reservations as rsv
from placement_quota import services as services_mod
from placement_quota.warning import dispatch
from placement_quota.warning import events as warning_events
from placement_quota.warning import model
from tests.fixtures import command_server
from tests.fixtures import placement as placement_fixtures
from tests.fixtures import smtp
from tests.functional.blazar_e2e import base

#: Seconds between two passes of the dispatcher.
SCAN_INTERVAL = 1
#: Passes a test lets run after a warning came, before it counts them.
EXTRA_PASSES = 2
#: Seconds a test waits for a mail: Blazar's before_end_lease comes at
#: the next minute turn (Blazar takes dates to the minute).
MAIL_WAIT = 90
CREDITS_EVENT = model.EVENT_TYPE_PREFIX + model.CREDITS
#: [warnings] idle_after and end_idle_after of the idle reservation tests.
IDLE_AFTER = 1
END_IDLE_AFTER = 3


def keys(messages):
    """The warning keys of ``messages``. (A header longer than a line is
    folded before its value, and the parsed value keeps the folding's
    space.)"""
    return [str(m[smtp.KEY_HEADER]).strip() for m in messages]


def rendered_date(value):
    """A date as the warnings' mails write it."""
    return value.strftime('%Y-%m-%d %H:%M UTC')


class WarningsTestCase(base.BlazarE2ETestCase):
    """A user with an e-mail address in Keystone, and what ``listen``
    with ``[warnings] enabled`` runs: our listener on Blazar's
    notifications (instead of the environment's, on the same queue) and
    the dispatcher beside it, on e-mail and notifications."""

    #: More ``[warnings]`` options of the test case.
    warnings_options = {}
    #: Whether the dispatcher runs its passes in a thread of its own, as
    #: in ``listen`` (else the test runs them: :attr:`dispatcher`).
    dispatcher_thread = True

    def setUp(self):
        super().setUp()
        self.address = '%s@example.org' % self.user.name
        self.keystone.admin_conn.identity.update_user(
            self.user.id, email=self.address)
        self.sink = self.useFixture(smtp.SmtpSink())
        options = {'channels': 'email, notification',
                   'scan_interval': SCAN_INTERVAL,
                   'lease_end_lead_times': '48h, 1h',
                   'credit_thresholds': '75, 90, 100',
                   'smtp_host': self.sink.host, 'smtp_port': self.sink.port,
                   'mail_from': 'Cloud reservations '
                                '<reservations@example.org>'}
        options.update(self.warnings_options)
        self.conf = self.env.config_with(
            '[warnings]\n%s'
            '[oslo_messaging_notifications]\n'
            'driver = messagingv2\n'
            'transport_url = %s\n'
            % (''.join('%s = %s\n' % item for item in options.items()),
               self.env.transport_url) +
            self.keystone.admin_section('keystone') + self.more_config())
        services = services_mod.Services(self.conf)
        self.addCleanup(services.close)
        self.ledger = services.ledger
        self.dispatcher = dispatch.Dispatcher.from_conf(self.conf, services)
        self.addCleanup(self.dispatcher.close)
        # The environment's listener comes back at cleanup
        # (BlazarE2ETestCase._services_up), after this one stopped.
        self.env.lifecycle.stop()
        listener = listener_mod.LifecycleListener(
            self.conf, self.ledger, before_end=functools.partial(
                warning_events.before_end, self.ledger))
        listener.start()
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)
        if self.dispatcher_thread:
            stopping = threading.Event()
            warner = threading.Thread(target=self.dispatcher.run,
                                      args=(stopping,), name='warnings',
                                      daemon=True)
            warner.start()
            self.addCleanup(warner.join, 30)
            self.addCleanup(stopping.set)

    def more_config(self):
        """More sections of the test case's configuration."""
        return ''

    def mails(self):
        """The messages the sink received for this test's user."""
        return [m for m in self.sink.messages
                if self.address in str(m['To'])]

    def mail(self, key):
        """Wait for the mail of warning ``key``; let the dispatcher run
        :data:`EXTRA_PASSES` more passes; return the one mail this user
        got (fails when there is another)."""
        deadline = time.monotonic() + MAIL_WAIT
        while key not in keys(self.mails()):
            if time.monotonic() > deadline:
                self.fail('No mail of warning %s for %s in %ds; the sink '
                          'received %s' % (key, self.address,
                                           MAIL_WAIT,
                                           keys(self.sink.messages)))
            time.sleep(0.2)
        time.sleep(EXTRA_PASSES * SCAN_INTERVAL)
        mails = self.mails()
        self.assertEqual([key], keys(mails))
        return mails[0]

    def notifications(self, event_type):
        """The notifications of ``event_type`` about this test's
        project."""
        with self.env.tap._lock:
            return [n for n in self.env.tap.received
                    if n['event_type'] == event_type and
                    n['payload'].get('project_id') == self.project]

    def text(self, message):
        return message.get_body(('plain',)).get_content()


class TestBeforeEndWarning(WarningsTestCase):

    def test_before_end_date_of_a_lease_mails_its_user_once(self):
        self.give_credits(100)
        name = 'warned-%s' % uuid.uuid4().hex[:8]
        # Blazar takes dates to the minute, its "now" included: the
        # earliest before_end_date it accepts is the next minute's turn.
        base.clear_of_minute_turn()
        start = base.minute()
        end = start + datetime.timedelta(hours=2)
        lease = self.client.lease.create(
            name, 'now', base.api_date(end), [base.instance_reservation()],
            [], before_end=base.api_date(
                start + datetime.timedelta(minutes=1)))
        self.leases.append(lease['id'])
        self.assertEqual(end, datetime.datetime.fromisoformat(
            lease['end_date']))

        message = self.mail(model.key(model.BEFORE_END, lease['id'], end))
        self.notification(lease['id'], 'lease.event.before_end_lease')
        self.assertIn(name, message['Subject'])
        text = self.text(message)
        self.assertIn(name, text)
        self.assertIn(rendered_date(end), text)
        self.assertEqual(1, len(self.notifications(
            model.EVENT_TYPE_PREFIX + model.BEFORE_END)))


class TestCreditsWarning(WarningsTestCase):

    def test_a_lease_past_90_percent_of_the_credits_warns_once(self):
        # A 2-hour lease of 3 credits an hour: 6 of 6.5, 92 %.
        allocation = self.give_credits(6.5)
        lease = self.create_lease(hours=2)
        self.assertEqual(6, self.spent(allocation))

        message = self.mail(model.key(model.CREDITS, allocation, 90))
        text = self.text(message)
        self.assertIn(self.project, text)
        self.assertIn('0.50', text)
        notifications = self.notifications(CREDITS_EVENT)
        self.assertEqual(1, len(notifications), notifications)
        payload = notifications[0]['payload']
        self.assertEqual((self.project, 90, 6.0, 0.5),
                         (payload['project_id'],
                          payload['facts']['threshold_pct'],
                          payload['facts']['spent'],
                          payload['facts']['left']))
        # (A subject longer than a header line is folded before its first
        # word; the parsed header keeps the folding's space.)
        self.assertEqual(message['Subject'].strip(), payload['subject'])
        self.bound_entry(lease['id'])


class TestIdleReservation(WarningsTestCase):
    """Two leases started through Blazar, one instance each, whose
    reservations are in a real Placement as Blazar's instance plugin
    writes them (a reservation provider under a compute node, with an
    inventory of the reservation's class; the environment's Blazar runs
    the test double of that plugin, which writes nothing there): the
    quiet one never launched its instance, the busy one did. The test
    runs the dispatcher's passes."""

    warnings_options = {'idle_after': IDLE_AFTER,
                        'end_idle_after': END_IDLE_AFTER}
    dispatcher_thread = False

    def more_config(self):
        server = self.useFixture(placement_fixtures.PlacementServer())
        self.placement = placement_client.PlacementClient.from_endpoint(
            server.endpoint, server.headers)
        # The operator's Blazar client, which ends idle leases.
        return ('[placement]\nauth_type = admin_token\nendpoint = %s\n'
                'token = admin\n' % server.endpoint +
                self.keystone.admin_section('blazar') +
                'endpoint_override = %s\n' % self.env.blazar.endpoint)

    def reserve(self, lease):
        """Write the inventory of ``lease``'s reservation in Placement;
        return its host."""
        [reservation] = lease['reservations']
        host = 'cn-%s' % uuid.uuid4().hex[:12]
        node = self.placement.post('/resource_providers',
                                   json={'name': host}).json()
        provider = self.placement.post('/resource_providers', json={
            'name': rsv.provider_name(host),
            'parent_provider_uuid': node['uuid']}).json()
        name = rsv.reservation_class(reservation['id'])
        self.placement.put('/resource_classes/%s' % name)
        self.placement.put(
            '/resource_providers/%s/inventories' % provider['uuid'],
            json={'resource_provider_generation': provider['generation'],
                  'inventories': {name: rsv.reservation_inventory(
                      reservation['amount'])}})
        return host, provider['uuid'], name

    def launch(self, provider, resource_class):
        """An instance of the project on the reservation's provider."""
        self.placement.put('/allocations/%s' % uuid.uuid4(), json={
            'allocations': {provider: {'resources': {resource_class: 1}}},
            'project_id': self.project, 'user_id': self.user.id,
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})

    def report_idle(self):
        result = command_server.run(
            [arg for path in self.conf.config_file
             for arg in ('--config-file', path)] +
            ['report', 'idle', '-f', 'json'], timeout=120)
        self.assertEqual(0, result.returncode, result.stderr)
        return json.loads(result.stdout)

    def test_an_idle_lease_is_listed_ended_and_refunded_a_busy_one_kept(
            self):
        allocation = self.give_credits(100)
        quiet = self.create_lease(start='now', hours=2)
        busy = self.create_lease(start='now', hours=2)
        for lease in (quiet, busy):
            base.wait_for('lease %s started' % lease['id'], lambda: (
                self.client.lease.get(lease['id'])['status'] == 'ACTIVE'))
        quiet_host, _, _ = self.reserve(quiet)
        self.launch(*self.reserve(busy)[1:])

        self.dispatcher.run_once()
        time.sleep(IDLE_AFTER)
        self.dispatcher.run_once()
        [listed] = self.report_idle()
        self.assertEqual((quiet['id'], quiet['name'], quiet_host),
                         (listed['Lease'], listed['Name'], listed['Hosts']))
        time.sleep(END_IDLE_AFTER - IDLE_AFTER)
        # Blazar ends a lease "now" at the current minute: in the minute
        # it started, the lease would be zero long, which our service
        # refuses (and the dispatcher tries again at its next pass).
        started = datetime.datetime.fromisoformat(quiet['start_date'])
        wait = (started + datetime.timedelta(minutes=1) -
                datetime.datetime.utcnow()).total_seconds()
        time.sleep(max(0, wait) + 0.5)
        self.dispatcher.run_once()

        base.wait_for('the end of lease %s' % quiet['id'], lambda: (
            self.client.lease.get(quiet['id'])['status'] == 'TERMINATED'))
        ended = base.wait_for('the ledger entry of %s closed' % quiet['id'],
                              lambda: self.entry(lease_id=quiet['id'])
                              .state not in (models.PENDING, models.ACTIVE)
                              and self.entry(lease_id=quiet['id']))
        kept = self.entry(lease_id=busy['id'])
        # The quiet lease ran no more than a minute of its 2 hours.
        self.assertLess(self.credits(ended), 0.1)
        self.assertEqual((models.ACTIVE, 6), (kept.state,
                                              self.credits(kept)))
        self.assertEqual('ACTIVE', self.client.lease.get(busy['id'])[
            'status'])
        self.dispatcher.run_once()
        self.assertEqual(
            [model.IDLE, model.IDLE_ENDED],
            sorted(key.split(':')[0] for key in keys(self.mails())))
        self.assertTrue(all(
            quiet['name'] in m['Subject'] for m in self.mails()))
        self.assertLess(self.spent(allocation), 6.1)
