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
"""Accounts of the admin API ("Multi-Tenant Accounting in OpenStack").

An account is a project as the quota system sees it: its parent, its limits
per resource, free-form metadata, its reservations in the ledger and its
consumers in Placement. The accounts are kept in the ledger database and
are the embedded limits source's hierarchy and limits
(:mod:`placement_quota.accounts.source`).

:mod:`~placement_quota.accounts.service` orchestrates the operations on
the ledger's SQL (:mod:`~placement_quota.accounts.store`) and Placement
(:mod:`~placement_quota.accounts.consumers`); what needs no I/O lives
apart: the account (:mod:`~placement_quota.accounts.model`), the PUT body
(:mod:`~placement_quota.accounts.schema`), move actions and their limit
check (:mod:`~placement_quota.accounts.moves`), and the errors
(:mod:`~placement_quota.accounts.errors`).
"""
