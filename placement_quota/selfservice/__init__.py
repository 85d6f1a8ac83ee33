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
"""What the people whose leases are judged may see and ask, themselves.

A member (or reader) of a project reads the limits in force for it, with
its usage; prices a lease before asking Blazar for it (a *quote*); and
learns how far one of its leases may be extended. Every number comes from
the filters of the service's chain -- the same code that decides -- on
the ledger, never from a second computation:

* :mod:`~placement_quota.selfservice.view`: each enabled filter's
  ``describe`` (its limits, what is in use now and the peak reserved over
  the next days) and the project's credits;
* :mod:`~placement_quota.selfservice.quote`: a dry admission asking every
  filter (the chain stops at the first denial; a quote goes on, to say
  what each filter would answer), rolled back: no ledger row, no lock
  held after, no Placement write;
* :mod:`~placement_quota.selfservice.extension`: the latest end date, to
  the minute, that a check-update of the lease passes, found by dry
  admissions on one lease.

:class:`~placement_quota.selfservice.service.SelfService` is the facade the
project API (:mod:`placement_quota.api.project`) calls. Its answers are
JSON-ready dicts; the shapes are documented in doc/source/api-project.rst.
"""
