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
"""Nova's ``resources_from_flavor``, called for real in a process of its
own (Nova and Blazar register the same global options, so they cannot
share one): one JSON flavor a line on stdin, its resources a line on
stdout (``{"error": ...}`` when Nova raises).

Nova runs on an in-memory database with two instances whose root block
device mappings are real rows: one image-backed, one volume-backed
(``"bfv": true``), so ``is_volume_backed_instance`` reads them as in Nova.
"""

import json
import sys
import uuid


def main():
    from nova import conf as nova_conf
    from nova import context as nova_context
    from nova.db.main import api as main_db
    from nova import objects
    from nova.scheduler import utils as scheduler_utils
    from nova.tests import fixtures as nova_fixtures

    objects.register_all()
    nova_conf.CONF([], project='nova', default_config_files=[])
    nova_conf.CONF.set_override('connection', 'sqlite://', group='database')
    database = nova_fixtures.Database()
    database.setUp()
    assert main_db is not None
    context = nova_context.get_admin_context()
    instances = {}
    for volume in (False, True):
        instance = objects.Instance(context=context, uuid=str(uuid.uuid4()),
                                    image_ref='' if volume else 'image')
        objects.BlockDeviceMapping(
            context, instance_uuid=instance.uuid, boot_index=0,
            source_type='volume' if volume else 'image',
            destination_type='volume' if volume else 'local',
            volume_id='vol' if volume else None,
            image_id=None if volume else 'image', device_name='/dev/vda',
            delete_on_termination=True).create()
        instances[volume] = instance
    print(json.dumps({'ready': True}), flush=True)
    for line in sys.stdin:
        body = json.loads(line)
        flavor = objects.Flavor(
            vcpus=body['vcpus'], memory_mb=body['ram'],
            root_gb=body['disk'], ephemeral_gb=body['ephemeral'],
            swap=body['swap'], extra_specs=body['extra_specs'])
        try:
            found = scheduler_utils.resources_from_flavor(
                instances[bool(body.get('bfv'))], flavor)
        except Exception as exc:
            found = {'error': '%s: %s' % (type(exc).__name__, exc)}
        print(json.dumps(found), flush=True)


if __name__ == '__main__':
    main()
