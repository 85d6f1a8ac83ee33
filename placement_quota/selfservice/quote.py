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
"""A quote: what every filter would answer to a lease, and its price.

The body is the one a user gives Blazar's ``POST /v1/leases`` (``name``,
``start_date`` -- ``now`` too --, ``end_date``, ``reservations``,
``events``). The chain evaluates it in one dry admission
(:meth:`~placement_quota.filters.chain.FilterChain.evaluate`): the same
locks, ledger reads and checks as the create Blazar would then ask for,
rolled back -- no ledger row, no lock held after the answer, no Placement
write (the filters only read Placement). Filters that change something
elsewhere when asked (ExternalServiceFilter) are not asked, and say so.
"""

import json

from placement_quota.filters import base
from placement_quota.filters import chain as chain_mod
from placement_quota.filters import measures
from placement_quota.lease import model as lease_model
from placement_quota.ledger import admission as admission_mod

NOT_ASKED = ('not asked: asking it changes something outside this '
             'service (it records what it is asked)')


def resolve_now(body, now):
    """``body`` with a ``start_date`` of ``now`` replaced by ``now`` to
    the minute, as Blazar does when it creates the lease."""
    if not isinstance(body, dict):
        raise lease_model.PayloadError('lease', 'must be an object', body)
    if body.get('start_date') == 'now':
        body = dict(body, start_date=now.replace(
            second=0, microsecond=0).isoformat())
    return body


#: Fields of a reservation Blazar parses as JSON (empty: none).
JSON_FIELDS = ('hypervisor_properties', 'resource_properties')


def check_blazar_body(body):
    """Refuse what Blazar's lease create would refuse before asking any
    filter, naming the field: a lease without a name, a reservation
    whose ``hypervisor_properties`` or ``resource_properties`` is not
    JSON. A quote of such a body would say "allowed" of a lease Blazar
    never creates."""
    name = body.get('name')
    if not isinstance(name, str) or not name.strip():
        raise lease_model.PayloadError(
            'lease.name', 'is required: Blazar creates no lease without a '
            'name', name, has_value='name' in body)
    reservations = body.get('reservations')
    if not isinstance(reservations, list):
        return   # the lease's own checks name it
    for index, reservation in enumerate(reservations):
        if not isinstance(reservation, dict):
            continue
        for key in JSON_FIELDS:
            value = reservation.get(key)
            if not isinstance(value, str) or not value.strip():
                continue
            try:
                json.loads(value)
            except ValueError:
                raise lease_model.PayloadError(
                    'lease.reservations[%d].%s' % (index, key),
                    'is not JSON (Blazar refuses such a lease)',
                    value) from None


def pricer(filters):
    """``price(admission)`` of the chain's first filter that prices
    leases (CreditFilter's ``price_of``), or None."""
    for filter_ in filters:
        price_of = getattr(filter_, 'price_of', None)
        if price_of is not None:
            def price(adm, price_of=price_of):
                try:
                    return price_of(adm)
                except base.EnforcementDenied:
                    return None   # the filter's own answer says why
            return price
    return None


def outcomes(evaluation):
    """``[{'name', 'allowed', 'message'}]`` per filter, in order."""
    found = []
    for filter_ in evaluation.filters:
        outcome = evaluation.outcomes[filter_]
        if evaluation.exempt:
            found.append({'name': filter_.name, 'allowed': True,
                          'message': 'the project is exempted from '
                                     'enforcement'})
        elif outcome is chain_mod.NOT_ASKED:
            found.append({'name': filter_.name, 'allowed': None,
                          'message': NOT_ASKED})
        elif outcome is None:
            found.append({'name': filter_.name, 'allowed': True,
                          'message': None})
        else:
            found.append({'name': filter_.name, 'allowed': False,
                          'message': str(outcome)})
    return found


def quote(chain, context, body, now):
    """The ``quote`` answer (see the project API reference) for a create
    of ``body`` by ``context``."""
    body = resolve_now(body, now)
    check_blazar_body(body)
    lease = lease_model.Lease.coerce(body)
    evaluation = chain.evaluate(admission_mod.CHECK_CREATE, context, lease,
                                inspect=pricer(chain.filters))
    denial = evaluation.denial
    return {
        'project_id': context.project_id, 'user_id': context.user_id,
        'lease': {'name': lease.values.get('name'),
                  'start_date': measures.iso(lease.start_date),
                  'end_date': measures.iso(lease.end_date)},
        'allowed': denial is None,
        'denied_by': None if denial is None else denial.filter_name,
        'message': None if denial is None else str(denial),
        'filters': outcomes(evaluation),
        'credits': evaluation.found}
