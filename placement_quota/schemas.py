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
"""JSON Schema validation of limits and counts, where an integer is an int.

JSON Schema calls ``10.0`` an integer; a limit of ``10.0`` (or ``true``,
which Python calls an int) is a typo in a limits file or an account body.
:data:`StrictValidator` is Draft 7 with ``integer`` meaning a Python
``int`` that is not a ``bool``. It depends on jsonschema only, so that
every layer (the limits core, the accounts, the APIs) may use it.
"""

import jsonschema


def is_integer(checker, value):
    """The ``integer`` type of :data:`StrictValidator`."""
    return isinstance(value, int) and not isinstance(value, bool)


StrictValidator = jsonschema.validators.extend(
    jsonschema.Draft7Validator,
    type_checker=jsonschema.Draft7Validator.TYPE_CHECKER.redefine(
        'integer', is_integer))


def first_error(schema, document):
    """The error of ``document`` whose path sorts first, or None when it is
    valid: the same error for the same document every time."""
    errors = StrictValidator(schema).iter_errors(document)
    return next(iter(sorted(
        errors, key=lambda e: [str(p) for p in e.absolute_path])), None)
