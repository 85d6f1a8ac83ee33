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
"""The ``[enforcement]`` options of the filters we ship, for
oslo-config-generator (entry point ``oslo.config.opts``, namespace
``placement_quota.filters``).

Each filter class declares its options (``enforcement_opts``), which the
chain registers for every available filter
(:func:`placement_quota.filters.chain.load_filters`). The sample
configuration lists those of :data:`placement_quota.filters.all_filters`,
each once, after the ``[enforcement]`` options of
:mod:`placement_quota.conf.enforcement` (namespace ``placement_quota``).
"""

import copy

from placement_quota.conf import enforcement
from placement_quota import filters
from placement_quota.filters import no_ops


def list_opts():
    """``[([enforcement] group, options)]`` of ``filters.all_filters``,
    each option's help ending with the filters that read it (an option
    set for a filter that is not enabled does nothing)."""
    readers = no_ops.owners({cls.__name__: cls
                             for cls in filters.all_filters})
    filter_opts = []
    seen = set()
    for cls in filters.all_filters:
        for opt in cls.enforcement_opts:
            if opt.dest in seen:
                continue
            seen.add(opt.dest)
            names = sorted(readers[('enforcement', opt.dest)])
            documented = copy.copy(opt)
            documented.help = (
                '%s Read by %s only: unless [enforcement] enabled_filters '
                'names %s, it does nothing.'
                % ((opt.help or '').rstrip(), ' or '.join(names),
                   'one of them' if len(names) > 1 else 'it'))
            filter_opts.append(documented)
    return [(enforcement.GROUP, filter_opts)]
