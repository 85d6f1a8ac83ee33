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
"""Which failures are outages (503) and which stay bugs (500), the
bound of a Placement call, and exempted names while Keystone is down
(tests/functional/test_faults.py has the same faults on real sockets)."""

import json
import sqlite3
import threading

import fixtures
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1.identity.v3 import password as ks_password
from keystoneauth1 import session as ks_session
import requests
from sqlalchemy import exc as sa_exc
import testtools

from placement_quota.nova import flavors
from placement_quota.nova import quotas
from placement_quota import conf as pq_conf
from placement_quota import errors
from placement_quota.filters import base
from placement_quota.filters import chain as chain_mod
from placement_quota.filters import exemptions as exemptions_mod
from placement_quota.identity import limits as identity_limits
from placement_quota.ledger.db import engine
from placement_quota.ledger import errors as ledger_errors
from placement_quota.placement import client as placement_client
from placement_quota import sessions
from tests import spec_examples as spec


def raised(error, during=None):
    """``error`` as raised (``during`` its context, as ``raise`` inside an
    ``except`` block sets it)."""
    try:
        try:
            if during is not None:
                raise during
            raise error
        except Exception:
            if during is None:
                raise
            raise error
    except Exception as exc:
        return exc


def sqlite_error(sql):
    """The SQLAlchemy error of running ``sql`` on a fresh database."""
    connection = sqlite3.connect(':memory:')
    try:
        connection.execute(sql)
    except sqlite3.Error as exc:
        return sa_exc.OperationalError(sql, (), exc)
    finally:
        connection.close()


def placement_response(status, detail):
    """A requests Response as Placement answers an error."""
    response = requests.Response()
    response.status_code = status
    response._content = json.dumps(
        {'errors': [{'status': status, 'detail': detail}]}).encode()
    return response


class FakeSQLiteError(sqlite3.OperationalError):

    def __init__(self, message, code, name):
        super().__init__(message)
        self.sqlite_errorcode = code
        self.sqlite_errorname = name


class TestOutage(testtools.TestCase):
    """Each adapter raises a DependencyUnavailable for its library's
    outages; the chain's outage() knows no other exception."""

    def assertOutage(self, error, *fragments):
        message = chain_mod.outage(error)
        self.assertIsNotNone(message, error)
        for fragment in fragments + (chain_mod.GIVEN_UP,):
            self.assertIn(fragment, message)

    def assertBug(self, error):
        self.assertIsNone(chain_mod.outage(error))

    def test_placement_unreachable_is_an_outage(self):
        self.assertOutage(placement_client.Unreachable(
            'Request to http://p/ timed out', 'GET', '/', timeout=10,
            where='http://p'),
            'Placement at http://p did not answer GET / within 10 s '
            '([placement] timeout)')

    def test_placement_refused_connection_names_the_reason(self):
        error = placement_client.Unreachable(
            'Unable to establish connection to http://p/: ... '
            '(Caused by NewConnectionError("...: [Errno 111] Connection '
            'refused"))', 'GET', '/', where='http://p')
        self.assertOutage(error, 'Cannot connect to Placement at http://p '
                          'for GET /: http://p/: [Errno 111] Connection '
                          'refused.')

    def test_placement_5xx_is_an_outage(self):
        for status in (500, 502, 503):
            self.assertOutage(placement_client._error(
                placement_response(status, 'down'), 'GET', '/usages'),
                'answered %d' % status)

    def test_placement_4xx_stays_a_bug(self):
        for cls, status in ((placement_client.PlacementError, 400),
                            (placement_client.NotFound, 404),
                            (placement_client.Conflict, 409)):
            self.assertBug(cls(status, None, 'no', 'GET', '/x'))
        self.assertBug(placement_client._error(
            placement_response(400, 'bad'), 'GET', '/x'))

    def test_no_token_because_keystone_is_down_is_an_outage(self):
        self.assertOutage(placement_client.auth_failure(
            ks_exceptions.ServiceUnavailable('no token'), 'GET', '/'),
            'no token')

    def test_no_token_because_credentials_are_refused_stays_a_bug(self):
        self.assertBug(placement_client.auth_failure(
            ks_exceptions.Unauthorized(), 'GET', '/'))

    def test_nova_unreachable_or_5xx_is_an_outage(self):
        self.assertOutage(quotas.source_error(
            'Cannot read the Nova quotas',
            ks_exceptions.ConnectFailure('refused')),
            'Cannot read the Nova quotas')
        self.assertOutage(quotas.source_error('Nova broke', status=500),
                          'Nova broke')

    def test_nova_refusal_or_misconfiguration_stays_a_bug(self):
        self.assertBug(quotas.source_error('forbidden', status=403))
        self.assertBug(quotas.QuotaSourceError(
            'nova_quota_source = legacy needs the Nova API'))

    def test_nova_flavors_unreachable_is_an_outage(self):
        error = flavors.unreadable('Cannot read flavor f1 from Nova',
                                   ks_exceptions.ConnectFailure('refused'))
        self.assertIsInstance(error, flavors.FlavorUnavailable)
        self.assertOutage(error, 'Cannot read flavor f1 from Nova')

    def test_nova_flavors_without_an_endpoint_stay_a_bug(self):
        self.assertBug(flavors.unreadable(
            'Cannot read flavor f1 from Nova',
            ks_exceptions.EndpointNotFound('no compute endpoint')))

    def test_keystone_limits_unreachable_is_an_outage(self):
        self.assertOutage(identity_limits.read_error(
            'limits', None, ks_exceptions.ConnectTimeout('timed out')),
            'Cannot read limits from Keystone')

    def test_keystone_limits_refused_stays_a_bug(self):
        self.assertBug(identity_limits.read_error(
            'limits', None, ks_exceptions.Forbidden('forbidden')))

    def test_keystoneauth_outages_are_connection_errors_and_5xx(self):
        self.assertEqual(
            [True, True, True, False, False, False],
            [sessions.is_outage(e) for e in (
                ks_exceptions.ConnectFailure('refused'),
                ks_exceptions.ConnectTimeout('timed out'),
                ks_exceptions.ServiceUnavailable(),
                ks_exceptions.Unauthorized(),
                ks_exceptions.EndpointNotFound('none'),
                ValueError('x'))])

    def test_ledger_unavailable_keeps_its_message(self):
        self.assertEqual(
            'Cannot connect to the ledger database at x: refused. '
            + chain_mod.GIVEN_UP,
            chain_mod.outage(ledger_errors.LedgerUnavailable(
                'Cannot connect to the ledger database at x: refused')))
        self.assertEqual('Gone; try again later.', chain_mod.outage(
            ledger_errors.LedgerUnavailable('Gone; try again later.')))

    def test_sqlite_disk_full_read_only_or_gone_is_an_outage(self):
        for message, code, name in (
                ('database or disk is full', 13, 'SQLITE_FULL'),
                ('attempt to write a readonly database', 8,
                 'SQLITE_READONLY'),
                ('attempt to write a readonly database', 1032,
                 'SQLITE_READONLY_DBMOVED'),
                ('unable to open database file', 14, 'SQLITE_CANTOPEN'),
                ('disk I/O error', 10, 'SQLITE_IOERR')):
            error = sa_exc.OperationalError(
                'INSERT', (), FakeSQLiteError(message, code, name))
            self.assertOutage(engine.database_outage(error, 'x'),
                              'The ledger database at x cannot be used: '
                              '%s (%s)' % (message, name))

    def test_sqlite_statement_errors_stay_bugs(self):
        for sql in ('SELEC 1', 'SELECT * FROM no_such_table'):
            self.assertIsNone(engine.database_outage(sqlite_error(sql),
                                                     'x'))

    def test_lost_database_connection_is_an_outage(self):
        error = sa_exc.OperationalError(
            'SELECT 1', (), Exception('server closed the connection'),
            connection_invalidated=True)
        self.assertOutage(engine.database_outage(error, 'x'),
                          'Lost the connection to the ledger database at '
                          'x: server closed the connection')

    def test_library_errors_are_no_outage_above_the_adapters(self):
        full = sa_exc.OperationalError('INSERT', (), FakeSQLiteError(
            'database or disk is full', 13, 'SQLITE_FULL'))
        for error in (full, ks_exceptions.ConnectFailure('refused')):
            self.assertBug(error)

    def test_an_outage_raised_from_another_error_is_still_one(self):
        self.assertOutage(raised(
            RuntimeError('while reading'),
            during=ledger_errors.LedgerUnavailable('Frozen')), 'Frozen.')

    def test_a_refusal_raised_while_handling_an_outage_is_a_refusal(self):
        self.assertBug(raised(
            placement_client.Conflict(409, None, 'no', 'PUT', '/x'),
            during=placement_client.Unavailable(503, None, 'down', 'GET',
                                                '/x')))

    def test_placement_5xx_with_an_error_code_is_an_outage(self):
        response = placement_response(503, 'busy')
        response._content = json.dumps({'errors': [{
            'status': 503, 'code': 'placement.concurrent_update',
            'detail': 'busy'}]}).encode()
        self.assertOutage(placement_client._error(response, 'PUT', '/x'),
                          'answered 503')

    def test_nova_flavors_without_a_token_from_keystone_is_an_outage(self):
        auth = ks_password.Password(
            auth_url='http://127.0.0.1:1/v3', username='u', password='p',
            project_name='p', user_domain_id='default',
            project_domain_id='default')
        error = self.assertRaises(
            flavors.FlavorUnavailable, flavors.FlavorReader.from_session,
            ks_session.Session(auth=auth, timeout=5))
        self.assertOutage(error, 'Cannot reach the Nova API')

    def test_the_status_of_a_library_exception_is_not_ours(self):
        self.assertEqual(500, errors.status_of(ks_exceptions.Unauthorized()))

    def test_other_exceptions_stay_bugs(self):
        for error in (ValueError('x'), KeyError('y'), TypeError('z')):
            self.assertBug(error)


class ChainTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.conf = pq_conf.new_config([], config_files=[])
        self.logger = self.useFixture(fixtures.FakeLogger())


class RaisingFilter(base.BaseFilter):

    error = None

    def check_create(self, context, lease):
        raise self.error

    def check_update(self, context, current_lease, lease):
        raise self.error

    def on_end(self, context, lease):
        raise self.error


class TestChainAnswers(ChainTestCase):

    def run_filter(self, error):
        filter_ = RaisingFilter(self.conf)
        filter_.error = error
        chain = chain_mod.FilterChain(self.conf, filters=[filter_],
                                      exemptions=frozenset())
        return chain.check_create(spec.CONTEXT, spec.lease())

    def test_placement_outage_in_a_filter_is_service_unavailable(self):
        error = self.assertRaises(
            chain_mod.ServiceUnavailable, self.run_filter,
            placement_client.Unavailable(503, None, 'down', 'GET', '/'))
        self.assertIn('Placement GET / answered 503: down', str(error))
        self.assertIn('RaisingFilter gave check_create of project',
                      self.logger.output)
        self.assertNotIn('Traceback', self.logger.output)

    def test_bug_in_a_filter_is_still_a_filter_error(self):
        error = self.assertRaises(chain_mod.FilterError, self.run_filter,
                                  ValueError('a bug'))
        self.assertEqual('RaisingFilter', error.filter_name)
        self.assertIn('Traceback', self.logger.output)


class TestWaitBound(testtools.TestCase):

    def test_one_attempt_by_default(self):
        self.assertEqual(10, placement_client.wait_bound(10))

    def test_retries_add_attempts_and_keystoneauths_delays(self):
        # 0.5 + 1 + 2 + 4 between five connect attempts.
        self.assertEqual(57.5, placement_client.wait_bound(10, 4))
        self.assertEqual(31.0, placement_client.wait_bound(
            10, connect_retries=1, connect_retry_delay=1,
            status_code_retries=1, status_code_retry_delay=0))

    def test_no_timeout_is_no_bound(self):
        self.assertIsNone(placement_client.wait_bound(None, 3))

    def test_embedded_and_endpoint_clients_know_their_timeout(self):
        client = placement_client.PlacementClient.from_endpoint(
            'http://127.0.0.1:9', timeout=3)
        self.assertEqual((3, 3), (client.timeout, client.wait_bound))


class _FailingResolver:

    def __init__(self):
        self.calls = 0
        self.entered = threading.Event()
        self.release = threading.Event()
        self.block = False

    def factory(self, conf):
        return self.resolve

    def resolve(self, name, domain):
        self.calls += 1
        if self.block:
            self.entered.set()
            self.release.wait(10)
        raise ks_exceptions.ConnectTimeout('Keystone timed out')


class TestExemptionsWhileKeystoneIsDown(ChainTestCase):

    def exemptions(self, resolver):
        self.conf.set_override('exempted_projects', ['demo@Default'],
                               'enforcement')
        return exemptions_mod.Exemptions(self.conf,
                                         resolver_factory=resolver.factory)

    def test_checks_after_a_failed_resolution_exempt_nobody(self):
        resolver = _FailingResolver()
        exemptions = self.exemptions(resolver)
        # Before: the second check raised TypeError (every request 500
        # until the retry, 10 s later).
        for _ in range(3):
            self.assertNotIn('id-of-demo', exemptions)
        self.assertEqual(1, resolver.calls)

    def test_a_retry_after_a_failure_is_not_waited_for_by_others(self):
        resolver = _FailingResolver()
        exemptions = self.exemptions(resolver)
        self.assertNotIn('id-of-demo', exemptions)
        resolver.block = True
        exemptions._next_resolution = 0   # the retry is due
        retrying = threading.Thread(target=exemptions.__contains__,
                                    args=('x',), daemon=True)
        retrying.start()
        self.addCleanup(retrying.join, 10)
        self.addCleanup(resolver.release.set)
        self.assertTrue(resolver.entered.wait(10))
        # Another request meanwhile: answered at once, nobody exempted.
        self.assertNotIn('id-of-demo', exemptions)
        self.assertEqual(2, resolver.calls)
