#!/bin/sh
# Keystone for placement-quota, run once with a cloud admin's credentials
# (OS_AUTH_URL, OS_USERNAME... as for any "openstack" command).
#
#   PLACEMENT_QUOTA_PASSWORD  the password of placement-quota's user
#   SERVICE_PROJECT           the project of the service users (service)
#   BLAZAR_USER               Blazar's service user (blazar)
#   PLACEMENT_QUOTA_USER      placement-quota's user (placement-quota)
set -eu
: "${PLACEMENT_QUOTA_PASSWORD:?set PLACEMENT_QUOTA_PASSWORD}"
SERVICE_PROJECT=${SERVICE_PROJECT:-service}
BLAZAR_USER=${BLAZAR_USER:-blazar}
PLACEMENT_QUOTA_USER=${PLACEMENT_QUOTA_USER:-placement-quota}

# The "service" role, as deployment tools create it.
openstack role create --or-show service

# placement-quota's own user.
openstack user create --domain Default \
    --password "$PLACEMENT_QUOTA_PASSWORD" "$PLACEMENT_QUOTA_USER"
# Placement (providers, inventories, usages, allocations, reshaper) and
# validating the callers' tokens ([keystone_authtoken]).
openstack role add --project "$SERVICE_PROJECT" \
    --user "$PLACEMENT_QUOTA_USER" service
# Keystone projects and unified limits ([keystone], system-scoped).
openstack role add --system all --user "$PLACEMENT_QUOTA_USER" reader
# Nova's flavors and their extra specs ([nova]).
openstack role add --project "$SERVICE_PROJECT" \
    --user "$PLACEMENT_QUOTA_USER" reader

# Blazar's service user calls placement-quota: [api] service_roles.
openstack role add --project "$SERVICE_PROJECT" --user "$BLAZAR_USER" service

