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
"""The accounts as a limits source: the embedded default's hierarchy.

:class:`AccountsSource` lays the accounts of the admin API (their parent
and limits) over another source, the limits file of ``[limits]``: an
account replaces the file's entry of the same project. The registered
limits stay the file's and the configuration's.

The accounts live in the ledger database, which another process (the admin
API) may change at any time, so the source answers a cheap
:meth:`~AccountsSource.version` (row count and summed generations) that
tells its readers when to build their tree again.
"""

import os

from oslo_log import log as logging
import sqlalchemy as sa

from placement_quota.conf import ledger as ledger_conf
from placement_quota.ledger import models
from placement_quota.limits import sources
from placement_quota.limits import tree as tree_mod

LOG = logging.getLogger(__name__)

#: How many accounts there are and the sum of their generations: any
#: change moves it (built once: it is read before every decision).
_VERSION = sa.select(
    sa.func.count(), sa.func.coalesce(sa.func.sum(
        models.accounts.c.generation), 0)).select_from(models.accounts)


class AccountsSource(sources.LimitSource):
    """``base`` with the accounts of the ledger laid over it.

    :param ledger: a callable returning the Ledger, or None when there is
        no ledger database yet (a SQLite file that does not exist: then
        there are no accounts, and reading limits creates no file).
    """

    local = False

    def __init__(self, base, ledger):
        self.base = base
        self._ledger = ledger

    def _engine(self):
        ledger = self._ledger()
        return None if ledger is None else ledger.engine

    def version(self):
        engine = self._engine()
        if engine is None:
            return (0, 0)
        try:
            with engine.connect() as connection:
                count, total = connection.execute(_VERSION).one()
        except sa.exc.OperationalError as exc:
            LOG.debug('No accounts table in the ledger (%s)', exc.orig)
            return (0, 0)
        return (count, int(total))

    def _accounts(self, project_ids=None):
        engine = self._engine()
        if engine is None:
            return {}
        t = models.accounts
        query = sa.select(t.c.account_id, t.c.parent_id, t.c.limits).where(
            t.c.deleted_at.is_(None))
        if project_ids is not None:
            query = query.where(t.c.account_id.in_(list(project_ids)))
        try:
            with engine.connect() as connection:
                return {r.account_id: r
                        for r in connection.execute(query)}
        except sa.exc.OperationalError as exc:
            LOG.debug('No accounts table in the ledger (%s)', exc.orig)
            return {}

    @staticmethod
    def _overlay(data, accounts):
        for account_id, row in accounts.items():
            old = data.projects.get(account_id)
            data.projects[account_id] = tree_mod.Project(
                account_id, row.parent_id, old.name if old else None,
                dict(row.limits or {}))
        return data

    def load(self):
        return self._overlay(self.base.load(), self._accounts())

    def refresh(self, project_ids):
        return self._overlay(self.base.refresh(project_ids),
                             self._accounts(project_ids))

    def project(self, project_id):
        found = self._accounts([project_id]).get(project_id)
        if found is None:
            return self.base.project(project_id)
        return tree_mod.Project(project_id, found.parent_id, None,
                                dict(found.limits or {}))


def ledger_if_present(conf):
    """A callable giving a read-only view of the ledger of ``conf`` (an
    object with ``engine``), or None while its SQLite file does not exist.

    The engine is this source's own and never migrates: the source is read
    inside admissions that hold the ledger's write lock, where opening the
    shared ledger (which migrates a SQLite file) would wait for that lock.
    """
    found = {}

    def get():
        url = sa.engine.make_url(ledger_conf.connection(conf).url)
        if url.get_backend_name() == 'sqlite' and url.database and \
                url.database != ':memory:' and \
                not os.path.exists(url.database):
            return None
        key = str(url)
        if key not in found:
            found.clear()
            found[key] = _ReadOnly(sa.create_engine(url))
        return found[key]
    return get


class _ReadOnly:
    def __init__(self, engine):
        self.engine = engine
