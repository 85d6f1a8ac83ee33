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
"""What the commands share beyond their configuration: the Services, the
``--embedded`` option and the exit status of a command that could not
answer.

Kept out of :mod:`placement_quota.cmd.main` so that ``placement-quota
--help`` does not import the ledger, Placement and Keystone code.

Exit status, the same for every command: 0 done (allowed, clean), 1 the
answer is "no" (denied, drift, violations, refused), 2 the command could
not answer (bad configuration or input, authentication, a service that
cannot be reached) -- then with one line ``placement-quota: ...`` on
stderr and no traceback (``--debug`` logs it).
"""

import re
import shlex

from cliff import command as cliff_command
from keystoneauth1 import exceptions as ks_exceptions
from oslo_config import cfg
from oslo_log import log as logging

from placement_quota.accounts import errors as account_errors
from placement_quota.cmd import main
from placement_quota import errors
from placement_quota.identity import projects as identity_projects
from placement_quota.lease import model as lease_model
from placement_quota.lease import errors as lease_errors
from placement_quota.ledger import errors as ledger_errors
from placement_quota.limits import sources
from placement_quota.placement import client as placement_client
from placement_quota.reconcile import readers
from placement_quota import services as services_mod

LOG = logging.getLogger(__name__)

#: The help of ``--embedded``, and of where a command's Placement and
#: ledger come from (the epilog of its ``--help``).
EMBEDDED_HELP = (
    'Use the embedded Placement (real Placement code on SQLite in '
    '[placement] embedded_state_dir), as [placement] embedded = true does. '
    'Without either, Placement is the one [placement] configures '
    '(auth_type and credentials, or endpoint_override), and the command '
    'exits 2 when it configures none.')
PLACEMENT_EPILOG = (
    'Placement: [placement] of the configuration (auth_type and its '
    'credentials, or endpoint_override); the embedded one only with '
    '--embedded or [placement] embedded = true. ')
LEDGER_EPILOG = (
    'Ledger: [database] connection (default: SQLite in '
    '$XDG_STATE_HOME/placement-quota; a SQLite file set there must be in '
    'an existing directory). ')
VERBOSE_EPILOG = '-v logs which were used.'

#: The forms a date option takes, for its help.
DATE_FORMS = ('YYYY-MM-DD (its 00:00 UTC), "YYYY-MM-DD HH:MM" (UTC) or '
              'ISO 8601 with an offset')
_BARE_DATE = re.compile(r'^\d{4}-\d{2}-\d{2}$')


def parse_date(value, option):
    """The naive UTC datetime of the date option ``option`` (``--start``,
    ``--end``, ``--before``), or None when it is not given.

    A bare ``YYYY-MM-DD`` is its midnight UTC; otherwise the forms of a
    lease date (:func:`placement_quota.lease.model.parse_date`). A bad value
    stops the command with exit status 2, naming the option and the
    value."""
    if value is None:
        return None
    text = value.strip()
    if _BARE_DATE.match(text):
        text += ' 00:00'
    try:
        return lease_model.parse_date(text, option, bounded=True)
    except lease_errors.PayloadError as exc:
        reason = exc.reason
        if reason.startswith('is not a date in the form'):
            reason = 'is not a date: give %s' % DATE_FORMS
        main.fail('%s %s: %s' % (option, lease_errors.show(value), reason))


def services(command):
    """The :class:`~placement_quota.services.Services` of the running
    command: one per ``placement-quota`` run, or per ``openstack`` shell
    (with the shell's credentials for Placement when ``[placement]``
    configures none). Only a command whose ``embedded_default`` is True
    (``serve``) uses the embedded Placement without being asked to."""
    holder = main.holder(command)
    if holder.services is None:
        holder.services = services_mod.Services(
            main.config(command),
            placement_fallback=holder.placement_fallback,
            embedded_default=getattr(command, 'embedded_default', False))
    return holder.services


def add_backend_arguments(parser, placement=True, ledger=True):
    """``--embedded`` (when the command reads Placement), and where its
    Placement and ledger come from in its ``--help``."""
    if placement:
        parser.add_argument('--embedded', action='store_true',
                            help=EMBEDDED_HELP)
    epilog = ((PLACEMENT_EPILOG if placement else '') +
              (LEDGER_EPILOG if ledger else '') + VERBOSE_EPILOG)
    parser.epilog = ('%s\n\n%s' % (parser.epilog, epilog)
                     if parser.epilog else epilog)
    return parser


def apply_backend_arguments(command, parsed_args):
    """Make ``--embedded`` choose the embedded Placement."""
    if getattr(parsed_args, 'embedded', False):
        main.config(command).set_override('embedded', True,
                                          group='placement')


def account_message(exc):
    """The one line of an account error; a deleted account's names the
    command that brings it back."""
    if isinstance(exc, account_errors.Gone):
        account_id = exc.body.get('value')
        return ('Account %r was deleted at %s; it can be recovered until '
                '%s; restore it with: placement-quota account recover %s'
                % (account_id, exc.body.get('deleted_at'),
                   exc.body.get('recoverable_until'),
                   shlex.quote(account_id)))
    return exc.message


def progress(stream, quiet=False):
    """A :class:`ProgressBar` on ``stream`` when it is a terminal and
    ``quiet`` is not set, else None."""
    isatty = getattr(stream, 'isatty', None)
    if quiet or isatty is None or not isatty():
        return None
    return ProgressBar(stream)


class ProgressBar:
    """A one-line textual progress bar redrawn in place on a terminal:
    ``label [#####.....] done/total``. Callable as ``bar(label, done,
    total)``; :meth:`close` ends the line."""

    WIDTH = 30

    def __init__(self, stream):
        self.stream = stream
        self.drawn = False

    def __call__(self, label, done, total):
        filled = self.WIDTH * done // total if total else self.WIDTH
        self.stream.write('\r%s [%s%s] %d/%d' % (
            label, '#' * filled, '.' * (self.WIDTH - filled), done, total))
        self.stream.flush()
        self.drawn = True

    def close(self):
        if self.drawn:
            self.stream.write('\n')
            self.stream.flush()
            self.drawn = False


def failure_message(exc):
    """The one line saying why a command could not answer."""
    if isinstance(exc, account_errors.AccountError):
        return account_message(exc)
    if isinstance(exc, (placement_client.PlacementError,
                        ledger_errors.LedgerError, readers.BlazarError)):
        return str(exc)
    if isinstance(exc, (sources.SourceError,
                        identity_projects.KeystoneNotConfigured)):
        return 'cannot read the limits: %s' % exc
    if isinstance(exc, errors.DependencyUnavailable):
        return str(exc)
    if isinstance(exc, ks_exceptions.ClientException):
        return 'cannot authenticate or reach a service: %s' % exc
    if isinstance(exc, (cfg.Error, ValueError)):
        return 'configuration error: %s' % exc
    return 'could not answer: %s: %s (--debug logs the traceback)' % (
        type(exc).__name__, exc)


class Guarded(cliff_command.Command):
    """A command whose failures exit 2 with one line on stderr.

    cliff would log any exception and exit 1, which reads as "the answer is
    no" (drift, violations, denied); every command derives from this class
    (first in its bases), so that one that could not answer exits 2.
    """

    #: Whether the command uses the embedded Placement when none is
    #: configured and none is chosen: only ``serve``.
    embedded_default = False

    def run(self, parsed_args):
        apply_backend_arguments(self, parsed_args)
        try:
            return super().run(parsed_args)
        except BrokenPipeError:
            raise   # cliff's: the reader went away (``| head``)
        except Exception as exc:
            LOG.debug('%s could not answer', self.cmd_name, exc_info=True)
            main.fail(failure_message(exc))
