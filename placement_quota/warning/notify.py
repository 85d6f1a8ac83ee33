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
"""The notification channel: each warning as an oslo.messaging
notification, for operators' pipelines.

It publishes on oslo.messaging's own ``[oslo_messaging_notifications]``
options, as every OpenStack service does: ``driver`` (``messagingv2``...),
``topics`` and ``transport_url`` (else ``[DEFAULT] transport_url``).

* event type ``placement_quota.warning.<kind>``
  (:attr:`~placement_quota.warning.model.Notice.event_type`);
* publisher ``placement-quota.<host name>``;
* payload: the warning (:meth:`~placement_quota.warning.model.Notice.
  as_dict`: ``kind``, ``key``, ``project_id``, ``user_id``, ``lease_id``,
  ``lease_name``, ``due_at``, ``facts``) and ``subject``, the e-mail
  subject of the warning;
* priority ``warn`` for a lease ended because it was idle and for credits
  used up (100 % or more of the allocation), ``info`` otherwise.

oslo.messaging's ``Notifier``, and its ``messaging``/``messagingv2``
drivers, log a failed send and go on; a warning must not be lost that way.
So this channel loads the same drivers (the ``oslo.messaging.notify.
drivers`` plugins the ``Notifier`` loads) and calls them itself; for the
two messaging drivers it does what they do (one message per topic, on
``<topic>.<priority>``, in their format version) without swallowing the
transport's error. A failure raises :class:`~placement_quota.warning.
channels.SendError` (the dispatcher tries again later). For the same
reason a send does not retry forever when ``[oslo_messaging_notifications]
retry`` is -1 (its default): :data:`RETRIES` then bounds it.
"""

import socket
import uuid

import oslo_messaging
from oslo_messaging.notify import messaging as messaging_drivers
from oslo_utils import timeutils
from stevedore import named

from placement_quota.warning import channels
from placement_quota.warning import model

#: Connection retries of one send when ``[oslo_messaging_notifications]
#: retry`` asks for retrying forever (-1).
RETRIES = 3
#: The namespace of oslo.messaging's notification drivers.
DRIVERS = 'oslo.messaging.notify.drivers'
WARN = 'WARN'
INFO = 'INFO'
#: The kinds whose notifications have priority ``warn`` (the credit kinds
#: only from 100 %).
_WARN_KINDS = (model.IDLE_ENDED,)
_CREDIT_KINDS = (model.CREDITS, model.USER_CREDITS)


def priority(notice):
    """``WARN`` for a lease ended because it was idle and for credits at
    100 % or more of their allocation; ``INFO`` otherwise."""
    if notice.kind in _WARN_KINDS:
        return WARN
    if notice.kind in _CREDIT_KINDS:
        used = max(_number(notice.facts.get('used_pct')),
                   _number(notice.facts.get('threshold_pct')))
        if used >= 100:
            return WARN
    return INFO


def _number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def payload(notice, rendered):
    """The notification payload of ``notice``."""
    body = notice.as_dict()
    body['subject'] = getattr(rendered, 'subject', None)
    return body


class NotificationChannel(channels.Channel):
    """Warnings as oslo.messaging notifications (channel
    ``notification``).

    ``transport``: a notification transport (default: one from ``conf``,
    :func:`oslo_messaging.get_notification_transport`, released by
    :meth:`close`). Raises ValueError when ``[oslo_messaging_notifications]
    driver`` names no driver (nothing would be sent).
    """

    name = 'notification'

    def __init__(self, conf, transport=None):
        self._own_transport = transport is None
        if transport is None:
            transport = oslo_messaging.get_notification_transport(conf)
        self.transport = transport
        # get_notification_transport registered [oslo_messaging_
        # notifications] on the transport's configuration.
        options = transport.conf.oslo_messaging_notifications
        self.drivers = list(options.driver)
        self.topics = list(options.topics)
        self.retry = RETRIES if options.retry in (None, -1) else \
            options.retry
        if not self.drivers:
            self.close()
            raise ValueError(
                '[warnings] channels has "notification" but '
                '[oslo_messaging_notifications] driver is empty: set it '
                '(e.g. messagingv2) for warnings to be published')
        self.publisher_id = 'placement-quota.%s' % socket.gethostname()
        self._drivers = named.NamedExtensionManager(
            DRIVERS, names=self.drivers, invoke_on_load=True,
            invoke_args=[transport.conf],
            invoke_kwds={'topics': self.topics, 'transport': transport},
            on_missing_entrypoints_callback=self._missing)

    def _missing(self, names):
        self.close()
        raise ValueError('[oslo_messaging_notifications] driver: no such '
                         'oslo.messaging notification driver: %s'
                         % ', '.join(sorted(names)))

    def send(self, notice, rendered):
        level = priority(notice)
        message = {'message_id': str(uuid.uuid4()),
                   'publisher_id': self.publisher_id,
                   'event_type': notice.event_type,
                   'priority': level,
                   'payload': payload(notice, rendered),
                   'timestamp': str(timeutils.utcnow())}
        for extension in self._drivers.extensions:
            try:
                self._notify(extension.obj, message, level)
            except Exception as exc:
                raise channels.SendError(
                    'notification %s not published (driver %s, topics '
                    '%s): %s: %s' % (notice.event_type, extension.name,
                                     ', '.join(self.topics),
                                     type(exc).__name__, exc)) from exc
        return 'published %s (%s) on %s' % (
            notice.event_type, level.lower(), ', '.join(self.topics))

    def _notify(self, driver, message, level):
        if not isinstance(driver, messaging_drivers.MessagingDriver):
            driver.notify({}, message, level, self.retry)
            return
        # MessagingDriver.notify, less its "except Exception: log".
        for topic in driver.topics:
            target = oslo_messaging.Target(topic='%s.%s'
                                           % (topic, level.lower()))
            driver.transport._send_notification(
                target, {}, message, version=driver.version,
                retry=self.retry)

    def close(self):
        if self._own_transport and self.transport is not None:
            self.transport.cleanup()
            self.transport = None
