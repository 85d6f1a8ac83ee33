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
"""The e-mail channel's options are checked when it is made, each error
naming the option and its value (sending is tested against a real SMTP
server in tests/functional/warning/test_mail.py)."""

import os

import fixtures
import testtools

from placement_quota.warning import mail
from tests.unit.warning import test_render


class NoRecipients:

    def addresses(self, notice):
        return []

    def describe(self, notice):
        return 'nobody'


class TestOptions(testtools.TestCase):

    def make(self, **overrides):
        options = dict(smtp_host='127.0.0.1',
                       mail_from='reservations@example.org')
        options.update(overrides)
        return mail.MailChannel(test_render.new_conf(**options),
                                recipients=NoRecipients())

    def assertRefused(self, *words, **overrides):
        error = self.assertRaises(ValueError, self.make, **overrides)
        for word in words:
            self.assertIn(word, str(error))

    def test_the_channel_is_named_email(self):
        self.assertEqual('email', self.make().name)

    def test_a_name_and_address_is_a_valid_from(self):
        channel = self.make(mail_from='Cloud <reservations@example.org>')
        self.assertEqual('reservations@example.org',
                         channel.sender.addr_spec)
        self.assertEqual('Cloud', channel.sender.display_name)

    def test_no_smtp_host_is_refused(self):
        self.assertRefused('[warnings] smtp_host is not set',
                           smtp_host=None)

    def test_no_mail_from_is_refused(self):
        self.assertRefused('[warnings] mail_from', mail_from=None)

    def test_a_mail_from_that_is_no_address_is_refused_with_its_value(self):
        self.assertRefused("[warnings] mail_from 'reservations'",
                           'is not an e-mail address',
                           mail_from='reservations')

    def test_a_reply_to_that_is_no_address_is_refused_with_its_value(self):
        self.assertRefused("[warnings] mail_reply_to 'help desk'",
                           mail_reply_to='help desk')

    def test_ssl_and_starttls_together_are_refused(self):
        self.assertRefused('smtp_ssl and smtp_starttls', smtp_ssl=True,
                           smtp_starttls=True)

    def test_a_user_without_a_password_is_refused(self):
        self.assertRefused('smtp_username is set but smtp_password is not',
                           smtp_username='warner')

    def test_a_missing_ca_file_is_refused_with_its_path(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'missing.pem')
        self.assertRefused('[warnings] smtp_ca_file %r' % path,
                           smtp_starttls=True, smtp_ca_file=path)

    def test_a_ca_file_that_is_no_certificate_is_refused(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'ca.pem')
        with open(path, 'w') as f:
            f.write('not a certificate\n')
        self.assertRefused('[warnings] smtp_ca_file %r' % path,
                           smtp_ssl=True, smtp_ca_file=path)

    def test_no_recipient_is_a_success_that_connects_to_nothing(self):
        # smtp_host 127.0.0.1, port 25: nothing listens there.
        self.assertEqual('no e-mail address for nobody', self.make().send(
            test_render.SAMPLES['credits'], rendered=None))
