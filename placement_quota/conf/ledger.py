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
"""``[ledger]`` and ``[database]``: where the record of allowed leases is
kept.

The ledger's database is oslo.db's ``[database] connection``; the older
``[ledger] connection`` is its deprecated alias (:func:`connection` says
which one is in force). Inside blazar-manager, whose ``[database]`` is
Blazar's own database, the filters' ledger is ``[ledger] connection``.
"""

import collections
import copy
import os
import weakref

from oslo_config import cfg
from oslo_db import options as db_options
from oslo_log import log as logging
import sqlalchemy.engine
import sqlalchemy.exc

from placement_quota.conf import _util
from placement_quota.conf import placement

LOG = logging.getLogger(__name__)

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
        deprecated_for_removal=True,
        deprecated_reason='The ledger is [database] connection (oslo.db), '
                          'which wins when both are set. Inside '
                          'blazar-manager, whose [database] is Blazar\'s '
                          'database, this option stays the ledger.',
        help='SQLAlchemy URL of the ledger database: the deprecated alias '
             'of [database] connection.'),
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
             'PostgreSQL: lock_timeout of each lock; MySQL/MariaDB: '
             'innodb_lock_wait_timeout of each connection.'),
    cfg.IntOpt(
        'connect_timeout', default=10, min=2,
        help='PostgreSQL and MySQL/MariaDB: seconds to connect to the '
             'database (PostgreSQL: also for a pooled connection to answer '
             'its check when a request takes it); a database that does not '
             'answer in time makes the request answer 503. Not used with '
             'SQLite.'),
    cfg.IntOpt(
        'statement_timeout', default=30, min=0,
        help='PostgreSQL and MariaDB: seconds one statement may run; the '
             'server cancels it then (PostgreSQL\'s statement_timeout, '
             'MariaDB\'s max_statement_time; MySQL has no such limit for '
             'writes and is not given one) and the request answers 503. A '
             'server that does not answer at all (frozen, unreachable) is '
             'given up by the service after max(statement_timeout, '
             'lock_timeout) + 2 seconds (MySQL/MariaDB: the read timeout '
             'of the connection). Lock waits are statements too: keep it '
             'at least lock_timeout. 0: no limit (nor the service\'s own). '
             'Migrations ("db sync") run without it. Not used with '
             'SQLite.'),
    cfg.IntOpt(
        'conflict_attempts', default=5, min=1,
        help='How many times in all an admission is run when a competing '
             'transaction wrote the same ledger rows and the database '
             'rolled it back (MySQL/MariaDB: a deadlock; Galera: a '
             'certification conflict at commit or a brute-force abort). '
             'Each attempt reads the ledger again and decides again, after '
             'a short random pause that grows with each attempt; after the '
             'last, the request answers 503. 1: never run again.'),
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
             'reused; 0 reads them for every lease. With [enforcement] '
             'capacity_max_age, a host the capacity view knows is taken '
             'from it (no call) while the view is younger than this.'),
]


#: The ``[database]`` options of placement-quota's own configuration:
#: oslo.db's, with the ledger's default connection (see
#: :func:`register_opts`).
DATABASE_GROUP = cfg.OptGroup(
    'database', title='Ledger database (oslo.db)',
    help='The ledger database: ``connection`` is its SQLAlchemy URL '
         '(SQLite in the state directory by default; '
         '``postgresql+psycopg2://...`` or '
         '``mysql+pymysql://user:pass@host/db?charset=utf8mb4`` for '
         'several service processes or hosts); the pool and retry options '
         'are oslo.db\'s. ``[ledger]`` holds the ledger\'s timeouts.')

# IDs of the ConfigOpts whose [database] we registered (their values:
# the ConfigOpts, weakly), as opposed to a host's (blazar-manager's).
_OWN_DATABASE = weakref.WeakValueDictionary()
# Warnings already logged (each once per process).
_warned = set()

#: The ledger URL in force and the option it comes from: ``option`` is
#: ``[database] connection``, ``[ledger] connection`` or None (the
#: default).
Connection = collections.namedtuple('Connection', 'url option')


def _database_opts():
    """oslo.db's ``[database]`` options, the ledger's default in the
    sample."""
    opts = copy.deepcopy(db_options.database_opts)
    for opt in opts:
        if opt.dest == 'connection':
            opt.default = _default_connection()
            opt.sample_default = ('sqlite:///$XDG_STATE_HOME/'
                                  'placement-quota/ledger.sqlite')
    return opts


def _is_set(conf, name, group):
    """Whether an operator set ``[group] name`` (a file, the command line,
    the environment, an override), not left to its default."""
    location = conf.get_location(name, group).location
    return location not in (cfg.Locations.opt_default,
                            cfg.Locations.set_default)


def _warn_once(key, message, *args):
    if key not in _warned:
        _warned.add(key)
        LOG.warning(message, *args)


def owns_database(conf):
    """Whether ``[database]`` of ``conf`` is the ledger's: registered by
    placement-quota, not by a host (blazar-manager's is Blazar's own
    database)."""
    return _OWN_DATABASE.get(id(conf)) is conf


def connection(conf):
    """The :class:`Connection` of the ledger of ``conf``.

    ``[database] connection`` when set; else the deprecated ``[ledger]
    connection`` when set (a warning, once); else the default SQLite file
    in the state directory. Both set: ``[database]`` wins, and a warning
    (once) says so. Where ``[database]`` is a host's (inside
    blazar-manager), ``[ledger] connection`` alone counts.
    """
    ledger_set = _is_set(conf, 'connection', GROUP.name)
    if not owns_database(conf):
        return Connection(conf.ledger.connection,
                          '[ledger] connection' if ledger_set else None)
    if _is_set(conf, 'connection', DATABASE_GROUP.name):
        if ledger_set:
            _warn_once('both', '[database] connection and the deprecated '
                       '[ledger] connection are both set: the ledger is '
                       '[database] connection; remove [ledger] '
                       'connection.')
        return Connection(conf.database.connection, '[database] connection')
    if ledger_set:
        _warn_once('deprecated', '[ledger] connection is deprecated: set '
                   'the ledger\'s URL in [database] connection instead.')
        return Connection(conf.ledger.connection, '[ledger] connection')
    return Connection(conf.database.connection, None)


#: The ``[database]`` options the ledger's MySQL/MariaDB engine takes
#: from oslo.db's (keyword arguments of oslo.db's ``create_engine``).
_ENGINE_OPTIONS = ('mysql_sql_mode', 'mysql_wsrep_sync_wait',
                   'connection_recycle_time', 'max_overflow', 'pool_timeout',
                   'connection_debug', 'connection_trace')


def database_options(conf):
    """oslo.db's ``[database]`` engine options of ``conf`` (``{}`` where
    ``[database]`` is a host's); ``[ledger] pool_size`` stays the pool's
    size."""
    if not owns_database(conf):
        return {}
    return {name: conf.database[name] for name in _ENGINE_OPTIONS}


def describe(conf):
    """The ledger of ``conf`` for logs and banners: its URL without a
    password, and where it comes from (the default or the option)."""
    url, option = connection(conf)
    try:
        shown = sqlalchemy.engine.make_url(url).render_as_string(
            hide_password=True)
    except sqlalchemy.exc.ArgumentError:
        shown = url
    return '%s (%s)' % (shown, option or 'the default')


def missing_directory(url, option='[database] connection'):
    """The error message when ``url`` (the value of ``option``) is a SQLite
    file whose directory does not exist and is not the default state
    directory (which is created), else None: a typo in the path must not
    create a new, empty ledger."""
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
    return ('%s %s: the directory %s does not exist; '
            'create it or correct the path (only the default state '
            'directory %s is created)' % (option, url, directory, default))


def register_opts(conf):
    """Register ``[ledger]``, and oslo.db's ``[database]`` with the
    ledger's default connection unless ``conf`` has a ``[database]``
    already (blazar-manager's, Blazar's own database: left alone)."""
    _util.register(conf, GROUP, opts)
    try:
        conf.database.connection
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
        conf.register_group(cfg.OptGroup(
            DATABASE_GROUP.name, title=DATABASE_GROUP.title,
            help=DATABASE_GROUP.help))
        db_options.set_defaults(conf, connection=_default_connection())
        _OWN_DATABASE[id(conf)] = conf


def list_opts():
    return {GROUP: opts, DATABASE_GROUP: _database_opts()}


def register_opts_once(conf):
    """Register ``[ledger]`` unless it is there (filters run inside
    blazar-manager get Blazar's configuration object)."""
    try:
        conf.ledger
    except cfg.NoSuchOptError:
        register_opts(conf)
