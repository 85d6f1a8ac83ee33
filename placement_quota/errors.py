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
"""The error taxonomy: what an outage is, and which answer each error gets.

Every adapter -- the ledger engine, the Placement client, the Nova quota
and flavor readers, the Keystone limits reader, the Blazar reader of
``reconcile`` -- turns the failures of its own library (SQLAlchemy and
the database drivers, keystoneauth, openstacksdk) that mean "that service
is down or did not answer in time" into a :class:`DependencyUnavailable`
subclass, and lets everything else through. Nothing above the adapters
knows a third-party exception: the filter chain asks :func:`outage`, the
HTTP APIs ask :func:`status_of`, the CLI asks :func:`exit_status`.

Each of our exception classes carries its answer as ``http_status``
(403 a denial, 400 bad input, 404/409/410/412 the account API's, 502 an
account source, 503 an outage); anything without one is a bug (500).
This module imports nothing of ours: every package may use it.
"""

#: What an outage's message ends with.
GIVEN_UP = ('The request was given up and nothing was decided; try again '
            'later.')


class DependencyError(Exception):
    """A service we depend on failed or refused, as its adapter says: the
    base of each adapter's errors (PlacementError, LedgerError,
    QuotaSourceError...). Only its :class:`DependencyUnavailable`
    subclasses are outages; the others are refusals or bugs (500)."""


class DependencyUnavailable(DependencyError):
    """A service a request needs is down or did not answer in time.

    ``service`` names it (``ledger``, ``placement``, ``nova``,
    ``keystone``, ``blazar``); the message says where and why. Adapters
    raise subclasses of their own (``LedgerUnavailable``, Placement's
    ``Unavailable``...) that are this too::

        raise DependencyUnavailable('Cannot reach Blazar at ...',
                                    service='blazar')
    """

    #: The service that failed.
    service = 'a service'
    http_status = 503
    #: Whether a message that says "try again" already says all (the
    #: ledger's): :func:`outage` then adds nothing.
    advises_retry = False

    def __init__(self, *args, service=None):
        super().__init__(*args)
        if service is not None:
            self.service = service

    @property
    def reason(self):
        return str(self)


def causes(exc):
    """``exc`` and what it was raised from or while handling, in order."""
    seen = []
    while exc is not None and len(seen) < 16 and not any(
            exc is known for known in seen):
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def unavailable(exc):
    """The :class:`DependencyUnavailable` that ``exc`` is or was raised
    from, or None: ``exc`` is then no outage (a bug, a misconfiguration,
    a refusal the service must not get). The first of ``exc`` and its
    causes that an adapter raised (a :class:`DependencyError`) decides: a
    refusal raised while handling an outage is a refusal."""
    for error in causes(exc):
        if isinstance(error, DependencyUnavailable):
            return error
        if isinstance(error, DependencyError):
            return None
    return None


def sentence(text):
    """``text`` on one line, ending with a full stop."""
    text = ' '.join(str(text).split())
    return text if text.endswith('.') else text + '.'


def outage(exc):
    """The message of the outage ``exc`` is (what failed, then
    :data:`GIVEN_UP` unless it already says to try again), or None when
    it is none (see :func:`unavailable`)."""
    found = unavailable(exc)
    if found is None:
        return None
    message = sentence(found)
    if found.advises_retry and 'try again' in message:
        return message
    return '%s %s' % (message, GIVEN_UP)


def status_of(exc, default=500):
    """The HTTP status answering ``exc``: the ``http_status`` of the
    nearest of our classes in its MRO (a library's own, such as
    keystoneauth's, is not ours to answer), else ``default`` (500: a
    bug)."""
    for cls in type(exc).__mro__:
        status = cls.__dict__.get('http_status')
        if isinstance(status, int) and cls.__module__.startswith(
                'placement_quota.'):
            return status
    return default


def exit_status(status):
    """The exit status of a command whose answer is the HTTP ``status``:
    0 done (2xx), 1 the answer is "no" (403: denied), 2 it could not
    answer (bad input, an outage, a bug)."""
    if status < 400:
        return 0
    if status == 403:
        return 1
    return 2
