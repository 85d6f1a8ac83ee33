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
"""Our enforcement service over HTTP with a SQLite ledger and a real
Placement: the base of the policy tests."""

import json
import os
import uuid

import fixtures
import requests
import testtools

from placement_quota import conf as pq_conf
from placement_quota import filters as filters_mod
from placement_quota.filters import chain as chain_mod
from placement_quota.placement import client as placement_client
from placement_quota.placement import embedded
from placement_quota import services as services_mod
from tests.builders import day  # noqa: F401
from tests.builders import floatingips  # noqa: F401
from tests.builders import hosts  # noqa: F401
from tests.builders import instances  # noqa: F401
from tests.builders import lease  # noqa: F401
from tests.builders import network  # noqa: F401
from tests.builders import NOW
from tests.fixtures import enforcement as service_fixture
from tests.fixtures import placement as placement_fixtures
from tests import ledger_helpers


class PolicyTestCase(ledger_helpers.LedgerHelpers,
                     ledger_helpers.PlacementHelpers, testtools.TestCase):
    """Subclasses set ``filters`` and ``options`` ({(group, name): value})
    and call the service through :meth:`create`, :meth:`update` and
    :meth:`end`; the ledger and Placement helpers are those of
    :mod:`tests.ledger_helpers`."""

    filters = []
    options = {}
    placement = True

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.project = 'project-%s' % uuid.uuid4().hex[:8]
        lines = ['[ledger]', 'connection = sqlite:///%s' % os.path.join(
            self.tmp, 'ledger.sqlite')]
        if self.placement:
            server = self.useFixture(placement_fixtures.PlacementServer())
            self.placement_client = \
                placement_client.PlacementClient.from_endpoint(
                    server.endpoint, embedded.NOAUTH_HEADERS)
            lines += ['[placement]', 'auth_type = admin_token',
                      'endpoint = %s' % server.endpoint, 'token = admin']
        else:
            lines += ['count_host_resources = false']
        path = os.path.join(self.tmp, 'placement-quota.conf')
        with open(path, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        self.conf = pq_conf.new_config([], config_files=[path])
        chain_mod.register_filter_opts(self.conf, filters_mod.all_filters)
        self.conf.set_override('enabled_filters', self.filters,
                               'enforcement')
        for (group, name), value in self.options.items():
            self.conf.set_override(name, value, group)
        self.services = services_mod.Services(self.conf)
        self.addCleanup(self.services.close)
        self.now = NOW
        self.ledger = self.services.ledger
        self.ledger.clock = lambda: self.now
        self.service = self.useFixture(
            service_fixture.EnforcementService(self.conf,
                                               services=self.services))

    # --- calls ----------------------------------------------------------

    def call(self, kind, body, project=None):
        body = dict(body, context={'project_id': project or self.project,
                                   'user_id': 'u'})
        response = requests.post(self.service.url + '/v1/' + kind,
                                 data=json.dumps(body), timeout=30)
        if response.status_code == 204:
            return 204, None
        return response.status_code, response.json()

    def create(self, lease_body, project=None):
        return self.call('check-create', {'lease': lease_body}, project)

    def update(self, current, new, project=None):
        return self.call('check-update', {'current_lease': current,
                                          'lease': new}, project)

    def end(self, lease_body, project=None):
        return self.call('on-end', {'lease': lease_body}, project)

    # --- assertions -----------------------------------------------------

    def assertAllowed(self, answer):
        self.assertEqual((204, None), answer)

    def assertDenied(self, answer, *fragments):
        status, body = answer
        self.assertEqual(403, status, body)
        for fragment in fragments:
            self.assertIn(fragment, body['message'])
        return body['message']
