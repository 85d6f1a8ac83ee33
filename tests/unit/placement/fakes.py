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
"""A Placement client answering the provider reads of the capacity view
and the provider directory from memory, for their unit tests."""

import json
import threading
import uuid as uuid_mod

from placement_quota.placement import client as placement_client


class FakePlacement:
    """``get`` and ``get_items`` of the listing and of each provider's
    inventories, usages and traits; :attr:`paths` records the calls.
    While :attr:`hold` is set, a listing waits for :attr:`release`;
    :attr:`on_read`, when set, is called with the UUID and what is read
    (``inventories``, ``usages``, ``traits``) before each read of a
    provider is answered."""

    def __init__(self):
        self.providers = {}
        self.paths = []
        self.hold = False
        self.listing_started = threading.Event()
        self.release = threading.Event()
        self.on_read = None

    def add(self, name=None, parent=None, inventories=None, used=None,
            traits=(), generation=1):
        uuid = str(uuid_mod.uuid4())
        root = self.providers[parent]['root'] if parent else uuid
        self.providers[uuid] = {
            'name': name or 'cn-%s' % uuid[:8], 'parent': parent,
            'root': root, 'generation': generation,
            'inventories': {rc: dict(
                {'reserved': 0, 'allocation_ratio': 1.0, 'min_unit': 1,
                 'max_unit': 2 ** 31 - 1, 'step_size': 1}, total=total)
                for rc, total in (inventories or {}).items()},
            'usages': dict(used or {}), 'traits': list(traits)}
        return uuid

    def change(self, uuid, **used):
        provider = self.providers[uuid]
        provider['usages'].update(used)
        provider['generation'] += 1

    def listing_text(self):
        return json.dumps({'resource_providers': [
            {'uuid': uuid, 'name': p['name'], 'generation': p['generation'],
             'root_provider_uuid': p['root'],
             'parent_provider_uuid': p['parent'],
             'links': [{'rel': 'self', 'href': '/resource_providers/%s'
                        % uuid}]}
            for uuid, p in self.providers.items()]}, indent=1)

    def get_items(self, url, key, pick=None):
        self.paths.append(url)
        assert url == '/resource_providers', url
        self.listing_started.set()
        if self.hold:
            self.release.wait(10)
        return placement_client.decode_items(self.listing_text(), key, pick)

    def get(self, url):
        self.paths.append(url)
        _, _, uuid, what = url.split('/')
        provider = self.providers.get(uuid)
        if provider is None:
            raise placement_client.NotFound(404, None, 'gone', 'GET', url)
        if self.on_read is not None:
            self.on_read(uuid, what)
        body = {'resource_provider_generation': provider['generation']}
        if what == 'inventories':
            body['inventories'] = provider['inventories']
        elif what == 'usages':
            body['usages'] = {rc: provider['usages'].get(rc, 0)
                              for rc in provider['inventories']}
        else:
            body['traits'] = provider['traits']
        return body

    def reads_of(self, uuid):
        return sum(1 for path in self.paths if uuid in path)
