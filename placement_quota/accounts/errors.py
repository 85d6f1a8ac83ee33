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
"""What can go wrong with an account operation.

Each error carries a message naming the field and the value, and extra
details (``body``: the field, the value, and what else helps the caller).
They know nothing of HTTP: the admin API maps each class to its status
(:data:`placement_quota.api.admin.app.STATUS`), the CLI prints the message.
"""


class AccountError(Exception):
    """An account operation failed: ``message`` and details (``body``)."""

    def __init__(self, message, **body):
        super().__init__(message)
        self.message = message
        self.body = body


class Invalid(AccountError):
    """The request itself is wrong (a field, a parameter, a body)."""


class NotFound(AccountError):
    """No such account, or no such consumer or lease of the account."""


class Gone(AccountError):
    """The account is deleted, and still recoverable."""


class Conflict(AccountError):
    """The change contradicts the accounts' current state."""


class OverLimit(Conflict):
    """A move would take the destination past a limit."""


class PreconditionFailed(AccountError):
    """The resources changed since they were read (``If-Match``, or a
    concurrent change during a move)."""


class SourceUnavailable(AccountError):
    """Placement could not be read or written."""
