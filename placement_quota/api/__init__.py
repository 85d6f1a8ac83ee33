"""WSGI apps, one package each: the enforcement service (Blazar's "Flexible
Reservation Usage Enforcement" spec, :mod:`placement_quota.api.enforcement`)
and the account admin API (:mod:`placement_quota.api.admin`); what both
use: :mod:`~placement_quota.api.util` and
:mod:`~placement_quota.api.healthcheck`."""
