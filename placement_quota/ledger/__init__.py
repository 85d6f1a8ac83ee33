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
"""The reservation ledger: what was allowed, when, and what it cost.

``shared(conf)`` gives the one :class:`~store.Ledger` of a configuration,
so that every filter of a chain (and of a process) uses one database
engine.
"""

import threading

from placement_quota.conf import ledger as ledger_conf

_LOCK = threading.Lock()
_SHARED = {}


def shared(conf):
    """The ledger of ``conf`` (``[ledger] connection``), created once."""
    from placement_quota.ledger import store

    ledger_conf.register_opts_once(conf)
    key = (id(conf), conf.ledger.connection)
    with _LOCK:
        found = _SHARED.get(key)
        if found is None:
            found = _SHARED[key] = store.Ledger.from_conf(conf)
        return found


def host_resources(conf):
    """The host resource reader of ``conf``, or None when
    ``[ledger] count_host_resources`` is off."""
    ledger_conf.register_opts_once(conf)
    if not conf.ledger.count_host_resources:
        return None
    key = (id(conf), 'hosts')
    with _LOCK:
        found = _SHARED.get(key)
        if found is None:
            from placement_quota.placement import hosts
            found = _SHARED[key] = hosts.HostResources(
                _placement(conf), ttl=conf.ledger.host_resources_cache_ttl)
        return found


def _placement(conf):
    key = (id(conf), 'placement')
    found = _SHARED.get(key)
    if found is None:
        from placement_quota.placement import client
        found = _SHARED[key] = client.PlacementClient.from_conf(conf)
    return found


def placement(conf):
    """One Placement client for every policy of ``conf``."""
    with _LOCK:
        return _placement(conf)


def forget(conf):
    """Drop (and dispose) what :func:`shared` made for ``conf``."""
    with _LOCK:
        for key in [k for k in _SHARED if k[0] == id(conf)]:
            value = _SHARED.pop(key)
            if hasattr(value, 'dispose'):
                value.dispose()
