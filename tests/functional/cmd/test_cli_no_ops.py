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
"""No option silently does nothing: ``serve``, ``listen`` and ``check``
warn about an option set for a filter that is not enabled and about an
enabled filter that can never deny; ``--strict-config`` refuses to start;
the banner says what the chain enforces."""

import os

from tests.functional.cmd import test_cli
from tests import spec_examples as spec

#: max_leases_per_project = 1 without LeaseCountFilter: admits everything.
UNUSED = ('[enforcement]\nenabled_filters = MaximumReservationLengthFilter\n'
          'reservation_max_length = 86400\nmax_leases_per_project = 1\n')
UNUSED_WARNING = ('[enforcement] max_leases_per_project is set, but '
                  'LeaseCountFilter, the filter that reads it, is not in '
                  '[enforcement] enabled_filters')


class NoOpsTestCase(test_cli.CLITestCase):

    def setUp(self):
        super().setUp()
        self.ledger = 'sqlite:///%s' % os.path.join(self.dir, 'l.sqlite')

    def conf(self, text):
        return self.config('[ledger]\nconnection = %s\n%s'
                           % (self.ledger, text))

    def check(self, text, *global_args):
        lease = self.write('lease.json', spec.check_create())
        return test_cli.command(*(global_args + ('check', 'create', lease)),
                                config=self.conf(text))


class TestCheckSaysWhatDoesNothing(NoOpsTestCase):

    def test_an_option_whose_filter_is_not_enabled_is_warned(self):
        result = self.check(UNUSED)
        # Decided all the same: the lease is longer than a day.
        self.assertEqual(1, result.returncode, result.stderr)
        self.assertIn(UNUSED_WARNING, result.stderr)

    def test_strict_config_refuses_an_option_whose_filter_is_not_enabled(
            self):
        result = self.check(UNUSED, '--strict-config')
        self.assertEqual((2, ''), (result.returncode, result.stdout))
        self.assertIn('configuration that does nothing (--strict-config)',
                      result.stderr)

    def test_an_external_filter_without_endpoint_is_warned(self):
        result = self.check('[enforcement]\nenabled_filters = '
                            'ExternalServiceFilter\n')
        self.assertIn('Enforcement filter ExternalServiceFilter is enabled '
                      'but can never deny a lease: it has no service to '
                      'ask', result.stderr)

    def test_a_chain_that_can_deny_starts_without_a_warning(self):
        result = self.check('[enforcement]\nenabled_filters = '
                            'MaximumReservationLengthFilter\n'
                            'reservation_max_length = 86400\n',
                            '--strict-config')
        self.assertEqual((1, ''), (result.returncode, result.stderr))


class TestServeSaysWhatItEnforces(test_cli.ServeProcesses, NoOpsTestCase):

    def test_the_default_chain_says_nothing_is_enforced(self):
        self.start(config=self.conf(''))
        self.assertIn('filters: MaximumReservationLengthFilter (inert), '
                      'ExternalServiceFilter (inert) -- nothing is enforced;',
                      self.banner)

    def test_an_acting_filter_is_named_without_a_mark(self):
        self.start(config=self.conf(UNUSED))
        self.assertIn('filters: MaximumReservationLengthFilter;',
                      self.banner)

    def test_strict_config_refuses_to_serve_an_inert_chain(self):
        result = test_cli.command('--strict-config', 'serve', '--port', '0',
                                  config=self.conf(''))
        self.assertEqual(2, result.returncode, result.stdout)
        self.assertIn('ExternalServiceFilter is enabled but can never deny',
                      result.stderr)


class TestListenSaysWhatDoesNothing(NoOpsTestCase):

    def test_strict_config_refuses_an_option_whose_filter_is_not_enabled(
            self):
        # Refused before the broker is reached: none is configured.
        result = test_cli.command('--strict-config', 'listen',
                                  config=self.conf(UNUSED))
        self.assertEqual(2, result.returncode, result.stderr)
        self.assertIn(UNUSED_WARNING, result.stderr)
