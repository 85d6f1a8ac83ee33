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
"""Serve the embedded Placement (real openstack-placement code on SQLite,
noauth2) on a port, for tests, benchmarks and developers::

    python -m placement_quota.cmd.embedded_placement --port 0

prints one line ``LISTENING http://127.0.0.1:PORT`` on stdout once bound.
"""

import argparse
import logging as py_logging
import os
import signal
import sys
import threading
import warnings

from placement_quota.placement import embedded
from placement_quota.httpserver import prefork
from placement_quota.httpserver import server as wsgi_server


def main(argv=None):
    """Serve the embedded Placement over HTTP until interrupted."""
    parser = argparse.ArgumentParser(
        prog='python -m placement_quota.cmd.embedded_placement',
        description='Serve the real Placement API (noauth2, SQLite).')
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, default=0,
                        help='0 (the default) picks a free port')
    parser.add_argument('--connection',
                        help='database URL (default: %s in --state-dir)'
                        % embedded.DB_FILENAME)
    parser.add_argument('--state-dir', default='.',
                        help='where the default SQLite file lives')
    parser.add_argument('--config-file', action='append', default=[],
                        metavar='PATH',
                        help='a Placement configuration file read on top '
                        'of the embedded defaults (e.g. [api] '
                        'auth_strategy = keystone); may be repeated')
    parser.add_argument('--threads', type=int, default=16)
    parser.add_argument('--workers', type=int, default=1, metavar='N',
                        help='processes serving the port (SO_REUSEPORT), '
                        'as Placement runs under uWSGI or mod_wsgi with '
                        'several; the database is made ready first, once '
                        '(default: 1)')
    parser.add_argument('--exit-on-stdin-eof', action='store_true',
                        help='exit when stdin closes (i.e. the parent died)')
    parser.add_argument('--debug', action='store_true')
    args = parser.parse_args(argv)

    py_logging.basicConfig(
        stream=sys.stderr,
        level=py_logging.DEBUG if args.debug else py_logging.WARNING,
        format='%(asctime)s %(levelname)s %(name)s %(message)s')
    if not args.debug:
        warnings.simplefilter('ignore')

    if args.workers < 1:
        parser.error('--workers must be at least 1 (got %d)' % args.workers)
    app = embedded.get_app(args.connection or
                           embedded.sqlite_connection(args.state_dir),
                           args.config_file)
    if args.exit_on_stdin_eof:
        def _watch_stdin():
            sys.stdin.read()
            os._exit(0)  # the workers end with this process
        threading.Thread(target=_watch_stdin, daemon=True).start()
    wsgi_server.freeze_heap()  # as placement-quota serve does
    if args.workers > 1:
        return _serve_workers(app, args)
    server = wsgi_server.WSGIServer(app, args.host, args.port,
                                    threads=args.threads,
                                    server_name='placement-embedded')

    def on_ready(srv):
        print(embedded.LISTENING, srv.url, flush=True)

    try:
        server.serve_forever(on_ready=on_ready)
    except KeyboardInterrupt:
        pass
    return 0


def _serve_workers(app, args):
    """``args.workers`` forked processes serving ``app`` on one port (see
    :mod:`placement_quota.httpserver.prefork`); the database connections
    made while it was built are closed first, so that no worker shares
    one."""
    embedded.close_connections()
    held = prefork.reserve_port(args.host, args.port)
    port = held.getsockname()[1]

    def work(ready):
        server = wsgi_server.WSGIServer(
            app, args.host, port, threads=args.threads,
            server_name='placement-embedded', reuse_port=True)
        server.serve_forever(on_ready=lambda srv: ready())
        return 0

    pool = prefork.Workers(args.workers, work)
    if not pool.start():
        print('the %d workers did not all start' % args.workers,
              file=sys.stderr)
        return 1
    held.close()

    def stop(signum, frame):
        pool.stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(embedded.LISTENING, wsgi_server.url(args.host, port), flush=True)
    pool.supervise()
    return 0


if __name__ == '__main__':
    sys.exit(main())
