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
"""A few blocking calls of one request made side by side.

Before an admission takes its locks, its filters read what they need from
outside the ledger: the Nova quota and usage (Keystone or Nova, and
Placement), the capacity (Placement), the reserved hosts' inventories.
Each waits on another service; made one after the other a decision waited
for their sum, side by side it waits for the longest. The calls run in a
pool of threads kept for the process (no thread started per request),
each in a copy of the caller's context (:mod:`contextvars`), the last in
the calling thread.
"""

import concurrent.futures
import contextvars
import threading
import typing

#: Most threads of the process's pool (made as calls need them): calls
#: beyond them wait for one, so a service that hangs holds back other
#: requests only once this many calls wait on it.
MAX_WORKERS = 64

_pool = None
_lock = threading.Lock()


class Outcome(typing.NamedTuple):
    """What a call returned, or the exception it raised."""

    value: typing.Any
    error: typing.Optional[BaseException]

    def get(self):
        """The value, or raise the exception."""
        if self.error is not None:
            raise self.error
        return self.value


def _executor():
    global _pool
    with _lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(
                MAX_WORKERS, thread_name_prefix='side-by-side')
        return _pool


def _call(call):
    try:
        return Outcome(call(), None)
    except Exception as exc:
        return Outcome(None, exc)


def side_by_side(calls: typing.Sequence[typing.Callable[[], typing.Any]]
                 ) -> typing.List[Outcome]:
    """Make each of ``calls`` (callables without arguments) at the same
    time; their :class:`Outcome` in the order of ``calls``, once every
    one has returned. An exception of one call does not stop the
    others."""
    calls = list(calls)
    if not calls:
        return []
    pool = _executor() if len(calls) > 1 else None
    futures = [pool.submit(contextvars.copy_context().run, _call, call)
               for call in calls[:-1]]
    last = _call(calls[-1])
    return [future.result() for future in futures] + [last]
