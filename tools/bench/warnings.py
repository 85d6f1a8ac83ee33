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
"""Benchmark: one scan for warnings over a large ledger, and sending them.

A real ledger (a SQLite file by default, ``--ledger-url`` for PostgreSQL
or MariaDB) is seeded with ``--leases`` leases (default 100000) over
``--projects`` projects (default 10000): a credit allocation in every
project with what its leases were charged (about 30 % of the projects
past 75 % of it, 5 % past 100 %), some allocations ending within the
lead times (half of them followed by another allocation), shares of the
credits for the users of one project in ten, and leases over the last six
months and the next month, some ending within the 48 h and 1 h lead
times. Then:

1. one scan (:func:`placement_quota.warning.scan.scan`), timed, its SQL
   statements counted (``scan_s``, ``scan_queries``; goal: under 2 s).
   The same scan over the same number of leases in ten times fewer
   projects, seeded first in the same database, gives
   ``scan_queries_small``: the goal is the same number (the scan's
   statements do not depend on the number of projects);
2. what it found is recorded (:func:`placement_quota.warning.record.
   record`), and ``--send`` of it (default 2000) delivered by
   ``--workers`` dispatchers at once (threads, default 2, each with its
   own SMTP connection) through the real e-mail channel into a real SMTP
   server on loopback (aiosmtpd): ``sent_per_s``, and ``duplicates``,
   the messages the server received for a warning it had already
   received (by their ``X-Placement-Quota-Warning`` header; must be 0);
3. the next scan, everything found being recorded: ``rescan_s`` and
   ``rescan_found`` (nothing new: 0).

There are no published figures of another service to compare with:
Chameleon's and coral-credits' warnings are scripts and portal jobs
without any.

    python tools/bench/warnings.py [--leases 100000] [--projects 10000]
        [--send 2000] [--workers 2] [--ledger-url URL]

Prints one JSON object on stdout -- ``{"leases", "projects", "scan_s",
"scan_queries", "sent", "sent_per_s", "duplicates"}`` and the details --
and a summary on stderr; exits 1 when a warning was received twice, sent
and not received, or found again by the next scan.
"""

import argparse
import collections
import datetime
import json
import multiprocessing
import os
import random
import shutil
import sys
import tempfile
import threading
import time
import uuid

import sqlalchemy as sa

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# Run as a script, this directory comes first on the path, and this file
# would be the standard library's "warnings" to any later import of it.
if sys.path and os.path.abspath(sys.path[0] or os.curdir) == HERE:
    del sys.path[0]
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from placement_quota import conf as pq_conf  # noqa: E402
from placement_quota.ledger import models  # noqa: E402
from placement_quota.ledger import store  # noqa: E402
from placement_quota.warning import dispatch  # noqa: E402
from placement_quota.warning import mail  # noqa: E402
from placement_quota.warning import record  # noqa: E402
from placement_quota.warning import scan  # noqa: E402
from tests.fixtures import smtp  # noqa: E402
from tools.bench import common  # noqa: E402
from tools.bench import policies  # noqa: E402

GOAL_SCAN_S = 2.0
#: Credits of every project's allocation.
ALLOCATION = 1000
#: Users of each project.
USERS = 3
#: One project in this many gives its users shares of its credits.
SHARES_EVERY = 10
#: Rows a bulk insert sends at once.
CHUNK = 5000
HOUR = datetime.timedelta(hours=1)
DAY = datetime.timedelta(days=1)


def positive_or_zero(text):
    """An argparse type: an integer of at least 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError('must be at least 0, not %s' % text)
    return value


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--leases', type=common.positive, default=100000)
    parser.add_argument('--projects', type=common.positive, default=10000)
    parser.add_argument('--send', type=positive_or_zero, default=2000,
                        help='At most this many of the warnings found are '
                             'sent (0: none; the scan alone).')
    parser.add_argument('--workers', type=common.positive, default=2,
                        help='Dispatchers sending at once (threads, each '
                             'with its own SMTP connection).')
    parser.add_argument('--ledger-url',
                        help='Ledger URL (default: a SQLite file in a '
                             'temporary directory). The bench empties its '
                             'tables: give it a database of its own.')
    parser.add_argument('--seed', type=int, default=42)
    args = parser.parse_args(argv)
    if args.projects > args.leases:
        parser.error('--projects (%d) must not be more than --leases (%d)'
                     % (args.projects, args.leases))
    return args


# --- seeding -----------------------------------------------------------------

def _used_fraction(rng):
    """What a project spent of its allocation: 70 % of the projects under
    75 %, 15 % from 75 to 90 %, 10 % from 90 to 100 %, 5 % past it."""
    draw = rng.random()
    if draw < 0.70:
        return rng.uniform(0.05, 0.74)
    if draw < 0.85:
        return rng.uniform(0.75, 0.89)
    if draw < 0.95:
        return rng.uniform(0.90, 0.99)
    return rng.uniform(1.0, 1.1)


def _allocation_end(rng, now):
    """An allocation's end: 3 % within a day, 5 % within a week, the
    others from a month to a year away."""
    draw = rng.random()
    if draw < 0.03:
        return now + datetime.timedelta(minutes=rng.randint(60, 23 * 60))
    if draw < 0.08:
        return now + datetime.timedelta(minutes=rng.randint(25 * 60,
                                                            6 * 24 * 60))
    return now + datetime.timedelta(days=rng.randint(30, 365))


def _lease_end(rng, now):
    """A lease's end: 70 % in the last six months (ended), 26 % from 48
    hours to a month away, 3 % within 48 hours, 1 % within the hour."""
    draw = rng.random()
    if draw < 0.70:
        return now - datetime.timedelta(minutes=rng.randint(1, 180 * 1440))
    if draw < 0.96:
        return now + datetime.timedelta(minutes=rng.randint(48 * 60 + 1,
                                                            30 * 1440))
    if draw < 0.99:
        return now + datetime.timedelta(minutes=rng.randint(61, 48 * 60))
    return now + datetime.timedelta(minutes=rng.randint(1, 60))


def _state(start, end, now):
    if end <= now:
        return models.TERMINATED
    return models.ACTIVE if start <= now else models.PENDING


def seed(ledger, leases, projects, now, rng):
    """Bulk-insert ``leases`` leases over ``projects`` projects, their
    allocations, charges and shares; return the counts inserted."""
    allocations, shares = [], []
    project_ids = ['project-%05d' % i for i in range(projects)]
    used = {}
    for index, pid in enumerate(project_ids):
        end = _allocation_end(rng, now)
        allocations.append(dict(
            id=index + 1, project_id=pid,
            amount=store.to_micro(ALLOCATION),
            start_date=now - 180 * DAY, end_date=end, created_at=now))
        used[pid] = _used_fraction(rng) * ALLOCATION
        if end < now + 7 * DAY and rng.random() < 0.5:
            # Another allocation takes over at its end: no warning.
            allocations.append(dict(
                id=projects + index + 1, project_id=pid,
                amount=store.to_micro(ALLOCATION), start_date=end,
                end_date=end + 180 * DAY, created_at=now))
        if index % SHARES_EVERY == 0:
            for user in range(2):
                shares.append(dict(
                    project_id=pid, user_id='%s-user-%d' % (pid, user),
                    amount=store.to_micro(ALLOCATION * 0.4),
                    created_at=now))
    rows = []
    for index in range(leases):
        pid = project_ids[index % projects]
        end = _lease_end(rng, now)
        start = end - datetime.timedelta(minutes=rng.randint(60, 7 * 1440))
        rows.append(dict(
            id=index + 1, project_id=pid,
            lease_id=str(uuid.UUID(int=rng.getrandbits(128))),
            provisional_key='bench-%d' % index, name='bench-%d' % index,
            user_id='%s-user-%d' % (pid, rng.randrange(USERS)),
            start_date=start, end_date=end, effective_end=end,
            duration_s=int((end - start).total_seconds()),
            state=_state(start, end, now), amounts={'hosts': 1},
            lease={'name': 'bench-%d' % index, 'reservations': []},
            hourly_rate=0, charged=0, allocation_id=(index % projects) + 1,
            resource_type='physical:host', created_at=start - HOUR))
    # Each project's spending over its leases, by their length.
    lengths = collections.defaultdict(int)
    for row in rows:
        lengths[row['project_id']] += row['duration_s']
    charges = []
    for row in rows:
        pid = row['project_id']
        amount = store.to_micro(used[pid] * row['duration_s'] /
                                lengths[pid])
        row['charged'] = amount
        charges.append(dict(project_id=pid, lease_row=row['id'],
                            allocation_id=row['allocation_id'],
                            amount=amount, kind=models.CHARGE_CREATE,
                            at=row['created_at']))
    with ledger.engine.begin() as connection:
        for table, values in ((models.credit_allocations, allocations),
                              (models.leases, rows),
                              (models.charges, charges),
                              (models.credit_user_shares, shares)):
            for chunk in range(0, len(values), CHUNK):
                connection.execute(table.insert(),
                                   values[chunk:chunk + CHUNK])
    policies.analyze(ledger.engine)
    return {'allocations': len(allocations), 'leases': len(rows),
            'charges': len(charges), 'shares': len(shares)}


def empty(ledger):
    """Delete every row the bench writes (children first)."""
    with ledger.engine.begin() as connection:
        for table in (models.warnings, models.charges, models.leases,
                      models.credit_user_shares, models.credit_allocations):
            connection.execute(table.delete())


# --- measuring ---------------------------------------------------------------

class StatementCounter:
    """Counts the SQL statements ``engine`` executes while counting."""

    def __init__(self, engine):
        self.count = 0
        self.counting = False
        sa.event.listen(engine, 'before_cursor_execute', self._executed)

    def _executed(self, *args, **kwargs):
        if self.counting:
            self.count += 1

    def __enter__(self):
        self.count, self.counting = 0, True
        return self

    def __exit__(self, *exc):
        self.counting = False


def timed_scan(ledger, conf, now):
    """``(notices, seconds, statements)`` of one scan at ``now``."""
    with StatementCounter(ledger.engine) as counter:
        began = time.perf_counter()
        found = scan.scan(ledger, conf, now)
        elapsed = time.perf_counter() - began
    return found, elapsed, counter.count


def configure(directory, url, smtp_port=None):
    """The configuration of the bench: the ledger at ``url``, the e-mail
    channel through the SMTP server on ``smtp_port``, the default lead
    times and thresholds."""
    path = os.path.join(directory, 'bench.conf')
    with open(path, 'w') as f:
        f.write('[database]\nconnection = %s\n'
                '[warnings]\nchannels = email\nsmtp_host = 127.0.0.1\n'
                'smtp_port = %d\n'
                'mail_from = Cloud reservations <reservations@bench.example>'
                '\n' % (url, smtp_port or 25))
    return pq_conf.new_config([], config_files=[path])


class BenchRecipients:
    """The bench's stand-in for :class:`~placement_quota.warning.
    recipients.Recipients`: Keystone cannot be asked for 10,000 projects'
    users here, so each user has a fixed address and each project two
    members."""

    def addresses(self, notice):
        if notice.user_id:
            return [(notice.user_id, '%s@bench.example' % notice.user_id)]
        return [('member %d' % i, 'member-%d@%s.bench.example' % (
            i, notice.project_id)) for i in range(2)]

    def describe(self, notice):
        return 'user %s' % notice.user_id if notice.user_id else \
            'the members of project %s' % notice.project_id


def deliver(conf, ledger, limit, workers):
    """Deliver up to ``limit`` recorded warnings with ``workers``
    dispatchers at once; ``(outcomes, seconds)``."""
    lock = threading.Lock()
    left = [limit]
    outcomes = collections.Counter()
    errors = []

    def work():
        sender = dispatch.Dispatcher(
            conf, ledger, [mail.MailChannel(conf,
                                            recipients=BenchRecipients())])
        try:
            while True:
                with lock:
                    batch = min(left[0], 20)
                    left[0] -= batch
                if not batch:
                    return
                held = record.claim(ledger, ledger.clock(),
                                    conf.warnings.claim_timeout,
                                    limit=batch)
                with lock:
                    left[0] += batch - len(held)
                if not held:
                    return
                for recorded in held:
                    outcome = sender.deliver(recorded)
                    with lock:
                        outcomes[outcome] += 1
        except Exception as exc:
            errors.append(exc)
        finally:
            sender.close()

    threads = [threading.Thread(target=work) for _ in range(workers)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    if errors:
        raise errors[0]
    return outcomes, elapsed


def _serve(connection):
    """The SMTP sink's process: its port, then, when told, the number of
    messages it received and their warning keys."""
    sink = smtp.SmtpSink()
    sink.setUp()
    try:
        connection.send(sink.port)
        connection.recv()
        connection.send((len(sink.envelopes), sink.keys()))
    finally:
        sink.cleanUp()


class SinkProcess:
    """The test suite's SMTP sink (aiosmtpd) in a process of its own, as
    a mail server is: parsing what it receives does not take the sending
    process's CPU."""

    def __init__(self):
        context = multiprocessing.get_context('fork')
        self._connection, theirs = context.Pipe()
        self.process = context.Process(target=_serve, args=(theirs,),
                                       daemon=True)

    def start(self):
        """Start it; its port."""
        self.process.start()
        if not self._connection.poll(30):
            raise RuntimeError('The SMTP sink did not start in 30 s')
        return self._connection.recv()

    def stop(self):
        """Stop it; ``(messages received, their warning keys)``."""
        self._connection.send('stop')
        if not self._connection.poll(60):
            self.process.terminate()
            raise RuntimeError('The SMTP sink did not answer in 60 s')
        found = self._connection.recv()
        self.process.join(30)
        return found


def received(messages, keys):
    """``(messages, unique warnings, duplicates)`` the sink received:
    duplicates are the messages of a warning received before."""
    return messages, len(set(keys)), len(keys) - len(set(keys))


def judge(scan_s, scan_queries, scan_queries_small, duplicates):
    return {'goal_scan_s': GOAL_SCAN_S,
            'goal_met': (scan_s < GOAL_SCAN_S and
                         scan_queries == scan_queries_small and
                         duplicates == 0)}


def run(args):
    rng = random.Random(args.seed)
    directory = tempfile.mkdtemp(prefix='pq-bench-warnings-')
    url = args.ledger_url or 'sqlite:///%s' % os.path.join(
        directory, 'ledger.sqlite')
    now = datetime.datetime.utcnow().replace(second=0, microsecond=0)
    sink = SinkProcess()
    port = sink.start()
    # Seeding and emptying the tables take longer than the statement
    # timeout of a service's ledger on a server database: a ledger
    # without one does them. What is measured runs on a ledger as the
    # service opens it.
    bulk = store.Ledger(url, migrate=True, statement_timeout=0)
    ledger = store.Ledger(url)
    ledger.clock = lambda: max(now, datetime.datetime.utcnow())
    try:
        conf = configure(directory, url, port)
        empty(bulk)
        # The same leases over ten times fewer projects: the statements
        # of a scan must not depend on the number of projects.
        small_projects = max(1, args.projects // 10)
        seed(bulk, args.leases, small_projects, now, random.Random(
            args.seed + 1))
        _, small_s, small_queries = timed_scan(ledger, conf, now)
        empty(bulk)
        began = time.perf_counter()
        seeded = seed(bulk, args.leases, args.projects, now, rng)
        seed_s = time.perf_counter() - began
        found, scan_s, scan_queries = timed_scan(ledger, conf, now)
        began = time.perf_counter()
        recorded = record.record(ledger, found, now)
        record_s = time.perf_counter() - began
        # The next scan, as every scan_interval: everything found is
        # recorded, so it finds nothing new.
        again, rescan_s, _ = timed_scan(ledger, conf, now)
        outcomes, send_s = deliver(conf, ledger, min(args.send, recorded),
                                   args.workers)
        states = record.counts(ledger)
    finally:
        messages, keys = sink.stop()
        ledger.dispose()
        bulk.dispose()
        shutil.rmtree(directory, ignore_errors=True)
    messages, unique, duplicates = received(messages, keys)
    sent = outcomes['sent']
    result = {
        'leases': args.leases, 'projects': args.projects,
        'scan_s': round(scan_s, 3), 'scan_queries': scan_queries,
        'sent': sent,
        'sent_per_s': round(sent / send_s, 1) if send_s and sent else 0.0,
        'duplicates': duplicates,
        'scan_queries_small': small_queries,
        'scan_s_small': round(small_s, 3),
        'projects_small': small_projects,
        'found': len(found),
        'found_by_kind': dict(sorted(collections.Counter(
            n.kind for n in found).items())),
        'recorded': recorded, 'record_s': round(record_s, 3),
        'rescan_s': round(rescan_s, 3), 'rescan_found': len(again),
        'outcomes': dict(sorted(outcomes.items())),
        'messages_received': messages, 'warnings_received': unique,
        'states': dict(sorted(states.items())),
        'send_s': round(send_s, 2), 'workers': args.workers,
        'seeded': seeded, 'seed_s': round(seed_s, 1),
        'ledger': url.split(':')[0],
    }
    result.update(judge(scan_s, scan_queries, small_queries, duplicates))
    return result


def summary(result):
    return (
        'warnings, %d leases over %d projects (%s): scan %.3f s (goal < '
        '%.0f s), %d statements (%d over %d projects: %s); %d found; %d '
        'sent in %.1f s, %.1f/s by %d dispatchers; %d duplicates (goal 0). '
        'Anchor: none (no published figures for another service\'s '
        'warnings).\n' % (
            result['leases'], result['projects'], result['ledger'],
            result['scan_s'], GOAL_SCAN_S, result['scan_queries'],
            result['scan_queries_small'], result['projects_small'],
            'the same' if result['scan_queries'] ==
            result['scan_queries_small'] else 'NOT the same',
            result['found'], result['sent'], result['send_s'],
            result['sent_per_s'], result['workers'], result['duplicates']))


def wrong(result):
    """What the run shows is wrong (not slow): a warning received twice,
    one sent and not received, one found again by the next scan."""
    found = []
    if result['duplicates']:
        found.append('%d duplicate message(s)' % result['duplicates'])
    if result['warnings_received'] != result['sent']:
        found.append('%d warnings sent, %d received' % (
            result['sent'], result['warnings_received']))
    if result['rescan_found']:
        found.append('the next scan found %d warnings again'
                     % result['rescan_found'])
    return found


def main(argv=None):
    args = parse_args(argv)
    result = run(args)
    print(json.dumps(result))
    sys.stderr.write(summary(result))
    problems = wrong(result)
    if problems:
        sys.stderr.write('WRONG: %s\n' % '; '.join(problems))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
