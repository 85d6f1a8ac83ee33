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
"""Our filters in blazar-manager's ``[enforcement] enabled_filters``,
without editing Blazar's files.

Blazar has no plugin point for enforcement filters: its
``UsageEnforcement`` (built by ``ManagerService()``) looks each enabled
name up in the module ``blazar.enforcement.filters`` and loads it only
when the name is in that module's ``all_filters`` list. :func:`install`
adds the classes of :mod:`placement_quota.filters.blazar_compat` to both,
in the running process; ``placement-quota-blazar-manager``
(:mod:`placement_quota.blazar.manager`) calls it and then starts Blazar's
own blazar-manager.
"""

from blazar.enforcement import filters as blazar_filters
from oslo_log import log as logging

from placement_quota.filters import blazar_compat

LOG = logging.getLogger(__name__)


def install(module=blazar_filters):
    """Make every class of ``blazar_compat.all_filters`` loadable by name
    from ``module`` (Blazar's filter namespace); return the names now
    ours there, in the order of ``all_filters``.

    Idempotent. A name Blazar already defines (its own
    ExternalServiceFilter and MaxLeaseDurationFilter) keeps Blazar's
    class: those raise the exceptions Blazar's manager lists as non-fatal
    already, and an operator's ``enabled_filters = ExternalServiceFilter``
    means the same filter with or without us. Our length filter is there
    as MaximumReservationLengthFilter.
    """
    ours = []
    for cls in blazar_compat.all_filters:
        name = cls.__name__
        present = getattr(module, name, None)
        if present is None:
            setattr(module, name, cls)
        elif present is not cls:
            LOG.debug('Blazar defines %s: its own filter keeps the name',
                      name)
            continue
        if name not in module.all_filters:
            module.all_filters.append(name)
        ours.append(name)
    return ours
