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
"""Run the gabbi files of gabbits/ against the enforcement service.

The app is our real WSGI stack, reached in-process through wsgi-intercept.
"""

import os

from gabbi import driver

from placement_quota.api.enforcement import app as api_app
from placement_quota.filters import chain as chain_mod
from tests.fixtures import enforcement

TESTS_DIR = os.path.join(os.path.dirname(__file__), 'gabbits')


def make_app():
    conf = enforcement.config(
        enabled_filters=('enforcement', ['MaximumReservationLengthFilter']),
        reservation_max_length=('enforcement', 86400),
        max_request_body_size=('api', 65536))
    return api_app.make_app(conf, chain_mod.FilterChain(conf))


def load_tests(loader, tests, pattern):
    return driver.build_tests(TESTS_DIR, loader, host=None,
                              intercept=make_app, test_loader_name=__name__)
