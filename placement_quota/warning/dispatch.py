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
"""Find the warnings due, record them, send them: :class:`Dispatcher`.

``placement-quota warn`` runs :meth:`Dispatcher.run`; ``placement-quota
listen`` runs it beside the listener when ``[warnings] enabled`` is true.
Each pass (:meth:`Dispatcher.run_once`):

1. scans the ledger (:func:`placement_quota.warning.scan.scan`) and, when
   ``[warnings] idle_after`` is set, Placement for idle reservations
   (ending those idle past ``end_idle_after`` through Blazar);
2. records what it found (:func:`placement_quota.warning.record.record`:
   once per key, however many processes scan);
3. claims the warnings due and sends each on every channel not done yet
   (a failure is retried after ``retry_delay``, doubled each time up to
   ``retry_delay_max``; after ``max_attempts`` it is marked failed and
   logged as an error).

Before a lease's warning is sent, the ledger is read again: a lease
extended or ended since the warning was recorded makes it obsolete (the
extended lease gets a warning of its own for its new end).
"""

import collections

from oslo_log import log as logging
import sqlalchemy as sa

from placement_quota.conf import warnings as warnings_conf
from placement_quota.filters import chain as chain_mod
from placement_quota.lease import model as lease_model
from placement_quota.ledger import errors as ledger_errors
from placement_quota.ledger import models
from placement_quota import metrics
from placement_quota.placement import client as placement_client
from placement_quota.selfservice import service as self_service
from placement_quota.warning import channels as channels_mod
from placement_quota.warning import idle as idle_mod
from placement_quota.warning import mail
from placement_quota.warning import model
from placement_quota.warning import notify
from placement_quota.warning import record
from placement_quota.warning import render
from placement_quota.warning import scan

LOG = logging.getLogger(__name__)

#: The kinds about one lease's end, made obsolete by its extension.
LEASE_KINDS = (model.LEASE_END, model.BEFORE_END)
#: Warnings claimed at once by one process: one, so that a claim never
#: waits for the sends of others (a batch of slow sends would outlast
#: ``claim_timeout``).
BATCH = 1


def make_channels(conf):
    """The channels of ``[warnings] channels``, in that order."""
    found = []
    for name in conf.warnings.channels:
        if name == warnings_conf.EMAIL:
            found.append(mail.MailChannel(conf))
        elif name == warnings_conf.NOTIFICATION:
            found.append(notify.NotificationChannel(conf))
    return found


def retry_delay(group, attempts):
    """Seconds to wait after the ``attempts``-th failed attempt."""
    return min(group.retry_delay * 2 ** max(0, attempts - 1),
               group.retry_delay_max)


class Dispatcher:
    """Scans, records and sends the warnings of ``conf`` on ``ledger``
    through ``channels`` (:class:`~placement_quota.warning.channels.
    Channel` objects). ``extension(notice)`` gives the extension query's
    answer for a lease's warning (None: not said); ``idle_finder`` an
    :class:`~placement_quota.warning.idle.IdleFinder` (None: idle
    reservations are not looked for); ``blazar`` the Blazar client that
    ends idle leases (``end_idle_after``)."""

    def __init__(self, conf, ledger, channels, renderer=None,
                 extension=None, idle_finder=None, blazar=None):
        self.conf = conf
        self.group = conf.warnings
        self.ledger = ledger
        self.channels = list(channels)
        self.renderer = renderer or render.Renderer(conf)
        self.extension = extension
        self.idle_finder = idle_finder
        self.blazar = blazar
        self.counts = collections.Counter()

    @classmethod
    def from_conf(cls, conf, services, channels=None):
        """The dispatcher of ``conf`` on ``services`` (its ledger, its
        Placement for idle reservations); ``channels`` default to
        ``[warnings] channels``'. Raises ValueError for a configuration
        that cannot work (:func:`~placement_quota.conf.warnings.
        problems`)."""
        problems = warnings_conf.problems(conf.warnings)
        if problems:
            raise ValueError('; '.join(problems))
        extension = None
        if conf.warnings.include_extension:
            extension = lease_extension(conf, services)
        idle_finder = blazar = None
        if conf.warnings.idle_after:
            idle_finder = idle_mod.IdleFinder(conf, services.ledger,
                                              services.placement)
            if conf.warnings.end_idle_after:
                blazar = idle_mod.blazar_client(conf)
        return cls(conf, services.ledger,
                   make_channels(conf) if channels is None else channels,
                   extension=extension, idle_finder=idle_finder,
                   blazar=blazar)

    def close(self):
        for channel in self.channels:
            channel.close()

    # --- finding -------------------------------------------------------

    def find(self, now, end_idle=False):
        """What is due at ``now`` (recorded or not: :func:`~placement_quota.
        warning.record.record` keeps the new ones); with ``end_idle``, the
        leases idle past ``end_idle_after`` are ended through Blazar and
        their warnings added."""
        found = scan.scan(self.ledger, self.conf, now)
        if self.idle_finder is not None:
            try:
                # A preview (end_idle False) records no observation.
                idle = self.idle_finder.find(now, record=end_idle)
            except (placement_client.PlacementError,
                    ledger_errors.LedgerError) as exc:
                # The ledger's own warnings go on.
                LOG.warning('Idle reservations not looked for: %s', exc)
                return found
            found += self.idle_finder.notices(idle, now)
            if end_idle and self.blazar is not None:
                try:
                    found += self.idle_finder.end_idle(idle, now,
                                                       self.blazar)
                except placement_client.PlacementError as exc:
                    LOG.warning('Idle leases not ended: %s', exc)
        return found

    def scan_once(self, now=None):
        """Record what is due at ``now``; end the leases idle past
        ``end_idle_after``. Returns the number of warnings recorded."""
        now = now or self.ledger.clock()
        found = self.find(now, end_idle=True)
        inserted = record.record(self.ledger, found, now)
        if inserted:
            LOG.info('%d warnings recorded', inserted)
        self.counts['recorded'] += inserted
        return inserted

    def preview(self, now=None):
        """``[(notice, rendered)]``: what a pass would record and send now
        (not what is recorded already), nothing recorded, sent or
        ended."""
        now = now or self.ledger.clock()
        found = self.find(now)
        with self.ledger.reader() as reader:
            known = record.recorded(reader, [n.key for n in found])
        return [(n, self.renderer.render(self._enriched(n)))
                for n in found if n.key not in known]

    # --- sending -------------------------------------------------------

    def deliver_due(self, now=None):
        """Send the recorded warnings due at ``now`` (until none is
        left to claim); returns the counts of this call by outcome."""
        counts = collections.Counter()
        if not self.channels:
            return counts
        while True:
            now = now or self.ledger.clock()
            held = record.claim(self.ledger, now,
                                self.group.claim_timeout, limit=BATCH)
            for recorded in held:
                counts[self.deliver(recorded)] += 1
            if len(held) < BATCH:
                break
            now = None
        self.counts.update(counts)
        return counts

    def deliver(self, recorded):
        """Send one claimed warning on every channel not done yet;
        returns the outcome: sent, retried, failed or obsolete."""
        notice = recorded.notice
        now = self.ledger.clock()
        why = self._obsolete(notice)
        if why:
            LOG.info('Warning %s is no longer true (%s): not sent',
                     notice.key, why)
            record.finished(self.ledger, recorded.id, now,
                            state=models.WARNING_OBSOLETE, error=why,
                            held_until=recorded.claimed_until)
            return self._outcome(notice, 'obsolete')
        notice = self._enriched(notice)
        try:
            rendered = self.renderer.render(notice)
        except Exception as exc:
            LOG.exception('Warning %s cannot be rendered', notice.key)
            return self._failed(recorded, 'cannot be rendered: %s' % exc,
                                permanent=True)
        for channel in self.channels:
            if channel.name in recorded.channels_done:
                continue
            try:
                text = channel.send(notice, rendered)
            except channels_mod.SendError as exc:
                return self._failed(recorded, '%s: %s' % (channel.name, exc),
                                    exc.permanent)
            except Exception as exc:
                LOG.exception('Channel %s failed on warning %s',
                              channel.name, notice.key)
                return self._failed(recorded, '%s: %s: %s' % (
                    channel.name, type(exc).__name__, exc), False)
            if not record.done(self.ledger, recorded.id, channel.name, text,
                               self.ledger.clock(),
                               held_until=recorded.claimed_until):
                return self._lost(recorded, channel.name)
            recorded.channels_done[channel.name] = text
            LOG.info('Warning %s (%s of project %s): %s', notice.key,
                     notice.kind, notice.project_id, text)
        if not record.finished(self.ledger, recorded.id, self.ledger.clock(),
                               held_until=recorded.claimed_until):
            return self._lost(recorded, None)
        return self._outcome(notice, 'sent')

    def _lost(self, recorded, channel):
        LOG.warning('Warning %s was held longer than [warnings] '
                    'claim_timeout (%ds)%s: another process may send it '
                    'again. Raise claim_timeout above the longest send.',
                    recorded.notice.key, self.group.claim_timeout,
                    ' while %s sent it' % channel if channel else '')
        return self._outcome(recorded.notice, 'lost')

    def _outcome(self, notice, outcome):
        metrics.WARNINGS.labels(notice.kind, outcome).inc()
        return outcome

    def _failed(self, recorded, error, permanent):
        notice = recorded.notice
        attempts = recorded.attempts + 1
        give_up = permanent or attempts >= self.group.max_attempts
        delay = retry_delay(self.group, attempts)
        if record.failed_attempt(self.ledger, recorded.id, error,
                                 self.ledger.clock(), delay, give_up,
                                 held_until=recorded.claimed_until) is None:
            return self._lost(recorded, None)
        if give_up:
            LOG.error('Warning %s (%s of project %s) was not sent and is '
                      'given up after %d attempt(s): %s. placement-quota '
                      'warnings list --state failed lists it.',
                      notice.key, notice.kind, notice.project_id, attempts,
                      error)
            return self._outcome(notice, 'failed')
        LOG.warning('Warning %s not sent (attempt %d of %d): %s; next try '
                    'in %ds', notice.key, attempts, self.group.max_attempts,
                    error, delay)
        return self._outcome(notice, 'retried')

    def _obsolete(self, notice):
        """Why a lease's warning is no longer true (None: it is)."""
        if notice.kind == model.IDLE:
            return idle_mod.obsolete(self.ledger, notice)
        if notice.kind not in LEASE_KINDS or \
                notice.facts.get('lease_row') is None:
            return None
        with self.ledger.reader() as reader:
            entry = reader.entry(notice.facts['lease_row'])
        if entry is None:
            return 'its ledger entry is gone'
        if entry.state not in (models.PENDING, models.ACTIVE):
            return 'the lease is %s' % entry.state
        if model.iso(entry.effective_end) != notice.facts.get('end_date'):
            return 'the lease now ends on %s' % model.iso(
                entry.effective_end)
        return None

    def _enriched(self, notice):
        """``notice`` with the extension query's answer in its facts
        (lease-end warnings, when asked for)."""
        if notice.kind != model.LEASE_END or self.extension is None or \
                not notice.lease_id:
            return notice
        try:
            found = self.extension(notice)
        except Exception as exc:
            LOG.warning('The extension of lease %s could not be computed '
                        'for its warning: %s', notice.lease_id, exc)
            return notice
        if not found:
            return notice
        facts = dict(notice.facts,
                     latest_end_date=found.get('latest_end_date'),
                     bound_by=found.get('bound_by'),
                     extension_message=found.get('message'))
        return model.Notice(**dict(vars(notice), facts=facts))

    # --- running -------------------------------------------------------

    def run_once(self, now=None):
        """One pass: scan, record, send. Errors of the ledger or of a
        service are logged; the next pass tries again."""
        try:
            self.scan_once(now)
        except ledger_errors.LedgerUnavailable as exc:
            LOG.warning('Cannot scan for warnings: %s', exc)
            return
        except Exception:
            LOG.exception('The scan for warnings failed')
        try:
            self.deliver_due()
        except ledger_errors.LedgerUnavailable as exc:
            LOG.warning('Cannot send the warnings due: %s', exc)

    def next_wait(self):
        """Seconds until the next pass: ``scan_interval``, or sooner when
        a retry is due before."""
        wait = self.group.scan_interval
        if not self.channels:
            return wait
        with self.ledger.reader() as reader:
            due = reader.connection.execute(
                sa.select(sa.func.min(models.warnings.c.next_attempt_at))
                .where(models.warnings.c.state ==
                       models.WARNING_PENDING)).scalar()
        if due is not None:
            wait = min(wait, (due - self.ledger.clock()).total_seconds())
        return max(1.0, wait)

    def run(self, stopping):
        """Passes until ``stopping`` (an Event) is set."""
        LOG.info('Warnings: scanning every %ds, channels %s',
                 self.group.scan_interval,
                 ', '.join(c.name for c in self.channels) or
                 'none (recorded only)')
        while not stopping.is_set():
            self.run_once()
            try:
                wait = self.next_wait()
            except ledger_errors.LedgerError:
                wait = self.group.scan_interval
            stopping.wait(wait)


def lease_extension(conf, services):
    """``extension(notice) -> dict``: the self-service extension query of
    the notice's lease, on the filter chain of ``conf`` (dry: nothing
    recorded)."""
    chain = chain_mod.FilterChain(conf, services=services, record=False)
    service = self_service.SelfService(chain)

    def extension(notice):
        context = lease_model.Context(notice.project_id, notice.user_id)
        return service.extension(context, notice.lease_id)
    return extension
