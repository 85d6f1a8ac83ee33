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
"""``placement-quota serve``: run the enforcement service, and the account
admin API on its own port."""

import ipaddress
import logging as std_logging
import signal
import socket
import sys
import threading

from cliff import command
from oslo_log import log as logging

from placement_quota.api.admin import app as admin
from placement_quota.api.enforcement import app as api_app
from placement_quota.cmd import common
from placement_quota.cmd import main
from placement_quota.conf import ledger as ledger_conf
from placement_quota.conf import placement as placement_conf
from placement_quota.filters import chain as chain_mod
from placement_quota.filters import no_ops
from placement_quota.ledger import errors as ledger_errors
from placement_quota.limits import sources as limit_sources
from placement_quota.placement import client as placement_client
from placement_quota.httpserver import prefork
from placement_quota.httpserver import server as wsgi_server

LOG = logging.getLogger(__name__)

_UNPROTECTED = ' -- WARNING: no authentication beyond loopback'


def load_chain(conf, services, record=True, strict=False, warn=True):
    """The filter chain for ``conf`` on ``services``, or exit 2 saying
    why not. Each option that does nothing and each enabled filter that
    can never deny is a warning (``warn``), or, ``strict``, exit 2.
    ``record=False``: a dry chain (``check`` without ``--record``)."""
    try:
        chain = chain_mod.FilterChain(conf, services=services, record=record)
    except (chain_mod.FilterLoadError, ValueError) as exc:
        main.fail('cannot load the enforcement filters: %s' % exc)
    if warn or strict:
        main.check_no_ops(conf, chain.filters, strict)
    return chain


def build(conf, services, strict=False, warn=True):
    """The filter chain and WSGI app for ``conf``; clear errors if not."""
    chain = load_chain(conf, services, strict=strict, warn=warn)
    try:
        return chain, api_app.make_app(conf, chain)
    except ValueError as exc:
        main.fail('configuration error: %s' % exc)


def is_loopback(host):
    """True when ``host`` (an address or a name) reaches only this
    machine: every address it resolves to is a loopback one."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return False
    return bool(infos) and all(
        ipaddress.ip_address(info[4][0].split('%', 1)[0]).is_loopback
        for info in infos)


def noauth_exposure(what, host, auth_strategy):
    """The warning for ``what`` served without authentication on ``host``
    beyond loopback, or None."""
    if auth_strategy != 'noauth' or is_loopback(host):
        return None
    return ('%s listens on %s, beyond loopback, with auth_strategy = noauth: '
            'anyone who reaches that address can call it without '
            'credentials. Bind it to 127.0.0.1, or set auth_strategy = '
            'keystone.' % (what, host))


def _short(conf):
    """The Placement of ``conf`` in a few words, for the banner."""
    kind = placement_conf.configured(conf)
    if kind == 'endpoint':
        return conf.placement.endpoint_override
    if kind == 'catalog':
        return 'service catalog'
    return 'embedded'


def _logs_to_stderr():
    return any(isinstance(handler, std_logging.StreamHandler) and
               getattr(handler, 'stream', None) is sys.stderr
               for handler in std_logging.getLogger().handlers)


def _warn(message):
    """A WARNING in the log, and on stderr when the log goes elsewhere."""
    LOG.warning('%s', message)
    if not _logs_to_stderr():
        sys.stderr.write('WARNING: %s\n' % message)
        sys.stderr.flush()


class Serve(common.Guarded, command.Command):
    """Run the enforcement service on a threaded WSGI server.

    The service is the external service of Blazar's "Flexible Reservation
    Usage Enforcement" spec. Stock Blazar reaches it when blazar.conf sets,
    in [enforcement], enabled_filters = ExternalServiceFilter and
    external_service_base_endpoint = http://HOST:PORT/v1/.

    Without a Placement in [placement] it runs on the embedded one (real
    Placement code on SQLite in [placement] embedded_state_dir), and says
    so in its first line; it logs its Placement and its ledger at start.
    """

    #: The one command that falls back to the embedded Placement.
    embedded_default = True
    #: The worker pool of ``--workers N`` (None: one process).
    _pool = None

    @property
    def _worker_index(self):
        """This worker's index (0 is the first), or None without
        workers."""
        return None if self._pool is None else self._pool.index

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--host', help='Address to listen on '
                            '(default: [api] bind_host, 127.0.0.1).')
        parser.add_argument('--port', type=int, help='Port to listen on '
                            '(default: [api] bind_port, 8790; 0 picks a '
                            'free port).')
        parser.add_argument('--workers', type=int, metavar='N',
                            help='Processes serving the port (default: '
                            '[api] workers, 1). Above 1, each is forked '
                            'before it opens anything and binds the port '
                            'with SO_REUSEPORT; it needs a Placement in '
                            '[placement] (not the embedded one).')
        parser.add_argument('--admin-port', type=int, metavar='PORT',
                            help='Also serve the account admin API '
                            '("Multi-Tenant Accounting in OpenStack") on this '
                            'port, on [admin_api] bind_host (default: '
                            '[admin_api] bind_port; unset: not served; 0 '
                            'picks a free port).')
        return parser

    def _admin_server(self, conf, services, port, reuse_port=False):
        """The admin API server, started, or None when not asked for."""
        if port is None:
            return None
        try:
            app = admin.make_admin_app(conf, services=services)
        except (ValueError, ledger_errors.LedgerError,
                limit_sources.SourceError) as exc:
            main.fail('cannot start the admin API: %s' % exc)
        server = wsgi_server.WSGIServer(
            app, host=conf.admin_api.bind_host, port=port,
            threads=conf.admin_api.threads,
            timeout=conf.api.client_socket_timeout,
            request_read_timeout=conf.admin_api.request_read_timeout,
            request_queue_size=conf.admin_api.request_queue_size,
            reuse_port=reuse_port)
        try:
            server.start()
        except OSError as exc:
            main.fail('cannot listen on %s:%s for the admin API: %s'
                      % (conf.admin_api.bind_host, port,
                         exc.strerror or exc))
        return server

    def take_action(self, parsed_args):
        conf = main.config(self)
        if not conf.debug:
            std_logging.getLogger().setLevel(std_logging.INFO)
        host = parsed_args.host or conf.api.bind_host
        port = conf.api.bind_port if parsed_args.port is None \
            else parsed_args.port
        admin_port = conf.admin_api.bind_port \
            if parsed_args.admin_port is None else parsed_args.admin_port
        workers = conf.api.workers if parsed_args.workers is None \
            else parsed_args.workers
        if workers < 1:
            main.fail('--workers must be at least 1 (got %d)' % workers)
        if workers == 1:
            return self._serve(conf, host, port, admin_port)
        return self._serve_workers(conf, host, port, admin_port, workers)

    def _serve(self, conf, host, port, admin_port, ready_hook=None,
               reuse_port=False):
        """Serve in this process until SIGTERM; ``ready_hook`` (a
        worker's) is called, instead of printing the banner, once it
        listens."""
        services = common.services(self)
        placement_used = placement_conf.describe(conf)
        if placement_conf.configured(conf) in ('endpoint', 'catalog'):
            # Load its auth plugin now (no request is sent): a bad
            # [placement] stops the start, not every later request.
            try:
                services.placement
            except placement_client.PlacementError as exc:
                main.fail(str(exc))
        LOG.info('Placement: %s', placement_used)
        LOG.info('Ledger: %s', ledger_conf.describe(conf))
        # Workers: the first says what does nothing, not each of them.
        first = self._worker_index in (None, 0)
        chain, app = build(conf, services, first and main.strict(self),
                           warn=first)
        admin_server = self._admin_server(conf, services, admin_port,
                                          reuse_port)
        server = wsgi_server.WSGIServer(
            app, host=host, port=port, threads=conf.api.threads,
            timeout=conf.api.client_socket_timeout,
            request_read_timeout=conf.api.request_read_timeout,
            request_queue_size=conf.api.request_queue_size,
            reuse_port=reuse_port)

        def ready(srv):
            if ready_hook is not None:
                ready_hook()
                return
            self._banner(conf, no_ops.summary(chain.filters), host,
                         srv.url, admin_server and admin_server.url)

        def stop(signum, frame):
            # The handler runs in the thread that serves; cheroot's stop()
            # waits for that loop to end, so it must run elsewhere.
            LOG.info('Signal %d received; stopping.', signum)
            threading.Thread(target=server.stop, name='stop',
                             daemon=True).start()

        signal.signal(signal.SIGTERM, stop)
        wsgi_server.freeze_heap()
        try:
            server.serve_forever(on_ready=ready)
        except KeyboardInterrupt:
            pass
        except OSError as exc:
            main.fail('cannot listen on %s:%s: %s'
                      % (host, port, exc.strerror or exc))
        finally:
            if admin_server is not None:
                admin_server.stop()
            services.close()
        return 0

    def _banner(self, conf, enforced, host, url, admin_url, workers=1):
        """The listening lines on stdout (and the noauth warnings)."""
        exposed = noauth_exposure('The enforcement service', host,
                                  conf.api.auth_strategy)
        admin_exposed = admin_url and noauth_exposure(
            'The account admin API', conf.admin_api.bind_host,
            conf.admin_api.auth_strategy)
        for warning in (exposed, admin_exposed):
            if warning:
                _warn(warning)
        self.app.stdout.write(
            'placement-quota enforcement service listening on %s/v1/ '
            '(auth: %s%s; filters: %s; %s%d threads; Placement: %s)\n'
            % (url, conf.api.auth_strategy,
               _UNPROTECTED if exposed else '',
               enforced,
               '%d workers x ' % workers if workers > 1 else '',
               conf.api.threads, _short(conf)))
        if admin_url is not None:
            self.app.stdout.write(
                'placement-quota account admin API listening on %s/v1/ '
                '(auth: %s%s)\n' % (admin_url, conf.admin_api.auth_strategy,
                                    _UNPROTECTED if admin_exposed else ''))
        self.app.stdout.flush()

    def _serve_workers(self, conf, host, port, admin_port, count):
        """``count`` pre-forked workers on one port (see
        :mod:`placement_quota.httpserver.prefork`)."""
        if placement_conf.configured(conf) not in ('endpoint', 'catalog'):
            main.fail('--workers %d needs a Placement in [placement] '
                      '(endpoint_override or auth options): the embedded '
                      'Placement serves one process.' % count)
        try:
            held = [prefork.reserve_port(host, port)]
            port = held[0].getsockname()[1]
            if admin_port is not None:
                held.append(prefork.reserve_port(conf.admin_api.bind_host,
                                                 admin_port))
                admin_port = held[1].getsockname()[1]
        except OSError as exc:
            main.fail('cannot listen on %s:%s: %s'
                      % (host, port, exc.strerror or exc))
        pool = prefork.Workers(count, lambda ready: self._serve(
            conf, host, port, admin_port, ready, reuse_port=True))
        self._pool = pool
        if not pool.start():
            main.fail('the %d workers did not all start (see the log)'
                      % count)
        for sock in held:
            sock.close()

        def stop(signum, frame):
            LOG.info('Signal %d received; stopping the workers.', signum)
            pool.stop()

        # Before the banner: whoever read it may send SIGTERM at once.
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        admin_url = None if admin_port is None else wsgi_server.url(
            conf.admin_api.bind_host, admin_port)
        # The filters live in the workers: their names only (the first
        # worker warned about those that cannot deny).
        self._banner(conf, ', '.join(conf.enforcement.enabled_filters) or
                     no_ops.NO_FILTER, host,
                     wsgi_server.url(host, port), admin_url, count)
        pool.supervise()
        return 0
