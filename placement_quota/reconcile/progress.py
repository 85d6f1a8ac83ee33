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
"""A progress bar on a terminal, nothing elsewhere.

rich (a dependency of cliff's cmd2) draws it when stderr is a TTY; when
it cannot be imported, a counter is rewritten on stderr instead. Output
to a pipe or a file gets nothing, so stdout and logs stay clean.
"""

import sys
import threading


class _Silent:

    def advance(self, n=1):
        pass

    def close(self):
        pass


class _Counter:

    def __init__(self, total, description, stream):
        self.total = total
        self.description = description
        self.stream = stream
        self.done = 0
        self._lock = threading.Lock()

    def advance(self, n=1):
        with self._lock:
            self.done += n
            self.stream.write('\r%s %d/%d' % (self.description, self.done,
                                              self.total))
            self.stream.flush()

    def close(self):
        self.stream.write('\n')
        self.stream.flush()


class _Rich:

    def __init__(self, total, description, stream):
        # rich is optional (it comes with cliff's cmd2, not from our
        # requirements): without it the bar is plain text.
        from rich import console
        from rich import progress
        self._progress = progress.Progress(
            progress.TextColumn('{task.description}'),
            progress.BarColumn(), progress.MofNCompleteColumn(),
            progress.TimeElapsedColumn(),
            console=console.Console(file=stream), transient=True)
        self._task = self._progress.add_task(description, total=total)
        self._progress.start()

    def advance(self, n=1):
        self._progress.advance(self._task, n)

    def close(self):
        self._progress.stop()


def bar(total, description, stream=None, enabled=True):
    """An object with ``advance(n=1)`` and ``close()``: a bar on a TTY."""
    stream = stream or sys.stderr
    isatty = getattr(stream, 'isatty', lambda: False)
    if not enabled or not total or not isatty():
        return _Silent()
    try:
        return _Rich(total, description, stream)
    except ImportError:
        return _Counter(total, description, stream)
