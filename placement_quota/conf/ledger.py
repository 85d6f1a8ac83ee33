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
"""``[ledger]``: where the record of allowed leases is kept."""

import os

from oslo_config import cfg
import sqlalchemy.engine
import sqlalchemy.exc

from placement_quota.conf import _util
from placement_quota.conf import placement

GROUP = cfg.OptGroup(
    'ledger', title='Reservation ledger',
    help='The database of the leases the policies allowed, with their '
         'amounts, time windows, states and credit charges. Used by the '
         'filters that need history: LeaseCountFilter, NovaQuotaFilter, '
         'PlacementCapacityFilter, CreditFilter, ProjectTreeLimitFilter.')


def _default_connection():
    return 'sqlite:///' + os.path.join(placement._default_state_dir(),
                                       'ledger.sqlite')


opts = [
    cfg.StrOpt(
        'connection', default=_default_connection(), secret=True,
        sample_default='sqlite:///$XDG_STATE_HOME/placement-quota/'
                       'ledger.sqlite',
        help='SQLAlchemy URL of the ledger database. SQLite (the default) '
             'serves one host; the directory of a SQLite file set here must '
             'exist (only the default state directory is created); for '
             'several service processes or hosts use '
             'PostgreSQL (``postgresql+psycopg2://user:pass@host/db``, '
             'tested) or MySQL (``mysql+pymysql://...``, untested); the '
             'driver must be installed.'),
    cfg.BoolOpt(
        'auto_migrate', default=False,
        help='Bring the schema up to date when the service starts. SQLite '
             'ledgers are always migrated at start; for a shared database '
             'run ``placement-quota db sync`` once per upgrade instead, '
             'and leave this off so that workers never race a migration.'),
    cfg.IntOpt(
        'lock_timeout', default=30, min=1,
        help='Seconds an admission waits for a ledger lock held by '
             'another admission before it gives up (the request then '
             'answers 503 and Blazar may retry). SQLite: its busy timeout; '
             'PostgreSQL: lock_timeout of each lock.'),
    cfg.IntOpt(
        'connect_timeout', default=10, min=2,
        help='PostgreSQL: seconds to connect to the database, and for a '
             'pooled connection to answer its check when a request takes '
             'it; a database that does not answer in time makes the '
             'request answer 503. Not used with SQLite (MySQL: not yet '
             'applied).'),
    cfg.IntOpt(
        'statement_timeout', default=30, min=0,
        help='PostgreSQL: seconds one statement may run; the server '
             'cancels it then (its statement_timeout) and the request '
             'answers 503. A server that does not answer at all (frozen, '
             'unreachable) is given up by the service after '
             'max(statement_timeout, lock_timeout) + 2 seconds. Lock waits '
             'are statements too: keep it at least lock_timeout. 0: no '
             'limit (nor the service\'s own). Migrations ("db sync") run '
             'without it. Not used with SQLite (MySQL: not yet applied).'),
    cfg.IntOpt(
        'pool_size', default=10, min=1,
        help='Database connections kept per service process (not used '
             'with SQLite).'),
    cfg.BoolOpt(
        'count_host_resources', default=True,
        help='Read the VCPU, MEMORY_MB and DISK_GB inventories of reserved '
             'physical hosts from Placement (the provider named after the '
             'hypervisor host name) and record them as host:VCPU... '
             'amounts. Off: hosts count only as hosts.'),
    cfg.IntOpt(
        'host_resources_cache_ttl', default=300, min=0,
        help='Seconds a host\'s inventories read from Placement are '
             'reused; 0 reads them for every lease.'),
]


def describe(conf):
    """The ledger of ``conf`` for logs and banners: its URL without a
    password, and whether it is the default."""
    url = conf.ledger.connection
    try:
        shown = sqlalchemy.engine.make_url(url).render_as_string(
            hide_password=True)
    except sqlalchemy.exc.ArgumentError:
        shown = url
    where = ('the default' if url == _default_connection()
             else '[ledger] connection')
    return '%s (%s)' % (shown, where)


def missing_directory(url):
    """The error message when ``url`` is a SQLite file whose directory does
    not exist and is not the default state directory (which is created),
    else None: a typo in the path must not create a new, empty ledger."""
    try:
        parsed = sqlalchemy.engine.make_url(url)
    except sqlalchemy.exc.ArgumentError:
        return None   # the engine reports it
    if parsed.get_backend_name() != 'sqlite' or parsed.database in (
            None, '', ':memory:') or parsed.database.startswith('file:'):
        return None
    directory = os.path.dirname(os.path.abspath(parsed.database))
    default = os.path.abspath(placement._default_state_dir())
    if directory == default or os.path.isdir(directory):
        return None
    return ('[ledger] connection %s: the directory %s does not exist; '
            'create it or correct the path (only the default state '
            'directory %s is created)' % (url, directory, default))


def register_opts(conf):
    _util.register(conf, GROUP, opts)


def list_opts():
    return {GROUP: opts}


def register_opts_once(conf):
    """Register ``[ledger]`` unless it is there (filters run inside
    blazar-manager get Blazar's configuration object)."""
    try:
        conf.ledger
    except cfg.NoSuchOptError:
        register_opts(conf)
