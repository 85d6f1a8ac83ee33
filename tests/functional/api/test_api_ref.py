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
"""The API reference (``api-ref/source``) cannot go stale in silence: the
routes it documents are exactly those both apps answer, and every sample
it shows is JSON."""

import glob
import json
import os
import re

import fixtures
import testtools
import webob

from placement_quota.accounts import service
from placement_quota.api.admin import app as admin
from placement_quota.api.enforcement import app as api_app
from placement_quota.api.project import app as project_app
from placement_quota import conf as pq_conf
from placement_quota import filters
from placement_quota.filters import chain as chain_mod
from placement_quota.ledger import store

SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))), 'api-ref', 'source')
METHODS = ('GET', 'HEAD', 'PUT', 'POST', 'DELETE', 'PATCH')
# The paths the enforcement app serves besides its routers' tables.
ENFORCEMENT_MOUNTS = ['/healthcheck', '/metrics']
# Every path shape the admin router (code, not a table) knows, with a
# value for each parameter.
ADMIN_PATHS = ['/v1', '/v1/{account_id}', '/v1/{account_id}/action/recover',
               '/v1/{account_id}/action/move',
               '/v1/{account_id}/consumers/{consumer_uuid}',
               '/v1/{account_id}/consumers/{consumer_uuid}/action/move',
               '/v1/{account_id}/leases/{lease_id}',
               '/v1/{account_id}/leases/{lease_id}/action/move',
               '/v1/{account_id}/report']
VALUES = {'account_id': 'acct', 'lease_id': 'lease-1',
          'consumer_uuid': '4f3c2f36-0d3e-4a5c-9f7e-8f1a2b3c4d5e'}


def enforcement_paths(chain):
    """The paths of the enforcement app's route tables and mounts; each
    path without the ``/v1`` prefix must be the alias of one with it (the
    reference states the aliases once, in prose)."""
    routed = (set(api_app.public_routes()) |
              set(api_app.enforcement_routes(chain, 0)))
    aliases = {p for p in routed if p != '/' and not p.startswith('/v1')}
    unpaired = {p for p in aliases if '/v1' + p not in routed}
    if unpaired:
        raise AssertionError('served without a /v1 twin: %s' % unpaired)
    return sorted(routed - aliases) + ENFORCEMENT_MOUNTS


def documented(name):
    """``{(method, path)}`` of the ``rest_method`` directives of
    ``name``."""
    with open(os.path.join(SOURCE, name)) as f:
        return set(re.findall(r'^\.\. rest_method:: (\w+) (\S+)$', f.read(),
                              re.M))


def answered(app, paths, headers):
    """``{(method, path)}`` that ``app`` routes: anything but a 405 and
    the routers' own 404 (``No such resource``; a 404 about an account
    that does not exist is a routed request)."""
    found = set()
    for path in paths:
        concrete = path.format(**VALUES)
        methods = METHODS
        if path == '/healthcheck':
            # oslo.middleware's app answers every method alike.
            methods = ('GET', 'HEAD')
        for method in methods:
            request = webob.Request.blank(concrete, method=method,
                                          headers=headers)
            response = request.get_response(app)
            if response.status_int == 405:
                continue
            if response.status_int == 404:
                if method == 'HEAD':
                    # No body to tell: routed where GET is.
                    if ('GET', path) not in found:
                        continue
                elif response.json.get('message', '').startswith(
                        'No such resource'):
                    continue
            found.add((method, path))
    return found


class TestAPIReference(testtools.TestCase):

    def setUp(self):
        super().setUp()
        directory = self.useFixture(fixtures.TempDir()).path
        self.conf = pq_conf.new_config([], config_files=[])
        chain_mod.register_filter_opts(self.conf, filters.all_filters)
        self.conf.set_override('connection', 'sqlite:///%s/ledger.sqlite'
                               % directory, 'ledger')
        self.conf.set_override('enabled_filters',
                               ['MaximumReservationLengthFilter'],
                               'enforcement')

    def test_enforcement_routes_are_exactly_the_documented_ones(self):
        chain = chain_mod.FilterChain(self.conf)
        app = api_app.make_app(self.conf, chain)
        self.assertEqual(documented('enforcement.inc'),
                         answered(app, enforcement_paths(chain), {}))

    def test_project_routes_are_exactly_the_documented_ones(self):
        routes = {(method, '/v1/projects/{project_id}/' + '/'.join(
            '{lease_id}' if part == '*' else part for part in key))
            for key, methods in project_app.ROUTES.items()
            for method in methods}
        self.assertEqual(documented('project.inc'), routes)

    def test_the_paths_without_v1_are_stated_as_aliases(self):
        with open(os.path.join(SOURCE, 'enforcement.inc')) as f:
            self.assertIn('served without its ``/v1``', ' '.join(
                f.read().split()))

    def test_admin_routes_are_exactly_the_documented_ones(self):
        ledger = store.Ledger.from_conf(self.conf)
        self.addCleanup(ledger.dispose)
        app = admin.make_admin_app(self.conf,
                                   accounts=service.Accounts(ledger))
        self.assertEqual(documented('admin.inc'), answered(
            app, ADMIN_PATHS, {'Host': 'localhost', 'X-Roles': 'admin'}))

    def test_denied_sample_is_the_answer_to_the_request_sample(self):
        # The sample's filter denies leases longer than a day; the
        # request sample's lease is two days long.
        self.conf.set_override('reservation_max_length', 86400,
                               'enforcement')
        app = api_app.make_app(self.conf, chain_mod.FilterChain(self.conf))
        with open(os.path.join(SOURCE, 'samples',
                               'check-create-req.json'), 'rb') as f:
            request = webob.Request.blank(
                '/v1/check-create', method='POST', body=f.read(),
                content_type='application/json')
        response = request.get_response(app)
        with open(os.path.join(SOURCE, 'samples',
                               'check-create-denied-resp.json')) as f:
            self.assertEqual((403, json.load(f)),
                             (response.status_int, response.json))

    def test_every_field_of_the_denied_sample_is_documented(self):
        with open(os.path.join(SOURCE, 'samples',
                               'check-create-denied-resp.json')) as f:
            fields = set(json.load(f))
        with open(os.path.join(SOURCE, 'enforcement.inc')) as f:
            text = f.read()
        section = text[text.index('Response (denied)'):
                       text.index('Response (invalid)')]
        self.assertEqual(fields, set(re.findall(
            r'^   - (\w+): \w+$', section, re.M)))
        with open(os.path.join(SOURCE, 'parameters.yaml')) as f:
            defined = set(re.findall(r'^(\w+):$', f.read(), re.M))
        self.assertLessEqual(fields, defined)

    def test_every_sample_is_json(self):
        samples = glob.glob(os.path.join(SOURCE, 'samples', '*.json'))
        self.assertGreater(len(samples), 10)
        for path in samples:
            with open(path) as f:
                json.load(f)

    def test_every_included_sample_exists(self):
        for name in ('enforcement.inc', 'project.inc', 'admin.inc'):
            with open(os.path.join(SOURCE, name)) as f:
                for sample in re.findall(r'literalinclude:: (\S+)',
                                         f.read()):
                    self.assertTrue(os.path.exists(os.path.join(
                        SOURCE, sample)), sample)
