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
"""Project lookups in Keystone through openstacksdk."""

from keystoneauth1 import loading as ks_loading
import openstack
from oslo_log import log as logging

from placement_quota.conf import keystone as keystone_conf
from placement_quota import sessions

LOG = logging.getLogger(__name__)


class KeystoneNotConfigured(Exception):
    """[keystone] has no credentials but a lookup needs them."""


def connection(conf):
    """An openstacksdk Connection built from the ``[keystone]`` options."""
    group = keystone_conf.GROUP.name
    auth = ks_loading.load_auth_from_conf_options(conf, group)
    if auth is None:
        raise KeystoneNotConfigured(
            'No credentials in [keystone]: set auth_type, auth_url, '
            'username, password and the project options so placement-quota '
            'can look projects up in Keystone.')
    session = sessions.from_conf(conf, group, auth)
    return openstack.connection.Connection(
        session=session, region_name=conf.keystone.region_name,
        identity_interface=conf.keystone.interface)


class ProjectResolver:
    """Resolve ``name@domain`` to a project ID."""

    def __init__(self, conf, conn=None):
        self.conn = conn or connection(conf)

    def project_id(self, name, domain):
        """The ID of project ``name`` in domain ``domain`` (name or ID)."""
        found = self.conn.identity.find_domain(domain, ignore_missing=True)
        if found is None:
            LOG.warning('Keystone has no domain %r', domain)
            return None
        project = self.conn.identity.find_project(
            name, ignore_missing=True, domain_id=found.id)
        return None if project is None else project.id
