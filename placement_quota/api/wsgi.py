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
"""Deprecated path kept because uWSGI configurations name it: use
placement_quota.api.enforcement.wsgi (``--module
placement_quota.api.enforcement.wsgi:application``).

Importing this module imports that one, which builds the application;
``application`` is the same object.
"""

from placement_quota.api.enforcement.wsgi import application  # noqa: F401
from placement_quota.api.enforcement.wsgi import (  # noqa: F401
    init_application)
