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
"""Filters called directly, on a SQLite-file ledger in a temporary
directory: no HTTP service, and no Placement unless a test gives one."""

import os

import fixtures
import testtools

from placement_quota import conf as pq_conf
from placement_quota import filters as filters_mod
from placement_quota.filters import base
from placement_quota.filters import chain as chain_mod
from placement_quota import services as services_mod
from tests import builders
from tests import ledger_helpers


class NoPlacement:
    """Stands for Placement where nothing may read it: any use fails."""

    def __getattr__(self, name):
        raise AssertionError('Placement was used (%s) where it must not '
                             'be' % name)


class Services(services_mod.Services):
    """Services that count how often their Placement client is asked
    for (:attr:`placement_asked`)."""

    placement_asked = 0

    @property
    def placement(self):
        self.placement_asked += 1
        return super().placement


class LedgerTestCase(ledger_helpers.LedgerHelpers, testtools.TestCase):
    """A configuration, its :class:`~placement_quota.services.Services`
    and its ledger (a SQLite file in a temporary directory, whose clock is
    :attr:`now`), and the filter :attr:`filter_class` called directly.

    Subclasses set ``filter_class`` and ``options`` ({(group, name):
    value}, set before anything is built); :meth:`placement` gives the
    Placement client of the services (none that works, by default). The
    ledger is read through :class:`tests.ledger_helpers.LedgerHelpers`.
    """

    filter_class = None
    options = {}
    project = 'project-a'

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.conf = pq_conf.new_config([], config_files=[])
        chain_mod.register_filter_opts(self.conf, filters_mod.all_filters)
        self.conf.set_override('connection', self.ledger_url(), 'ledger')
        self.conf.set_override('count_host_resources', False, 'ledger')
        # A test waiting on its own lock fails fast.
        self.conf.set_override('lock_timeout', 2, 'ledger')
        # Never the user's state directory, whatever reaches for the
        # embedded Placement.
        self.conf.set_override('embedded_state_dir', os.path.join(
            self.tmp, 'placement'), 'placement')
        for (group, name), value in self.options.items():
            self.conf.set_override(name, value, group)
        self.services = Services(self.conf, placement=self.placement())
        self.addCleanup(self.services.close)
        self.now = builders.NOW
        self.ledger = self.services.ledger
        self.ledger.clock = lambda: self.now
        self._filter = None

    def ledger_url(self):
        """The ledger database (a SQLite file in :attr:`tmp`)."""
        return 'sqlite:///' + os.path.join(self.tmp, 'ledger.sqlite')

    def placement(self):
        return NoPlacement()

    def set(self, group='enforcement', **options):
        for name, value in options.items():
            self.conf.set_override(name, value, group)

    @property
    def filter(self):
        """The filter under test, made on first use (set options first)."""
        if self._filter is None:
            self._filter = self.filter_class(self.conf,
                                             services=self.services)
        return self._filter

    def chain(self, *names, exempted=()):
        """A FilterChain of ``names`` (default: the filter under test)
        sharing these services."""
        self.set(enabled_filters=list(names or [self.filter_class.__name__]),
                 exempted_projects=list(exempted))
        return chain_mod.FilterChain(self.conf, services=self.services)

    # --- calls ----------------------------------------------------------

    def context(self, project=None):
        return builders.context(project or self.project)

    def create(self, lease, project=None, via=None):
        return (via or self.filter).check_create(self.context(project),
                                                 lease)

    def update(self, current, lease, project=None, via=None):
        return (via or self.filter).check_update(self.context(project),
                                                 current, lease)

    def end(self, lease, project=None, via=None):
        return (via or self.filter).on_end(self.context(project), lease)

    def assertDenied(self, call, *args, **kwargs):
        """The message of the denial ``call(*args, **kwargs)`` raises."""
        denial = self.assertRaises(base.EnforcementDenied, call, *args,
                                   **kwargs)
        return str(denial)

    def assertMentions(self, message, *fragments):
        for fragment in fragments:
            self.assertIn(fragment, message)
