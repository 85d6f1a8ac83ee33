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
"""``[lifecycle]``: ``placement-quota listen``, which follows Blazar's lease
notifications into the ledger.

The broker connection itself (retries, back-off, heartbeats, TLS) is
oslo.messaging's: ``[oslo_messaging_rabbit]``, registered by oslo.messaging
when the listener starts. How many notifications are handled at once is
oslo.messaging's ``[DEFAULT] executor_thread_pool_size``.
"""

from oslo_config import cfg

from placement_quota.conf import _util

GROUP = cfg.OptGroup(
    'lifecycle', title='Lease lifecycle listener',
    help='How placement-quota listen receives Blazar\'s lease '
         'notifications (lease.create, lease.update, lease.delete, '
         'lease.event.*) to follow each lease in the ledger. Blazar sends '
         'them only when its configuration has [oslo_messaging_notifications] '
         'driver = messagingv2 and a transport_url (there, or in its '
         '[DEFAULT]) naming the same broker as the transport_url here.')

opts = [
    cfg.StrOpt(
        'transport_url', secret=True,
        help='The oslo.messaging URL of the broker Blazar publishes its '
             'notifications on, e.g. rabbit://user:password@host:5672/. '
             'Unset: [oslo_messaging_notifications] transport_url, then '
             '[DEFAULT] transport_url of this file (oslo.messaging\'s '
             'usual lookup for notifications). It must name the broker and '
             'vhost of Blazar\'s [oslo_messaging_notifications] '
             'transport_url (or of Blazar\'s [DEFAULT] transport_url when '
             'that is unset).'),
    cfg.ListOpt(
        'topics', default=['notifications'],
        help='The notification topics to listen on: Blazar\'s '
             '[oslo_messaging_notifications] topics (default '
             '"notifications"). Only info notifications whose event type '
             'starts with "lease." are used; the rest are acknowledged '
             'and dropped.'),
    cfg.StrOpt(
        'exchange', default='openstack',
        help='The exchange Blazar publishes on: Blazar sets no '
             'control_exchange of its own, so this is oslo.messaging\'s '
             'default "openstack" unless Blazar\'s configuration sets '
             '[DEFAULT] control_exchange.'),
    cfg.StrOpt(
        'pool', default='placement-quota',
        help='The listener pool: placement-quota reads a queue of its own, '
             'named after the pool and bound to <topic>.info, which gets a '
             'copy of every notification, so it never takes messages from '
             'Blazar\'s other consumers (e.g. Ceilometer, which reads the '
             'plain notifications.info queue). Every placement-quota '
             'listen process with the same pool shares one queue (each '
             'message goes to one of them).'),
    cfg.IntOpt(
        'pending_timeout', default=3600, min=1,
        help='Seconds after which a pending ledger entry that check-create '
             'recorded, and that no lease.create has bound to a lease, is '
             'abandoned and its charge released: Blazar never created '
             'that lease. Measured against the newest notification seen '
             'from Blazar, not the clock, so a broker outage or a stopped '
             'listener never abandons anything. A late lease.create '
             'reopens the entry.'),
    cfg.IntOpt(
        'settle_interval', default=60, min=1,
        help='Seconds between two passes that abandon the entries older '
             'than pending_timeout (see above).'),
    cfg.PortOpt(
        'metrics_port', default=0,
        help='The port on which placement-quota listen serves /metrics '
             '(Prometheus text format: events by type and result, errors, '
             'lag behind Blazar, time of the last event). 0 (the '
             'default): no metrics server.'),
    cfg.HostAddressOpt(
        'metrics_host', default='127.0.0.1',
        help='The address the listener\'s metrics server binds to.'),
]


def register_opts(conf):
    _util.register(conf, GROUP, opts)


def list_opts():
    return {GROUP: opts}
