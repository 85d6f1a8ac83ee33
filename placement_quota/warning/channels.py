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
"""What a delivery channel is: a name, ``send`` and ``close``.

:class:`~placement_quota.warning.mail.MailChannel` and
:class:`~placement_quota.warning.notify.NotificationChannel` are the two;
the dispatcher (:mod:`placement_quota.warning.dispatch`) calls each on
every warning until it succeeds, with retries and backoff.
"""


class SendError(Exception):
    """A warning could not be sent on a channel. ``permanent``: retrying
    cannot help (e.g. the SMTP server refused every recipient); the
    dispatcher gives up at once instead of retrying."""

    def __init__(self, message, permanent=False):
        super().__init__(message)
        self.permanent = permanent


class Channel:
    """The protocol of a channel (a base class to inherit from)."""

    #: 'email' or 'notification' ([warnings] channels).
    name = None

    def send(self, notice, rendered):
        """Send ``notice`` (its :class:`~placement_quota.warning.render.
        Rendered` text); return a short text saying what was done. Raises
        :class:`SendError`."""
        raise NotImplementedError

    def close(self):
        """Release connections."""
