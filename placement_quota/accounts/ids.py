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
"""Account IDs, exactly as "Multi-Tenant Accounting in OpenStack" defines them.

1. a string in the UTF-8 character set;
2. not empty, and not longer than 255 characters;
3. any character but the path separator ``/``;
4. percent-encoded in a URL (RFC 1738): a segment that does not decode to
   UTF-8 is refused.

One more restriction, forced by the databases: no NUL character
(PostgreSQL cannot store it in a text column).
"""

from urllib import parse

MAX_LENGTH = 255


class InvalidAccountId(ValueError):
    """Not an account ID; ``field`` and ``value`` say which and what."""

    def __init__(self, message, field, value):
        super().__init__(message)
        self.field = field
        self.value = value


def validate(account_id, field='account_id'):
    """``account_id`` if it is a valid account ID, else InvalidAccountId."""
    if not isinstance(account_id, str):
        raise InvalidAccountId('%s must be a string, not %r'
                               % (field, account_id), field, account_id)
    if not account_id:
        raise InvalidAccountId('%s must not be empty' % field, field,
                               account_id)
    if len(account_id) > MAX_LENGTH:
        raise InvalidAccountId(
            '%s must be at most %d characters, not %d'
            % (field, MAX_LENGTH, len(account_id)), field, account_id)
    if '/' in account_id:
        raise InvalidAccountId(
            '%s %r must not contain the path separator "/"'
            % (field, account_id), field, account_id)
    if '\x00' in account_id:
        raise InvalidAccountId('%s %r must not contain a NUL character'
                               % (field, account_id), field, account_id)
    return account_id


def from_url(segment, field='account_id'):
    """The account ID of a percent-encoded URL path segment or query value.

    ``segment`` is the raw (still encoded) text of the URL.
    """
    try:
        decoded = parse.unquote(segment, encoding='utf-8', errors='strict')
    except UnicodeDecodeError:
        raise InvalidAccountId(
            '%s %r is not percent-encoded UTF-8' % (field, segment), field,
            segment)
    return validate(decoded, field)


def to_url(account_id):
    """``account_id`` percent-encoded as one URL path segment."""
    return parse.quote(account_id, safe="!$&'()*+,;=:@")
