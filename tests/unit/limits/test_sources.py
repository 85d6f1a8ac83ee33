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
"""The embedded limits file, the caching source, and [limits] options."""

import os
import tempfile

import testtools

from placement_quota import conf as pq_conf
from placement_quota.limits import sources
from placement_quota.limits import tree as tree_mod
from placement_quota import services

SPEC_FILE = """\
model: strict-two-level
registered_limits: {cores: 10}
projects:
  A: {name: dept, limits: {cores: 20}}
  B: {parent: A}
  C:
    parent: A
usage:
  A: {cores: 4}
"""


class FileTestCase(testtools.TestCase):

    def write(self, text):
        fd, path = tempfile.mkstemp(suffix='.yaml')
        with os.fdopen(fd, 'w') as f:
            f.write(text)
        self.addCleanup(os.unlink, path)
        return path


class TestLimitsFile(FileTestCase):

    def test_the_file_gives_model_hierarchy_limits_and_usage(self):
        data = sources.read_file(self.write(SPEC_FILE))
        self.assertEqual(tree_mod.STRICT_TWO_LEVEL, data.model)
        self.assertEqual({'cores': 10}, data.registered_limits)
        self.assertEqual(('A', 'dept', {'cores': 20}),
                         (data.projects['B'].parent_id,
                          data.projects['A'].name,
                          data.projects['A'].limits))
        self.assertEqual({'A': {'cores': 4}}, data.usage)

    def test_json_is_read_too(self):
        data = sources.read_file(self.write(
            '{"projects": {"A": {}, "B": {"parent": "A"}}}'))
        self.assertEqual('A', data.projects['B'].parent_id)

    def test_an_empty_file_is_no_projects(self):
        self.assertEqual({}, sources.read_file(self.write('')).projects)

    def test_a_non_integer_limit_names_the_field_and_value(self):
        error = self.assertRaises(
            sources.SourceError, sources.read_file, self.write(
                'projects: {A: {limits: {cores: ten}}}'))
        self.assertIn('projects/A/limits/cores', str(error))
        self.assertIn("'ten'", str(error))

    def test_a_float_limit_is_refused(self):
        error = self.assertRaises(
            sources.SourceError, sources.read_file,
            self.write('registered_limits: {cores: 10.0}'))
        self.assertIn('registered_limits/cores', str(error))

    def test_a_numeric_project_id_is_named_among_other_errors(self):
        error = self.assertRaises(sources.SourceError, sources.read_file,
                                  self.write('projects: {1: {limits: {c: x}},'
                                             ' A: {limits: {c: y}}}'))
        self.assertIn("1 is not of type 'string'", str(error))

    def test_an_unknown_key_is_refused(self):
        error = self.assertRaises(sources.SourceError, sources.read_file,
                                  self.write('projets: {}'))
        self.assertIn('projets', str(error))

    def test_an_unknown_model_is_refused(self):
        self.assertRaises(sources.SourceError, sources.read_file,
                          self.write('model: deep'))

    def test_malformed_yaml_names_the_file(self):
        path = self.write('projects: {A: [')
        error = self.assertRaises(sources.SourceError, sources.read_file,
                                  path)
        self.assertIn(path, str(error))

    def test_a_missing_file_names_the_file(self):
        error = self.assertRaises(sources.SourceError, sources.read_file,
                                  '/nonexistent/limits.yaml')
        self.assertIn('/nonexistent/limits.yaml', str(error))

    def test_dump_round_trips_through_the_file_format(self):
        data = sources.read_file(self.write(SPEC_FILE))
        self.assertEqual(data, sources.data_from_dict(sources.dump(data)))


class TestEmbeddedSource(testtools.TestCase):

    def test_load_returns_a_copy(self):
        source = sources.EmbeddedSource(tree_mod.LimitData(
            projects={'A': tree_mod.Project('A')}))
        source.load().projects.clear()
        self.assertIn('A', source.load().projects)

    def test_refresh_holds_only_the_projects_asked_for(self):
        source = sources.EmbeddedSource(tree_mod.LimitData(
            projects={p: tree_mod.Project(p) for p in 'ABC'}))
        self.assertEqual(['B'], list(source.refresh(['B', 'Z']).projects))

    def test_an_unnamed_project_is_an_implicit_root(self):
        project = sources.EmbeddedSource().project('X')
        self.assertEqual(('X', None), (project.id, project.parent_id))

    def test_without_implicit_projects_an_unnamed_one_is_none(self):
        self.assertIsNone(sources.EmbeddedSource(
            implicit_projects=False).project('X'))


class TestCachingSource(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.now = 0.0
        self.loads = 0
        inner = sources.EmbeddedSource(tree_mod.LimitData(
            projects={'A': tree_mod.Project('A')}))
        original = inner.load

        def counting_load():
            self.loads += 1
            return original()
        inner.load = counting_load
        self.source = sources.CachingSource(inner, 30,
                                            clock=lambda: self.now)

    def test_a_second_load_within_the_ttl_is_served_from_cache(self):
        self.source.load()
        self.now = 29
        self.source.load()
        self.assertEqual(1, self.loads)

    def test_a_load_after_the_ttl_reads_the_source_again(self):
        self.source.load()
        self.now = 30
        self.source.load()
        self.assertEqual(2, self.loads)

    def test_a_ttl_of_zero_is_refused(self):
        self.assertRaises(ValueError, sources.CachingSource,
                          sources.EmbeddedSource(), 0)


def limits_conf(**overrides):
    """A configuration with these ``[limits]`` options."""
    conf = pq_conf.new_config(config_files=[])
    for name, value in overrides.items():
        conf.set_override(name, value, 'limits')
    return conf


class TestSourceFromConf(FileTestCase):

    conf = staticmethod(limits_conf)

    def test_the_default_is_embedded_with_the_accounts_and_no_cache(self):
        from placement_quota.accounts import source as accounts_source
        source = services.limits_source(self.conf())
        self.assertIsInstance(source, accounts_source.AccountsSource)
        self.assertIsInstance(source.base, sources.EmbeddedSource)

    def test_registered_limits_come_from_the_options(self):
        source = services.limits_source(
            self.conf(registered_limits={'cores': '10'}))
        self.assertEqual({'cores': 10}, source.load().registered_limits)

    def test_the_files_registered_limits_win_over_the_options(self):
        source = services.limits_source(self.conf(
            limits_file=self.write(SPEC_FILE),
            registered_limits={'cores': '3', 'ram_mb': '100'}))
        self.assertEqual({'cores': 10, 'ram_mb': 100},
                         source.load().registered_limits)

    def test_a_non_integer_registered_limit_names_resource_and_value(self):
        error = self.assertRaises(
            ValueError, services.limits_source,
            self.conf(registered_limits={'cores': 'many'}))
        self.assertIn('cores', str(error))
        self.assertIn("'many'", str(error))

    def test_a_registered_limit_below_minus_one_is_refused(self):
        self.assertRaises(ValueError, services.limits_source,
                          self.conf(registered_limits={'cores': '-2'}))

    def test_a_cache_ttl_wraps_the_source(self):
        source = services.limits_source(self.conf(cache_ttl=60))
        self.assertIsInstance(source, sources.CachingSource)


class TestEnforcerFromConf(testtools.TestCase):

    conf = staticmethod(limits_conf)

    def test_the_defaults_give_the_aggregate_path_with_verify(self):
        enforcer = services.enforcer(self.conf())
        self.assertEqual((True, True), (enforcer.aggregate, enforcer.verify))

    def test_naive_calculation_and_no_verify_are_honoured(self):
        enforcer = services.enforcer(
            self.conf(usage_calculation='naive', verify_claims=False),
            usage=lambda project_id, resources: {})
        self.assertEqual((False, False),
                         (enforcer.aggregate, enforcer.verify))

    def test_the_naive_calculation_without_usage_is_refused(self):
        self.assertRaises(ValueError, services.enforcer,
                          self.conf(usage_calculation='naive'))

    def test_the_unregistered_resource_limit_is_honoured(self):
        enforcer = services.enforcer(
            self.conf(unregistered_resource_limit=-1))
        self.assertIsNone(enforcer.enforce('anyone', {'gpus': 1000}))
