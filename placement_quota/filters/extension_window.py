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
"""ExtensionWindowFilter: a lease is extended near its end, a little at a
time.

Shared reservation clouds (Chameleon) let a lease be extended only in the
last part of its life, measured from its end, so that a user cannot keep
hardware indefinitely by extending a lease the day it starts. An update
that moves the lease's end later than its current end (the end of the
current lease Blazar sends) is an extension:

* ``extension_window``: allowed only once ``now >= current end -
  extension_window`` (the moment the window opens);
* ``max_extension``: by at most this much per update (``new end -
  current end``).

"Now" is the ledger's clock, the moment the admission is made. Creates,
and updates that do not move the end later, are not affected. The
lease's total length is MaximumReservationLengthFilter's rule
(``reservation_max_length``): enable both, and an extension past the
maximum length is refused by that filter, the extension query naming it
when it comes first.

A later end is never allowed where an earlier one was not (the window
does not depend on the new end; the amount grows with it), as the
extension query needs.
"""

import datetime

from oslo_config import cfg

from placement_quota.filters import ledger_base
from placement_quota.filters import measures
from placement_quota.ledger import admission as admission_mod
from placement_quota.ledger import keys


class ExtensionWindowFilter(ledger_base.LedgerFilter):
    """Deny extending a lease before its extension window, or by too much."""

    #: It reads dates only: no flavor is read for it.
    uses_flavors = False

    enforcement_opts = [
        cfg.IntOpt(
            'extension_window', default=0, min=0,
            help='Seconds before its current end from which a lease may be '
                 'extended: an update that moves the end later is refused '
                 'before the current end minus this; 0 means a lease may '
                 'be extended at any time.'),
        cfg.IntOpt(
            'max_extension', default=0, min=0,
            help='Most seconds one update may move a lease\'s end later '
                 'than its current end; 0 means no limit.'),
    ]

    def inert(self):
        if self.any_option_set():
            return None
        return ('it sets no limit ([enforcement] extension_window and '
                'max_extension are 0)')

    def describe(self, probe):
        group = self.conf.enforcement
        found = []
        if group.extension_window:
            found.append(measures.Measure(
                self.name, 'extension_window', measures.LEASE,
                group.extension_window, 'seconds before the end'))
        if group.max_extension:
            found.append(measures.Measure(
                self.name, 'extension', measures.LEASE,
                group.max_extension, 'seconds'))
        return found

    @staticmethod
    def _label(admission):
        lease_id = (keys.lease_id(admission.lease) or
                    keys.lease_id(admission.current_lease) or
                    (admission.entry.lease_id
                     if admission.entry is not None else None))
        found = ledger_base.lease_label(admission.name, lease_id)
        return 'Lease %s' % found if found else 'The lease'

    def check(self, admission):
        if admission.kind != admission_mod.CHECK_UPDATE:
            return
        current = admission.current_lease.end_date
        new = admission.end
        if new <= current:
            return
        group = self.conf.enforcement
        if group.extension_window:
            opens = current - datetime.timedelta(
                seconds=group.extension_window)
            if admission.now < opens:
                raise self.deny(
                    '%s can be extended only in the last %s of its life: '
                    'its extension window opens on %s (it ends on %s); the '
                    'update asks it to end on %s.'
                    % (self._label(admission),
                       ledger_base.span(group.extension_window),
                       ledger_base.when(opens), ledger_base.when(current),
                       ledger_base.when(new)))
        if group.max_extension:
            asked = (new - current).total_seconds()
            if asked > group.max_extension:
                latest = current + datetime.timedelta(
                    seconds=group.max_extension)
                raise self.deny(
                    '%s can be extended by at most %s at a time; the update '
                    'asks %s (from %s to %s): it may end on %s at the '
                    'latest.'
                    % (self._label(admission),
                       ledger_base.span(group.max_extension),
                       ledger_base.span(asked), ledger_base.when(current),
                       ledger_base.when(new), ledger_base.when(latest)))
