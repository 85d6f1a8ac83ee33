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
"""The request examples of Blazar's "Flexible Reservation Usage Enforcement"
spec, verbatim, shared by several tests."""

from tests import builders

CONTEXT = {
    "user_id": "c631173e-dec0-4bb7-a0c3-f7711153c06c",
    "project_id": "a0b86a98-b0d3-43cb-948e-00689182efd4",
    "auth_url": "https://api.example.com:5000/v3",
    "region_name": "RegionOne",
}

_FLOATINGIP = builders.floatingips(
    1, network_id="external-network-id",
    allocations=[{
        "floating_network_id": "external-network-id",
        "floating_ip_address": "192.168.1.100",
        "id": "7375755f-717e-4883-91c1-06ceba2da96e"
    }])


def _host(min_, max_, hosts):
    return builders.hosts(
        *hosts, min=min_, max=max_,
        resource_properties="[\"==\", \"$availability_zone\", \"az1\"]",
        first_id=1, availability_zone="az1")


HOST_1 = "32af5a7a-e7a3-4883-a643-828e3f63bf54"
HOST_2 = "af69aabd-8386-4053-a6dd-1a983787bd7f"


def check_create():
    """``POST /v1/check-create`` request example."""
    return {
        "context": dict(CONTEXT),
        "lease": {
            "start_date": "2020-05-13 00:00",
            "end_time": "2020-05-14 23:59",
            "reservations": [dict(_FLOATINGIP), _host(1, 2, [HOST_1])],
        },
    }


def check_update():
    """``POST /v1/check-update`` request example."""
    return {
        "context": dict(CONTEXT),
        "current_lease": {
            "start_date": "2020-05-13 00:00",
            "end_time": "2020-05-14 23:59",
            "reservations": [_host(1, 2, [HOST_1])],
        },
        "lease": {
            "start_date": "2020-05-13 00:00",
            "end_time": "2020-05-14 23:59",
            "reservations": [_host(2, 3, [HOST_1, HOST_2])],
        },
    }


def on_end():
    """``POST /v1/on-end`` request example."""
    return {
        "context": dict(CONTEXT),
        "lease": {
            "start_date": "2020-05-13 00:00",
            "end_time": "2020-05-14 23:59",
            "reservations": [_host(1, 2, [HOST_1])],
        },
    }


def lease(start="2020-05-13 00:00", end="2020-05-14 00:00", **extra):
    """A minimal valid lease."""
    return builders.lease(start, end, **extra)
