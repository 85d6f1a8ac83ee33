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
"""The fuzz harness: the real services, the properties, the counts.

Shared by tests/functional/test_fuzz.py and tools/fuzz.py.

:class:`Deployment` runs our enforcement service (all seven policy
filters) and the account admin API on real loopback ports, on a SQLite
ledger in a temporary directory or on a fresh PostgreSQL database, with
a real Placement (the embedded one, a subprocess of its own: the admin
API's move of everything scans every consumer of the cloud, so other
tests' consumers must not be there). Before each example the ledger is
put back to the same state (:meth:`Deployment.reset`), so every example
stands alone and hypothesis can replay and shrink it.

:func:`run` sends each scenario of :mod:`tests.fuzz_strategies` over HTTP
and checks, at every request, the properties below; each raises its own
exception class, so hypothesis reports (and shrinks) each broken property
as a bug of its own:

* :class:`ServerError` -- never a 5xx (nor a dropped connection);
* :class:`ErrorNotJSON` -- every error body is JSON (strict: no NaN or
  Infinity) with a ``message``;
* :class:`RejectedChangedLedger` -- a request answered 4xx changes nothing
  in the ledger (leases, credit allocations, charges, accounts). The one
  change the design makes: a check-create denied (403) is kept as an
  entry in state ``denied`` that reserves and charges nothing;
* :class:`DenialChangedBalance` -- a denial (403) changes no credit
  balance;
* :class:`RefundBeyondCharge` -- a 2xx on-end gives a project back at most
  what the entries it closed were charged;
* :class:`CreditsCreated` -- no credit allocation ever has more left than
  it was given (nothing is charged a negative amount);
* :class:`OtherProjectChanged` -- an enforcement call changes the ledger
  entries and charges of its own project only;
* :class:`TerminatedRevived` -- an entry once terminated stays terminated:
  its state, dates, amounts and charge never change again;
* :class:`LogForged` -- no line the services log holds a line break
  followed by a line the request wrote (:data:`fs.FORGED`);
* :class:`WebPageWrite` -- a state-changing admin call that a web page
  could make a browser send (a form or text body, an ``Origin``, a
  ``Host`` naming another site) never succeeds.
"""

import collections
import datetime
import http.client
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import traceback
import unittest

import fixtures
import hypothesis
from hypothesis import HealthCheck
import sqlalchemy as sa

from placement_quota.api.admin import app as admin
from placement_quota.ledger import models
from placement_quota.ledger import store
from placement_quota.placement import client as placement_client
from placement_quota.placement import embedded
from placement_quota import services as services_mod
from placement_quota.httpserver import server as wsgi_server
from tests.fixtures import enforcement as service_fixture
from tests.fixtures import postgresql
from tests.fixtures import process as processes
from tests import fuzz_strategies as fs

DATABASES = ('sqlite', 'postgresql')
FILTERS = ['MaximumReservationLengthFilter', 'ReservationSizeFilter',
           'LeaseCountFilter', 'NovaQuotaFilter', 'PlacementCapacityFilter',
           'CreditFilter', 'ProjectTreeLimitFilter', 'UserLimitFilter']
#: Seconds a request may take before it counts as no answer.
REQUEST_TIMEOUT = 60

TREE_LIMITS = """\
registered_limits: {hosts: 4, instances: 10, floatingips: 6, networks: 3}
projects:
  fuzz-root: {limits: {hosts: 8, instances: 16}}
  fuzz-child: {parent: fuzz-root}
  fuzz-other: {limits: {hosts: 2}}
"""
NOVA_LIMITS = """\
model: flat
registered_limits: {servers: 10, class:VCPU: 48, class:MEMORY_MB: 65536,
                    class:DISK_GB: 1000}
projects:
  fuzz-other: {limits: {servers: 2}}
"""
OPTIONS = {
    ('enforcement', 'enabled_filters'): FILTERS,
    ('enforcement', 'reservation_max_length'): 7 * 86400,
    ('enforcement', 'max_hosts_per_reservation'): 3,
    ('enforcement', 'max_instances_per_reservation'): 5,
    ('enforcement', 'max_floatingips_per_lease'): 4,
    ('enforcement', 'max_networks_per_lease'): 2,
    ('enforcement', 'max_leases_per_project'): 4,
    ('enforcement', 'max_leases_per_user'): 3,
    ('enforcement', 'max_hosts_per_user'): 3,
    ('enforcement', 'max_instances_per_user'): 8,
    ('enforcement', 'nova_quota_source'): 'file',
    ('enforcement', 'credit_instance_rate'): 0.2,
    ('enforcement', 'credit_class_rates'): {'VCPU': '0.1',
                                            'MEMORY_MB': '0.0001'},
    ('enforcement', 'credit_floatingip_rate'): 0.5,
    ('enforcement', 'credit_network_rate'): 1.0,
}


# --- Placement ------------------------------------------------------------

_placement = processes.OncePerProcess(
    'Fuzz Placement', lambda: embedded.ServerProcess(60),
    alive=lambda server: server.process.poll() is None)
_seeded = set()


def placement_server():
    """This process's own Placement, seeded with :data:`fs.HOSTS` and the
    consumer :data:`fs.CONSUMER` (once per server)."""
    server = _placement.get()
    if server.url not in _seeded:
        client = placement_client.PlacementClient.from_endpoint(
            server.url, embedded.NOAUTH_HEADERS)
        for name in fs.HOSTS:
            found = client.get('/resource_providers?name=%s' % name)
            if found['resource_providers']:
                continue
            provider = client.post('/resource_providers',
                                   json={'name': name}).json()
            client.put('/resource_providers/%s/inventories'
                       % provider['uuid'], json={
                           'resource_provider_generation':
                               provider['generation'],
                           'inventories': {
                               'VCPU': {'total': 16},
                               'MEMORY_MB': {'total': 32768},
                               'DISK_GB': {'total': 500}}})
        _seeded.add(server.url)
    return server


# --- properties -----------------------------------------------------------

class PropertyFailed(AssertionError):
    """A property of the fuzz suite does not hold.

    :func:`check` raises a subclass per property and per ``signature``
    (the server's exception and where it was raised, the field, the
    table...), one class for each, so that hypothesis tells distinct
    failures apart and shrinks each to its own minimal example.
    """

    #: The property, as the report names it.
    name = ''
    #: What tells this failure from another of the same property.
    signature = ()

    def __init__(self, step, index, answer, detail, server_log=''):
        self.step = step
        self.answer = answer
        self.detail = detail
        self.server_log = server_log
        super().__init__(_safe(
            '%s -- broken at step %d:\n    %r\n  answered %s %s\n  %s%s'
            % (self.name, index + 1, step, answer.status, answer.shown(),
               detail, '\n  server log: %s' % server_log
               if server_log else '')))


def _safe(text):
    """``text`` as any report can print it: lone surrogates (the service
    logs the project IDs it is sent) and NUL escaped."""
    return text.encode('utf-8', 'backslashreplace').decode(
        'utf-8').replace('\x00', '\\x00')


_FAILURES = {}
_FAILURES_LOCK = threading.Lock()


def failure(cls, signature):
    """The subclass of ``cls`` (a :class:`PropertyFailed`) for
    ``signature``; the same class for the same signature."""
    signature = tuple(signature)
    with _FAILURES_LOCK:
        if (cls, signature) not in _FAILURES:
            _FAILURES[cls, signature] = type(cls.__name__, (cls,), {
                'signature': signature, '__module__': cls.__module__,
                '__qualname__': cls.__qualname__})
        return _FAILURES[cls, signature]


def kind_of(error):
    """The property class (of :data:`PROPERTIES`) of ``error``."""
    for cls in type(error).__mro__:
        if cls in PROPERTIES or cls is NoAnswer:
            return cls
    return type(error)


class ServerError(PropertyFailed):
    name = 'never a 5xx'


class NoAnswer(ServerError):
    name = 'never a 5xx (nor a connection dropped without an answer)'


class ErrorNotJSON(PropertyFailed):
    name = 'every error body is JSON with a "message"'


class RejectedChangedLedger(PropertyFailed):
    name = 'a request answered 4xx changes nothing in the ledger'


class DenialChangedBalance(PropertyFailed):
    name = 'a denial (403) never changes a credit balance'


class RefundBeyondCharge(PropertyFailed):
    name = 'a 2xx on-end never gives back more than the charge'


class CreditsCreated(PropertyFailed):
    name = 'no allocation ever has more credits left than it was given'


class OtherProjectChanged(PropertyFailed):
    name = 'an enforcement call changes only its own project\'s entries'


class TerminatedRevived(PropertyFailed):
    name = ('a terminated entry stays terminated (its dates, amounts and '
            'charge never change again)')


class LogForged(PropertyFailed):
    name = 'a request cannot forge a line of the service\'s log'


class WebPageWrite(PropertyFailed):
    name = ('a state-changing admin call a web page could send (form or '
            'text body, foreign Origin or Host) never succeeds')


PROPERTIES = (ServerError, ErrorNotJSON, RejectedChangedLedger,
              DenialChangedBalance, RefundBeyondCharge, CreditsCreated,
              OtherProjectChanged, TerminatedRevived, LogForged,
              WebPageWrite)


class Answer:
    """An HTTP answer: ``status`` (None when there was none), headers,
    body bytes, and ``error`` (why there was no answer)."""

    def __init__(self, status, headers=None, body=b'', error=None):
        self.status = status
        self.headers = headers or {}
        self.body = body
        self.error = error

    def shown(self, limit=600):
        if self.error is not None:
            return '(no answer: %s)' % self.error
        text = self.body.decode('utf-8', 'backslashreplace')
        return text if len(text) <= limit else text[:limit] + '...'


def _reject_constant(name):
    raise ValueError('%s is not JSON' % name)


def error_body_problem(answer):
    """Why an error answer's body is not JSON with a message (or None)."""
    try:
        body = json.loads(answer.body.decode('utf-8'),
                          parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        return 'the body is not strict JSON: %s' % exc
    if not isinstance(body, dict):
        return 'the body is JSON but not an object'
    if not isinstance(body.get('message'), str) or not body['message']:
        return 'the body has no "message" string'
    return None


# --- the ledger -----------------------------------------------------------

class Snapshot:
    """Every row of the ledger's tables that a request may change."""

    def __init__(self, engine):
        with engine.connect() as connection:
            def rows(table, key):
                return {getattr(r, key): dict(r._mapping) for r in
                        connection.execute(sa.select(table))}
            self.leases = rows(models.leases, 'id')
            self.charges = rows(models.charges, 'id')
            self.allocations = rows(models.credit_allocations, 'id')
            self.accounts = rows(models.accounts, 'account_id')

    def spent(self):
        """{allocation id: micro-credits charged, net}."""
        spent = dict.fromkeys(self.allocations, 0)
        for charge in self.charges.values():
            if charge['allocation_id'] is not None:
                spent[charge['allocation_id']] = spent.get(
                    charge['allocation_id'], 0) + charge['amount']
        return spent

    def balances(self):
        """{project: micro-credits left over all its allocations}."""
        balances = collections.Counter()
        spent = self.spent()
        for allocation_id, row in self.allocations.items():
            balances[row['project_id']] += row['amount'] - spent[
                allocation_id]
        return dict(balances)


def _changed(before, after):
    """[(table, key, before row or None, after row or None)]."""
    changes = []
    for table in ('leases', 'charges', 'allocations', 'accounts'):
        old, new = getattr(before, table), getattr(after, table)
        for key in sorted(set(old) | set(new), key=repr):
            if old.get(key) != new.get(key):
                changes.append((table, key, old.get(key), new.get(key)))
    return changes


def _show_change(change):
    table, key, old, new = change
    if old is None:
        return '%s %r added: %s' % (table, key, _short_row(new))
    if new is None:
        return '%s %r removed: %s' % (table, key, _short_row(old))
    diff = {k: (old[k], new.get(k)) for k in old if old[k] != new.get(k)}
    return '%s %r (%s) changed: %s' % (
        table, key, old.get('project_id', old.get('account_id')),
        _short_row(diff))


def _short_row(row):
    text = repr({k: v for k, v in row.items() if k != 'lease'})
    return text if len(text) <= 400 else text[:400] + '...'


def _project_of_change(change):
    table, key, old, new = change
    return (new or old).get('project_id')


def _is_denial_record(change, project):
    table, key, old, new = change
    return (table == 'leases' and old is None and
            new['state'] == models.DENIED and new['charged'] == 0 and
            new['project_id'] == project)


def _normal(text):
    """``text`` without numbers, request IDs and which non-finite number:
    a signature part."""
    text = re.sub(r'req-[0-9a-f-]+', 'req-ID', text)
    text = re.sub(r'-?Infinity|NaN', 'NaN/Infinity', text)
    return re.sub(r'\d+', 'N', text)[:160]


def _tables(changes):
    return tuple(sorted({'%s %s' % (c[0], 'added' if c[2] is None else
                                    'removed' if c[3] is None else 'changed')
                         for c in changes}))


def _forged(records):
    """The logged messages in which a request forged a line."""
    found = []
    for record in records:
        try:
            message = record.getMessage()
        except Exception:
            continue
        if '\n' + fs.FORGED in message or '\r' + fs.FORGED in message:
            found.append(message)
    return found


def _web_page(step):
    """Why ``step`` is a call a web page could make (or None)."""
    headers = {k.lower(): v for k, v in step.headers}
    media = headers.get('content-type', '').split(';')[0].strip().lower()
    if media in fs.WEB_PAGE_TYPES and step.body is not fs.NO_BODY:
        return 'Content-Type %s' % headers['content-type']
    if 'origin' in headers:
        return 'Origin %s' % headers['origin']
    if 'host' in headers:
        return 'Host %s' % headers['host']
    return None


def check(step, index, answer, before, after, records=()):
    """Raise the :class:`PropertyFailed` of the first property that
    ``answer`` (to ``step``, which took the ledger from ``before`` to
    ``after``) breaks. ``records`` are what the services logged
    meanwhile (:class:`ServerLog`)."""
    text, cause = server_cause(records) or ('', ())
    status = answer.status

    def fail(cls, detail, *signature):
        raise failure(cls, (step.endpoint,) + signature)(
            step, index, answer, detail, text)

    if status is None:
        fail(NoAnswer, 'no HTTP answer', _normal(answer.error))
    if status >= 500:
        body = {}
        try:
            body = json.loads(answer.body)
        except ValueError:
            pass
        # Without a logged exception: the first words of the message
        # ("Cannot read consumer"), not the values it quotes.
        message = str(body.get('message') if isinstance(body, dict)
                      else answer.shown())
        fail(ServerError, '', status, *(cause or (
            _normal(' '.join(message.split()[:3])),)))
    if status >= 400 and step.method != 'HEAD':
        problem = error_body_problem(answer)
        if problem:
            fail(ErrorNotJSON, problem, status, _normal(problem))
    forged = _forged(records)
    if forged:
        fail(LogForged, 'logged: %r' % forged[:3])
    if step.endpoint == fs.ADMIN and step.method in (
            'PUT', 'POST', 'DELETE', 'PATCH') and 200 <= status < 400:
        why = _web_page(step)
        if why:
            fail(WebPageWrite, 'a %s with %s answered %s' % (
                step.method, why, status), why.split()[0])
    changes = _changed(before, after)
    if status == 403:
        delta = {p: after.balances().get(p, 0) - b
                 for p, b in before.balances().items()
                 if after.balances().get(p, 0) != b}
        if delta:
            fail(DenialChangedBalance, 'balance changes (micro-credits): %r'
                 % delta)
    if 400 <= status < 500:
        kept = [c for c in changes
                if not (status == 403 and step.endpoint == 'check-create'
                        and _is_denial_record(c, step.project))]
        if kept:
            fail(RejectedChangedLedger, '; '.join(
                _show_change(c) for c in kept[:5]), status, *_tables(kept))
    if 200 <= status < 300 and step.endpoint == 'on-end':
        given_back = {p: after.balances().get(p, 0) - b
                      for p, b in before.balances().items()}
        charged = collections.Counter()
        for table, key, old, new in changes:
            if table == 'leases' and old is not None:
                charged[old['project_id']] += max(0, old['charged'])
        over = {p: (d, charged[p]) for p, d in given_back.items()
                if d > charged[p]}
        if over:
            fail(RefundBeyondCharge, 'given back vs charged (micro-credits)'
                 ': %r' % over)
    spent = after.spent()
    negative = {a: s for a, s in spent.items() if s < 0}
    if negative:
        fail(CreditsCreated, 'allocations charged a negative total '
             '(micro-credits): %r' % negative)
    if step.endpoint != fs.ADMIN:
        others = [c for c in changes if c[0] in ('leases', 'charges') and
                  _project_of_change(c) != step.project]
        if others:
            fail(OtherProjectChanged, '; '.join(
                _show_change(c) for c in others[:5]), *_tables(others))
    revived = [_show_change(('leases', key, row, after.leases.get(key)))
               for key, row in before.leases.items()
               if row['state'] == models.TERMINATED and
               _settled(row) != _settled(after.leases.get(key))]
    if revived:
        fail(TerminatedRevived, '; '.join(revived[:5]))


#: The columns of a terminated entry that nothing changes any more.
SETTLED = ('project_id', 'state', 'start_date', 'end_date', 'effective_end',
           'charged', 'amounts', 'hourly_rate', 'allocation_id')


def _settled(row):
    return None if row is None else tuple(row[c] for c in SETTLED)


# --- the service's log ----------------------------------------------------

class ServerLog(logging.Handler):
    """What our services log while a request is handled."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.records = []

    def emit(self, record):
        self.records.append(record)

    def take(self):
        records, self.records = self.records, []
        return records


def _relative(path):
    marker = os.sep + 'placement_quota' + os.sep
    return 'placement_quota' + os.sep + path.split(marker, 1)[1] \
        if marker in path else os.path.basename(path)


def server_cause(records):
    """``(text, signature)`` of the first logged exception (its root
    cause, and the innermost frame of our code it went through), or
    None."""
    for record in records:
        if not record.exc_info or record.exc_info[1] is None:
            continue
        exc = record.exc_info[1]
        while exc.__cause__ is not None:
            exc = exc.__cause__
        frames = traceback.extract_tb(exc.__traceback__)
        ours = [f for f in frames
                if os.sep + 'placement_quota' + os.sep in f.filename]
        frame = (ours or frames or [None])[-1]
        where = ('%s:%d in %s' % (_relative(frame.filename), frame.lineno,
                                  frame.name) if frame else '?')
        text = '%s: %s (at %s; logged: %s)' % (
            type(exc).__name__, str(exc)[:300], where,
            record.getMessage()[:200])
        signature = (type(exc).__name__,
                     _relative(frame.filename) if frame else '?',
                     frame.name if frame else '?')
        return text, signature
    return None


# --- the deployment -------------------------------------------------------

def _write(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, 'w') as f:
        f.write(text)
    return path


class Deployment(fixtures.Fixture):
    """The enforcement service and the admin API on one ledger.

    :ivar database: ``sqlite`` or ``postgresql``.
    :ivar url: the enforcement service; :ivar admin_url: the admin API.
    """

    def __init__(self, database='sqlite', workdir=None):
        super().__init__()
        if database not in DATABASES:
            raise ValueError('database must be one of %s' % (DATABASES,))
        self.database = database
        self.workdir = workdir

    def setUp(self):
        # Here, not in _setUp: Fixture.setUp wraps what _setUp raises, and
        # testtools would report the skip as an error.
        if self.database == 'postgresql':
            reason = postgresql.unavailable_reason()
            if reason is not None:
                raise unittest.SkipTest('PostgreSQL is not installed: %s'
                                        % reason)
        super().setUp()

    def _setUp(self):
        directory = tempfile.mkdtemp(prefix='pq-fuzz-', dir=self.workdir)
        self.addCleanup(shutil.rmtree, directory, True)
        # The errors the services log go to self.log only: each failure
        # quotes its cause, and thousands of tracebacks would drown it.
        # INFO, for the lines a request may try to forge.
        self.log = ServerLog()
        logger = logging.getLogger('placement_quota')
        logger.addHandler(self.log)
        self.addCleanup(logger.removeHandler, self.log)
        self.addCleanup(setattr, logger, 'propagate', logger.propagate)
        self.addCleanup(logger.setLevel, logger.level)
        logger.propagate = False
        logger.setLevel(logging.INFO)
        if self.database == 'postgresql':
            connection = self.useFixture(
                postgresql.PostgreSQLDatabase()).url
        else:
            connection = 'sqlite:///%s' % os.path.join(directory,
                                                       'ledger.sqlite')
        placement = placement_server()
        self.placement = placement_client.PlacementClient.from_endpoint(
            placement.url, embedded.NOAUTH_HEADERS)
        config = _write(directory, 'placement-quota.conf', '\n'.join([
            '[ledger]', 'connection = %s' % connection,
            'auto_migrate = true',
            '[placement]', 'auth_type = admin_token',
            'endpoint = %s' % placement.url, 'token = admin',
            '[limits]', 'limits_file = %s' % _write(directory, 'tree.yaml',
                                                    TREE_LIMITS),
            '[enforcement]', 'nova_quota_limits_file = %s' % _write(
                directory, 'nova.yaml', NOVA_LIMITS), '']))
        self.conf = service_fixture.new_config([], config_files=[config])
        for (group, name), value in OPTIONS.items():
            self.conf.set_override(name, value, group)
        self.services = services_mod.Services(self.conf)
        self.addCleanup(self.services.close)
        self.ledger = self.services.ledger
        self.ledger.clock = lambda: fs.NOW
        self.engine = self.ledger.engine
        service = self.useFixture(service_fixture.EnforcementService(
            self.conf, services=self.services))
        self.url = service.url
        server = wsgi_server.WSGIServer(
            admin.make_admin_app(self.conf, services=self.services),
            threads=4).start()
        self.addCleanup(server.stop)
        self.admin_url = server.url
        self._provider = None

    # --- state ----------------------------------------------------------

    def reset(self, admin_api=False):
        """The ledger as every example starts: credits for
        :data:`fs.PROJECTS`, the accounts :data:`fs.ACCOUNTS`, no entries
        (one open lease of fuzz-root for the admin API), and the
        Placement consumer :data:`fs.CONSUMER` in fuzz-root."""
        with self.engine.begin() as connection:
            for table in (models.charges, models.leases,
                          models.credit_allocations, models.accounts):
                connection.execute(table.delete())
            connection.execute(models.credit_allocations.insert(), [
                {'project_id': p, 'amount': store.to_micro(fs.CREDITS[p]),
                 'created_at': fs.NOW} for p in fs.PROJECTS])
            connection.execute(models.accounts.insert(), [
                {'account_id': a, 'parent_id': parent, 'limits': limits,
                 'properties': {}, 'generation': 1, 'created_at': fs.NOW}
                for a, (parent, limits) in sorted(fs.ACCOUNTS.items())])
        if admin_api:
            self._reset_admin()

    def _reset_admin(self):
        start = fs.NOW + datetime.timedelta(days=1)
        with self.ledger.transaction(['fuzz-root']) as txn:
            txn.insert(project_id='fuzz-root', lease_id=fs.ACCOUNT_LEASE_ID,
                       provisional_key='fuzz-account-lease',
                       start_date=start,
                       end_date=start + datetime.timedelta(hours=2),
                       state=models.PENDING, amounts={'hosts': 1},
                       lease={}, hourly_rate=0, charged=0)
        found = self.placement.get('/allocations/%s' % fs.CONSUMER)
        if found.get('project_id') != 'fuzz-root' or not found.get(
                'allocations'):
            if self._provider is None:
                self._provider = self.placement.get(
                    '/resource_providers?name=%s' % fs.HOSTS[0])[
                        'resource_providers'][0]['uuid']
            self.placement.put('/allocations/%s' % fs.CONSUMER, {
                'allocations': {self._provider: {'resources': {'VCPU': 2}}},
                'project_id': 'fuzz-root', 'user_id': 'fuzz',
                'consumer_generation': found.get('consumer_generation'),
                'consumer_type': 'INSTANCE'})

    def snapshot(self):
        return Snapshot(self.engine)

    # --- HTTP -----------------------------------------------------------

    def send(self, request):
        """Send ``request`` (a :class:`fs.Request`); its :class:`Answer`."""
        base = self.admin_url if request.endpoint == fs.ADMIN else self.url
        host, port = base.split('://', 1)[1].rsplit(':', 1)
        connection = http.client.HTTPConnection(host, int(port),
                                                timeout=REQUEST_TIMEOUT)
        try:
            headers = dict(request.headers)
            payload = request.payload()
            body = payload
            if payload is not None and request.chunked:
                headers['Transfer-Encoding'] = 'chunked'
                body = iter([payload]) if payload else iter([])
            failed = None
            try:
                connection.request(
                    request.method, request.path, body=body,
                    headers=headers, encode_chunked=bool(
                        request.chunked and payload is not None))
            except (BrokenPipeError, ConnectionResetError) as exc:
                # The server may answer (413...) before it reads it all.
                failed = exc
            try:
                response = connection.getresponse()
                return Answer(response.status, dict(response.getheaders()),
                              response.read())
            except (OSError, http.client.HTTPException) as exc:
                failed = failed or exc
            return Answer(None, error='%s: %s' % (type(failed).__name__,
                                                  failed))
        finally:
            connection.close()


# --- running --------------------------------------------------------------

class Counts:
    """Examples run and statuses seen, per endpoint and database."""

    def __init__(self):
        self._lock = threading.Lock()
        self.examples = collections.Counter()
        self.statuses = collections.defaultdict(collections.Counter)
        self.setup = collections.defaultdict(collections.Counter)
        self.seconds = collections.Counter()

    def example(self, endpoint, database):
        with self._lock:
            self.examples[endpoint, database] += 1

    def status(self, endpoint, database, status, setup=False):
        """Count the answer to the request under test of an
        ``endpoint`` example (or to a setup request of it)."""
        with self._lock:
            table = self.setup if setup else self.statuses
            table[endpoint, database]['none' if status is None
                                      else status] += 1

    def report(self, keys=None):
        lines = []
        keys = keys or sorted(self.examples)
        for key in keys:
            endpoint, database = key
            lines.append(
                '%-12s %-10s %5d examples in %6.1f s; statuses: %s; setup '
                'requests: %s' % (endpoint, database, self.examples[key],
                                  self.seconds[key],
                                  _statuses(self.statuses[key]),
                                  _statuses(self.setup[key])))
        return '\n'.join(lines)


def _statuses(counter):
    return ', '.join('%s: %d' % (s, n) for s, n in sorted(
        counter.items(), key=lambda i: str(i[0]))) or 'none'


def settings(examples, shrink=True):
    """The hypothesis settings of a run: deterministic, no database."""
    phases = [hypothesis.Phase.explicit, hypothesis.Phase.reuse,
              hypothesis.Phase.generate, hypothesis.Phase.target]
    if shrink:
        phases.append(hypothesis.Phase.shrink)
    return hypothesis.settings(
        max_examples=examples, deadline=None, derandomize=True,
        database=None, phases=phases, report_multiple_bugs=True,
        print_blob=False,
        suppress_health_check=[HealthCheck.too_slow,
                               HealthCheck.data_too_large,
                               HealthCheck.filter_too_much,
                               HealthCheck.large_base_example])


def run(deployment, endpoint, examples, counts, shrink=True, ignore=None):
    """Fuzz ``endpoint`` of ``deployment`` with ``examples`` scenarios.

    Raises what hypothesis raises for the broken properties (each one's
    minimal example); ``counts`` gets the examples and statuses either
    way. ``ignore(error)``, when given, says which failures count as
    passes (tools/fuzz.py sets aside those it already reported, to look
    for others).
    """
    database = deployment.database
    admin_api = endpoint == fs.ADMIN

    @settings(examples, shrink)
    @hypothesis.given(fs.scenarios(endpoint))
    def fuzz(scenario):
        counts.example(endpoint, database)
        deployment.reset(admin_api)
        for index, step in enumerate(scenario.steps):
            before = deployment.snapshot()
            deployment.log.take()
            answer = deployment.send(step)
            counts.status(endpoint, database, answer.status,
                          setup=index < len(scenario.steps) - 1)
            after = deployment.snapshot()
            try:
                check(step, index, answer, before, after,
                      deployment.log.take())
            except PropertyFailed as error:
                if ignore is not None and ignore(error):
                    return
                raise

    started = time.monotonic()
    try:
        fuzz()
    finally:
        counts.seconds[endpoint, database] += time.monotonic() - started


def property_failures(error):
    """The :class:`PropertyFailed` errors in what a run raised (one, or a
    group of them); [] for anything else."""
    if isinstance(error, PropertyFailed):
        return [error]
    if isinstance(error, BaseExceptionGroup):
        found = []
        for child in error.exceptions:
            found.extend(property_failures(child))
        return found
    return []


def describe(failures):
    """A report of ``failures`` (:class:`PropertyFailed`): each one's
    property, signature, failing request and the whole scenario (the
    minimal example hypothesis noted)."""
    parts = ['%d properties broken (one minimal example each):'
             % len(failures)]
    for index, error in enumerate(failures, 1):
        parts.append('\n=== %d. %s %s\n%s\n%s' % (
            index, kind_of(error).name, type(error).signature, error,
            _safe('\n'.join(getattr(error, '__notes__', ())))))
    return '\n'.join(parts)


def log(text):
    sys.stderr.write(text + '\n')
    sys.stderr.flush()
