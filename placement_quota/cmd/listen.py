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
"""``placement-quota listen``: follow Blazar's lease notifications into the
ledger, until SIGTERM or SIGINT."""

import logging as std_logging

from cliff import command
from oslo_log import log as logging

from placement_quota.cmd import common
from placement_quota.cmd import main
from placement_quota.cmd import warnings as warnings_cmd
from placement_quota.ledger import errors as ledger_errors

LOG = logging.getLogger(__name__)


class Listen(common.Guarded, command.Command):
    """Follow Blazar's lease notifications into the ledger.

    It reads lease.create, lease.update, lease.delete and lease.event.*,
    and runs until stopped. Blazar publishes them when blazar.conf sets
    [oslo_messaging_notifications] driver = messagingv2 and a
    transport_url (rabbit://USER:PASSWORD@HOST:5672/). This command reads
    the same broker ([lifecycle] transport_url of placement-quota.conf, or
    its [oslo_messaging_notifications] or [DEFAULT] transport_url) through
    a queue of its own ([lifecycle] pool). With [warnings] enabled, it
    also sends the warnings due (as placement-quota warn does) and turns
    lease.event.before_end_lease into a warning.
    """

    def take_action(self, parsed_args):
        # Imported here: oslo.messaging loads oslo.service's eventlet
        # backend, which warns on stderr: every other command (and
        # ``placement-quota --help``, which imports all of them) would
        # print that warning. cliff imports every command module for any
        # help, so this import cannot move to the module level.
        from placement_quota.lifecycle import listener

        conf = main.config(self)
        if not conf.debug:
            std_logging.getLogger().setLevel(std_logging.INFO)
        # It runs no filter, but it reads the service's configuration: an
        # option set for a filter that is not enabled is said here too.
        main.check_no_ops(conf, strict=main.strict(self))
        services = common.services(self)
        try:
            services.ledger  # a ledger at the wrong schema fails here
        except ledger_errors.LedgerError as exc:
            main.fail('cannot use the ledger: %s' % exc)
        warner = (warnings_cmd.dispatcher(self) if conf.warnings.enabled
                  else None)
        try:
            listener.run(conf, services, on_ready=self._say_listening,
                         dispatcher=warner)
        except listener.BROKER_ERRORS as exc:
            main.fail('cannot reach the message broker: %s' % exc)
        except KeyboardInterrupt:
            pass
        finally:
            if warner is not None:
                warner.close()
            services.close()
        return 0

    def _say_listening(self, lifecycle_listener):
        conf = lifecycle_listener.conf
        self.app.stdout.write(
            'placement-quota listening to Blazar\'s lease notifications on '
            '%s (exchange %s, topics %s, pool %s)\n'
            % (lifecycle_listener.transport_url, conf.lifecycle.exchange,
               ', '.join(conf.lifecycle.topics), conf.lifecycle.pool))
        self.app.stdout.flush()
