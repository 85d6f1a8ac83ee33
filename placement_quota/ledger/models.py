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
"""The ledger's tables (SQLAlchemy Core); alembic migrations create them.

Credits are stored as integer micro-credits (1 credit = 1,000,000), so sums
are exact on every database.

``projects`` has one row per project that ever asked: the row every
admission of that project locks (``SELECT ... FOR UPDATE``) before reading
and writing, so that two service processes never admit past a limit
together. Row ``*`` is the cloud-wide lock, and rows ``*pool:...`` the
capacity pools, the capacity policy takes (ledger/db/locks.py).
"""

import sqlalchemy as sa

metadata = sa.MetaData()

#: Lease states (Blazar's "Define state machines" spec, as the ledger sees
#: them).
PENDING = 'pending'
ACTIVE = 'active'
TERMINATED = 'terminated'
DENIED = 'denied'
#: A check-create whose lease Blazar never created (the notification
#: listener saw none in time): its charge released, counted toward nothing;
#: a late ``lease.create`` reopens it.
ABANDONED = 'abandoned'
STATES = (PENDING, ACTIVE, TERMINATED, DENIED, ABANDONED)
#: States whose entries count toward nothing.
NOT_COUNTED = (DENIED, ABANDONED)

#: Charge kinds.
CHARGE_CREATE = 'create'
CHARGE_UPDATE = 'update'
REFUND_END = 'end'
#: The whole charge of an abandoned entry released, and charged again when
#: it is reopened.
REFUND_ABANDON = 'abandon'
CHARGE_REOPEN = 'reopen'

#: The cloud-wide lock (the capacity policy's: shared beside the pools of
#: known hosts, exclusive otherwise); the lock order of every writer is in
#: ledger/db/locks.py. Migration 0005 inserts its row.
GLOBAL_LOCK = '*'
#: The lock of the account hierarchy (the admin API's account changes).
ACCOUNTS_LOCK = '*accounts'
#: The lock of ``idle_watch``, which each scan for idle reservations
#: rewrites whole (two processes' rewrites would deadlock otherwise).
IDLE_WATCH_LOCK = '*idle_watch'

projects = sa.Table(
    'projects', metadata,
    sa.Column('project_id', sa.String(255), primary_key=True),
    sa.Column('created_at', sa.DateTime, nullable=False),
    # Moves whenever what Nova counts for the project may have changed
    # (a lease started or ended, an operator asked): quotas cached by any
    # process are read again (NovaQuotaFilter, nova_quota_max_age).
    sa.Column('generation', sa.Integer, nullable=False, server_default='0'),
    # Moves each time a transaction takes the row's lock on MySQL/MariaDB:
    # the lock is a write, which Galera certifies (it does not replicate
    # the locks of SELECT ... FOR UPDATE), so two admissions of one
    # project on two nodes cannot both commit (ledger/db/locks.py).
    sa.Column('lock_serial', sa.BigInteger, nullable=False,
              server_default='0'),
)

#: The index of the capacity check's query of other leases' instances
#: (``Transaction.instance_intervals``): every column it reads, the window
#: first.
INSTANCE_WINDOW_INDEX = 'ix_leases_instance_window'
INSTANCE_WINDOW_COLUMNS = ('start_date', 'effective_end', 'state',
                           'instance_vcpus', 'instance_memory_mb',
                           'instance_disk_gb', 'instance_hosts', 'id')

leases = sa.Table(
    'leases', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('project_id', sa.String(255), nullable=False),
    # Blazar's lease UUID when it sends one; reconciled later otherwise.
    sa.Column('lease_id', sa.String(255), nullable=True, unique=True),
    # The fingerprint of what was last seen of the lease, and its shape
    # (the fingerprint without name and user): how a lease is found before
    # its ID is bound (see keys.py).
    sa.Column('provisional_key', sa.String(64), nullable=False),
    sa.Column('shape_key', sa.String(64), nullable=True),
    # Blazar's updated_at of the last notification applied: an older one
    # delivered late changes nothing.
    sa.Column('notified_at', sa.DateTime, nullable=True),
    sa.Column('name', sa.String(255), nullable=True),
    sa.Column('user_id', sa.String(255), nullable=True),
    sa.Column('start_date', sa.DateTime, nullable=False),
    sa.Column('end_date', sa.DateTime, nullable=False),
    # end_date, or the actual end once on-end came before it.
    sa.Column('effective_end', sa.DateTime, nullable=False),
    # Seconds from start_date to end_date: the longest one bounds the
    # start dates a window query must look at (see Transaction.intervals).
    sa.Column('duration_s', sa.Integer, nullable=False),
    sa.Column('state', sa.String(16), nullable=False),
    sa.Column('amounts', sa.JSON, nullable=False),
    # The instance amounts again (class:VCPU, class:MEMORY_MB,
    # class:DISK_GB), as integers the capacity policy reads without
    # decoding JSON; 0 for leases without instances.
    sa.Column('instance_vcpus', sa.BigInteger, nullable=False, default=0),
    sa.Column('instance_memory_mb', sa.BigInteger, nullable=False,
              default=0),
    sa.Column('instance_disk_gb', sa.BigInteger, nullable=False, default=0),
    # Space-separated hypervisor host names of those instances' allocations
    # ('' when Blazar named none).
    sa.Column('instance_hosts', sa.Text, nullable=False, default=''),
    # The lease as it was allowed (reservations, allocations): what the
    # capacity policy and the reconcile tool read.
    sa.Column('lease', sa.JSON, nullable=False),
    sa.Column('hourly_rate', sa.BigInteger, nullable=False, default=0),
    sa.Column('charged', sa.BigInteger, nullable=False, default=0),
    sa.Column('allocation_id', sa.Integer, nullable=True),
    # The parts of the lease charged to credit pools (CreditFilter's
    # ``credit_pool_classes``): {resource class: {'allocation_id': pool,
    # 'hourly': micro-units an hour, 'charged': micro-units}}; NULL or {}
    # when none. ``hourly_rate``, ``charged`` and ``allocation_id`` above
    # are the general part's.
    sa.Column('pool_charges', sa.JSON, nullable=True),
    sa.Column('message', sa.Text, nullable=True),
    # The filter that denied a denied entry (reports count denials by it).
    sa.Column('denied_by', sa.String(255), nullable=True),
    # The lease's reservation types, sorted, joined by '+' (reports group
    # by it); NULL for a lease without reservations.
    sa.Column('resource_type', sa.String(255), nullable=True),
    sa.Column('created_at', sa.DateTime, nullable=False),
    sa.Column('updated_at', sa.DateTime, nullable=True),
    sa.Column('ended_at', sa.DateTime, nullable=True),
    sa.Index('ix_leases_project_end', 'project_id', 'effective_end'),
    sa.Index('ix_leases_end', 'effective_end'),
    sa.Index('ix_leases_start', 'start_date'),
    sa.Index('ix_leases_duration', 'duration_s'),
    sa.Index('ix_leases_provisional_key', 'provisional_key'),
    sa.Index('ix_leases_shape_key', 'shape_key'),
    # Reports count leases created and ended in a period.
    sa.Index('ix_leases_created', 'created_at'),
    sa.Index('ix_leases_ended', 'ended_at'),
    sa.Index('ix_leases_resource_type', 'resource_type'),
    # Every column the capacity check reads of other leases' instances.
    sa.Index(INSTANCE_WINDOW_INDEX, *INSTANCE_WINDOW_COLUMNS,
             mysql_length={'instance_hosts': 255}),
)

credit_allocations = sa.Table(
    'credit_allocations', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('project_id', sa.String(255), nullable=False, index=True),
    sa.Column('amount', sa.BigInteger, nullable=False),
    # NULL: open-ended on that side.
    sa.Column('start_date', sa.DateTime, nullable=True),
    sa.Column('end_date', sa.DateTime, nullable=True),
    sa.Column('created_at', sa.DateTime, nullable=False),
    # NULL: the general allocation (credits); a Placement resource class:
    # a pool of that class, its amount in micro resource-hours.
    sa.Column('resource_class', sa.String(255), nullable=True),
)

limit_history = sa.Table(
    'limit_history', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('account_id', sa.String(255), nullable=False),
    sa.Column('resource', sa.String(255), nullable=False),
    # The limit from ``at`` on; NULL: none any more.
    sa.Column('value', sa.BigInteger, nullable=True),
    sa.Column('at', sa.DateTime, nullable=False),
    sa.Index('ix_limit_history_account', 'account_id', 'resource', 'at'),
)

credit_user_shares = sa.Table(
    'credit_user_shares', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('project_id', sa.String(255), nullable=False),
    sa.Column('user_id', sa.String(255), nullable=False),
    # Micro-credits the user may spend of the project's allocations.
    sa.Column('amount', sa.BigInteger, nullable=False),
    sa.Column('created_at', sa.DateTime, nullable=False),
    sa.Index('ix_credit_user_shares_project_user', 'project_id', 'user_id'),
)

charges = sa.Table(
    'charges', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('project_id', sa.String(255), nullable=False),
    sa.Column('lease_row', sa.Integer, sa.ForeignKey('leases.id'),
              nullable=True),
    sa.Column('allocation_id', sa.Integer,
              sa.ForeignKey('credit_allocations.id'), nullable=True),
    # Positive: charged; negative: refunded.
    sa.Column('amount', sa.BigInteger, nullable=False),
    sa.Column('kind', sa.String(16), nullable=False),
    sa.Column('at', sa.DateTime, nullable=False),
    sa.Index('ix_charges_allocation', 'allocation_id'),
    sa.Index('ix_charges_lease', 'lease_row'),
    # Reports sum the charges of a period.
    sa.Index('ix_charges_at', 'at'),
)

#: The accounts of the admin API ("Multi-Tenant Accounting in OpenStack"): the
#: embedded source of the project hierarchy and limits. ``account_id`` is the
#: project ID as the quota system sees it: any UTF-8 string of 1 to 255
#: characters without ``/``.
accounts = sa.Table(
    'accounts', metadata,
    sa.Column('account_id', sa.String(255), primary_key=True),
    sa.Column('parent_id', sa.String(255), nullable=True, index=True),
    # {resource: limit}; -1 is unlimited.
    sa.Column('limits', sa.JSON, nullable=False),
    # Free-form {key: string} metadata of the operator.
    sa.Column('properties', sa.JSON, nullable=False),
    # Bumped at every change: part of the ETag of a move action.
    sa.Column('generation', sa.Integer, nullable=False, default=0),
    sa.Column('created_at', sa.DateTime, nullable=False),
    sa.Column('updated_at', sa.DateTime, nullable=True),
    # Set by DELETE: the account answers 410 until the recovery period
    # has passed, then 404 (and its row is purged).
    sa.Column('deleted_at', sa.DateTime, nullable=True),
)

#: Warning states (placement_quota/warning/record.py): recorded and not
#: sent yet on every channel; sent; given up after its attempts; no
#: longer true when its turn came (a lease extended or ended meanwhile).
WARNING_PENDING = 'pending'
WARNING_SENT = 'sent'
WARNING_FAILED = 'failed'
WARNING_OBSOLETE = 'obsolete'
WARNING_STATES = (WARNING_PENDING, WARNING_SENT, WARNING_FAILED,
                  WARNING_OBSOLETE)

warnings = sa.Table(
    'warnings', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    # What the warning is about and which threshold or lead time
    # (placement_quota/warning/model.py key()): recorded once, sent once.
    sa.Column('key', sa.String(255), nullable=False),
    sa.Column('kind', sa.String(32), nullable=False),
    # What it is about (a lease's end, an allocation, a user's share), and
    # how far it went: a scan records no warning of a subject at or below
    # the highest level already recorded (a refund that brings credits
    # back under 90 % after the 90 % warning gives no 75 % one).
    sa.Column('subject', sa.String(255), nullable=False),
    sa.Column('level', sa.Float, nullable=False, server_default='0'),
    sa.Column('project_id', sa.String(255), nullable=False),
    sa.Column('user_id', sa.String(255), nullable=True),
    sa.Column('lease_id', sa.String(255), nullable=True),
    sa.Column('lease_name', sa.String(255), nullable=True),
    # The numbers of the warning, as it was found (model.FACTS).
    sa.Column('facts', sa.JSON, nullable=False),
    sa.Column('state', sa.String(16), nullable=False),
    # {channel: what it did}: a channel done is not sent again when
    # another one is retried.
    sa.Column('channels_done', sa.JSON, nullable=False),
    sa.Column('attempts', sa.Integer, nullable=False, server_default='0'),
    sa.Column('last_error', sa.Text, nullable=True),
    sa.Column('created_at', sa.DateTime, nullable=False),
    sa.Column('due_at', sa.DateTime, nullable=True),
    sa.Column('next_attempt_at', sa.DateTime, nullable=False),
    # A process sending it holds it until then (a process that stopped
    # mid-send leaves it to another afterwards).
    sa.Column('claimed_until', sa.DateTime, nullable=True),
    sa.Column('sent_at', sa.DateTime, nullable=True),
    sa.UniqueConstraint('key', name='uq_warnings_key'),
    sa.Index('ix_warnings_state_next', 'state', 'next_attempt_at'),
    sa.Index('ix_warnings_project', 'project_id'),
    sa.Index('ix_warnings_subject', 'subject'),
    sa.Index('ix_warnings_created', 'created_at'),
)

#: Started leases whose reserved providers carried no allocation when
#: last looked at, and since when (placement_quota/warning/idle.py). No
#: foreign key: ``db purge`` removes the rows of the entries it purges.
idle_watch = sa.Table(
    'idle_watch', metadata,
    sa.Column('lease_row', sa.Integer, primary_key=True,
              autoincrement=False),
    sa.Column('idle_since', sa.DateTime, nullable=False),
    sa.Column('checked_at', sa.DateTime, nullable=False),
)
