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
"""The captured payloads (``payloads/``, see its README.txt) still have
the shape of what the Blazar installed here sends: when a new Blazar
changes it, this fails and ``python -m tests.functional.blazar_e2e.
capture`` captures them anew."""

import json
import os

from tests.functional.blazar_e2e import base


def _load(name):
    with open(os.path.join(base.PAYLOADS_DIR, name)) as f:
        return json.load(f)


def _shape(value):
    """The keys of ``value``, recursively (lists by their first item)."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return None


class TestCapturedPayloads(base.BlazarE2ETestCase):

    def test_check_create_and_lease_create_have_the_captured_shape(self):
        self.give_credits(100)
        lease = self.create_lease(start='now')
        body = [b for kind, b in self.env.front.calls
                if kind == 'check-create' and
                b['lease']['name'] == lease['name']][-1]
        self.assertEqual(_shape(_load('check-create.json')), _shape(body))

        created = self.notification(lease['id'], 'lease.create')
        captured = _load('lease.create.json')
        self.assertEqual(_shape(captured['payload']),
                         _shape(created['payload']))
        self.assertEqual(captured['publisher_id'], created['publisher_id'])
        self.assertEqual(sorted(captured['metadata']),
                         sorted(created['metadata']))
