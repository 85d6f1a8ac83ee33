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
"""Nova's legacy quota sets, read from the Nova API.

One ``GET /os-quota-sets/{project_id}/detail`` per decision gives every
quota's ``limit``, ``in_use`` and ``reserved``; -1 is unlimited. Nova is
not imported: this runs in the enforcement service, which does not need
Nova installed.
"""

from urllib import parse

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from oslo_log import log as logging

from placement_quota.conf import nova as nova_conf

LOG = logging.getLogger(__name__)


class QuotaSourceError(Exception):
    """Nova's quota sets cannot be read; says which project, where, why."""


class LegacyQuotas:
    """``limits_and_usage(project_id)`` from Nova's quota sets."""

    def __init__(self, adapter, description):
        self.adapter = adapter
        self.description = description
        self.calls = 0

    @classmethod
    def from_conf(cls, conf):
        """From ``[nova]`` (keystoneauth auth, session, adapter)."""
        try:
            conf.nova
        except Exception:
            nova_conf.register_opts(conf)
        group = nova_conf.GROUP.name
        auth = ks_loading.load_auth_from_conf_options(conf, group)
        if auth is None and not conf.nova.endpoint_override:
            raise QuotaSourceError(
                'nova_quota_source = legacy needs the Nova API: set the '
                'keystoneauth options of [nova] (auth_type, auth_url, ...) '
                'or [nova] endpoint_override.')
        session = ks_loading.load_session_from_conf_options(conf, group,
                                                            auth=auth)
        adapter = ks_loading.load_adapter_from_conf_options(
            conf, group, session=session, auth=auth, raise_exc=False)
        return cls(adapter, conf.nova.endpoint_override or
                   'Nova of the service catalog (%s)'
                   % (conf.nova.region_name or 'any region'))

    def limits_and_usage(self, project_id):
        """``{quota name: (limit, in use + reserved)}`` of a project."""
        url = '/os-quota-sets/%s/detail' % parse.quote(project_id, safe='')
        self.calls += 1
        try:
            response = self.adapter.get(url,
                                        headers={'Accept':
                                                 'application/json'})
        except ks_exceptions.ClientException as exc:
            raise QuotaSourceError(
                'Cannot read the Nova quotas of project %s from %s: %s'
                % (project_id, self.description, exc))
        if response.status_code != 200:
            raise QuotaSourceError(
                'Nova answered %d to GET %s for project %s (%s): %s'
                % (response.status_code, url, project_id, self.description,
                   response.text[:300]))
        try:
            quota_set = response.json()['quota_set']
            found = {}
            for name, value in quota_set.items():
                if isinstance(value, dict) and 'limit' in value:
                    found[name] = (int(value['limit']),
                                   int(value.get('in_use', 0)) +
                                   int(value.get('reserved', 0)))
        except (ValueError, KeyError, TypeError) as exc:
            raise QuotaSourceError(
                'Nova\'s answer to GET %s is not a quota set: %s'
                % (url, exc))
        return found
