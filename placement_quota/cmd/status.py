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
"""``placement-quota-status upgrade check`` (oslo.upgradecheck).

Run before restarting the services on new code, as ``nova-status`` and
``placement-status`` are. Each check answers Success, Warning or Failure;
the command exits with the worst: 0 success, 1 warning, 2 failure, 255 the
checks could not run.

Ledger schema
    The ledger database is at the schema this code needs (alembic head).
    Never changes it: a SQLite file set in ``[database] connection`` that
    does not exist is a failure, not a new database. The default SQLite
    file (in the state directory), which serve and listen create when they
    first need it, may not exist yet: a success when no enabled filter
    keeps a ledger (serve on its default filters never creates it), else a
    warning.
Ledger on Galera
    When the ledger is on MySQL/MariaDB and that is a Galera node: the node
    is Primary, Synced and ready (else a failure: no admission, and no
    ``db sync``, now), ``binlog_format`` is ``ROW`` (else a failure), and
    a warning for what loses data or admissions: an
    ``innodb_flush_log_at_trx_commit`` other than 1, ``wsrep_sync_wait`` 0
    on the ledger's connections, fewer than three nodes
    (:mod:`placement_quota.ledger.db.galera`). Any other database: a
    success that says it is no Galera cluster.
Placement API
    The configured Placement answers, with microversion 1.29 or later (the
    oldest placement-quota negotiates). Without ``[placement]``: a warning,
    as ``serve`` would then run on the embedded Placement.
Keystone limits
    With ``[limits] source = keystone``: Keystone answers
    ``GET /v3/limits/model`` with a model placement-quota implements.
Blazar API
    With ``[blazar]``: Blazar answers ``GET /leases`` to our credentials.
Warnings
    ``[warnings]`` can work: e-mail has its ``smtp_host`` and
    ``mail_from``, ``end_idle_after`` is not shorter than ``idle_after``
    (failure otherwise); which channels send.
"""

import os
import sys

from oslo_config import cfg
from oslo_log import log as logging
from oslo_upgradecheck import upgradecheck
import sqlalchemy

from placement_quota import conf as pq_conf
from placement_quota.conf import ledger as ledger_conf
from placement_quota.conf import placement as placement_conf
from placement_quota.conf import warnings as warnings_conf
from placement_quota.filters import chain
from placement_quota.identity import limits as identity_limits
from placement_quota.identity import projects
from placement_quota.ledger.db import engine as ledger_engine
from placement_quota.ledger.db import galera
from placement_quota.ledger import store
from placement_quota.placement import client as placement_client
from placement_quota.reconcile import readers

#: The oldest Placement microversion placement-quota works with.
MIN_PLACEMENT_VERSION = (1, 29)

Code = upgradecheck.Code
Result = upgradecheck.Result


def _first_line(exc):
    lines = str(getattr(exc, 'orig', None) or exc).strip().splitlines()
    return lines[0] if lines else exc.__class__.__name__


def _sqlite_file(url):
    """The path of a SQLite ledger URL, else None."""
    try:
        parsed = sqlalchemy.engine.make_url(url)
    except sqlalchemy.exc.ArgumentError:
        return None
    if parsed.get_backend_name() != 'sqlite' or parsed.database in (
            None, '', ':memory:') or parsed.database.startswith('file:'):
        return None
    return parsed.database


class Checks(upgradecheck.UpgradeCommands):
    """placement-quota's upgrade checks."""

    def __init__(self, conf):
        super().__init__()
        self.conf = conf

    def _ledger_filters(self):
        """The enabled filters that keep a ledger, or None when the
        filters cannot be loaded."""
        try:
            classes = chain.available_filter_classes(self.conf)
        except Exception:
            return None
        return [name for name in self.conf.enforcement.enabled_filters
                if getattr(classes.get(name), 'uses_ledger', False)]

    def _missing_default_ledger(self, path):
        """The result for the default SQLite ledger when its file does not
        exist: the services create it when they first need it."""
        using = self._ledger_filters()
        if using == []:
            return Result(Code.SUCCESS, 'No ledger database at %s yet: no '
                                        'filter of [enforcement] '
                                        'enabled_filters keeps one; serve '
                                        'and listen create it at this '
                                        'schema when they first need it.'
                          % path)
        return Result(Code.WARNING, 'No ledger database at %s (the default '
                                    'SQLite ledger, in the state directory '
                                    'of the user running this check): serve '
                                    'and listen create it when they start. '
                                    'If the services run as another user, '
                                    'give this check their [database] '
                                    'connection.' % path)

    def _check_ledger(self):
        url, option = ledger_conf.connection(self.conf)
        path = _sqlite_file(url)
        if path is not None and not os.path.exists(path):
            if option is None:
                return self._missing_default_ledger(path)
            return Result(Code.FAILURE, 'No ledger database at %s (%s): run '
                                        '"placement-quota db sync".'
                          % (path, option))
        try:
            ledger = store.Ledger.from_conf(self.conf, migrate=False)
        except Exception as exc:
            return Result(Code.FAILURE, _first_line(exc))
        try:
            revision = ledger.current_revision()
        finally:
            ledger.engine.dispose()
        return Result(Code.SUCCESS, 'The ledger at %s is at schema revision '
                                    '%s.' % (ledger.describe(), revision))

    def _check_galera(self):
        url, option = ledger_conf.connection(self.conf)
        try:
            backend = sqlalchemy.engine.make_url(url).get_backend_name()
        except sqlalchemy.exc.ArgumentError:
            backend = None
        if backend not in ledger_engine.MYSQL:
            return Result(Code.SUCCESS, 'Not a Galera cluster: the ledger '
                                        'is on %s.' % (backend or url))
        group = self.conf.ledger
        try:
            engine = ledger_engine.create_engine(
                url, group.lock_timeout, 1, group.connect_timeout,
                group.statement_timeout,
                database=ledger_conf.database_options(self.conf))
            try:
                with engine.connect() as connection:
                    node = galera.read(connection)
            finally:
                engine.dispose()
        except Exception as exc:
            return Result(Code.FAILURE, 'Cannot read the state of the '
                                        'ledger database: %s'
                          % _first_line(exc))
        if node is None:
            return Result(Code.SUCCESS, 'Not a Galera cluster (wsrep_on is '
                                        'off).')
        found = galera.findings(node)
        if not found:
            return Result(Code.SUCCESS, 'The ledger is on %s; nothing loses '
                                        'data or admissions.'
                          % galera.describe(node))
        code = (Code.FAILURE if found[0][0] == galera.FAILURE
                else Code.WARNING)
        return Result(code, ' '.join(message for _, message in found))

    def _check_placement(self):
        kind = placement_conf.configured(self.conf)
        if kind in (None, 'embedded'):
            return Result(Code.WARNING, '%s: the services run on the '
                                        'embedded Placement, which is for '
                                        'trying placement-quota out.' % (
                                            '[placement] embedded = true'
                                            if kind else
                                            'No Placement in [placement]'))
        try:
            client = placement_client.PlacementClient.from_conf(
                self.conf, embedded_default=False)
            body = client.get('/')
            version = max(placement_client.parse_version(v['max_version'])
                          for v in body['versions'])
        except Exception as exc:
            return Result(Code.FAILURE, 'Cannot read the versions of '
                                        'Placement: %s' % _first_line(exc))
        shown = placement_client.version_string(version)
        if version < MIN_PLACEMENT_VERSION:
            return Result(Code.FAILURE, 'Placement at %s supports '
                                        'microversions up to %s; '
                                        'placement-quota needs %s.' % (
                                            client.description, shown,
                                            placement_client.version_string(
                                                MIN_PLACEMENT_VERSION)))
        return Result(Code.SUCCESS, 'Placement at %s supports microversion '
                                    '%s.' % (client.description, shown))

    def _check_keystone_limits(self):
        if self.conf.limits.source != 'keystone':
            return Result(Code.SUCCESS, 'Not used: [limits] source = %s.'
                                        % self.conf.limits.source)
        try:
            response = projects.connection(self.conf).identity.get(
                '/limits/model')
            response.raise_for_status()
            model = identity_limits.model_from_body(response.json())
        except Exception as exc:
            return Result(Code.FAILURE, 'Cannot read the limits model of '
                                        'Keystone: %s' % _first_line(exc))
        return Result(Code.SUCCESS, 'Keystone enforces limits with the %s '
                                    'model.' % model)

    def _check_blazar(self):
        try:
            reader = readers.BlazarReader.from_conf(self.conf)
        except Exception as exc:
            return Result(Code.FAILURE, '[blazar]: %s' % _first_line(exc))
        if reader is None:
            return Result(Code.SUCCESS, 'Not configured: no [blazar] '
                                        'credentials.')
        try:
            leases = reader.leases()
        except readers.BlazarError as exc:
            return Result(Code.FAILURE, str(exc))
        return Result(Code.SUCCESS, 'Blazar at %s answered with %d leases.'
                                    % (reader.description, len(leases)))

    def _check_warnings(self):
        group = self.conf.warnings
        problems = warnings_conf.problems(group)
        if problems:
            return Result(Code.FAILURE, ' '.join(
                p[0].upper() + p[1:] + '.' for p in problems))
        if not group.channels:
            return Result(Code.SUCCESS, 'No [warnings] channels: warnings '
                                        'are recorded, not sent.')
        return Result(Code.SUCCESS, 'Warnings are sent by %s.'
                                    % ' and '.join(group.channels))

    _upgrade_checks = (
        ('Ledger schema', _check_ledger),
        ('Ledger on Galera', _check_galera),
        ('Placement API', _check_placement),
        ('Keystone limits', _check_keystone_limits),
        ('Blazar API', _check_blazar),
        ('Warnings', _check_warnings),
    )


def main(argv=None):
    conf = cfg.ConfigOpts()
    pq_conf.register_opts(conf)
    logging.register_options(conf)
    conf.set_default('use_stderr', True)
    try:
        code = upgradecheck.main(
            conf, 'placement-quota', Checks(conf),
            argv=sys.argv[1:] if argv is None else argv)
    except cfg.Error as exc:
        print('placement-quota-status: %s' % exc, file=sys.stderr)
        return 255
    return code


if __name__ == '__main__':
    sys.exit(main())
