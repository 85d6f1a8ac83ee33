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
"""``[reconcile]`` and ``[blazar]``: ``placement-quota reconcile``.

``[reconcile]`` tunes what counts as drift; ``[blazar]`` is how the tool
reaches Blazar's API (the standard keystoneauth, session and adapter
options, service type ``reservation``). Without ``auth_type`` and
``endpoint_override`` in ``[blazar]``, reconcile reads the ledger only.
"""

from oslo_config import cfg

from placement_quota.conf import _util

GROUP = cfg.OptGroup(
    'reconcile', title='Reconcile Placement with reservations',
    help='What placement-quota reconcile treats as drift.')

BLAZAR_GROUP = cfg.OptGroup(
    'blazar', title='Blazar API client',
    help='Where Blazar\'s API is and how placement-quota reconcile '
         'authenticates to it (an admin: it lists every project\'s '
         'leases). Optional: without it, reconcile trusts the ledger alone '
         'and leaves what only Blazar can decide to the operator.')

opts = [
    cfg.IntOpt(
        'grace_period', default=600, min=0,
        help='Seconds after a lease\'s start and end during which Blazar '
             'is given time to write or remove its inventories: no '
             'missing or left-over inventory is reported in them.'),
    cfg.IntOpt(
        'pending_timeout', default=86400, min=0,
        help='Seconds after its start from which a ledger entry still '
             'pending and without a lease ID is reported as stuck (Blazar '
             'may never have created the lease). With [blazar], seconds '
             'after it was recorded from which such an entry that no lease '
             'of Blazar matches is abandoned by --fix.'),
    cfg.IntOpt(
        'max_concurrency', default=8, min=1, max=64,
        help='Concurrent Placement reads (the inventories and allocations '
             'of each reservation provider).'),
]

blazar_opts = []


def register_opts(conf):
    _util.register(conf, GROUP, opts)
    _util.register_service_client(conf, BLAZAR_GROUP, blazar_opts,
                                  'reservation')


def list_opts():
    listed = {GROUP: opts}
    listed.update(_util.list_service_client(BLAZAR_GROUP, blazar_opts))
    return listed
