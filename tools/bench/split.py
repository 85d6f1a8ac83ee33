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
"""Where the milliseconds of a decision go, for the benchmarks that run the
service in their own process.

:class:`TimeSplit` watches a ledger's engine (SQLAlchemy's cursor events
and its dialect's commit) and a Placement client's requests, and adds up
the time spent in each part:

* ``placement``: Placement requests (the prepare steps read side by side,
  so this is the sum of their times, not the wall time they took);
* ``locks``: the statements that take the ledger's locks (``SELECT ...
  FOR UPDATE``/``FOR SHARE`` of a lock row, the ``lock_serial`` write of
  MariaDB, the insert of a missing lock row);
* ``ledger_reads``: the other ``SELECT`` statements;
* ``writes``: the other statements (``INSERT``, ``UPDATE``, ``DELETE``);
* ``commit``: the database's ``COMMIT``.

:meth:`TimeSplit.per_request` gives the mean milliseconds (and
statements) a request of each part between two :meth:`snapshot`\\ s.
"""

import threading
import time

from sqlalchemy import event

PARTS = ('placement', 'ledger_reads', 'locks', 'writes', 'commit')


def classify(statement):
    """The part (``locks``, ``ledger_reads`` or ``writes``) of the SQL
    ``statement``."""
    text = ' '.join(statement.split()).lower()
    if text.startswith('select'):
        if (' for update' in text or ' for share' in text or
                ' lock in share mode' in text):
            return 'locks'
        return 'ledger_reads'
    if 'lock_serial' in text or (
            text.startswith('insert') and ' into projects ' in text + ' '):
        return 'locks'
    return 'writes'


class TimeSplit:
    """Seconds and counts of each of :data:`PARTS`, added up from every
    thread of the process."""

    def __init__(self):
        self._lock = threading.Lock()
        self._local = threading.local()
        self.seconds = dict.fromkeys(PARTS, 0.0)
        self.counts = dict.fromkeys(PARTS, 0)

    def add(self, part, seconds):
        with self._lock:
            self.seconds[part] += seconds
            self.counts[part] += 1

    def watch_engine(self, engine):
        """Time every statement and commit of ``engine``."""
        @event.listens_for(engine, 'before_cursor_execute')
        def before(conn, cursor, statement, parameters, context, many):
            self._local.began = time.perf_counter()

        @event.listens_for(engine, 'after_cursor_execute')
        def after(conn, cursor, statement, parameters, context, many):
            began = getattr(self._local, 'began', None)
            if began is not None:
                self.add(classify(statement), time.perf_counter() - began)
                self._local.began = None

        dialect = engine.dialect
        commit = dialect.do_commit

        def timed_commit(dbapi_connection):
            began = time.perf_counter()
            try:
                return commit(dbapi_connection)
            finally:
                self.add('commit', time.perf_counter() - began)
        dialect.do_commit = timed_commit

    def watch_placement(self, client):
        """Time every request of the Placement client ``client``."""
        request = client.request

        def timed_request(*args, **kwargs):
            began = time.perf_counter()
            try:
                return request(*args, **kwargs)
            finally:
                self.add('placement', time.perf_counter() - began)
        client.request = timed_request

    def snapshot(self):
        with self._lock:
            return dict(self.seconds), dict(self.counts)

    @staticmethod
    def per_request(before, after, requests):
        """``{part: {"ms": mean ms a request, "statements": mean count}}``
        between the snapshots ``before`` and ``after`` of ``requests``
        requests (``statements`` counts Placement requests for
        ``placement``)."""
        (seconds0, counts0), (seconds1, counts1) = before, after
        requests = max(1, requests)
        return {part: {
            'ms': round((seconds1[part] - seconds0[part]) * 1000 / requests,
                        2),
            'statements': round((counts1[part] - counts0[part]) / requests,
                                2)} for part in PARTS}
