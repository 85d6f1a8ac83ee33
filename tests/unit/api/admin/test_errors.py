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
"""The admin API's answer to account errors, and the credentials its
policy rules see (the WSGI app called in-process: no server, no
Placement, no database)."""

import testtools
import webob

from placement_quota.accounts import errors
from placement_quota.api.admin import app as admin
from placement_quota import errors as pq_errors
from placement_quota.ledger import errors as ledger_errors
from placement_quota.api.admin import access as policies


class FailingAccounts:
    """Accounts whose every read raises ``error``."""

    def __init__(self, error):
        self.error = error

    def show(self, account_id, with_usage=True):
        raise self.error


class Enforcer:
    """Records the credentials; allows what ``allowed`` says."""

    def __init__(self, allowed=True):
        self.allowed = allowed
        self.calls = []

    def enforce(self, rule, target, credentials):
        self.calls.append((rule, target, dict(credentials)))
        return self.allowed


def get(app, path='/v1/acct', headers=None):
    return webob.Request.blank(path, headers=headers or {}).get_response(app)


class TestStatusTable(testtools.TestCase):

    def test_each_error_class_answers_the_status_of_today(self):
        self.assertEqual(
            [400, 404, 410, 409, 409, 412, 502],
            [admin.status_of(cls('m')) for cls in (
                errors.Invalid, errors.NotFound, errors.Gone,
                errors.Conflict, errors.OverLimit,
                errors.PreconditionFailed, errors.SourceUnavailable)])

    def test_a_subclass_answers_the_status_of_its_nearest_class(self):
        class Expired(errors.NotFound):
            pass
        self.assertEqual(404, admin.status_of(Expired('m')))

    def test_a_bare_account_error_is_a_bad_request(self):
        self.assertEqual(400, admin.status_of(errors.AccountError('m')))

    def test_every_account_error_answers_through_the_one_status_map(self):
        classes = [cls for cls in vars(errors).values()
                   if isinstance(cls, type) and
                   issubclass(cls, errors.AccountError)]
        self.assertEqual(
            [], [cls.__name__ for cls in classes
                 if admin.status_of(cls('m')) != pq_errors.status_of(
                     cls('m')) or pq_errors.status_of(cls('m')) == 500])

    def test_an_unavailable_source_is_answered_502(self):
        self.assertEqual(502, pq_errors.status_of(
            errors.SourceUnavailable('Placement is down')))

    def test_an_error_answers_its_status_message_and_details(self):
        error = errors.Gone('Account gone', field='account_id', value='acct',
                            deleted_at='2026-05-01T00:00:00')
        response = get(admin.AdminAPI(FailingAccounts(error), Enforcer()))
        self.assertEqual(
            (410, {'message': 'Account gone', 'field': 'account_id',
                   'value': 'acct', 'deleted_at': '2026-05-01T00:00:00'}),
            (response.status_int, response.json))

    def test_an_over_limit_move_answers_409(self):
        response = get(admin.AdminAPI(FailingAccounts(errors.OverLimit(
            'over', over_limits=[])), Enforcer()))
        self.assertEqual(409, response.status_int)

    def test_a_ledger_that_does_not_answer_is_a_503_in_json(self):
        response = get(admin.AdminAPI(FailingAccounts(
            ledger_errors.LedgerUnavailable('frozen')), Enforcer()))
        self.assertEqual(503, response.status_int)
        self.assertIn('did not answer in time', response.json['message'])


class TestCredentials(testtools.TestCase):

    def credentials(self, headers=None, trust_roles_header=False,
                    allowed=True, **kwargs):
        enforcer = Enforcer(allowed)
        app = admin.AdminAPI(FailingAccounts(errors.NotFound('m')),
                             enforcer, trust_roles_header=trust_roles_header,
                             **kwargs)
        response = get(app, headers=headers)
        return response, enforcer.calls[0]

    def test_noauth_request_without_roles_header_has_the_admin_role(self):
        _, (_, _, credentials) = self.credentials()
        self.assertEqual(['admin'], credentials['roles'])

    def test_noauth_request_with_a_roles_header_has_those_roles(self):
        _, (_, _, credentials) = self.credentials(
            {'X-Roles': 'reader, member,'})
        self.assertEqual(['reader', 'member'], credentials['roles'])

    def test_noauth_request_without_roles_header_has_the_noauth_roles(self):
        _, (_, _, credentials) = self.credentials(
            noauth_roles=['reader', 'auditor'])
        self.assertEqual(['reader', 'auditor'], credentials['roles'])

    def test_noauth_roles_header_cannot_add_a_role_not_granted(self):
        _, (_, _, credentials) = self.credentials(
            {'X-Roles': 'admin,member,reader'}, noauth_roles=['reader'])
        self.assertEqual(['reader'], credentials['roles'])

    def test_noauth_roles_header_keeps_the_roles_admin_implies(self):
        _, (_, _, credentials) = self.credentials(
            {'X-Roles': 'Member,reader,service'}, noauth_roles=['admin'])
        self.assertEqual(['Member', 'reader'], credentials['roles'])

    def test_noauth_roles_do_not_apply_under_keystone(self):
        _, (_, _, credentials) = self.credentials(
            {'X-Roles': 'admin'}, trust_roles_header=True,
            noauth_roles=['reader'])
        self.assertEqual(['admin'], credentials['roles'])

    def test_keystone_request_without_roles_header_has_no_role(self):
        _, (_, _, credentials) = self.credentials(trust_roles_header=True)
        self.assertEqual([], credentials['roles'])

    def test_credentials_carry_the_user_project_and_scope_headers(self):
        _, (_, _, credentials) = self.credentials({
            'X-User-Id': 'u1', 'X-Project-Id': 'p1', 'X-Domain-Id': 'd1',
            'OpenStack-System-Scope': 'all'})
        self.assertEqual(
            ('u1', 'p1', 'd1', 'all'),
            (credentials['user_id'], credentials['project_id'],
             credentials['domain_id'], credentials['system_scope']))

    def test_target_is_the_account_and_the_caller_project(self):
        _, (rule, target, _) = self.credentials({'X-Project-Id': 'p1'})
        self.assertEqual(
            (policies.SHOW, {'account_id': 'acct', 'project_id': 'p1'}),
            (rule, target))

    def test_a_refusal_answers_403_naming_the_rule(self):
        response, _ = self.credentials(allowed=False)
        self.assertEqual((403, policies.SHOW),
                         (response.status_int, response.json['rule']))
