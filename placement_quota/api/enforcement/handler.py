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
"""Handlers of the enforcement service API (Blazar's "Flexible Reservation
Usage Enforcement" spec).

``POST /v1/check-create``, ``/v1/check-update`` and ``/v1/on-end``, and the
same paths without ``/v1``: Blazar joins its base URL with ``urljoin``,
which drops a last path segment that has no trailing slash. 204 allows,
403 with ``{"message": ...}`` denies, 400 names the bad field and value,
503 with ``{"message": ...}`` says which service the decision needs is
down or did not answer in time -- the ledger database, Placement, Nova's
quota sets, Keystone's limits (nothing was decided; the request may be
sent again) -- and 500 is a bug (a filter failed otherwise; the log has
the traceback). doc/source/failures.rst lists what each fault gets, in
how long.
"""

from oslo_log import log as logging

from placement_quota.api import util
from placement_quota import errors
from placement_quota.filters import base
from placement_quota.filters import chain as chain_mod
from placement_quota.lease import model as lease_model
from placement_quota import metrics

LOG = logging.getLogger(__name__)

VERSION = {'id': 'v1.0', 'status': 'CURRENT', 'min_version': '',
           'version': ''}


def _version(req):
    links = [{'rel': 'self', 'href': req.host_url + '/v1/'}]
    return dict(VERSION, links=links)


def versions(req):
    """``GET /``: the version document."""
    return util.json_response(200, {'versions': [_version(req)]})


def version_v1(req):
    """``GET /v1``: this version."""
    return util.json_response(200, {'version': _version(req)})


class Enforcement:
    """Parse the body, run the chain, answer: nothing else."""

    def __init__(self, chain, max_body_size):
        self.chain = chain
        self.max_body_size = max_body_size

    def __call__(self, req, kind):
        try:
            body = util.read_json_body(req, self.max_body_size)
            request = lease_model.parse_body(kind, body)
        except lease_model.PayloadError as exc:
            _decided(kind, 'invalid')
            raise util.HTTPError(errors.status_of(exc), str(exc),
                                 **_extra(exc))
        except util.HTTPError:
            _decided(kind, 'invalid')
            raise
        try:
            self.chain.run(request)
        except base.EnforcementDenied as denial:
            _decided(kind, 'deny', denial.filter_name)
            raise util.HTTPError(errors.status_of(denial), str(denial),
                                 filter=denial.filter_name)
        except lease_model.PayloadError as exc:
            _decided(kind, 'invalid')
            raise util.HTTPError(errors.status_of(exc), str(exc),
                                 **_extra(exc))
        except chain_mod.ServiceUnavailable as exc:
            _decided(kind, 'unavailable')
            raise util.HTTPError(errors.status_of(exc), str(exc))
        except chain_mod.FilterError as exc:
            _decided(kind, 'error', exc.filter_name)
            raise util.HTTPError(
                errors.status_of(exc), 'Enforcement filter %s failed; the '
                'service log has the details (request %s).'
                % (exc.filter_name, _request_id(req)),
                filter=exc.filter_name)
        _decided(kind, 'allow')
        return util.no_content()


def _decided(kind, outcome, filter_name=None):
    metrics.counted(metrics.DECISIONS, kind, outcome, filter_name or '').inc()


def _extra(exc):
    extra = exc.to_dict()
    extra.pop('message')
    return extra


def _request_id(req):
    return req.environ.get('openstack.request_id', 'unknown')
