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
"""The e-mail channel against a real SMTP server (aiosmtpd): one
multipart message per warning, plain, over STARTTLS with a login, over
SMTPS; the server's refusals as transient or permanent send errors."""

import email.utils
import logging
import time

import fixtures
import testtools

from placement_quota.warning import channels
from placement_quota.warning import mail
from placement_quota.warning import model
from placement_quota.warning import render
from tests.fixtures import process as processes
from tests.fixtures import smtp
from tests.unit.warning import test_render

ALICE = ('Alice Liddell', 'alice@example.org')
BOB = ('Bob', 'bob@example.org')
NOTICE = test_render.SAMPLES[model.LEASE_END]


class FixedRecipients:
    """Recipients without Keystone: the same addresses for every
    notice (Keystone's part is tested in test_mail_recipients)."""

    def __init__(self, *addresses):
        self.found = list(addresses)

    def addresses(self, notice):
        return list(self.found)

    def describe(self, notice):
        return 'user %s' % notice.user_id


class MailTestCase(testtools.TestCase):

    sink_options = {}

    def setUp(self):
        super().setUp()
        self.sink = self.useFixture(smtp.SmtpSink(**self.sink_options))
        self.conf = test_render.new_conf(
            smtp_host=self.sink.host, smtp_port=self.sink.port,
            mail_from='Cloud reservations <reservations@example.org>',
            mail_reply_to='help@example.org', smtp_timeout=10)
        self.rendered = render.Renderer(self.conf).render(NOTICE)

    def channel(self, *addresses, **overrides):
        for name, value in overrides.items():
            self.conf.set_override(name, value, 'warnings')
        channel = mail.MailChannel(
            self.conf, recipients=FixedRecipients(*(addresses or [ALICE])))
        self.addCleanup(channel.close)
        return channel

    def send(self, channel=None, notice=NOTICE):
        return (channel or self.channel()).send(notice, self.rendered)

    def received(self):
        return self.sink.wait_for(1, timeout=10)[0]


class TestMessage(MailTestCase):

    def test_a_warning_is_one_message_to_all_its_recipients(self):
        self.send(self.channel(ALICE, BOB))
        self.assertEqual(
            [('reservations@example.org',
              ['alice@example.org', 'bob@example.org'])],
            self.sink.envelopes)

    def test_the_to_header_names_every_recipient(self):
        self.send(self.channel(ALICE, BOB))
        self.assertEqual(
            [ALICE, BOB], email.utils.getaddresses([self.received()['To']]))

    def test_send_says_whom_it_mailed(self):
        self.assertEqual('mailed to alice@example.org, bob@example.org',
                         self.send(self.channel(ALICE, BOB)))

    def test_the_message_has_a_text_and_an_html_alternative(self):
        self.send()
        message = self.received()
        self.assertEqual('multipart/alternative', message.get_content_type())
        self.assertEqual(
            ['text/plain', 'text/html'],
            [part.get_content_type() for part in message.iter_parts()])

    def test_the_text_part_is_the_rendered_text(self):
        self.send()
        self.assertEqual(self.rendered.text, self.received().get_body(
            ('plain',)).get_content())

    def test_the_html_part_is_the_rendered_html(self):
        self.send()
        self.assertEqual(self.rendered.html.strip(), self.received().get_body(
            ('html',)).get_content().strip())

    def test_the_message_carries_the_warning_key(self):
        self.send()
        self.assertEqual([NOTICE.key], self.sink.keys())

    def test_the_subject_is_the_rendered_subject(self):
        self.send()
        self.assertEqual('Your lease training-run ends on 2026-11-29 14:00 '
                         'UTC', self.received()['Subject'])

    def test_from_and_reply_to_are_the_configured_addresses(self):
        self.send()
        message = self.received()
        self.assertEqual('Cloud reservations <reservations@example.org>',
                         message['From'])
        self.assertEqual('help@example.org', message['Reply-To'])

    def test_the_message_has_a_date_and_a_message_id_of_the_from_domain(self):
        self.send()
        message = self.received()
        self.assertIsNotNone(email.utils.parsedate_to_datetime(
            message['Date']))
        self.assertTrue(message['Message-ID'].endswith('@example.org>'))

    def test_the_message_says_it_is_automatic(self):
        self.send()
        self.assertEqual('auto-generated', self.received()['Auto-Submitted'])

    def test_every_warning_has_its_own_message_id(self):
        channel = self.channel()
        self.send(channel)
        self.send(channel, test_render.SAMPLES[model.IDLE])
        first, second = self.sink.wait_for(2, timeout=10)
        self.assertNotEqual(first['Message-ID'], second['Message-ID'])

    def test_a_warning_sent_again_has_the_same_message_id(self):
        channel = self.channel()
        self.send(channel)
        self.send(channel)
        first, second = self.sink.wait_for(2, timeout=10)
        self.assertEqual(first['Message-ID'], second['Message-ID'])

    def test_a_second_warning_on_the_same_channel_is_sent_too(self):
        channel = self.channel()
        self.send(channel)
        self.send(channel, test_render.SAMPLES[model.IDLE])
        self.sink.wait_for(2, timeout=10)
        self.assertEqual([NOTICE.key, 'idle:3'], self.sink.keys())

    def test_no_recipient_is_a_success_that_says_so(self):
        channel = mail.MailChannel(self.conf, recipients=FixedRecipients())
        self.assertEqual('no e-mail address for user user-a',
                         channel.send(NOTICE, self.rendered))
        self.assertEqual([], self.sink.messages)


class TestRefusals(MailTestCase):

    def test_a_451_is_a_transient_send_error(self):
        self.sink.fail_next(1, 451)
        error = self.assertRaises(channels.SendError, self.send)
        self.assertFalse(error.permanent)
        self.assertIn('451', str(error))

    def test_a_550_is_a_permanent_send_error(self):
        self.sink.fail_next(1, 550)
        error = self.assertRaises(channels.SendError, self.send)
        self.assertTrue(error.permanent)
        self.assertIn('550', str(error))

    def test_the_warning_refused_with_451_is_sent_on_the_next_attempt(self):
        self.sink.fail_next(1, 451)
        channel = self.channel()
        self.assertRaises(channels.SendError, self.send, channel)
        self.assertEqual('mailed to alice@example.org', self.send(channel))
        self.assertEqual([NOTICE.key], self.sink.keys())

    def test_a_refused_message_is_not_received(self):
        self.sink.fail_next(1, 451)
        self.assertRaises(channels.SendError, self.send)
        self.assertEqual([], self.sink.keys())

    def test_every_recipient_refused_with_550_is_a_permanent_send_error(self):
        self.sink.refuse('alice@example.org', 550)
        self.sink.refuse('bob@example.org', 550)
        error = self.assertRaises(channels.SendError, self.send,
                                  self.channel(ALICE, BOB))
        self.assertTrue(error.permanent)
        self.assertIn('refused every recipient: alice@example.org (550',
                      str(error))

    def test_a_recipient_refused_with_450_is_a_transient_send_error(self):
        self.sink.refuse('alice@example.org', 550)
        self.sink.refuse('bob@example.org', 450)
        error = self.assertRaises(channels.SendError, self.send,
                                  self.channel(ALICE, BOB))
        self.assertFalse(error.permanent)

    def test_one_recipient_refused_the_others_get_it_and_it_is_said(self):
        self.sink.refuse('bob@example.org', 550)
        self.assertEqual('mailed to alice@example.org; refused '
                         'bob@example.org (550 Mailbox unavailable)',
                         self.send(self.channel(ALICE, BOB)))
        self.assertEqual([('reservations@example.org',
                           ['alice@example.org'])], self.sink.envelopes)

    def test_no_server_listening_is_a_transient_send_error(self):
        channel = self.channel(smtp_port=processes.free_port('127.0.0.1'))
        error = self.assertRaises(channels.SendError, self.send, channel)
        self.assertFalse(error.permanent)
        self.assertIn('Cannot send through the SMTP server', str(error))

    def test_a_server_gone_after_a_send_is_a_transient_send_error(self):
        gone = smtp.SmtpSink()
        gone.setUp()
        channel = self.channel(smtp_port=gone.port)
        self.send(channel)
        gone.cleanUp()
        error = self.assertRaises(channels.SendError, self.send, channel)
        self.assertFalse(error.permanent)

    def test_a_server_without_starttls_fails_a_starttls_channel(self):
        channel = self.channel(smtp_starttls=True)
        error = self.assertRaises(channels.SendError, self.send, channel)
        self.assertFalse(error.permanent)
        self.assertIn('STARTTLS', str(error))


class TestConnection(MailTestCase):

    sink_options = {'idle_timeout': 0.2}

    def test_a_connection_the_server_closed_while_idle_is_made_again(self):
        self.useFixture(fixtures.MockPatchObject(mail, 'CHECK_AFTER_IDLE',
                                                 0.1))
        channel = self.channel()
        self.send(channel)
        time.sleep(0.5)   # the server closes the connection after 0.2s
        self.assertEqual('mailed to alice@example.org',
                         self.send(channel, test_render.SAMPLES[model.IDLE]))
        self.assertEqual([NOTICE.key, 'idle:3'], self.sink.keys())


class TestStartTls(MailTestCase):

    sink_options = {'starttls': True, 'auth': ('warner', 's3cret')}

    def tls_channel(self, **overrides):
        options = dict(smtp_starttls=True, smtp_ca_file=self.sink.cert_file,
                       smtp_username='warner', smtp_password='s3cret')
        options.update(overrides)
        return self.channel(**options)

    def test_starttls_and_login_deliver_the_message(self):
        self.assertEqual('mailed to alice@example.org',
                         self.send(self.tls_channel()))
        self.assertEqual([NOTICE.key], self.sink.keys())
        self.assertEqual(['warner'], self.sink.logins)

    def test_a_wrong_password_is_a_transient_send_error(self):
        channel = self.tls_channel(smtp_password='wrong')
        error = self.assertRaises(channels.SendError, self.send, channel)
        self.assertFalse(error.permanent)
        self.assertIn('535', str(error))

    def test_a_certificate_the_ca_file_did_not_sign_is_refused(self):
        # The server logs the handshake our client broke off.
        self.useFixture(fixtures.FakeLogger('mail.log', level=logging.ERROR))
        other = self.useFixture(fixtures.TempDir()).path
        other_ca = smtp.make_certificates(other)[0]
        channel = self.tls_channel(smtp_ca_file=other_ca)
        error = self.assertRaises(channels.SendError, self.send, channel)
        self.assertFalse(error.permanent)
        self.assertIn('CERTIFICATE_VERIFY_FAILED', str(error))
        self.assertEqual([], self.sink.messages)

    def test_without_starttls_the_server_refuses_the_message(self):
        channel = self.channel(smtp_username=None)
        error = self.assertRaises(channels.SendError, self.send, channel)
        self.assertFalse(error.permanent)
        self.assertEqual([], self.sink.messages)


class TestSmtps(MailTestCase):

    sink_options = {'smtps': True}

    def test_tls_from_the_start_delivers_the_message(self):
        channel = self.channel(smtp_ssl=True,
                               smtp_ca_file=self.sink.cert_file)
        self.assertEqual('mailed to alice@example.org', self.send(channel))
        self.assertEqual([NOTICE.key], self.sink.keys())
