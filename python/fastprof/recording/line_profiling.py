"""Line-level profiling of the functions ``--lines`` patterns name.

Each line of a matched function gets its *hits* (exactly the ``line``
events ``sys.settrace`` would report) and its *time*: from the line's start
to the next line event in the same frame or the frame's exit (return,
yield, exception), so time spent in what the line calls is included.

3.12+: ``sys.monitoring`` under a tool id of its own.  ``PY_START`` is a
global event only to see each code object once: a function no pattern
names returns ``DISABLE`` and pays nothing more; a matched one gets
``LINE``, ``JUMP``, ``PY_RESUME``, ``PY_RETURN`` and ``PY_YIELD`` as local
events (``set_local_events``).  ``PY_UNWIND`` and ``PY_THROW`` can only be
global; their callbacks compare one pointer for other code.  A
``restart_events()`` from any tool re-enables disabled locations: the
callbacks decide again from their caches and stay correct.

3.9-3.11: a C trace function (``PyEval_SetTrace``, csrc/fpy_lines_legacy.c;
``threading.settrace`` installs it in new threads with threads=True, and
``trace_threads`` in the threads already running, where no tracer is set). It
decides each code object at its first call event and switches the line
events of frames of other functions off, so they get only the call and
return events.

Own time (``bind(profiler)``, which ``Profile`` does): a line's time less
the time of the calls made while it was open, as the profiler measures
them: lines are timed with the profiler's clock, and each end of a line
reads the profiler's callee time of the running frame (its top frame).
A function gets own times only if every line of it could be measured so
(docs/lines.md says where not).

The line events are counted in C (``_fastprof.LineCounter``) on every
version; deciding which code objects to count is Python, once per code
object. The interpreter runs no profiler hook inside callbacks: they are
never recorded.
"""

import os
import sys
import threading

from ..data.names import label
from .func_patterns import FunctionPatterns

MONITORING = sys.version_info >= (3, 12)

# the fastprof package's directory (this module is in fastprof/recording/), as
# its code objects name it (and absolute)
_OWN_DIRS = tuple({os.path.dirname(d) + os.sep
                   for d in (os.path.dirname(__file__), os.path.dirname(os.path.abspath(__file__)))})

# sys.monitoring ids tried in turn: the optimizer's slot first, then the
# two fastprof's profiler leaves to a second profiler, then the debugger's
TOOL_IDS = (5, 4, 3, 0)


class LineRecorderError(RuntimeError):
    """Line profiling cannot start (no free tool id, a tracer already set)."""


class _LineRecorder:
    """What both recorders share: the patterns and the decision per code
    object; the line events go to the C ``LineCounter`` (fpy_lines.c),
    which holds the counts."""

    def __init__(self, patterns, main_alias=None, keys=(), threads=False):
        self.patterns = FunctionPatterns(patterns, main_alias=main_alias, keys=keys)
        self.threads = threads
        self.seen = {}    # code object -> its line table, or None if not matched
        self.running = False
        self.profiler = None
        from .. import _fastprof  # (deferred: the C extension, as Profile loads it)
        self.counter = _fastprof.LineCounter(sys.monitoring.DISABLE if MONITORING else None)

    def bind(self, profiler):
        """Time lines with *profiler*'s clock and measure their own time
        against its stack (before start())."""
        self.profiler = profiler

    def _decide(self, code, frame):
        module = frame.f_globals.get("__name__") if frame is not None else None
        # fastprof's own code is never listed: python -m fastprof's runner
        # runs as __main__ and is on the stack when the recorder starts
        ours = code.co_filename.startswith(_OWN_DIRS)
        table = {} if not ours and self.patterns.matches(code, module) else None
        self.seen[code] = table
        return table

    def line_stats(self, request=0):
        """``{(file, firstlineno, name): {lineno: (hits, seconds)}}``, code
        objects sharing a key summed; *request*: a routed request's
        (fastprof.middleware; C ``Profiler._route_by``)."""
        out = {}
        for code, table in self.counter.stats(request).items():
            lines = out.setdefault(label(code), {})
            for lineno, (hits, seconds) in table.items():
                prev = lines.get(lineno, (0, 0.0))
                lines[lineno] = (prev[0] + hits, prev[1] + seconds)
        return out

    def own_stats(self, request=0):
        """``{(file, firstlineno, name): {lineno: own seconds}}`` of the
        functions whose every line's own time is exact."""
        return _own_by_key(self.counter.own_stats(request), self.counter.stats(request))

    def line_memory(self, request=0):
        """``{(file, firstlineno, name): {lineno: (allocated, net, own)}}``
        of the functions measured in bytes (the bound profiler's memory
        on), code objects sharing a key summed; own None where not exact."""
        from ..data.memory import add_line_bytes  # (deferred: import fastprof adds nothing to cProfile's imports)
        out = {}
        for code, table in self.counter.memory_stats(request).items():
            add_line_bytes(out.setdefault(label(code), {}), table)
        return out

    def drop(self, request):
        """Free a routed request's counts."""
        self.counter.drop(request)

    def clear(self):
        self.counter.clear()


class MonitoringRecorder(_LineRecorder):
    """3.12+: see the module docstring.  PY_START, which decides, stays
    here and returns DISABLE for every code object (matched ones need no
    PY_START: their frames are known from their first line on)."""

    def start(self):
        mon = sys.monitoring
        for tool in TOOL_IDS:
            if mon.get_tool(tool) is None:
                break
        else:
            raise LineRecorderError(
                "line profiling needs a free sys.monitoring tool id; ids %s are all "
                "in use (a debugger, coverage or other profilers)"
                % ", ".join(map(str, TOOL_IDS)))
        mon.use_tool_id(tool, "fastprof lines")
        self.tool = tool
        if self.profiler is not None:
            self.counter.bind(self.profiler, tool)
        ev = mon.events
        self.local_events = ev.LINE | ev.JUMP | ev.PY_RESUME | ev.PY_RETURN | ev.PY_YIELD
        for event, fn in self._callbacks().items():
            mon.register_callback(tool, event, fn)
        # codes matched in an earlier run of this recorder get their events back
        for code, table in self.seen.items():
            if table is not None:
                mon.set_local_events(tool, code, self.local_events)
        # the functions already running (the one around `with Profile(...)`,
        # a service attached to): their frames count lines from now on
        for frame in sys._current_frames().values():
            while frame is not None:
                code = frame.f_code
                if code not in self.seen and self._decide(code, frame) is not None:
                    self.counter.add(code)
                    mon.set_local_events(tool, code, self.local_events)
                frame = frame.f_back
        mon.set_events(tool, ev.PY_START | ev.PY_UNWIND | ev.PY_THROW)
        # locations an earlier user of this tool id disabled stay disabled
        # (before 3.14 free_tool_id does not clear them): a function first
        # run under them would never be seen
        mon.restart_events()
        self.running = True

    def stop(self):
        if not self.running:
            return
        self.running = False
        mon = sys.monitoring
        mon.set_events(self.tool, 0)
        for code, table in self.seen.items():
            if table is not None:
                mon.set_local_events(self.tool, code, 0)
        for event in self._callbacks():
            mon.register_callback(self.tool, event, None)
        mon.free_tool_id(self.tool)
        # lines still running (frames open at stop) end now
        self.counter.close()

    def _callbacks(self):
        cb = getattr(self, "_cb", None)
        if cb is not None:
            return cb
        mon = sys.monitoring
        ev = mon.events
        DISABLE = mon.DISABLE
        seen = self.seen
        decide = self._decide
        counter = self.counter
        recorder = self

        def admit(code):
            # (its frame: on_start's caller's, read here, where what it
            # allocates counts for no function)
            if decide(code, sys._getframe(2)) is not None:
                counter.add(code)
                mon.set_local_events(recorder.tool, code, recorder.local_events)

        def on_start(code, offset):
            if code not in seen:
                counter.call_unowned(admit, code)
            return DISABLE

        def on_throw(code, offset, exc):
            if seen.get(code) is not None:
                counter.resume(code, offset)

        self._cb = cb = {
            ev.PY_START: on_start, ev.PY_RESUME: counter.resume, ev.PY_THROW: on_throw,
            ev.LINE: counter.line, ev.JUMP: counter.jump, ev.PY_RETURN: counter.exit,
            ev.PY_YIELD: counter.exit, ev.PY_UNWIND: counter.exit,
        }
        return cb


class SettraceRecorder(_LineRecorder):
    """3.9-3.11: see the module docstring."""

    def start(self):
        if sys.gettrace() is not None:
            raise LineRecorderError(
                "line profiling on Python < 3.12 uses sys.settrace, and a trace "
                "function (a debugger or coverage) is already set")
        if self.profiler is not None:
            self.counter.bind(self.profiler, 0)  # a tool id only on 3.12+
        self.counter.trace_start(self._decide)
        self.running = True
        if self.threads:
            threading.settrace(self.counter.thread_trace)
            # the threads running already (a service's worker threads), as
            # the profiler hooks them; those with a tracer of their own keep it
            try:
                self.counter.trace_threads()
            except BaseException:
                self.stop()
                raise

    def stop(self):
        if not self.running:
            return
        self.running = False
        self.counter.trace_stop()
        if self.threads:
            threading.settrace(None)
        # lines still running (frames open at stop) end now
        self.counter.close()


def _own_by_key(own, counted):
    """*own* ({code: {lineno: own seconds}}) keyed like the pstats table,
    summed over code objects sharing a key; a key only if every code object
    of it in *counted* has its own times."""
    out, missing = {}, set()
    for code in counted:
        if code not in own:
            missing.add(label(code))
    for code, table in own.items():
        key = label(code)
        if key in missing:
            continue
        lines = out.setdefault(key, {})
        for lineno, seconds in table.items():
            lines[lineno] = lines.get(lineno, 0.0) + seconds
    return out


def make_recorder(patterns, main_alias=None, keys=(), threads=False):
    """The recorder for this Python; ValueError/TypeError for a bad pattern."""
    cls = MonitoringRecorder if MONITORING else SettraceRecorder
    return cls(patterns, main_alias=main_alias, keys=keys, threads=threads)


def parse_lines_from(text):
    """``OLD.prof[:N]`` -> (path, N); N defaults to 10."""
    path, sep, count = text.rpartition(":")
    if sep and count.isdigit():
        n = int(count)
        if n < 1:
            raise ValueError("--lines-from %s: N must be at least 1" % (text,))
        return path, n
    return text, 10


def top_functions(path, n):
    """The pstats keys of the *n* Python functions with the most own time
    in the profile at *path* (ProfileFileError if it is not one)."""
    from ..data.model import is_builtin  # (deferred: --lines-from only)
    from ..data.profile_file import load_profile  # (deferred: --lines-from only)
    stats = load_profile(path).stats
    # functions: not C functions, nor module bodies (run once, before any
    # pattern could match them)
    keys = [k for k in stats if not is_builtin(k) and k[2] != "<module>"]
    keys.sort(key=lambda k: -stats[k][2])
    return keys[:n]
