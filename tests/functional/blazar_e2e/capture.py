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
"""Capture what stock Blazar sends us, as test data.

``python -m tests.functional.blazar_e2e.capture [DIR]`` (from the
repository root; DIR defaults to ``tests/functional/blazar_e2e/payloads``)
starts the end-to-end environment of :mod:`tests.functional.blazar_e2e.
base`, drives two leases through Blazar's API as a user, and writes:

* the body of each enforcement call Blazar's ExternalServiceFilter sent
  to our service, as our service received it (``check-create.json``,
  ``check-update.json``, ``on-end.end_lease.json``,
  ``on-end.delete.json``);
* each lease notification as Blazar published it on the broker, received
  by a listener of its own pool (``lease.create.json``,
  ``lease.update.json``, ``lease.event.start_lease.json``,
  ``lease.event.before_end_lease.json``, ``lease.event.end_lease.json``,
  ``lease.delete.json``, ``lease.delete.not_started.json``);

tokens, trust IDs and service catalogs scrubbed (:func:`base.scrub`).
Lease ``capture-a`` gives every file but the two of the deleted, never
started lease ``capture-b`` (``on-end.delete.json``,
``lease.delete.not_started.json``). ``README.txt`` there says which call,
which Blazar operation and when.
"""

import datetime
import json
import os
import sys

from blazarclient import client as blazar_client
from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session

from tests.fixtures import keystone as keystone_fixture
from tests.functional.blazar_e2e import base


def _write(directory, name, value):
    with open(os.path.join(directory, name), 'w') as f:
        json.dump(base.scrub(value), f, indent=2, sort_keys=True,
                  default=str)
        f.write('\n')
    print('wrote %s' % os.path.join(directory, name))


def _call(env, kind, lease_id=None, name=None):
    """The last enforcement call of ``kind`` about the lease (by ID, or
    by name for a check-create, which has no ID yet)."""
    for got, body in reversed(env.front.calls):
        body = body or {}
        # check-update names the lease's ID in its current lease.
        ids = {(body.get(part) or {}).get('id')
               for part in ('lease', 'current_lease')}
        if got == kind and (lease_id in ids or (
                name and (body.get('lease') or {}).get('name') == name)):
            return body
    raise AssertionError('no %s call about %s' % (kind, lease_id or name))


def capture(directory):
    os.makedirs(directory, exist_ok=True)
    env = base.environment()
    keystone = keystone_fixture.KeystoneFixture()
    keystone.setUp()
    try:
        _capture(env, keystone, directory)
    finally:
        keystone.cleanUp()
        env.stop()


def _capture(env, keystone, directory):
    project = keystone.create_project().id
    user = keystone.create_user(project)
    with env.ledger.transaction() as txn:
        txn.add_allocation(project, 1000 * 1000000, None, None)
    client = blazar_client.Client(
        session=ks_session.Session(auth=v3.Password(
            auth_url=keystone.auth_url, username=user.name,
            password=user.password, project_id=project,
            user_domain_name=keystone.user_domain_name)),
        endpoint_override=env.blazar.endpoint)
    tap = env.tap

    def notification(lease_id, event_type):
        return base.wait_for('%s of %s' % (event_type, lease_id),
                             lambda: tap.of(lease_id, event_type))[-1]

    # Lease A: created to start now, prolonged, started, ended, deleted.
    now = base.minute()
    a = client.lease.create(
        'capture-a', 'now', base.api_date(now + datetime.timedelta(hours=2)),
        [base.instance_reservation()], [])
    _write(directory, 'check-create.json',
           _call(env, 'check-create', name='capture-a'))
    _write(directory, 'lease.create.json',
           notification(a['id'], 'lease.create'))
    _write(directory, 'lease.event.start_lease.json',
           notification(a['id'], 'lease.event.start_lease'))
    client.lease.update(a['id'], prolong_for='1h')
    _write(directory, 'check-update.json',
           _call(env, 'check-update', lease_id=a['id']))
    _write(directory, 'lease.update.json',
           notification(a['id'], 'lease.update'))
    env.blazar.move_events(a['id'], event_types=['before_end_lease'])
    _write(directory, 'lease.event.before_end_lease.json',
           notification(a['id'], 'lease.event.before_end_lease'))
    env.blazar.move_events(a['id'], event_types=['end_lease'])
    _write(directory, 'lease.event.end_lease.json',
           notification(a['id'], 'lease.event.end_lease'))
    _write(directory, 'on-end.end_lease.json',
           _call(env, 'on-end', lease_id=a['id']))
    client.lease.delete(a['id'])
    _write(directory, 'lease.delete.json',
           notification(a['id'], 'lease.delete'))

    # Lease B: created for later, deleted before it started.
    b = client.lease.create(
        'capture-b', base.api_date(now + datetime.timedelta(days=1)),
        base.api_date(now + datetime.timedelta(days=1, hours=3)),
        [base.instance_reservation(amount=2, vcpus=1)], [])
    notification(b['id'], 'lease.create')
    client.lease.delete(b['id'])
    _write(directory, 'on-end.delete.json',
           _call(env, 'on-end', lease_id=b['id']))
    _write(directory, 'lease.delete.not_started.json',
           notification(b['id'], 'lease.delete'))


def main(argv):
    capture(argv[0] if argv else base.PAYLOADS_DIR)


if __name__ == '__main__':
    main(sys.argv[1:])
