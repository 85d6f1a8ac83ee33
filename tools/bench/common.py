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
import http.client
import json
import time
import urllib.parse


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
    keep-alive connection (``http.client``: the client's own time, which
    runs in the measuring process, stays a small part of each figure) of
    the service at ``url``."""
    parsed = urllib.parse.urlsplit(url)
    path = parsed.path.rstrip('/') + '/v1/check-create'
    headers = {'Content-Type': 'application/json'}
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port,
                                            timeout=60)
    timings, statuses = [], {}
    try:
        for body in bodies:
            payload = json.dumps(body).encode()
            began = time.perf_counter()
            connection.request('POST', path, body=payload, headers=headers)
            response = connection.getresponse()
            response.read()
            timings.append((time.perf_counter() - began) * 1000)
            statuses[response.status] = statuses.get(response.status, 0) + 1
    finally:
        connection.close()
    return timings, statuses
