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
"""The SMTP sink the warning tests and the benchmark send to
(tests/fixtures/smtp.py), driven with the standard library's smtplib."""

from email import message as email_message
import smtplib
import ssl

import testtools

from tests.fixtures import smtp


def message(key=None, subject='Hello'):
    msg = email_message.EmailMessage()
    msg['From'] = 'reservations@example.org'
    msg['To'] = 'alice@example.org'
    msg['Subject'] = subject
    if key is not None:
        msg[smtp.KEY_HEADER] = key
    msg.set_content('Line one\nline two\n')
    return msg


class SinkTestCase(testtools.TestCase):

    sink_options = {}

    def setUp(self):
        super().setUp()
        self.sink = self.useFixture(smtp.SmtpSink(**self.sink_options))

    def client(self):
        client = smtplib.SMTP(self.sink.host, self.sink.port, timeout=10)
        self.addCleanup(client.close)
        return client


class TestSink(SinkTestCase):

    def test_a_message_sent_is_kept_parsed(self):
        self.client().send_message(message(subject='Lease ending'))
        received = self.sink.wait_for(1, timeout=10)[0]
        self.assertEqual('Lease ending', received['Subject'])
        self.assertEqual('Line one\nline two\n', received.get_content())

    def test_count_is_the_number_of_messages_received(self):
        client = self.client()
        client.send_message(message('a'))
        client.send_message(message())
        self.assertEqual(2, self.sink.count)

    def test_the_envelope_is_kept(self):
        self.client().send_message(message(), to_addrs=['a@example.org',
                                                        'b@example.org'])
        self.assertEqual([('reservations@example.org',
                           ['a@example.org', 'b@example.org'])],
                         self.sink.envelopes)

    def test_keys_are_the_warning_headers_in_order(self):
        client = self.client()
        for key in ('credits:7:90', 'idle:3'):
            client.send_message(message(key))
        client.send_message(message())
        self.assertEqual(['credits:7:90', 'idle:3'], self.sink.keys())

    def test_duplicates_are_the_keys_received_twice(self):
        client = self.client()
        for key in ('idle:3', 'credits:7:90', 'idle:3'):
            client.send_message(message(key))
        self.assertEqual(['idle:3'], self.sink.duplicates())

    def test_wait_for_fails_saying_what_came(self):
        self.client().send_message(message('idle:3'))
        error = self.assertRaises(AssertionError, self.sink.wait_for, 2,
                                  timeout=0.1)
        self.assertIn('received 1 message(s) in 0.1s, expected 2',
                      str(error))
        self.assertIn("['idle:3']", str(error))

    def test_fail_next_refuses_that_many_messages_with_the_code(self):
        self.sink.fail_next(2, 452)
        client = self.client()
        for _ in range(2):
            error = self.assertRaises(smtplib.SMTPDataError,
                                      client.send_message, message('a'))
            self.assertEqual(452, error.smtp_code)
        client.send_message(message('b'))
        self.assertEqual(['b'], self.sink.keys())

    def test_a_refused_recipient_is_refused_the_others_get_it(self):
        self.sink.refuse('b@example.org', 550)
        refused = self.client().send_message(
            message(), to_addrs=['a@example.org', 'b@example.org'])
        self.assertEqual({'b@example.org': (550, b'Mailbox unavailable')},
                         refused)
        self.assertEqual([('reservations@example.org', ['a@example.org'])],
                         self.sink.envelopes)

    def test_fail_next_refuses_a_code_that_is_no_error(self):
        self.assertRaises(ValueError, self.sink.fail_next, 1, 250)

    def test_failures_can_be_asked_for_at_start(self):
        sink = self.useFixture(smtp.SmtpSink(fail_next=1))
        client = smtplib.SMTP(sink.host, sink.port, timeout=10)
        self.addCleanup(client.close)
        error = self.assertRaises(smtplib.SMTPDataError,
                                  client.send_message, message())
        self.assertEqual(451, error.smtp_code)

    def test_usable_without_testtools(self):
        sink = smtp.SmtpSink()
        sink.setUp()
        try:
            with smtplib.SMTP(sink.host, sink.port, timeout=10) as client:
                client.send_message(message('idle:3'))
            self.assertEqual(['idle:3'], sink.keys())
        finally:
            sink.cleanUp()
        self.assertRaises(OSError, smtplib.SMTP, sink.host, sink.port,
                          timeout=10)


class TestStartTls(SinkTestCase):

    sink_options = {'starttls': True, 'auth': ('warner', 's3cret')}

    def tls_client(self):
        client = self.client()
        client.starttls(context=ssl.create_default_context(
            cafile=self.sink.cert_file))
        return client

    def test_the_cert_file_verifies_the_server_and_login_works(self):
        client = self.tls_client()
        client.login('warner', 's3cret')
        client.send_message(message('idle:3'))
        self.assertEqual(['idle:3'], self.sink.keys())
        self.assertEqual(['warner'], self.sink.logins)

    def test_a_wrong_password_is_refused(self):
        error = self.assertRaises(smtplib.SMTPAuthenticationError,
                                  self.tls_client().login, 'warner', 'no')
        self.assertEqual(535, error.smtp_code)

    def test_mail_without_login_is_refused(self):
        self.assertRaises(smtplib.SMTPSenderRefused,
                          self.tls_client().send_message, message())

    def test_mail_before_starttls_is_refused(self):
        self.assertRaises(smtplib.SMTPSenderRefused,
                          self.client().send_message, message())
        self.assertEqual([], self.sink.messages)


class TestSmtps(SinkTestCase):

    sink_options = {'smtps': True}

    def test_tls_from_the_start_verified_by_the_cert_file(self):
        context = ssl.create_default_context(cafile=self.sink.cert_file)
        with smtplib.SMTP_SSL(self.sink.host, self.sink.port, timeout=10,
                              context=context) as client:
            client.send_message(message('idle:3'))
        self.assertEqual(['idle:3'], self.sink.keys())

    def test_starttls_and_smtps_together_are_refused(self):
        self.assertRaises(ValueError, smtp.SmtpSink, starttls=True,
                          smtps=True)
