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
"""How a lease is found in the ledger.

Blazar's enforcement runs before a lease exists, so a check-create carries
no lease ID (specs/000: "UUIDs ... will not be sent"); a check-update and an
on-end read from Blazar's database carry it. An entry is therefore keyed on
the lease ID when there is one and always on a deterministic provisional
key, and an entry found by its provisional key takes the lease ID the first
time one is seen: reconciled on the lease's first update or end.

The provisional key is a SHA-256 over the project and the lease name (Blazar
keeps names unique in a project), or, for a lease sent without a name, over
its dates and its reservations' user-defined fields.
"""

import hashlib
import json


def lease_id(lease):
    """Blazar's lease ID in a lease payload, or None."""
    value = lease.values.get('id')
    return value if isinstance(value, str) and value else None


def _reservation_fields(reservation):
    fields = {k: v for k, v in reservation.values.items()
              if k not in ('allocations', 'id', 'lease_id', 'status',
                           'resource_id', 'created_at', 'updated_at',
                           'missing_resources', 'resources_changed')}
    return json.dumps(fields, sort_keys=True, default=str)


def provisional_key(project_id, lease):
    """The deterministic key of ``lease`` in ``project_id``."""
    name = lease.values.get('name')
    if isinstance(name, str) and name:
        material = ['name', project_id, name]
    else:
        material = ['content', project_id, lease.start_date.isoformat(),
                    lease.end_date.isoformat(),
                    sorted(_reservation_fields(r)
                           for r in lease.reservations)]
    digest = hashlib.sha256(json.dumps(material).encode('utf-8'))
    return digest.hexdigest()
