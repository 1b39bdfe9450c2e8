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

3.9-3.11: ``sys.settrace`` (and ``threading.settrace`` with threads=True);
the global trace function returns None for frames of other functions, so
they get no line events, only the call event.

The callbacks are Python functions (the cost is in docs/lines.md); the
interpreter runs no profiler hook inside them, so they are never recorded.
"""

import sys
import threading
import time

from .func_patterns import FunctionPatterns
from .names import label

MONITORING = sys.version_info >= (3, 12)

# sys.monitoring ids tried in turn: the optimizer's slot first, then the
# two fastprof's profiler leaves to a second profiler, then the debugger's
TOOL_IDS = (5, 4, 3, 0)


class LineRecorderError(RuntimeError):
    """Line profiling cannot start (no free tool id, a tracer already set)."""


class _Common:
    def __init__(self, patterns, main_alias=None, keys=(), threads=False, clock=time.perf_counter):
        self.patterns = FunctionPatterns(patterns, main_alias=main_alias, keys=keys)
        self.threads = threads
        self.clock = clock
        self.seen = {}    # code object -> its line table, or None if not matched
        self.running = False

    def _decide(self, code, frame):
        module = frame.f_globals.get("__name__") if frame is not None else None
        table = {} if self.patterns.matches(code, module) else None
        self.seen[code] = table
        return table

    def line_stats(self):
        """``{(file, firstlineno, name): {lineno: (hits, seconds)}}``, code
        objects sharing a key summed."""
        out = {}
        for code, table in list(self.seen.items()):
            if not table:
                continue
            lines = out.setdefault(label(code), {})
            for lineno, (hits, seconds) in list(table.items()):
                prev = lines.get(lineno, (0, 0.0))
                lines[lineno] = (prev[0] + hits, prev[1] + seconds)
        return out

    def clear(self):
        for table in self.seen.values():
            if table:
                table.clear()


def _charge(table, lineno, seconds):
    rec = table.get(lineno)
    if rec is None:
        table[lineno] = [0, seconds]
    else:
        rec[1] += seconds


class MonitoringRecorder(_Common):
    """3.12+: see the module docstring."""

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
        ev = mon.events
        self.local_events = ev.LINE | ev.JUMP | ev.PY_RESUME | ev.PY_RETURN | ev.PY_YIELD
        for event, fn in self._callbacks().items():
            mon.register_callback(tool, event, fn)
        # codes matched in an earlier run of this recorder get their events back
        for code, table in self.seen.items():
            if table is not None:
                mon.set_local_events(tool, code, self.local_events)
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
        now = self.clock()
        mon.set_events(self.tool, 0)
        for code, table in self.seen.items():
            if table is not None:
                mon.set_local_events(self.tool, code, 0)
        for event in self._callbacks():
            mon.register_callback(self.tool, event, None)
        mon.free_tool_id(self.tool)
        # lines still running (frames open at stop) are charged up to now
        for stack in self._stacks:
            for code, lineno, t in stack:
                if lineno:
                    _charge(self.seen[code], lineno, now - t)
            del stack[:]

    def _callbacks(self):
        cb = getattr(self, "_cb", None)
        if cb is not None:
            return cb
        mon = sys.monitoring
        ev = mon.events
        DISABLE = mon.DISABLE
        seen = self.seen
        clock = self.clock
        local = threading.local()
        stacks = self._stacks = []   # every thread's stack, for stop()
        offsets = {}                 # code -> {offset: line}
        decide = self._decide
        tool_events = self

        def stack_of():
            try:
                return local.s
            except AttributeError:
                s = local.s = []
                stacks.append(s)
                return s

        def line_at(code, offset):
            m = offsets.get(code)
            if m is None:
                m = offsets[code] = {}
                for start, end, line in code.co_lines():
                    for off in range(start, end, 2):
                        m[off] = line
            return m.get(offset)

        def on_start(code, offset):
            table = seen.get(code, False)
            if table is False:
                table = decide(code, sys._getframe(1))
                if table is not None:
                    mon.set_local_events(tool_events.tool, code, tool_events.local_events)
            if table is None:
                return DISABLE
            stack_of().append([code, 0, clock()])

        def on_resume(code, offset):
            # the time until the next line event belongs to the resumed line
            stack_of().append([code, line_at(code, offset) or 0, clock()])

        def on_throw(code, offset, exc):
            if seen.get(code) is not None:
                on_resume(code, offset)

        def new_line(code, lineno, t):
            s = stack_of()
            if s and s[-1][0] is code:
                top = s[-1]
                table = seen[code]
                prev = top[1]
                if prev:
                    rec = table.get(prev)
                    if rec is None:
                        table[prev] = [0, t - top[2]]
                    else:
                        rec[1] += t - top[2]
            else:  # a frame entered before recording started
                table = seen.get(code)
                if table is None:
                    return
                top = [code, 0, t]
                s.append(top)
            rec = table.get(lineno)
            if rec is None:
                table[lineno] = [1, 0.0]
            else:
                rec[0] += 1
            top[1] = lineno
            top[2] = t

        def on_line(code, lineno):
            new_line(code, lineno, clock())

        def on_jump(code, src, dst):
            # settrace reports a backward jump within one line as a new line
            if dst >= src:
                return DISABLE
            to_line = line_at(code, dst)
            if to_line is None or to_line != line_at(code, src):
                return DISABLE
            new_line(code, to_line, clock())

        def on_exit(code, offset, value):
            t = clock()
            s = stack_of()
            if s and s[-1][0] is code:
                code, lineno, start = s.pop()
                if lineno:
                    _charge(seen[code], lineno, t - start)

        def on_unwind(code, offset, exc):
            if seen.get(code) is not None:
                on_exit(code, offset, exc)

        self._cb = cb = {
            ev.PY_START: on_start, ev.PY_RESUME: on_resume, ev.PY_THROW: on_throw,
            ev.LINE: on_line, ev.JUMP: on_jump, ev.PY_RETURN: on_exit,
            ev.PY_YIELD: on_exit, ev.PY_UNWIND: on_unwind,
        }
        return cb


class SettraceRecorder(_Common):
    """3.9-3.11: see the module docstring."""

    def start(self):
        if sys.gettrace() is not None:
            raise LineRecorderError(
                "line profiling on Python < 3.12 uses sys.settrace, and a trace "
                "function (a debugger or coverage) is already set")
        self._tracer = self._make_tracer()
        sys.settrace(self._tracer)
        if self.threads:
            threading.settrace(self._tracer)
        self.running = True

    def stop(self):
        if not self.running:
            return
        self.running = False
        if sys.gettrace() is self._tracer:
            sys.settrace(None)
        if self.threads:
            threading.settrace(None)

    def _make_tracer(self):
        seen = self.seen
        clock = self.clock
        decide = self._decide

        def on_call(frame, event, arg):
            code = frame.f_code
            table = seen.get(code, False)
            if table is False:
                table = decide(code, frame)
            if table is None:
                return None
            state = [0, clock()]  # current line, its start

            def on_event(frame, event, arg):
                t = clock()
                prev = state[0]
                if prev:
                    rec = table.get(prev)
                    if rec is None:
                        table[prev] = [0, t - state[1]]
                    else:
                        rec[1] += t - state[1]
                if event == "line":
                    lineno = frame.f_lineno
                    rec = table.get(lineno)
                    if rec is None:
                        table[lineno] = [1, 0.0]
                    else:
                        rec[0] += 1
                    state[0] = lineno
                    state[1] = t
                elif event == "return":
                    state[0] = 0
                else:  # exception: the line goes on
                    state[1] = t
                return on_event

            return on_event

        return on_call


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
    from .names import is_builtin
    from .profile_file import load_profile
    stats = load_profile(path).stats
    keys = [k for k in stats if not is_builtin(k)]
    keys.sort(key=lambda k: -stats[k][2])
    return keys[:n]
