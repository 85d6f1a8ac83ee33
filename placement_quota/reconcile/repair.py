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
"""Apply the safe fixes, each re-checked against Placement as it writes.

Findings are read at one moment; Nova and Blazar keep writing. So every
repair leans on a check Placement makes atomically, or re-reads right
before writing:

* an inventory is removed with ``DELETE .../inventories/<class>``, which
  Placement refuses (409) while anything is allocated from it;
* a class is deleted with ``DELETE /resource_classes/<class>``, refused
  while any inventory or allocation of it exists;
* a provider is deleted with ``DELETE /resource_providers/<uuid>``,
  refused while it has allocations or children;
* an inventory total is set after re-reading the provider's usage (never
  below what is allocated) and with its generation (a concurrent write
  makes it re-read and retry);
* a ledger entry is changed in its own transaction holding the ledger
  lock of its project, after re-reading it and re-checking the finding's
  condition, through its idempotent transitions (:mod:`.ledger_repair`).

A refusal is reported as "skipped" with Placement's reason; nothing is
forced. Running ``--fix`` again finds nothing fixable.
"""

import dataclasses

from oslo_log import log as logging

from placement_quota.ledger import errors
from placement_quota.placement import client as placement_client
from placement_quota.placement import reservations as rsv
from placement_quota.reconcile import ledger_repair
from placement_quota.reconcile import model as m

LOG = logging.getLogger(__name__)

FIXED = 'fixed'
DRY_RUN = 'not applied (dry run)'
UNSAFE = 'left: needs an operator'


@dataclasses.dataclass(frozen=True)
class Outcome:
    finding: m.Finding
    result: str

    @property
    def fixed(self):
        return self.result == FIXED or self.result.startswith('fixed')


def plan(findings):
    """Outcomes of a dry run."""
    return [Outcome(f, DRY_RUN if f.safe else UNSAFE) for f in findings]


def apply(findings, client, ledger=None, conflict_retries=5, now=None):
    """Apply the safe findings' actions in :data:`~.model.OPS` order;
    return an :class:`Outcome` per finding, in the findings' order."""
    repairer = _Repairer(client, ledger, conflict_retries, now)
    results = {}
    safe = [f for f in findings if f.safe and f.action is not None]
    for op in m.OPS:
        for finding in safe:
            if finding.action.op != op:
                continue
            try:
                if op in m.LEDGER_OPS:
                    result = ledger_repair.apply(ledger, finding.action, now)
                else:
                    result = getattr(repairer, op)(finding.action)
            except (placement_client.PlacementError,
                    errors.LedgerError) as exc:
                result = 'failed: %s' % exc
            LOG.info('%s %s: %s', finding.kind, finding.subject, result)
            results[id(finding)] = result
    return [Outcome(f, results.get(id(f), UNSAFE)) for f in findings]


class _Repairer:

    def __init__(self, client, ledger, conflict_retries, now):
        self.client = client
        self.ledger = ledger
        self.conflict_retries = conflict_retries
        self.now = now

    def _provider_uuid(self, action):
        if action.provider:
            return action.provider
        found = self.client.get('/resource_providers?name=%s'
                                % rsv.provider_name(action.host))
        providers = found['resource_providers']
        return providers[0]['uuid'] if providers else None

    def create_provider(self, action):
        try:
            self.client.post('/resource_providers', json={
                'name': rsv.provider_name(action.host),
                'parent_provider_uuid': action.provider})
        except placement_client.Conflict:
            return 'fixed already (it exists)'
        return FIXED

    def create_class(self, action):
        self.client.put('/resource_classes/%s' % action.resource_class)
        return FIXED

    def set_inventory(self, action):
        uuid = self._provider_uuid(action)
        if uuid is None:
            return ('skipped: %s does not exist'
                    % rsv.provider_name(action.host))
        name = action.resource_class
        outcome = []

        def write():
            # The generation read first makes the usage check atomic: an
            # allocation made after this read bumps it, and the PUT then
            # answers 409 and all is read again.
            body = self.client.get('/resource_providers/%s/inventories'
                                   % uuid)
            used = self.client.get('/resource_providers/%s/usages'
                                   % uuid)['usages'].get(name, 0)
            if used > action.total:
                outcome.append('skipped: %d are allocated now, more than '
                               '%d' % (used, action.total))
                return
            inventories = dict(body['inventories'])
            inventories[name] = rsv.reservation_inventory(action.total)
            self.client.put('/resource_providers/%s/inventories' % uuid,
                            json={'resource_provider_generation':
                                  body['resource_provider_generation'],
                                  'inventories': inventories})
            outcome.append(FIXED)

        placement_client.retry_on_conflict(self.conflict_retries)(write)
        return outcome[-1]

    def _delete(self, url, what):
        """DELETE ``url``; Placement refuses (409) while anything is
        allocated from it, and that refusal is the outcome."""
        try:
            self.client.delete(url)
        except placement_client.NotFound:
            return 'fixed already (no such %s)' % what
        except placement_client.Conflict as exc:
            return 'skipped: %s' % exc.detail
        return FIXED

    def remove_inventory(self, action):
        return self._delete('/resource_providers/%s/inventories/%s'
                            % (action.provider, action.resource_class),
                            'inventory')

    def delete_class(self, action):
        return self._delete('/resource_classes/%s' % action.resource_class,
                            'class')

    def delete_provider(self, action):
        return self._delete('/resource_providers/%s' % action.provider,
                            'provider')
