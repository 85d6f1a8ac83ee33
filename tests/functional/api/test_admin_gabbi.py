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
"""The account admin API ("Multi-Tenant Accounting in OpenStack") scenarios of
gabbits_admin/.

The admin app is our real WSGI stack, reached in-process through
wsgi-intercept; it reads and moves consumers in a real Placement (the
embedded openstack-placement, intercepted too) and keeps accounts in a
SQLite ledger. :class:`AccountsFixture` seeds one compute node and the
consumers the YAML names through ``$ENVIRON``.
"""

import os
import shutil
import tempfile
import uuid

from gabbi import driver
from gabbi import fixture
from wsgi_intercept import interceptor

from placement_quota.accounts import service
from placement_quota.api.admin import app as admin
from placement_quota import conf as pq_conf
from placement_quota.placement import client as placement_client
from placement_quota.placement import embedded
from placement_quota import services as services_mod

TESTS_DIR = os.path.join(os.path.dirname(__file__), 'gabbits_admin')
#: Seconds a deleted account answers 410 in these scenarios.
RECOVERY_PERIOD = 2
_STATE = {}


def seed_consumer(client, provider, project_id, resources, user_id='u'):
    """A consumer of ``project_id`` with ``resources`` on ``provider``."""
    consumer = str(uuid.uuid4())
    client.put('/allocations/%s' % consumer, {
        'allocations': {provider: {'resources': resources}},
        'project_id': project_id, 'user_id': user_id,
        'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    return consumer


def seed_provider(client, name, inventories):
    provider = str(uuid.uuid4())
    client.post('/resource_providers', {'name': name, 'uuid': provider})
    client.put('/resource_providers/%s/inventories' % provider, {
        'resource_provider_generation': 0,
        'inventories': {rc: {'total': total}
                        for rc, total in inventories.items()}})
    return provider


class AccountsFixture(fixture.GabbiFixture):
    """A ledger, a Placement with consumers, and the admin app's conf."""

    def start_fixture(self):
        self.tempdir = tempfile.mkdtemp(prefix='pq-admin-gabbi-')
        app, _ = _placement_app()
        endpoint = 'http://placement-%s/placement' % uuid.uuid4().hex
        self.intercept = interceptor.RequestsInterceptor(lambda: app,
                                                         url=endpoint)
        self.intercept.install_intercept()
        conf = pq_conf.new_config([], config_files=[])
        conf.set_override('connection', 'sqlite:///%s/ledger.sqlite'
                          % self.tempdir, 'ledger')
        conf.set_override('recovery_period', RECOVERY_PERIOD, 'accounts')
        client = placement_client.PlacementClient.from_endpoint(
            endpoint, embedded.NOAUTH_HEADERS)
        run = uuid.uuid4().hex[:8]
        # Project IDs unique to this run: the Placement is shared by the
        # test process.
        os.environ['RUN'] = run
        node = seed_provider(client, 'cn-gabbi-%s' % run,
                             {'VCPU': 64, 'MEMORY_MB': 131072})
        os.environ['CONSUMER_A'] = seed_consumer(
            client, node, 'alice-%s' % run, {'VCPU': 4, 'MEMORY_MB': 4096})
        os.environ['CONSUMER_B'] = seed_consumer(
            client, node, 'alice-%s' % run, {'VCPU': 2, 'MEMORY_MB': 2048})
        os.environ['CONSUMER_OTHER'] = seed_consumer(
            client, node, 'carol-%s' % run, {'VCPU': 1})
        services = services_mod.Services(conf, placement=client)
        accounts = service.Accounts(
            services.ledger, client, services.limits_source,
            recovery_period=RECOVERY_PERIOD)
        _STATE['conf'] = conf
        _STATE['services'] = services
        _STATE['accounts'] = accounts
        _STATE['client'] = client
        _STATE['node'] = node

    def stop_fixture(self):
        self.intercept.uninstall_intercept()
        _STATE['services'].close()
        shutil.rmtree(self.tempdir, ignore_errors=True)


def _placement_app():
    from tests.fixtures import placement as placement_fixtures
    return placement_fixtures._get_in_process()


def make_admin_app():
    """The admin app of the running fixture (gabbi asks for the app before
    the fixtures start, so it is built at the first request)."""
    def app(environ, start_response):
        built = _STATE.get('app')
        if built is None or built[0] is not _STATE['accounts']:
            built = _STATE['app'] = (_STATE['accounts'], admin.make_admin_app(
                _STATE['conf'], accounts=_STATE['accounts']))
        return built[1](environ, start_response)
    return app


def load_tests(loader, tests, pattern):
    return driver.build_tests(TESTS_DIR, loader, host=None,
                              intercept=make_admin_app,
                              fixture_module=__import__(__name__,
                                                        fromlist=['x']),
                              test_loader_name=__name__)
