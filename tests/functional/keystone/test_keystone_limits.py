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
"""The Keystone limits source against the real Keystone fixture.

Keystone runs ``[unified_limit] enforcement_model = strict_two_level``.
Every test makes its own service of type ``reservation`` and passes its ID,
so that tests sharing the Keystone never read each other's limits.
"""

import json

import fixtures
from openstack import connection
import testtools

from placement_quota import conf as pq_conf
from placement_quota.identity import limits as identity_limits
from placement_quota import limits
from placement_quota.limits import errors
from placement_quota.limits import sources
from placement_quota.limits import tree as tree_mod
from placement_quota import services
from tests.fixtures import keystone
from tests.functional.cmd import test_cli

KEYSTONE = 'keystone'


class KeystoneLimitsTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.keystone = self.useFixture(keystone.KeystoneFixture())
        self.identity = self.keystone.admin_conn.identity
        self.service = self.create_service()

    def create_service(self, service_type='reservation'):
        service = self.identity.create_service(
            name=keystone.unique_name('pq-blazar'), type=service_type)
        self.addCleanup(self.identity.delete_service, service.id,
                        ignore_missing=True)
        return service

    def register(self, resource, default, service=None, region_id=None):
        registered = self.identity.create_registered_limit(
            service_id=(service or self.service).id, resource_name=resource,
            default_limit=default, region_id=region_id)
        self.addCleanup(self.identity.delete_registered_limit, registered.id,
                        ignore_missing=True)
        return registered

    def limit(self, project, resource, value, service=None, region_id=None):
        created = self.identity.create_limit(
            service_id=(service or self.service).id, project_id=project.id,
            resource_name=resource, resource_limit=value,
            region_id=region_id)
        self.addCleanup(self.identity.delete_limit, created.id,
                        ignore_missing=True)
        return created

    def source(self, **kwargs):
        kwargs.setdefault('service_id', self.service.id)
        return identity_limits.KeystoneLimitSource(self.keystone.admin_conn,
                                                   **kwargs)

    def create_region(self):
        region = self.identity.create_region(
            id=keystone.unique_name('pq-region'))
        self.addCleanup(self.identity.delete_region, region.id,
                        ignore_missing=True)
        return region


class TestKeystoneLimitSource(KeystoneLimitsTestCase):

    def test_model_read_back_is_strict_two_level(self):
        self.assertEqual(tree_mod.STRICT_TWO_LEVEL, self.source().load().model)

    def test_top_level_project_is_a_root(self):
        root = self.keystone.create_project()
        data = self.source().load()
        self.assertIsNone(data.projects[root.id].parent_id)

    def test_child_has_its_top_level_project_as_parent(self):
        root = self.keystone.create_project()
        child = self.keystone.create_project(parent_id=root.id)
        data = self.source().load()
        self.assertEqual(root.id, data.projects[child.id].parent_id)

    def test_domains_are_not_projects_of_the_tree(self):
        data = self.source().load()
        self.assertNotIn('default', data.projects)

    def test_registered_limits_are_read_back(self):
        self.register('cores', 10)
        self.register('ram_mb', 2048)
        self.assertEqual({'cores': 10, 'ram_mb': 2048},
                         self.source().load().registered_limits)

    def test_project_limits_are_read_back(self):
        # Keystone refuses a top-level project's limit above the registered
        # default (or its domain's limit): 100 lets the root have 20.
        self.register('cores', 100)
        self.register('ram_mb', 2048)
        root = self.keystone.create_project()
        child = self.keystone.create_project(parent_id=root.id)
        self.limit(root, 'cores', 20)
        self.limit(child, 'ram_mb', 1024)
        data = self.source().load()
        self.assertEqual({'cores': 20}, data.projects[root.id].limits)
        self.assertEqual({'ram_mb': 1024}, data.projects[child.id].limits)

    def test_project_without_limits_has_none_of_its_own(self):
        self.register('cores', 10)
        project = self.keystone.create_project()
        self.assertEqual({}, self.source().load().projects[project.id].limits)

    def test_limits_of_another_service_are_not_read(self):
        other = self.create_service()
        self.register('cores', 10)
        self.register('cores', 99, service=other)
        self.register('floating_ips', 3, service=other)
        project = self.keystone.create_project()
        self.limit(project, 'cores', 50, service=other)
        data = self.source().load()
        self.assertEqual({'cores': 10}, data.registered_limits)
        self.assertEqual({}, data.projects[project.id].limits)

    def test_without_a_region_only_limits_without_a_region_are_read(self):
        region = self.create_region()
        self.register('cores', 10)
        self.register('cores', 7, region_id=region.id)
        self.register('ram_mb', 512, region_id=region.id)
        self.assertEqual({'cores': 10},
                         self.source().load().registered_limits)

    def test_a_regions_limits_win_over_limits_without_a_region(self):
        region = self.create_region()
        self.register('cores', 10)
        self.register('ram_mb', 2048)
        self.register('cores', 7, region_id=region.id)
        project = self.keystone.create_project()
        self.limit(project, 'cores', 9)
        self.limit(project, 'cores', 4, region_id=region.id)
        data = self.source(region_id=region.id).load()
        self.assertEqual({'cores': 7, 'ram_mb': 2048}, data.registered_limits)
        self.assertEqual({'cores': 4}, data.projects[project.id].limits)

    def test_limits_of_another_region_are_not_read(self):
        region, other = self.create_region(), self.create_region()
        self.register('cores', 10)
        self.register('cores', 3, region_id=other.id)
        self.assertEqual({'cores': 10}, self.source(
            region_id=region.id).load().registered_limits)

    def test_domain_level_limits_are_ignored(self):
        self.register('cores', 10)
        project = self.keystone.create_project()
        domain_limit = self.identity.create_limit(
            service_id=self.service.id, domain_id='default',
            resource_name='cores', resource_limit=100)
        self.addCleanup(self.identity.delete_limit, domain_limit.id,
                        ignore_missing=True)
        data = self.source().load()
        self.assertEqual({}, data.projects[project.id].limits)
        self.assertEqual({'cores': 10}, data.registered_limits)

    def test_refresh_returns_a_limit_updated_in_keystone(self):
        self.register('cores', 10)
        project = self.keystone.create_project()
        created = self.limit(project, 'cores', 8)
        source = self.source()
        self.assertEqual({'cores': 8},
                         source.refresh([project.id]).projects[
                             project.id].limits)
        self.identity.update_limit(created, resource_limit=3)
        self.assertEqual({'cores': 3},
                         source.refresh([project.id]).projects[
                             project.id].limits)

    def test_refresh_returns_a_registered_limit_updated_in_keystone(self):
        registered = self.register('cores', 10)
        source = self.source()
        source.refresh([])
        self.identity.update_registered_limit(registered, default_limit=4)
        self.assertEqual({'cores': 4}, source.refresh([]).registered_limits)

    def test_refresh_holds_only_the_projects_asked_for(self):
        self.register('cores', 10)
        asked, other = (self.keystone.create_project(),
                        self.keystone.create_project())
        self.limit(asked, 'cores', 5)
        self.limit(other, 'cores', 6)
        data = self.source().refresh([asked.id])
        self.assertEqual({asked.id: {'cores': 5}},
                         {p: v.limits for p, v in data.projects.items()})

    def test_refresh_keeps_the_parent_seen_by_load(self):
        root = self.keystone.create_project()
        child = self.keystone.create_project(parent_id=root.id)
        source = self.source()
        source.load()
        self.assertEqual(root.id,
                         source.refresh([child.id]).projects[
                             child.id].parent_id)

    def test_project_reads_parent_and_limits(self):
        self.register('cores', 10)
        root = self.keystone.create_project()
        child = self.keystone.create_project(parent_id=root.id)
        self.limit(child, 'cores', 6)
        found = self.source().project(child.id)
        self.assertEqual((child.id, root.id, child.name, {'cores': 6}),
                         (found.id, found.parent_id, found.name,
                          found.limits))

    def test_project_of_an_unknown_id_is_none(self):
        self.assertIsNone(self.source().project(
            keystone.unique_name('pq-missing')))

    def test_wrong_credentials_raise_source_error(self):
        conn = connection.Connection(
            auth_url=self.keystone.auth_url,
            username=self.keystone.admin_username,
            password='not-the-password',
            project_name=self.keystone.admin_project_name,
            user_domain_name=self.keystone.user_domain_name,
            project_domain_name=self.keystone.project_domain_name)
        self.addCleanup(conn.close)
        source = identity_limits.KeystoneLimitSource(
            conn, service_id=self.service.id)
        error = self.assertRaises(sources.SourceError, source.load)
        self.assertIn('credentials were refused (HTTP 401)', str(error))

    def test_a_member_without_admin_role_gets_source_error(self):
        project = self.keystone.create_project()
        user = self.keystone.create_user(project.id, roles=('member',))
        conn = connection.Connection(
            auth_url=self.keystone.auth_url, username=user.name,
            password=user.password, project_id=project.id,
            user_domain_name=self.keystone.user_domain_name,
            project_domain_name=self.keystone.project_domain_name)
        self.addCleanup(conn.close)
        source = identity_limits.KeystoneLimitSource(
            conn, service_id=self.service.id)
        error = self.assertRaises(sources.SourceError, source.load)
        self.assertIn('Cannot read the projects', str(error))
        self.assertIn('HTTP 403', str(error))


class TestServiceResolution(KeystoneLimitsTestCase):
    """Without service_id, the one service of service_type. Each test uses
    a type of its own: tests share Keystone's 'reservation' services."""

    def test_the_single_service_of_the_type_is_used(self):
        service_type = keystone.unique_name('pq-type')
        service = self.create_service(service_type)
        self.register('cores', 12, service=service)
        source = identity_limits.KeystoneLimitSource(
            self.keystone.admin_conn, service_type=service_type)
        self.assertEqual({'cores': 12}, source.load().registered_limits)

    def test_no_service_of_the_type_names_the_type(self):
        service_type = keystone.unique_name('pq-type')
        source = identity_limits.KeystoneLimitSource(
            self.keystone.admin_conn, service_type=service_type)
        error = self.assertRaises(sources.SourceError, source.load)
        self.assertIn('no service of type %r' % service_type, str(error))

    def test_several_services_of_the_type_are_named(self):
        service_type = keystone.unique_name('pq-type')
        first = self.create_service(service_type)
        second = self.create_service(service_type)
        source = identity_limits.KeystoneLimitSource(
            self.keystone.admin_conn, service_type=service_type)
        error = self.assertRaises(sources.SourceError, source.load)
        self.assertIn('2 services of type %r' % service_type, str(error))
        self.assertIn(first.id, str(error))
        self.assertIn(second.id, str(error))

    def test_from_conf_reads_limits_and_keystone_options(self):
        self.register('cores', 11)
        conf = pq_conf.new_config(config_files=[])
        self.keystone.set_admin_options(conf, KEYSTONE)
        conf.set_override('source', 'keystone', 'limits')
        conf.set_override('service_id', self.service.id, 'limits')
        source = services.limits_source(conf)
        self.assertEqual({'cores': 11}, source.load().registered_limits)


class TestPlantedViolation(KeystoneLimitsTestCase):
    """Keystone's strict_two_level validation compares a project's limit with
    its domain's limit or the registered default, not with its parent
    project's: with a default of 10 it accepts root A at 5 and its child B at
    8, which Keystone's "Strict Two-Level Limits Enforcement Model" forbids."""

    def setUp(self):
        super().setUp()
        self.register('cores', 10)
        self.root = self.keystone.create_project()
        self.child = self.keystone.create_project(parent_id=self.root.id)
        self.limit(self.root, 'cores', 5)
        self.limit(self.child, 'cores', 8)

    def test_tree_check_reports_the_child_limit_over_its_parents(self):
        found = [v for v in tree_mod.check(self.source().load())
                 if getattr(v, 'project_id', None) in (self.root.id,
                                                       self.child.id)]
        self.assertEqual(1, len(found), found)
        self.assertIsInstance(found[0], errors.ChildLimitExceedsParent)
        self.assertEqual(
            (self.child.id, self.root.id, 'cores', 5, 8),
            (found[0].project_id, found[0].parent_id, found[0].resource,
             found[0].limit, found[0].value))

    def test_the_tree_check_command_finds_it_and_exits_one(self):
        config = self.useFixture(fixtures.TempDir()).join('pq.conf')
        with open(config, 'w') as f:
            f.write(
                '[limits]\nsource = keystone\nservice_id = %s\n'
                '[keystone]\nauth_type = password\nauth_url = %s\n'
                'username = %s\npassword = %s\nproject_name = %s\n'
                'user_domain_name = Default\nproject_domain_name = Default\n'
                % (self.service.id, self.keystone.auth_url,
                   self.keystone.admin_username,
                   self.keystone.admin_password,
                   self.keystone.admin_project_name))
        result = test_cli.command('tree', 'check', '-f', 'json',
                                  config=config)
        self.assertEqual(1, result.returncode, result.stderr)
        rows = [r for r in json.loads(result.stdout)
                if r['Project'] in (self.root.id, self.child.id)]
        self.assertEqual(
            [('child-limit', self.child.id, self.root.id, 'cores', 5, 8)],
            [(r['Rule'], r['Project'], r['Parent'], r['Resource'],
              r['Limit'], r['Value']) for r in rows])

    def test_enforcer_caps_the_child_at_its_roots_limit(self):
        enforcer = limits.Enforcer(self.source())
        error = self.assertRaises(limits.ProjectOverLimit, enforcer.enforce,
                                  self.child.id, {'cores': 6})
        self.assertEqual(5, error.over_limits[0].limit)


class TestEnforcerOverKeystone(KeystoneLimitsTestCase):

    def setUp(self):
        super().setUp()
        self.register('cores', 10)
        self.root = self.keystone.create_project()
        self.root_limit = self.limit(self.root, 'cores', 5)

    def test_a_claim_over_the_roots_limit_is_refused(self):
        enforcer = limits.Enforcer(self.source())
        error = self.assertRaises(limits.ProjectOverLimit, enforcer.enforce,
                                  self.root.id, {'cores': 6})
        self.assertEqual(('cores', 5),
                         (error.over_limits[0].resource,
                          error.over_limits[0].limit))

    def test_a_claim_within_the_roots_limit_is_accepted(self):
        enforcer = limits.Enforcer(self.source())
        self.assertIsNone(enforcer.enforce(self.root.id, {'cores': 5}))

    def test_a_lowered_limit_is_seen_at_the_next_check(self):
        enforcer = limits.Enforcer(self.source())
        enforcer.enforce(self.root.id, {'cores': 4})
        self.identity.update_limit(self.root_limit, resource_limit=3)
        error = self.assertRaises(limits.ProjectOverLimit, enforcer.enforce,
                                  self.root.id, {'cores': 4})
        self.assertEqual(3, error.over_limits[0].limit)

    def test_a_project_created_after_the_load_is_enforced(self):
        enforcer = limits.Enforcer(self.source())
        child = self.keystone.create_project(parent_id=self.root.id)
        error = self.assertRaises(limits.ProjectOverLimit, enforcer.enforce,
                                  child.id, {'cores': 6})
        self.assertEqual(5, error.over_limits[0].limit)
