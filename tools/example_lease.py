#!/usr/bin/env python3
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
"""Write a request body Blazar sends to enforcement, dated from now.

The bodies of Blazar's "Flexible Reservation Usage Enforcement" spec
(``context`` and ``lease``; ``current_lease`` too for a check-update), with
the spec's user and project, a ``physical:host`` reservation of
``--hosts`` hosts and, with ``--floating-ips``, a ``virtual:floatingip``
one. Dates are in the spec's ``YYYY-MM-DD HH:MM`` form (UTC) and relative
to the time the script runs, so a body written now describes a lease that
has not ended yet::

    tools/example_lease.py --start +1h --hours 2 > lease.json
    tools/example_lease.py --update --hours 2 --new-hours 72 > update.json

The same ``lease.json`` serves check-create (``POST /v1/check-create``,
``placement-quota check create``) and on-end (``POST /v1/on-end``,
``placement-quota check end``). Standard library only: any ``python3``
runs it, with or without placement-quota's virtual environment.
"""

import argparse
import datetime
import json
import re
import sys

#: The user and project of the spec's example request.
USER_ID = 'c631173e-dec0-4bb7-a0c3-f7711153c06c'
PROJECT_ID = 'a0b86a98-b0d3-43cb-948e-00689182efd4'
DATE_FORMAT = '%Y-%m-%d %H:%M'
_OFFSET = re.compile(r'^([+-])(\d+)([mhd])$')
_UNITS = {'m': 'minutes', 'h': 'hours', 'd': 'days'}


def parse_start(value, now):
    """The start date meant by ``value``: ``now``, an offset from ``now``
    (``+1h``, ``+30m``, ``-2d``) or a date ``YYYY-MM-DD HH:MM`` (UTC)."""
    if value == 'now':
        return now
    m = _OFFSET.match(value)
    if m:
        sign, number, unit = m.groups()
        delta = datetime.timedelta(**{_UNITS[unit]: int(number)})
        return now + delta if sign == '+' else now - delta
    try:
        return datetime.datetime.strptime(value, DATE_FORMAT)
    except ValueError:
        raise argparse.ArgumentTypeError(
            '%r is neither "now", an offset such as +1h, +30m or -2d, nor '
            'a date "YYYY-MM-DD HH:MM"' % value)


def host_reservation(hosts):
    """A ``physical:host`` reservation of ``hosts`` hosts, allocated
    ``compute-1`` to ``compute-<hosts>`` in ``az1``."""
    return {
        'resource_type': 'physical:host',
        'min': hosts,
        'max': hosts,
        'hypervisor_properties': '[]',
        'resource_properties': '["==", "$availability_zone", "az1"]',
        'allocations': [
            {'id': '00000000-0000-4000-8000-%012d' % i,
             'hypervisor_hostname': 'compute-%d' % i,
             'availability_zone': 'az1'}
            for i in range(1, hosts + 1)],
    }


def floating_ip_reservation(amount):
    """A ``virtual:floatingip`` reservation of ``amount`` addresses of
    ``external-network-id``."""
    return {
        'resource_type': 'virtual:floatingip',
        'network_id': 'external-network-id',
        'amount': amount,
        'allocations': [
            {'id': '00000000-0000-4000-9000-%012d' % i,
             'floating_network_id': 'external-network-id',
             'floating_ip_address': '192.168.1.%d' % (99 + i)}
            for i in range(1, amount + 1)],
    }


def lease(name, start, hours, hosts, floating_ips):
    """Blazar's lease values with their reservations."""
    reservations = []
    if floating_ips:
        reservations.append(floating_ip_reservation(floating_ips))
    if hosts:
        reservations.append(host_reservation(hosts))
    end = start + datetime.timedelta(hours=hours)
    return {'name': name,
            'start_date': start.strftime(DATE_FORMAT),
            'end_date': end.strftime(DATE_FORMAT),
            'reservations': reservations}


def body(args):
    """The request body ``args`` describe (``args.start`` a date)."""
    start = args.start
    document = {
        'context': {'user_id': args.user, 'project_id': args.project,
                    'auth_url': 'https://api.example.com:5000/v3',
                    'region_name': 'RegionOne'},
        'lease': lease(args.name, start, args.hours, args.hosts,
                       args.floating_ips),
    }
    if args.update:
        document['current_lease'] = document['lease']
        document['lease'] = lease(
            args.name, start,
            args.hours if args.new_hours is None else args.new_hours,
            args.hosts if args.new_hosts is None else args.new_hosts,
            args.floating_ips)
    return document


def _positive(value):
    number = float(value)
    if number <= 0:
        raise argparse.ArgumentTypeError('must be more than 0: %s' % value)
    return number


def _count(value):
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError('must be 0 or more: %s' % value)
    return number


def parser():
    p = argparse.ArgumentParser(
        description='Write a check-create (or, with --update, a '
        'check-update) body of Blazar\'s "Flexible Reservation Usage '
        'Enforcement" spec on standard output, dated from now (UTC).')
    p.add_argument('--start', default='+1h', metavar='WHEN',
                   help='the lease start: "now", an offset from now (+1h, '
                   '+30m, or --start=-2d for the past) or "YYYY-MM-DD HH:MM" '
                   '(default: +1h)')
    p.add_argument('--hours', type=_positive, default=2.0,
                   help='the lease length in hours (default: 2)')
    p.add_argument('--hosts', type=_count, default=1,
                   help='hosts of the physical:host reservation; 0 for '
                   'none (default: 1)')
    p.add_argument('--floating-ips', type=_count, default=0,
                   help='addresses of a virtual:floatingip reservation '
                   '(default: 0, none)')
    p.add_argument('--name', default='lease-1',
                   help='the lease name (default: lease-1)')
    p.add_argument('--project', default=PROJECT_ID,
                   help='the project ID of the context (default: the '
                   "spec's, %s)" % PROJECT_ID)
    p.add_argument('--user', default=USER_ID,
                   help="the user ID of the context (default: the spec's)")
    p.add_argument('--update', action='store_true',
                   help='a check-update body: current_lease as the options '
                   'above describe it, lease as changed by --new-hours '
                   'and --new-hosts')
    p.add_argument('--new-hours', type=_positive,
                   help='with --update: the new length in hours')
    p.add_argument('--new-hosts', type=_count,
                   help='with --update: the new number of hosts')
    return p


def build(argv=None, now=None):
    """The body the command line ``argv`` asks for, dated from ``now``
    (naive UTC; default: this minute). Exits 2 on a bad option."""
    p = parser()
    args = p.parse_args(argv)
    if not args.update and (args.new_hours is not None
                            or args.new_hosts is not None):
        p.error('--new-hours and --new-hosts need --update')
    if not args.hosts and not args.floating_ips:
        p.error('a lease needs a reservation: --hosts or --floating-ips')
    now = now or datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None, second=0, microsecond=0)
    try:
        args.start = parse_start(args.start, now)
    except argparse.ArgumentTypeError as e:
        p.error('--start: %s' % e)
    return body(args)


def main(argv=None):
    json.dump(build(argv), sys.stdout, indent=2)
    sys.stdout.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
