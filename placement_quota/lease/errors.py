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
"""The error of a wrong enforcement payload: :class:`PayloadError`.

Pure code. :mod:`placement_quota.lease.model` (where callers find it, as
``lease.PayloadError``) and :mod:`placement_quota.lease.schema` raise it.
It names the field and shows the value as JSON (:func:`show`, with
:func:`jsonable`, which ``lease.Lease.to_dict`` uses too: dates as ISO 8601
strings, what JSON cannot hold as its ``repr``).
"""

import datetime
import json
from typing import Any


class PayloadError(ValueError):
    """A payload field is missing or wrong; names the field and the value."""

    http_status = 400

    def __init__(self, field: str, reason: str, value: Any = None,
                 has_value: bool = True):
        self.field = field
        self.reason = reason
        self.value = value
        self.has_value = has_value
        if has_value:
            message = '%s: %s (got %s)' % (field, reason, show(value))
        else:
            message = '%s: %s' % (field, reason)
        super().__init__(message)

    def to_dict(self):
        body = {'message': str(self), 'field': self.field}
        if self.has_value:
            body['value'] = jsonable(self.value)
        return body


def show(value, limit=120):
    """``value`` as JSON for a message, cut to ``limit`` characters."""
    text = json.dumps(jsonable(value), sort_keys=True)
    return text if len(text) <= limit else text[:limit - 3] + '...'


def jsonable(value):
    """``value`` if JSON can hold it, its ISO 8601 form if a date, else
    its ``repr``."""
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value
