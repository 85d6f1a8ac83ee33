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
"""``placement-quota-blazar-manager``: Blazar's blazar-manager, unchanged,
with our filters available to its ``[enforcement] enabled_filters``.

It takes blazar-manager's arguments (``--config-file
/etc/blazar/blazar.conf``...) and reads the same configuration. Where
Blazar is not installed (placement-quota without its ``[blazar]`` extra)
it says so and exits 2 (``--help`` says what it is and exits 0).
"""

import sys

try:
    from blazar.cmd import manager as blazar_manager

    from placement_quota.blazar import enforcement
except ModuleNotFoundError as exc:
    if exc.name != 'blazar' and not exc.name.startswith('blazar.'):
        raise
    blazar_manager = enforcement = None
    _MISSING = exc

PROG = 'placement-quota-blazar-manager'

USAGE = """\
usage: %s [blazar-manager's options: --config-file /etc/blazar/blazar.conf...]

Runs Blazar's blazar-manager with placement-quota's filters available to
its [enforcement] enabled_filters (by the names of placement-quota filter
list). It needs Blazar in the same Python environment: pip install
'placement-quota[blazar]'.
""" % PROG


def main():
    """Blazar's ``blazar.cmd.manager.main`` (which reads ``sys.argv``)
    after :func:`placement_quota.blazar.enforcement.install`."""
    if blazar_manager is None:
        if '-h' in sys.argv[1:] or '--help' in sys.argv[1:]:
            sys.stdout.write(USAGE)
            return 0
        sys.stderr.write("%s: Blazar is not installed in this Python "
                         "environment (pip install "
                         "'placement-quota[blazar]'): %s\n"
                         % (PROG, _MISSING))
        return 2
    enforcement.install()
    return blazar_manager.main()
