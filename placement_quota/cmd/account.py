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
"""``placement-quota account show|list|set|delete|recover|move``.

The account admin API's operations ("Multi-Tenant Accounting in OpenStack")
from the command line, on the ledger database and the Placement of the
configuration (as the admin API does; no admin API server needed). Errors are
the admin API's, with the field and the value, and exit status 2.
"""

import json
import threading

from cliff import command
from cliff import lister
from cliff import show

from placement_quota.accounts import errors
from placement_quota.accounts import ids
from placement_quota.accounts import moves
from placement_quota.accounts import service
from placement_quota.cmd import common
from placement_quota.cmd import main
from placement_quota.ledger import errors as ledger_errors
from placement_quota.limits import sources


def _accounts(cmd):
    try:
        return service.Accounts.from_services(common.services(cmd))
    except (ledger_errors.LedgerError, sources.SourceError, ValueError) as exc:
        main.fail(str(exc))


def _call(function, *args, **kwargs):
    try:
        return function(*args, **kwargs)
    except errors.AccountError as exc:
        main.fail(common.account_message(exc))
    except ids.InvalidAccountId as exc:
        main.fail(str(exc))


def _pairs(values, option):
    """``{key: value}`` of ``KEY=VALUE`` arguments."""
    found = {}
    for item in values or ():
        key, sep, value = item.partition('=')
        if not sep or not key:
            main.fail('%s takes KEY=VALUE, not %r' % (option, item))
        found[key] = value
    return found


def _flat(document):
    """A representation for the table formatter: one line per value."""
    flat = {}
    for key, value in document.items():
        if isinstance(value, dict):
            flat[key] = '\n'.join('%s=%s' % (k, json.dumps(v) if isinstance(
                v, (dict, list)) else v) for k, v in sorted(value.items()))
        elif isinstance(value, list):
            flat[key] = '\n'.join(str(v) for v in value)
        else:
            flat[key] = value
    return flat


def _show(parsed_args, document):
    if parsed_args.formatter in ('table', 'value', 'shell'):
        document = _flat(document)
    return tuple(zip(*sorted(document.items()))) or ((), ())


class AccountShow(common.Guarded, show.ShowOne):
    """An account: parent, limits, metadata, children and usage."""

    #: The openstack shell needs no Keystone for it (see
    #: placement_quota.osc.plugin: Placement uses its session on demand).
    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('account', help='Account (project) ID.')
        return common.add_backend_arguments(parser)

    def take_action(self, parsed_args):
        document = _call(_accounts(self).show, parsed_args.account)
        return _show(parsed_args, document)


class AccountList(common.Guarded, lister.Lister):
    """Every account, with its parent and limits."""

    #: The openstack shell needs no Keystone for it (see
    #: placement_quota.osc.plugin: Placement uses its session on demand).
    auth_required = False

    def get_parser(self, prog_name):
        return common.add_backend_arguments(
            super().get_parser(prog_name), placement=False)

    def take_action(self, parsed_args):
        rows = [(a.account_id, a.parent_id, ', '.join(
            '%s=%s' % i for i in sorted(a.limits.items())), ', '.join(
            '%s=%s' % i for i in sorted(a.metadata.items())))
            for a in _call(_accounts(self).all)]
        return ('ID', 'Parent', 'Limits', 'Metadata'), rows


class AccountSet(common.Guarded, show.ShowOne):
    """Create an account, or change its parent, limits or metadata.

    Only what the options name changes; the rest is kept.
    """

    #: The openstack shell needs no Keystone for it (see
    #: placement_quota.osc.plugin: Placement uses its session on demand).
    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('account', help='Account (project) ID.')
        parent = parser.add_mutually_exclusive_group()
        parent.add_argument('--parent', help='Parent account (a root: two '
                            'levels at most).')
        parent.add_argument('--no-parent', action='store_true',
                            help='Make the account a root.')
        parser.add_argument('--limit', action='append', metavar='RES=N',
                            help='Limit of a resource (-1: unlimited); '
                            'repeatable.')
        parser.add_argument('--unset-limit', action='append',
                            metavar='RES', help='Remove a limit; '
                            'repeatable.')
        parser.add_argument('--property', action='append', metavar='K=V',
                            help='Metadata; repeatable.')
        parser.add_argument('--unset-property', action='append',
                            metavar='K', help='Remove metadata; '
                            'repeatable.')
        return common.add_backend_arguments(parser)

    def take_action(self, parsed_args):
        accounts = _accounts(self)
        try:
            current = accounts.get(parsed_args.account)
            body = {'parent_id': current.parent_id,
                    'limits': current.limits, 'metadata': current.metadata}
        except errors.NotFound:
            body = {'parent_id': None, 'limits': {}, 'metadata': {}}
        except errors.AccountError as exc:
            main.fail(common.account_message(exc))
        if parsed_args.parent is not None:
            body['parent_id'] = parsed_args.parent
        if parsed_args.no_parent:
            body['parent_id'] = None
        for resource, value in _pairs(parsed_args.limit, '--limit').items():
            try:
                body['limits'][resource] = int(value)
            except ValueError:
                main.fail('--limit %s=%s: the limit must be an integer'
                          % (resource, value))
        for resource in parsed_args.unset_limit or ():
            body['limits'].pop(resource, None)
        body['metadata'].update(_pairs(parsed_args.property, '--property'))
        for key in parsed_args.unset_property or ():
            body['metadata'].pop(key, None)
        created, _ = _call(accounts.put, parsed_args.account, body)
        self.app.stderr.write('%s account %s\n' % (
            'Created' if created else 'Updated', parsed_args.account))
        return _show(parsed_args, _call(accounts.show, parsed_args.account))


class AccountDelete(common.Guarded, command.Command):
    """Delete an account (recoverable for a while).

    It stays recoverable for [accounts] recovery_period, with "account
    recover".
    """

    #: The openstack shell needs no Keystone for it (see
    #: placement_quota.osc.plugin: Placement uses its session on demand).
    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('account', help='Account (project) ID.')
        return common.add_backend_arguments(parser, placement=False)

    def take_action(self, parsed_args):
        accounts = _accounts(self)
        _call(accounts.delete, parsed_args.account)
        self.app.stdout.write(
            'Deleted account %s; recoverable for %d seconds with '
            '"placement-quota account recover".\n'
            % (parsed_args.account,
               accounts.recovery_period.total_seconds()))


class AccountRecover(common.Guarded, show.ShowOne):
    """Bring back an account deleted within its recovery period."""

    #: The openstack shell needs no Keystone for it (see
    #: placement_quota.osc.plugin: Placement uses its session on demand).
    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('account', help='Account (project) ID.')
        return common.add_backend_arguments(parser)

    def take_action(self, parsed_args):
        accounts = _accounts(self)
        _call(accounts.recover, parsed_args.account)
        return _show(parsed_args, _call(accounts.show, parsed_args.account))


class ReadProgress:
    """The Placement client of a move, drawing ``bar`` (a
    :class:`~placement_quota.cmd.common.ProgressBar`) over the consumers
    it reads: the consumer IDs of the providers' allocations make the
    total, each ``GET /allocations/{uuid}`` one step (the reads of
    :func:`placement_quota.accounts.consumers.of_account`, concurrent).
    Everything else passes through."""

    LABEL = 'Reading consumers'

    def __init__(self, client, bar):
        self._client = client
        self._bar = bar
        self._lock = threading.Lock()
        self._seen = set()
        self._done = 0

    def __getattr__(self, name):
        return getattr(self._client, name)

    def get(self, url, **kwargs):
        body = self._client.get(url, **kwargs)
        with self._lock:
            if url.startswith('/resource_providers/') and \
                    url.endswith('/allocations'):
                self._seen.update((body or {}).get('allocations') or ())
            elif url.startswith('/allocations/'):
                self._done += 1
                self._bar(self.LABEL, self._done,
                          max(len(self._seen), self._done))
        return body


class AccountMove(common.Guarded, show.ShowOne):
    """Move an account's resources to another account.

    This is the move action of "Multi-Tenant Accounting in OpenStack".
    Without --consumer or --lease, everything moves: the Placement
    consumers whose allocations carry the account, and its open leases.
    The source account is not deleted. With --show nothing moves: the move
    action is printed with its ETag, for a later --if-match. On a terminal,
    a progress bar on stderr follows the consumers read from Placement
    (not with -q).
    """

    #: The openstack shell needs no Keystone for it (see
    #: placement_quota.osc.plugin: Placement uses its session on demand).
    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('account', help='Source account ID.')
        parser.add_argument('--dest', required=True,
                            help='Destination account ID.')
        which = parser.add_mutually_exclusive_group()
        which.add_argument('--consumer', metavar='UUID',
                           help='Move only this Placement consumer.')
        which.add_argument('--lease', metavar='LEASE_ID',
                           help='Move only this lease of the ledger.')
        parser.add_argument('--show', action='store_true',
                            help='Print the move action and its ETag; '
                            'move nothing.')
        parser.add_argument('--if-match', metavar='ETAG',
                            help='Move only if the move action still has '
                            'this ETag (from --show).')
        return common.add_backend_arguments(parser)

    def take_action(self, parsed_args):
        accounts = _accounts(self)
        bar = common.progress(self.app.stderr,
                              quiet=self.app.options.verbose_level < 1)
        if bar is not None:
            # Placement is made on first use (a lease-only move may need
            # none): the progress wraps whatever is made.
            make = accounts._make_placement
            accounts._make_placement = lambda: ReadProgress(make(), bar)
        args = (parsed_args.account, parsed_args.dest,
                parsed_args.consumer, parsed_args.lease)
        try:
            if parsed_args.show:
                action = _call(accounts.move_action, *args)
            else:
                action = _call(accounts.move, *args,
                               if_match=parsed_args.if_match)
        finally:
            if bar is not None:
                bar.close()
        if not parsed_args.show:
            self.app.stderr.write(
                'Moved %d consumer(s) and %d lease(s) from %s to %s\n'
                % (len(action.consumers), len(action.leases),
                   parsed_args.account, parsed_args.dest))
        move = action.document['move']
        document = {'etag': action.etag, 'source': move['source']['id'],
                    'dest': move['dest']['id'], 'allowed': move['allowed'],
                    'over_limits': move['over_limits'],
                    'resources': move['resources']}
        if parsed_args.formatter in ('table', 'value', 'shell'):
            resources = move['resources']
            document['resources'] = {
                'consumers': resources['consumers'],
                'leases': resources['leases'],
                'tag': resources['tag'],
                'total_usage': resources['total_usage'],
                'total_reserved': resources['total_reserved']}
            document['over_limits'] = [moves.over_text(o)
                                       for o in move['over_limits']]
        return _show(parsed_args, document)
