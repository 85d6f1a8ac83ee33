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
"""What the benchmarks share: their command lines' types, percentiles,
timed check-creates."""

import argparse
import json
import time

import requests


def positive(text):
    """An argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError('must be at least 1, not %s' % text)
    return value


def percentile(values, fraction):
    """The value at ``fraction`` (0..1) of the sorted ``values`` (the
    nearest rank)."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))
    return ordered[index]


def time_check_creates(url, bodies):
    """``(latencies in ms, {status: count})`` of ``POST
    /v1/check-create`` of each of ``bodies`` (JSON documents, made as they
    are sent: making one is not timed), one after another on one
    connection of the service at ``url``."""
    session = requests.Session()
    timings, statuses = [], {}
    for body in bodies:
        payload = json.dumps(body)
        began = time.perf_counter()
        response = session.post(url + '/v1/check-create', data=payload,
                                headers={'Content-Type': 'application/json'},
                                timeout=60)
        timings.append((time.perf_counter() - began) * 1000)
        statuses[response.status_code] = statuses.get(
            response.status_code, 0) + 1
    return timings, statuses
