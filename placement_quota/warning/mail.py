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
"""The e-mail channel: one message per warning, through SMTP.

The message goes to every recipient of the warning (:mod:`.recipients`)
at once, with a plain-text and an HTML part (:mod:`.render`), and the
header ``X-Placement-Quota-Warning: <key>`` saying which warning it is.
The connection (``[warnings] smtp_*``: SMTPS or STARTTLS verified with
``smtp_ca_file``, a login, a timeout) is kept open between warnings and
made again when the server closed it.

A refusal that retrying cannot change -- a 5xx for every recipient, or
for the message -- raises a permanent
:class:`~placement_quota.warning.channels.SendError`; anything else (a
4xx, a connection or TLS failure, a login refused, Keystone unreachable)
a transient one, for the dispatcher to retry.
"""

import hashlib
from email import headerregistry
from email import message as email_message
from email import utils as email_utils
import smtplib
import ssl
import threading
import time

from oslo_log import log as logging

from placement_quota.warning import channels
from placement_quota.warning import recipients as recipients_mod

LOG = logging.getLogger(__name__)

#: A connection idle longer than this is checked with NOOP before it is
#: used again (a server may have closed it); one used more recently is
#: used at once.
CHECK_AFTER_IDLE = 5.0

#: The header naming the warning a message is (its exactly-once key).
KEY_HEADER = 'X-Placement-Quota-Warning'


def _mailbox(option, value):
    """The :class:`email.headerregistry.Address` of ``[warnings]
    option``'s value (``user@domain`` or ``Name <user@domain>``);
    ValueError naming the option otherwise."""
    name, addr = email_utils.parseaddr(value or '')
    if recipients_mod.address(addr) is None or '\n' in value:
        raise ValueError('[warnings] %s %r is not an e-mail address '
                         '(user@domain or "Name <user@domain>")'
                         % (option, value))
    return headerregistry.Address(display_name=name, addr_spec=addr)


def _refusal(code, text):
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    return '%s %s' % (code, text)


def message_id(key, domain):
    """The Message-ID of the warning of ``key``: the same each time it is
    sent (a resend after a crash between the send and its record is
    recognised as the same message by the receiving side)."""
    digest = hashlib.sha256(key.encode('utf-8')).hexdigest()[:40]
    return '<%s.placement-quota@%s>' % (digest, domain)


class MailChannel(channels.Channel):
    """Mails warnings through the SMTP server of ``conf.warnings``;
    ``recipients`` (default: :class:`~.recipients.Recipients` on the
    ``[keystone]`` credentials) says to whom."""

    name = 'email'

    def __init__(self, conf, recipients=None):
        group = conf.warnings
        if not group.smtp_host:
            raise ValueError('[warnings] smtp_host is not set: the e-mail '
                             'channel needs an SMTP server')
        if group.smtp_ssl and group.smtp_starttls:
            raise ValueError('[warnings] smtp_ssl and smtp_starttls are '
                             'both set: choose one')
        if group.smtp_username and group.smtp_password is None:
            raise ValueError('[warnings] smtp_username is set but '
                             'smtp_password is not')
        self.sender = _mailbox('mail_from', group.mail_from)
        self.reply_to = (_mailbox('mail_reply_to', group.mail_reply_to)
                         if group.mail_reply_to else None)
        self.host, self.port = group.smtp_host, group.smtp_port
        self.use_ssl, self.starttls = group.smtp_ssl, group.smtp_starttls
        self.username, self.password = (group.smtp_username,
                                        group.smtp_password)
        self.timeout = group.smtp_timeout or None
        self.tls = None
        if self.use_ssl or self.starttls:
            try:
                self.tls = ssl.create_default_context(
                    cafile=group.smtp_ca_file)
            except (OSError, ssl.SSLError) as exc:
                raise ValueError('[warnings] smtp_ca_file %r cannot be '
                                 'used: %s' % (group.smtp_ca_file, exc))
        self.recipients = recipients or recipients_mod.Recipients(conf)
        self._smtp = None
        self._used_at = None
        self._lock = threading.Lock()

    # --- the message -----------------------------------------------------

    def message(self, notice, rendered, addresses):
        """The :class:`email.message.EmailMessage` of ``notice`` to
        ``addresses`` (``[(name, email)]``)."""
        msg = email_message.EmailMessage()
        msg['From'] = self.sender
        msg['To'] = [headerregistry.Address(display_name=name or '',
                                            addr_spec=email)
                     for name, email in addresses]
        if self.reply_to is not None:
            msg['Reply-To'] = self.reply_to
        msg['Subject'] = rendered.subject
        msg['Date'] = email_utils.formatdate(usegmt=True)
        msg['Message-ID'] = message_id(notice.key, self.sender.domain)
        msg['Auto-Submitted'] = 'auto-generated'
        msg[KEY_HEADER] = notice.key
        msg.set_content(rendered.text)
        msg.add_alternative(rendered.html, subtype='html')
        return msg

    # --- sending ---------------------------------------------------------

    def send(self, notice, rendered):
        addresses = self.recipients.addresses(notice)
        if not addresses:
            text = 'no e-mail address for %s' % self.recipients.describe(
                notice)
            LOG.info('Warning %s not mailed: %s', notice.key, text)
            return text
        msg = self.message(notice, rendered, addresses)
        emails = [email for _, email in addresses]
        with self._lock:
            try:
                refused = self._connection().send_message(
                    msg, from_addr=self.sender.addr_spec, to_addrs=emails)
                self._used_at = time.monotonic()
            except smtplib.SMTPRecipientsRefused as exc:
                self._drop()
                codes = [code for code, _ in exc.recipients.values()]
                raise channels.SendError(
                    'The SMTP server %s refused every recipient: %s' % (
                        self._where(), '; '.join(
                            '%s (%s)' % (who, _refusal(*why))
                            for who, why in sorted(exc.recipients.items()))),
                    permanent=all(500 <= code < 600 for code in codes))
            except smtplib.SMTPDataError as exc:
                self._drop()
                raise channels.SendError(
                    'The SMTP server %s refused the message: %s' % (
                        self._where(), _refusal(exc.smtp_code,
                                                exc.smtp_error)),
                    permanent=500 <= exc.smtp_code < 600)
            except smtplib.SMTPResponseException as exc:
                # The sender refused, the login refused...: the server or
                # our configuration, retried.
                self._drop()
                raise channels.SendError(
                    'The SMTP server %s answered %s' % (
                        self._where(), _refusal(exc.smtp_code,
                                                exc.smtp_error)))
            except (smtplib.SMTPException, OSError) as exc:
                self._drop()
                raise channels.SendError(
                    'Cannot send through the SMTP server %s: %s' % (
                        self._where(), exc or type(exc).__name__))
        delivered = [email for email in emails if email not in refused]
        text = 'mailed to %s' % ', '.join(delivered)
        if refused:
            text += '; refused %s' % '; '.join(
                '%s (%s)' % (who, _refusal(*why))
                for who, why in sorted(refused.items()))
            LOG.warning('Warning %s: %s', notice.key, text)
        else:
            LOG.info('Warning %s %s', notice.key, text)
        return text

    def _where(self):
        return '%s:%d' % (self.host, self.port)

    def _connection(self):
        """The open connection (checked with NOOP when it was idle for
        :data:`CHECK_AFTER_IDLE`); a new one (TLS, login) when there is
        none or the server closed it."""
        if self._smtp is not None:
            if time.monotonic() - self._used_at < CHECK_AFTER_IDLE:
                return self._smtp
            try:
                if self._smtp.noop()[0] == 250:
                    return self._smtp
            except (smtplib.SMTPException, OSError):
                pass
            self._drop()
        if self.use_ssl:
            smtp = smtplib.SMTP_SSL(self.host, self.port,
                                    timeout=self.timeout, context=self.tls)
        else:
            smtp = smtplib.SMTP(self.host, self.port, timeout=self.timeout)
        try:
            if self.starttls:
                smtp.starttls(context=self.tls)
            if self.username:
                smtp.login(self.username, self.password)
        except BaseException:
            smtp.close()
            raise
        self._smtp, self._used_at = smtp, time.monotonic()
        return smtp

    def _drop(self):
        smtp, self._smtp = self._smtp, None
        if smtp is not None:
            try:
                smtp.quit()
            except (smtplib.SMTPException, OSError):
                smtp.close()

    def close(self):
        with self._lock:
            self._drop()
