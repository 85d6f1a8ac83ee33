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
"""Registration in a stock nova-scheduler (Nova only).

Nova has no plugin point for request filters: the list is
``nova.scheduler.request_filter.ALL_REQUEST_FILTERS``, which
``process_reqspec`` walks before every Placement query. Host filters,
though, are loaded from the modules named in ``[filter_scheduler]
available_filters`` when nova-scheduler starts. So ``nova.conf`` names
this module there::

    [filter_scheduler]
    available_filters = nova.scheduler.filters.all_filters
    available_filters = placement_quota.scheduler.nova_filters.all_filters
    # optional, the host filter fallback:
    enabled_filters = ...,ReservationHostFilter

Importing this module (Nova does it to resolve ``all_filters``) touches
exactly two things of Nova's:

* ``nova.conf.CONF``: registers the ``[placement_quota_scheduler]``
  option group (nothing else of Nova's configuration is changed);
* ``nova.scheduler.request_filter.ALL_REQUEST_FILTERS``: appends the
  request filter (:func:`placement_quota.scheduler.request_filter
  .get_request_filter`) at the end, once. Registering again (a second
  import, ``importlib.reload`` of this module or of ``request_filter``)
  leaves exactly one: an older copy of ours is replaced in place.

Nova's own functions, classes and filters are not patched. ``all_filters``
returns the host filter class list, ``[ReservationHostFilter]``.
"""

import nova.conf
from nova.scheduler import request_filter as nova_request_filter

from placement_quota.scheduler import host_filter
from placement_quota.scheduler import request_filter
from placement_quota.conf import scheduler as scheduler_conf


def register(filters=None):
    """Put our request filter in Nova's list once.

    :param filters: the list; Nova's ``ALL_REQUEST_FILTERS`` by default.
    :returns: True when the list changed.
    """
    if filters is None:
        filters = nova_request_filter.ALL_REQUEST_FILTERS
    ours = request_filter.get_request_filter()
    found = [i for i, f in enumerate(filters)
             if getattr(f, request_filter.MARKER, False)]
    if len(found) == 1 and filters[found[0]] is ours:
        return False
    if found:
        # Stale copies (a reloaded request_filter module): keep the
        # first position, drop the others.
        filters[found[0]] = ours
        for i in reversed(found[1:]):
            del filters[i]
    else:
        filters.append(ours)
    return True


def all_filters():
    """The host filter classes we ship (for ``available_filters``); makes
    sure the request filter is registered."""
    register()
    return [host_filter.ReservationHostFilter]


scheduler_conf.register_opts(nova.conf.CONF)
register()
