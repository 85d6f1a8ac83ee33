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
"""``[placement_quota_scheduler]`` and the aggregates read outside Nova."""

import json
import os
import tempfile

from oslo_config import cfg
import testtools

from placement_quota.scheduler import aggregates
from placement_quota.scheduler import decision as dec
from placement_quota.scheduler import settings as settings_mod
from placement_quota.conf import scheduler as scheduler_conf


def conf_with(**overrides):
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    conf([])
    for name, value in overrides.items():
        conf.set_override(name, value, scheduler_conf.GROUP.name)
    return conf


class TestSchedulerOptions(testtools.TestCase):

    def test_defaults_are_the_decision_defaults(self):
        self.assertEqual(dec.DEFAULT_SETTINGS,
                         settings_mod.settings_from_conf(conf_with()))

    def test_every_settings_field_is_an_option(self):
        import dataclasses
        self.assertEqual(
            sorted(f.name for f in dataclasses.fields(dec.Settings)),
            sorted(scheduler_conf.SETTINGS_FIELDS))

    def test_registering_twice_is_harmless(self):
        conf = conf_with(freepool_name='spare')
        scheduler_conf.register_opts(conf)
        self.assertEqual('spare',
                         settings_mod.settings_from_conf(conf)
                         .freepool_name)

    def test_empty_forbidden_prefix_is_refused(self):
        self.assertRaises(ValueError, settings_mod.settings_from_conf,
                          conf_with(forbidden_prefixes=['']))

    def test_empty_az_prefix_is_dropped(self):
        settings = settings_mod.settings_from_conf(
            conf_with(az_prefixes=['', 'blazar_']))
        self.assertEqual(('blazar_',), settings.az_prefixes)

    def test_every_option_has_help(self):
        for opt in scheduler_conf.opts:
            self.assertTrue(opt.help, opt.dest)


class TestAggregatesFile(testtools.TestCase):

    def load(self, data):
        fd, path = tempfile.mkstemp(suffix='.json')
        self.addCleanup(os.remove, path)
        with os.fdopen(fd, 'w') as f:
            f.write(data if isinstance(data, str) else json.dumps(data))
        return aggregates.from_file(path)

    def test_nova_api_answer_with_availability_zone_outside_metadata(self):
        agg, = self.load({'aggregates': [{
            'uuid': 'u', 'name': 'r', 'availability_zone': 'blazar_r',
            'metadata': {'blazar:owner': 'p'}, 'hosts': ['h']}]})
        self.assertEqual({'availability_zone': 'blazar_r',
                          'blazar:owner': 'p'}, dict(agg.metadata))
        self.assertEqual(('h',), agg.hosts)

    def test_bare_list_is_accepted(self):
        agg, = self.load([{'uuid': 'u', 'name': 'freepool'}])
        self.assertEqual('freepool', agg.name)

    def test_not_json_is_an_error_naming_the_file(self):
        exc = self.assertRaises(aggregates.AggregatesError, self.load, '{')
        self.assertIn('is not JSON', str(exc))

    def test_metadata_not_an_object_is_an_error(self):
        exc = self.assertRaises(aggregates.AggregatesError, self.load,
                                [{'name': 'x', 'metadata': []}])
        self.assertIn("aggregate #0 ('x'): metadata is not an object",
                      str(exc))
