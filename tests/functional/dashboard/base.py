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
"""What the dashboard tests share: a project with a user, credits and
leases in the service's ledger, the API's own answers (with the user's
token) to compare the panel with, and a login through Horizon's form.
"""

import datetime

from lxml import html
import requests
import testtools
from testtools import content

from placement_quota.ledger import store
from tests import builders
from tests.fixtures import horizon
from tests.fixtures import keystone

PANEL = '/project/reservation_quota/'
QUOTE = PANEL + 'quote/'
LOGIN = '/auth/login/'
BLAZAR_DATE = '%Y-%m-%d %H:%M'


def minute(delta=datetime.timedelta()):
    """Naive UTC now, to the minute, plus ``delta``."""
    return (datetime.datetime.utcnow().replace(second=0, microsecond=0) +
            delta)


def hours(n):
    return datetime.timedelta(hours=n)


def text(element):
    """The text of ``element`` with its whitespace collapsed."""
    return ' '.join(element.text_content().split())


class DashboardTestCase(testtools.TestCase):
    """A project of the shared Keystone with a member (:attr:`user`), our
    service in the catalog, and Horizon set up."""

    def setUp(self):
        super().setUp()
        self.keystone = self.useFixture(keystone.KeystoneFixture())
        self.service = horizon.get_service()
        self.site = horizon.get_site()
        self.catalog = self.useFixture(
            horizon.Catalog(self.keystone, self.catalog_url()))
        self.project = self.keystone.create_project()
        self.user = self.keystone.create_user(self.project.id,
                                              roles=('member',))
        self._tokens = {}
        self._leases = {}
        self.addOnException(self._logs)

    def catalog_url(self):
        """What the catalog's reservation-quota endpoint is."""
        return self.service.url

    def _logs(self, exc_info):
        self.addDetail('serve-log', content.text_content(
            self.service.log_tail()))
        self.addDetail('horizon-log', content.text_content(
            self.site.log_tail()))

    def token(self, user=None):
        user = user or self.user
        if user.id not in self._tokens:
            self._tokens[user.id] = self.keystone.issue_token(
                user.name, user.password, self.project.id)
        return self._tokens[user.id]

    def give_credits(self, amount, start, end):
        """An allocation of ``amount`` credits to the project."""
        ledger = self.service.ledger()
        try:
            with ledger.transaction([self.project.id]) as txn:
                return txn.add_allocation(self.project.id,
                                          store.to_micro(amount), start, end)
        finally:
            ledger.dispose()

    def create_lease(self, name, start, end, hosts=1):
        """The lease as blazar-manager asks for it (POST
        /v1/check-create with the service role): recorded and charged by
        the service. Returns its ID."""
        if not hasattr(self, '_blazar'):
            self._blazar = self.keystone.create_user(self.project.id,
                                                     roles=('service',))
        lease_id = 'lease-%s' % keystone.unique_name(name)
        body = {'context': {'project_id': self.project.id,
                            'user_id': self.user.id},
                'lease': builders.lease(
                    start.strftime(BLAZAR_DATE), end.strftime(BLAZAR_DATE),
                    builders.hosts(*['%s-h%d' % (name, i)
                                     for i in range(hosts)]),
                    name=name, lease_id=lease_id)}
        self.blazar_call('check-create', body)
        self._leases[lease_id] = body
        return lease_id

    def end_lease(self, lease_id):
        """Blazar's on-end of the lease, now: what it did not use yet
        is refunded."""
        self.blazar_call('on-end', self._leases[lease_id])

    def blazar_call(self, kind, body):
        response = requests.post(
            self.service.url + '/v1/' + kind, json=body,
            headers={'X-Auth-Token': self.token(self._blazar)}, timeout=60)
        self.assertEqual(204, response.status_code, response.text)

    def api(self, method, path, expect=200, **kwargs):
        """The project API's answer to the user (its JSON)."""
        response = requests.request(
            method, '%s/v1/projects/%s/%s' % (self.service.url,
                                              self.project.id, path),
            headers={'X-Auth-Token': self.token()}, timeout=60, **kwargs)
        self.assertEqual(expect, response.status_code, response.text)
        return response.json()

    def login(self):
        """A Django test client logged in through openstack_auth's login
        form, as the user, on the project."""
        # Imported here, once Horizon is set up: importing Django's test
        # module makes django.conf's lazy settings object, which raises
        # when anything in the process inspects it unconfigured (as
        # oslo.middleware's detailed healthcheck does, walking gc's
        # objects), in every test process that only lists these tests.
        from django import test as django_test
        client = django_test.Client()
        response = client.get(LOGIN)
        self.assertEqual(200, response.status_code)
        response = client.post(LOGIN, {
            'region': 'default', 'username': self.user.name,
            'password': self.user.password, 'next': PANEL})
        self.assertEqual(302, response.status_code,
                         response.content.decode()[-2000:])
        self.assertEqual(PANEL, response['Location'])
        return client

    def page(self, client, path, data=None):
        """GET (or POST ``data`` to) ``path``: the parsed page (200)."""
        if data is None:
            response = client.get(path)
        else:
            response = client.post(path, data)
        self.assertEqual(200, response.status_code,
                         response.content.decode()[-3000:])
        self.assertNotIn(b'Traceback', response.content)
        return html.fromstring(response.content.decode())
