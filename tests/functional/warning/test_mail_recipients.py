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
"""Whom warnings are mailed to, asked of a real Keystone: a user's own
e-mail address, or those of the users holding ``[warnings]
project_roles`` on the project (through groups too); and one warning
mailed end to end to a Keystone user's address."""

import testtools

from placement_quota import conf as pq_conf
from placement_quota.warning import channels
from placement_quota.warning import mail
from placement_quota.warning import model
from placement_quota.warning import recipients
from placement_quota.warning import render
from tests.fixtures import keystone
from tests.fixtures import process as processes
from tests.fixtures import smtp


def notice(project_id, user_id=None, kind=model.CREDITS):
    return model.Notice(kind, '%s:%s:%s' % (kind, project_id, user_id),
                        project_id, user_id)


class TestRecipients(testtools.TestCase):
    """One project, its users and a group, made once for the class (each
    Keystone write takes a while); the tests only read them, or change
    a user of their own."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.keystone = ks = keystone.KeystoneFixture()
        ks.setUp()
        try:
            cls.identity = ks.admin_conn.identity
            cls.project = ks.create_project()
            cls.empty_project = ks.create_project()
            cls.alice = cls.user('alice@example.org')
            cls.bob = cls.user('bob@example.org')
            cls.reader = cls.user('reader@example.org', roles=('reader',))
            cls.manager = cls.user('manager@example.org',
                                   roles=('manager',))
            cls.silent = cls.user()
            cls.wrong = cls.user('wrong at example dot org')
            cls.carol = cls.user('carol@example.org', roles=())
            group = cls.identity.create_group(
                name=keystone.unique_name('pq-group'), domain_id='default')
            ks.addCleanup(cls.identity.delete_group, group.id)
            cls.identity.add_user_to_group(cls.carol.id, group.id)
            cls.identity.assign_project_role_to_group(
                cls.project.id, group.id, ks._role('member').id)
            cls.gone = cls.user('gone@example.org')
            cls.identity.delete_user(cls.gone.id)
            cls.kept = cls.user('kept@example.org', roles=('reader',))
            cls.changed = cls.user('changed@example.org', roles=('reader',))
        except BaseException:
            ks.cleanUp()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.keystone.cleanUp()
        super().tearDownClass()

    @classmethod
    def user(cls, email=None, roles=('member',)):
        """A user of the project with ``roles`` and ``email``."""
        user = cls.keystone.create_user(cls.project.id, roles=roles)
        if email is not None:
            cls.identity.update_user(user.id, email=email)
        return user

    def setUp(self):
        super().setUp()
        self.conf = pq_conf.new_config([], config_files=[])
        self.keystone.set_admin_options(self.conf, 'keystone')
        self.conf.set_override('region_name', self.keystone.region_name,
                               'keystone')

    def recipients(self, **kwargs):
        return recipients.Recipients(self.conf, **kwargs)

    def project_emails(self):
        return [email for _, email in self.recipients().addresses(
            notice(self.project.id))]

    def user_emails(self, user, found=None):
        return [email for _, email in (found or self.recipients())
                .addresses(notice(self.project.id, user.id))]

    def test_a_users_warning_goes_to_that_users_address_and_name(self):
        self.assertEqual([(self.alice.name, 'alice@example.org')],
                         self.recipients().addresses(
                             notice(self.project.id, self.alice.id)))

    def test_a_projects_warning_goes_to_every_member(self):
        self.assertEqual(['alice@example.org', 'bob@example.org',
                          'carol@example.org', 'manager@example.org'],
                         self.project_emails())

    def test_an_implied_role_counts(self):
        # Keystone's bootstrap makes manager imply member.
        self.assertIn('manager@example.org', self.project_emails())

    def test_a_role_held_through_a_group_counts(self):
        self.assertIn('carol@example.org', self.project_emails())

    def test_a_user_without_the_role_gets_no_project_warning(self):
        self.assertNotIn('reader@example.org', self.project_emails())

    def test_project_roles_chooses_the_roles_warned(self):
        self.conf.set_override('project_roles', ['manager'], 'warnings')
        self.assertEqual(['manager@example.org'], self.project_emails())

    def test_a_user_without_an_address_gets_nothing(self):
        self.assertEqual([], self.user_emails(self.silent))

    def test_an_address_that_is_none_is_left_out(self):
        self.assertEqual([], self.user_emails(self.wrong))

    def test_a_user_gone_from_keystone_gets_nothing(self):
        self.assertEqual([], self.user_emails(self.gone))

    def test_a_project_nobody_holds_a_role_on_gets_nobody(self):
        self.assertEqual([], self.recipients().addresses(
            notice(self.empty_project.id)))

    def test_answers_are_kept_for_the_cache_time(self):
        found = self.recipients()
        self.user_emails(self.kept, found)
        self.identity.update_user(self.kept.id, email='kept@example.net')
        self.assertEqual(['kept@example.org'],
                         self.user_emails(self.kept, found))

    def test_answers_are_asked_again_after_the_cache_time(self):
        found = self.recipients(ttl=0)
        self.user_emails(self.changed, found)
        self.identity.update_user(self.changed.id,
                                  email='changed@example.net')
        self.assertEqual(['changed@example.net'],
                         self.user_emails(self.changed, found))

    def test_keystone_unreachable_is_a_transient_send_error(self):
        self.conf.set_override(
            'auth_url', 'http://127.0.0.1:%d/v3'
            % processes.free_port('127.0.0.1'), 'keystone')
        error = self.assertRaises(
            channels.SendError, self.recipients().addresses,
            notice(self.project.id))
        self.assertFalse(error.permanent)
        self.assertIn('Keystone could not be asked for the role '
                      'assignments of project %s' % self.project.id,
                      str(error))

    def test_a_warning_is_mailed_to_the_members_keystone_addresses(self):
        sink = self.useFixture(smtp.SmtpSink())
        for name, value in (('smtp_host', sink.host),
                            ('smtp_port', sink.port),
                            ('mail_from', 'reservations@example.org')):
            self.conf.set_override(name, value, 'warnings')
        channel = mail.MailChannel(self.conf)
        self.addCleanup(channel.close)
        warning = notice(self.project.id)
        self.assertEqual(
            'mailed to alice@example.org, bob@example.org, '
            'carol@example.org, manager@example.org',
            channel.send(warning, render.Renderer(self.conf).render(
                warning)))
        self.assertEqual(
            ['alice@example.org', 'bob@example.org', 'carol@example.org',
             'manager@example.org'], sink.envelopes[0][1])
