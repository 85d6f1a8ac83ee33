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
"""Reconcile what the ledger (and Blazar) reserved with what Placement holds.

* :mod:`.model` -- the expected state (reservations read from ledger
  entries) and the actual state (Placement's reservation providers,
  classes, inventories and usages), as plain data.
* :mod:`.findings` -- pure code: compares the two and types every drift
  as a :class:`~.model.Finding` with its reason and its exact fix.
* :mod:`.lease_findings` -- pure code: with ``[blazar]``, compares the
  ledger's entries with Blazar's lease list.
* :mod:`.readers` -- the I/O: reads Placement in few calls, the ledger,
  and Blazar's API when ``[blazar]`` is configured.
* :mod:`.repair` -- applies the safe fixes, re-checking each against
  Placement right before it writes; :mod:`.ledger_repair` applies the
  ledger's, each in a locked ledger transaction.
"""
