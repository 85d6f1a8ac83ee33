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
"""``[self_service]``: what a project's members may read and ask of the
service themselves (the project API: limits, quotes, extensions)."""

from oslo_config import cfg

from placement_quota.conf import _util

GROUP = cfg.OptGroup(
    'self_service', title='Self-service project API',
    help='The view a project\'s members have of their own limits, usage '
         'and credits, their quotes and extension queries.')

opts = [
    cfg.IntOpt(
        'usage_days', default=30, min=1, max=366,
        help='Days ahead the project view looks at: the peak reserved '
             'beside each limit, and the usage series, run from now to '
             'this many days later (a request may ask for fewer or more, '
             'up to 366, with ?days=).'),
    cfg.IntOpt(
        'extension_search_days', default=365, min=1, max=3650,
        help='How far past its current end (or past now, for a lease that '
             'ends sooner) the extension query looks for the latest end '
             'date every filter allows. Nothing refused up to there: the '
             'answer is that date, with no filter named as the bound.'),
]


def register_opts(conf):
    _util.register(conf, GROUP, opts)


def list_opts():
    return {GROUP: opts}
