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
"""Nova aggregates outside Nova: from a JSON file or the Nova API.

Inside nova-scheduler the filters read aggregates through Nova's own
objects (:mod:`.request_filter`); tools outside Nova (``placement-quota
schedule explain``) read them here, as :class:`decision.Aggregate`.
"""

import json

from placement_quota.scheduler import decision as dec


class AggregatesError(Exception):
    """The aggregates cannot be read; the message says why."""


def from_data(data):
    """Aggregates from the JSON of Nova's ``GET /os-aggregates`` (a dict
    with ``aggregates``) or a bare list of aggregates; each one a dict with
    ``uuid``, ``name``, ``metadata``, ``hosts`` and, as Nova answers,
    optionally ``availability_zone`` (folded into the metadata)."""
    if isinstance(data, dict) and 'aggregates' in data:
        data = data['aggregates']
    if not isinstance(data, list):
        raise AggregatesError('expected a list of aggregates or '
                              '{"aggregates": [...]}, not %s'
                              % type(data).__name__)
    out = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise AggregatesError('aggregate #%d is not an object: %r'
                                  % (i, item))
        metadata = item.get('metadata')
        metadata = {} if metadata is None else metadata
        if not isinstance(metadata, dict):
            raise AggregatesError('aggregate #%d (%r): metadata is not an '
                                  'object' % (i, item.get('name')))
        metadata = dict(metadata)
        if item.get('availability_zone') and \
                dec.AZ_KEY not in metadata:
            metadata[dec.AZ_KEY] = item['availability_zone']
        hosts = item.get('hosts')
        hosts = [] if hosts is None else hosts
        if not isinstance(hosts, list):
            raise AggregatesError('aggregate #%d (%r): hosts is not a list'
                                  % (i, item.get('name')))
        uuid = item.get('uuid')
        out.append(dec.Aggregate(
            uuid='' if uuid is None else str(uuid), name=item.get('name'),
            metadata=metadata, hosts=tuple(str(h) for h in hosts)))
    return out


def from_file(path):
    """:func:`from_data` of a JSON file."""
    try:
        with open(path, encoding='utf-8') as f:
            data = json.load(f)
    except OSError as exc:
        raise AggregatesError('cannot read %s: %s'
                              % (path, exc.strerror or exc))
    except ValueError as exc:
        raise AggregatesError('%s is not JSON: %s' % (path, exc))
    return from_data(data)


def from_nova_api(conn):
    """Every aggregate, from the Nova API (``GET /os-aggregates``) through
    an openstacksdk ``Connection``."""
    out = []
    for agg in conn.compute.aggregates():
        found = dec.Aggregate.from_object(agg)
        az = getattr(agg, 'availability_zone', None)
        if az and dec.AZ_KEY not in found.metadata:
            found = dec.Aggregate(found.uuid, found.name,
                                  dict(found.metadata, **{dec.AZ_KEY: az}),
                                  found.hosts)
        out.append(found)
    return out
