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
"""WSGI entry point of the account admin API (uWSGI, mod_wsgi, gunicorn).

Configuration files come from ``PLACEMENT_QUOTA_CONFIG_FILES`` (paths separated
by ``;``), or the usual places when it is unset. Serve it on an endpoint of its
own, never the public one ("Multi-Tenant Accounting in OpenStack").

What ``placement-quota serve``'s own server does against slow and malformed
clients (the whole-request read deadline, the bounded queue, refusing
``Transfer-Encoding`` with ``Content-Length``: see ``doc/source/api.rst``,
"The HTTP server") is then the WSGI server's to do: configure its request
timeouts and framing rules (or put httpd or nginx in front).
"""

import os

from placement_quota.api.admin import app as admin
from placement_quota import conf as pq_conf
from placement_quota import services as services_mod
from placement_quota.httpserver import server as wsgi_server


def init_application():
    conf = pq_conf.wsgi_config()
    return admin.make_admin_app(conf, services=services_mod.Services(conf))


application = None
if os.environ.get('PLACEMENT_QUOTA_WSGI_NO_INIT') is None:
    application = init_application()
    # The app lives as long as the WSGI server's process.
    wsgi_server.freeze_heap()
