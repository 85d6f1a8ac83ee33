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
"""The tests of placement-quota.

Hermetic: importing this package (which every test does first) points
``HOME`` and the XDG state, config, cache and data directories of this
test process, and of every process it starts, at one private temporary
directory, removed at exit. No test reads or writes the user's ledger
(``~/.local/state/placement-quota``), configuration or caches.
"""

import atexit
import os
import shutil
import tempfile

#: The private home of this test process.
HOME = tempfile.mkdtemp(prefix='placement-quota-tests-')
atexit.register(shutil.rmtree, HOME, True)
os.environ['HOME'] = HOME
for _variable, _name in (('XDG_STATE_HOME', 'state'),
                         ('XDG_CONFIG_HOME', 'config'),
                         ('XDG_DATA_HOME', 'data')):
    os.environ[_variable] = os.path.join(HOME, _name)
# run-tests.sh gives stevedore a fresh cache of its own; keep it.
os.environ.setdefault('XDG_CACHE_HOME', os.path.join(HOME, 'cache'))
