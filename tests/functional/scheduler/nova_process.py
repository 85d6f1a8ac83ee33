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
"""Nova's scheduler code in a process of its own, for the tests.

Nova and Blazar cannot be imported into one Python process: both register
a global oslo.config option ``host`` (``nova.conf`` and ``blazar.config``),
and the second raises ``DuplicateOptError`` whichever comes first. Test
discovery imports every test module, some of which import Blazar; so the
Nova side runs here, in a child process that never imports Blazar:
:class:`NovaProcess` starts it once per test process and sends it
requests, one JSON line each way.

For each request the child does what nova-api and nova-scheduler do:
``RequestSpec.from_components`` (as nova-api builds it) from a ``Flavor``,
image properties and scheduler hints; ``nova.objects.Aggregate`` objects;
the decision (:func:`placement_quota.scheduler.decision.decide`) from what
the RequestSpec carries; the decision applied to
``requested_destination`` with ``Destination.require_aggregates`` and
``append_forbidden_aggregates``; the query by
``nova.scheduler.utils.resources_from_request_spec(ctxt, spec, None)
.to_querystring()``. It answers with the decision, the destination, the
query, the microversion Nova sends it at, and the host filter's answer for
each host of the aggregates.

Nothing here imports Nova at module level: only the child does.
"""

import atexit
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import traceback

import fixtures

from tests.fixtures import process as process_helpers

START_TIMEOUT = float(os.environ.get('NOVA_PROCESS_START_TIMEOUT', '60'))
REQUEST_TIMEOUT = 60.0
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

_lock = threading.Lock()
_child = None


class NovaProcessError(Exception):
    """The child failed to start or to answer; says what it printed."""


class _Child:

    def __init__(self, timeout):
        self.stderr = tempfile.TemporaryFile(mode='w+')
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            p for p in (_ROOT, os.environ.get('PYTHONPATH')) if p))
        self.process = subprocess.Popen(
            [sys.executable, '-m', __name__], cwd=_ROOT, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.stderr, text=True, bufsize=1)
        self.hello = self._read(timeout)
        if 'nova_version' not in self.hello:
            raise NovaProcessError('unexpected greeting: %r' % self.hello)

    def _read(self, timeout):
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ''
        if not line:
            self.stop()
            self.stderr.seek(0)
            raise NovaProcessError(
                'the Nova process %s; its stderr:\n%s' % (
                    'timed out' if not ready else 'exited',
                    self.stderr.read()[-4000:]))
        return json.loads(line)

    def call(self, request, timeout=REQUEST_TIMEOUT):
        self.process.stdin.write(json.dumps(request) + '\n')
        self.process.stdin.flush()
        reply = self._read(timeout)
        if 'error' in reply:
            raise NovaProcessError(reply['error'])
        return reply

    def alive(self):
        return self.process.poll() is None

    def stop(self):
        process_helpers.stop(self.process)


def _get_child(timeout):
    global _child
    with _lock:
        if _child is None or not _child.alive():
            _child = _Child(timeout)
            atexit.register(_child.stop)
        return _child


class NovaProcess(fixtures.Fixture):
    """The shared Nova child process of this test process.

    :ivar nova_version: the version of the ``nova`` package it runs.
    """

    def __init__(self, timeout=START_TIMEOUT):
        super().__init__()
        self.timeout = timeout

    def _setUp(self):
        self._child = _get_child(self.timeout)
        self.nova_version = self._child.hello['nova_version']

    def schedule(self, flavor, image_properties=None, hints=None,
                 project_id=None, aggregates=(), settings=None, hosts=()):
        """What the scheduler would send Placement for this request.

        :param flavor: ``vcpus``, ``memory_mb``, ``root_gb`` and
            ``extra_specs`` of the flavor.
        :param aggregates: dicts with ``uuid``, ``name``, ``metadata``,
            ``hosts`` (made into ``nova.objects.Aggregate``).
        :param settings: keyword arguments of ``decision.Settings``.
        :param hosts: hosts to answer ``host_passes`` for, besides those
            of the aggregates.
        :returns: a dict: ``decision`` (its fields, ``forbidden`` sorted,
            and ``refused``), ``query`` (None when refused),
            ``requested_destination`` (``aggregates``,
            ``forbidden_aggregates``), ``image_properties`` and
            ``scheduler_hints`` as the RequestSpec holds them,
            ``microversion``, ``host_passes`` (host -> bool).
        """
        return self._child.call({
            'flavor': flavor, 'image_properties': image_properties or {},
            'hints': hints or {}, 'project_id': project_id,
            'aggregates': list(aggregates), 'settings': settings or {},
            'hosts': list(hosts)})

    def run_filters(self, flavor, image_properties=None, hints=None,
                    project_id=None, aggregates=(), settings=None, hosts=(),
                    blazar_filter=False):
        """Our request filter and host filter as nova-scheduler runs them
        (:mod:`.nova_scheduler_child`), on aggregates stored in Nova's API
        database.

        :param settings: ``[placement_quota_scheduler]`` overrides.
        :param blazar_filter: also run blazar-nova's ``BlazarFilter``.
        :returns: a dict: ``ran``, ``refused`` (the ``RequestFilterFailed``
            message or None), ``query`` (None when refused),
            ``requested_destination``, ``host_passes`` (host -> bool, from
            ``ReservationHostFilter``), ``host_filter_checks``,
            ``host_filter_decisions``, ``blazar_passes`` and
            ``blazar_checks`` (when asked) and ``logged`` (warnings and
            errors of ``placement_quota`` loggers: ``level``, ``message``,
            ``traceback``).
        """
        return self._child.call({
            'op': 'filters', 'flavor': flavor,
            'image_properties': image_properties or {}, 'hints': hints or {},
            'project_id': project_id, 'aggregates': list(aggregates),
            'settings': settings or {}, 'hosts': list(hosts),
            'blazar_filter': blazar_filter})

    def registration(self):
        """Import and reload ``nova_filters`` in the child: see
        :func:`.nova_scheduler_child.registration`."""
        return self._child.call({'op': 'registration'})


# --- the child ---------------------------------------------------------------

def _serve():  # pragma: no cover - runs in the child
    import dataclasses
    import uuid

    from importlib import metadata as importlib_metadata
    from nova import context as nova_context
    from nova import objects
    from nova.scheduler.client import report
    from nova.scheduler import utils as scheduler_utils

    from placement_quota.scheduler import decision as dec

    objects.register_all()

    def handle(request):
        if request.get('op', 'schedule') != 'schedule':
            from tests.functional.scheduler import nova_scheduler_child
            return nova_scheduler_child.handle(request)
        ctxt = nova_context.RequestContext(
            user_id='user', project_id=request['project_id'],
            is_admin=False)
        f = request['flavor']
        flavor = objects.Flavor(
            flavorid='f-' + uuid.uuid4().hex[:8], name='flavor',
            vcpus=f.get('vcpus', 1), memory_mb=f.get('memory_mb', 512),
            root_gb=f.get('root_gb', 1), ephemeral_gb=0, swap=0,
            extra_specs=f.get('extra_specs', {}))
        spec = objects.RequestSpec.from_components(
            ctxt, str(uuid.uuid4()),
            {'properties': request['image_properties']}, flavor, None, None,
            {'scheduler_hints': request['hints']}, None, None,
            project_id=request['project_id'])
        aggregates = [objects.Aggregate(
            uuid=a['uuid'], name=a['name'], metadata=a['metadata'],
            hosts=a['hosts']) for a in request['aggregates']]
        # What the request filter reads: only what the RequestSpec holds.
        image = spec.image.properties.to_dict() if spec.image else {}
        index = dec.AggregateIndex(
            [dec.Aggregate.from_object(a) for a in aggregates],
            dec.Settings(**request['settings']))
        decision = dec.decide(spec.flavor.extra_specs, image,
                              spec.scheduler_hints, spec.project_id, index)
        query = None
        if not decision.refused:
            if decision.required or decision.forbidden:
                if spec.requested_destination is None:
                    spec.requested_destination = objects.Destination()
                destination = spec.requested_destination
                for group in decision.required:
                    destination.require_aggregates(group)
                if decision.forbidden:
                    destination.append_forbidden_aggregates(
                        set(decision.forbidden))
            query = scheduler_utils.resources_from_request_spec(
                ctxt, spec, None).to_querystring()
        destination = spec.requested_destination
        fields = dataclasses.asdict(decision)
        fields['forbidden'] = sorted(decision.forbidden)
        fields['refused'] = decision.refused
        hosts = sorted({h for a in aggregates for h in a.hosts} |
                       set(request.get('hosts', ())))
        return {
            'decision': fields,
            'query': query,
            'member_of': dec.to_query(decision),
            'requested_destination': None if destination is None else {
                'aggregates': destination.aggregates,
                'forbidden_aggregates': sorted(
                    destination.forbidden_aggregates or ())},
            'image_properties': image,
            'scheduler_hints': spec.scheduler_hints,
            'microversion': report.SAME_SUBTREE_VERSION,
            'host_passes': {h: decision.admits_host(
                index.aggregates_of_host(h)) for h in hosts},
        }

    # Only our replies on the real stdout: anything else printed goes to
    # stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), 'w')
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    out.write(json.dumps({'nova_version': importlib_metadata.version(
        'nova')}) + '\n')
    out.flush()
    for line in sys.stdin:
        try:
            reply = handle(json.loads(line))
        except Exception:
            reply = {'error': traceback.format_exc()}
        out.write(json.dumps(reply) + '\n')
        out.flush()


if __name__ == '__main__':  # pragma: no cover
    _serve()
