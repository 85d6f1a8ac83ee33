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
"""The body of a PUT of an account: its schema and its parsing."""

from placement_quota.accounts import errors
from placement_quota.accounts import ids
from placement_quota import schemas

#: Fields of a GET representation that a PUT accepts and ignores, so that
#: what GET returned can be PUT back.
READ_ONLY = ('id', 'children', 'usage', 'generation', 'created_at',
             'updated_at', 'links')

_RESOURCE = {'type': 'string', 'minLength': 1, 'maxLength': 255}
PUT_SCHEMA = {
    'type': 'object',
    'properties': {
        'parent_id': {'oneOf': [{'type': 'string'}, {'type': 'null'}]},
        'limits': {'type': 'object', 'propertyNames': _RESOURCE,
                   'additionalProperties': {'type': 'integer',
                                            'minimum': -1}},
        'metadata': {'type': 'object', 'propertyNames': _RESOURCE,
                     'additionalProperties': {'type': 'string',
                                              'maxLength': 65535}},
    },
    'additionalProperties': False,
}


def parse_body(account_id, body):
    """The ``(parent_id, limits, metadata)`` of a PUT body (a dict).

    Read-only fields of a GET representation are accepted and ignored;
    ``id``, when present, must be the account's own. Raises
    :class:`~placement_quota.accounts.errors.Invalid` naming the field.
    """
    if not isinstance(body, dict):
        raise errors.Invalid('The body must be a JSON object, not %s'
                             % type(body).__name__, field='body')
    if 'id' in body and body['id'] != account_id:
        raise errors.Invalid('Field id %r differs from the account ID %r of '
                             'the URL' % (body['id'], account_id),
                             field='id', value=body['id'])
    document = {k: v for k, v in body.items() if k not in READ_ONLY}
    error = schemas.first_error(PUT_SCHEMA, document)
    if error is not None:
        field = '/'.join(str(p) for p in error.absolute_path) or 'body'
        raise errors.Invalid('Field %s: %s' % (field, error.message),
                             field=field, value=error.instance)
    parent_id = document.get('parent_id')
    if parent_id is not None:
        try:
            ids.validate(parent_id, 'parent_id')
        except ids.InvalidAccountId as exc:
            raise errors.Invalid(str(exc), field='parent_id',
                                 value=parent_id)
        if parent_id == account_id:
            raise errors.Invalid('parent_id %r is the account itself'
                                 % parent_id, field='parent_id',
                                 value=parent_id)
    return (parent_id, dict(document.get('limits') or {}),
            dict(document.get('metadata') or {}))
