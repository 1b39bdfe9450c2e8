"""The cost of an event that the profiler's clock does not read.

The profiler's own time is taken out of every time in C (each thread's
account, docs/architecture.md "One event, end to end"). The general path
reads it: from its callback's first clock read to its last. What happens
outside those reads (the interpreter delivering the event, the callback's
entry and exit) and the whole of a fast-path event (whose cost hardly
varies, so it is charged as a constant rather than read with a second TSC
read per event) is measured here, once per process for each kind of
profiler (event source, clock, builtins), and handed to the C profiler with
``_set_compensation``, per kind of event: a Python call, its return, a
generator's resume or yield, a C function's call or return, a line, and
(3.12+) the call of a callable that is neither recorded nor a Python
function (a class: its CALL and C_RETURN events are delivered, and cost,
though nothing is recorded), and (3.12+) a Python function's call site
(its CALL event, charged to the caller when it happens: the call loop
with builtins less the same loop without; a function started without
one, a property or ``__init__`` from a class call, is not charged it).

Each kind's cost is measured by a loop made of that event and nothing
else: N calls of an empty function, N resumes of a generator, N calls of
C functions, N line events.  The loop runs unprofiled, then under a
profiler that removes only what the general path reads, one after the
other, a few times; the median of the paired differences (each pair close
in time, so a machine that slows down or speeds up in between shifts both
alike), less the same difference for an empty loop (before 3.12 a profile
function slows every instruction, events or not: that is no event's cost),
over the loop's calls, is the cost of a call and its return together.

Where that cost falls matters as much (``pre`` of an event: the part
before its clock read, taken from the time before the event; the rest from
the time after it). Of a call's cost, some lies inside the callee's time
(from the call's read to the return's: the call event's delivery after
its read, the return's before it) and the rest in the caller's (the call
site's work to deliver the call, its CALL event on 3.12+ with builtins,
the return's delivery after its read). Taking the call's cost half from
each side, as one even share per event, took ~15 ns from every Python
call's callee on 3.12 and left it to the caller: functions doing almost
nothing kept no time.  The part inside is read from the profiled loop
itself: the empty callee's own time there, less what the callee does
unprofiled (its own instructions: taken as half of an empty call's
unprofiled cost, the other half being the call site's); the same for a
generator's resume and yield (its own time in its loop) and a C function.
A line event's cost is split half and half between the line before and
the line after.

It takes about 20 ms, when the first compensating profiler of a kind is
made (docs/performance.md, "Profiler cost removed"): it measures twice and
keeps each kind's lower cost, since a busy machine (or a virtual CPU whose
host is busy) can measure several times the real cost in a few
milliseconds; and each kind's cost is the lowest this build has measured
(calibration_cache).
"""
import sys
import time

from .. import _fastprof
from .calibration_cache import build_key, fastest

N_CALLS = 400
RUNS = 11

# (fast, clock, builtins, lines, callpaths, memory) -> {kind: (pre, whole)} in seconds
_measured = {}

# _set_compensation's kinds (fpy_cost_kind in csrc/fpy_profiler.h)
KINDS = ("call", "return", "resume", "yield", "c_call", "c_return", "line", "unrecorded_call",
         "call_site")
ZERO = {kind: (0.0, 0.0) for kind in KINDS}


def _noop():
    pass


def _numbers(n):
    for i in range(n):
        yield i


def _loop_none(n):
    for _ in range(n):
        pass


def _loop_calls(n, f=_noop):
    # a call and its return: 2 Python events (and CALL on 3.12+ with builtins)
    for _ in range(n):
        f()


def _loop_resumes(n):
    # a resume and a yield: 2 Python events (before 3.12, each a call and a return)
    for _ in _numbers(n):
        pass


_ARG = ()


def _loop_c(n, f=len, arg=_ARG):
    # a builtin function and a method called on its object (a method
    # descriptor on 3.12+, whose key costs more to find): 2 C calls
    for _ in range(n):
        f(arg)
        arg.count(0)


class _Plain:
    pass


def _loop_types(n, cls=_Plain):
    # a class called (3.12+ with builtins: its CALL and C_RETURN events,
    # neither recorded; its instance made without any Python code)
    for _ in range(n):
        cls()


def _is_loop_c_callee(code):
    # len and tuple.count, by their names (not the profiler's disable)
    return isinstance(code, str) and ("builtins.len" in code or "'count'" in code)


# The line loop is compiled as a module of no file of fastprof's (a line
# profiler never lists fastprof's own code): 2 line events a round (the
# body and the loop's test; on 3.12+ its backward jump too, as in any loop)
_LINES_MODULE = "_fastprof_calibration_lines"
_LINES_SRC = """
def _loop_lines(n):
    i = 0
    while i < n:
        i += 1
"""


def _lines_loop():
    ns = {"__name__": _LINES_MODULE}
    exec(compile(_LINES_SRC, "<fastprof calibration>", "exec"), ns)
    return ns["_loop_lines"]


def _median(values):
    values = sorted(values)
    n = len(values)
    return (values[n // 2] + values[(n - 1) // 2]) / 2


class _Run:
    """Runs of one loop, unprofiled then profiled, pair by pair: the
    medians of the profiled cumtime's excess, of the callees' own time in
    the profiled run and of the unprofiled time, in seconds."""

    def __init__(self, loop, make, read, inside=lambda code: False, code=None):
        code = code or loop.__code__
        excess, own, plain = [], [], []
        for _ in range(RUNS):
            t0 = read()
            loop(N_CALLS)
            base = (read() - t0) / 1e9
            prof, start, stop = make()
            start()
            loop(N_CALLS)
            stop()
            stats = prof.getstats()
            took = [e.totaltime for e in stats if e.code is code]
            if took:
                excess.append(took[0] - base)
                plain.append(base)
                own.append(sum(e.inlinetime for e in stats if inside(e.code)))
        if not excess:
            raise RuntimeError("calibration loop not recorded")
        self.excess, self.own, self.plain = _median(excess), _median(own), _median(plain)


def _can_measure():
    # a profile or trace hook of this thread would be replaced (<= 3.11), or
    # another tool's events (3.12+: any tool registered with sys.monitoring,
    # another profiler, a debugger, coverage) would be in the loops' times
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return False
    monitoring = getattr(sys, "monitoring", None)
    return monitoring is None or all(monitoring.get_tool(i) is None for i in range(6))


def _maker(builtins, fast, clock, callpaths=False, memory=False):
    def make():
        prof = _fastprof.Profiler(builtins=builtins, fast=fast, clock=clock, callpaths=callpaths,
                                  memory=memory)
        prof._set_compensation(True)
        return prof, prof.enable, prof.disable
    return make


def _pair(run, none, n):
    """The (pre, whole) of the entering and the leaving event of a call
    measured by *run* (n calls), against the empty loop *none*: the cost
    inside the callee is its own time in the profiled loop less its
    unprofiled work, taken as half of the call's unprofiled cost; half of
    what is inside comes after the entering event's read, half before the
    leaving event's, and half of what is outside before the entering one's
    (the call site's delivery), half after the leaving one's."""
    total = max(run.excess - none.excess, 0.0) / n
    work = max(run.plain - none.plain, 0.0) / n / 2
    inside = min(max(run.own / n - work, 0.0), total)
    outside = total - inside
    return (outside / 2, total / 2), (inside / 2, total / 2)


def _call_site_apart(costs):
    """*costs* with the call site's CALL (3.12+, ``call_site``, measured
    as a part of a Python call's cost) taken out of the call's and its
    return's, from their outside halves: charged at the CALL instead, so
    that a function started without one (a property, ``+``, from C) is
    not charged it. Done after the cache's lows are taken: the lows of
    two kinds measured apart would not add up to a call."""
    site = costs.get("call_site", (0.0, 0.0))[1]
    (cpre, cwhole), (rpre, rwhole) = costs["call"], costs["return"]
    site = min(site, 2 * cpre)  # at most the outside (its half is the call's pre)
    out = dict(costs)
    out["call"] = (cpre - site / 2, cwhole - site / 2)
    out["return"] = (rpre, rwhole - site / 2)
    out["call_site"] = (0.0, site)
    return out


def _line_costs(fast, clock, read, recorder, callpaths=False, memory=False):
    """(pre, whole) of a line event in seconds: the line loop profiled with
    lines= less without, per line hit, half before its read and half after;
    zeros where lines cannot be recorded (fast mode, no free tool id).
    *recorder(patterns)* makes a line recorder (profiler.py's: this module
    sits below line_profiling)."""
    if fast:
        return (0.0, 0.0)
    loop = _lines_loop()
    loop(N_CALLS)
    plain = _maker(True, fast, clock, callpaths, memory)
    hits = []

    def with_lines():
        prof, _, _ = plain()
        lines = recorder(["%s:_loop_lines" % _LINES_MODULE])
        lines.bind(prof)

        def begin():
            lines.start()
            prof.enable()

        def end():
            prof.disable()
            lines.stop()
            hits.append(sum(h for table in lines.line_stats().values() for h, _ in table.values()))
        return prof, begin, end

    try:
        lined = _Run(loop, with_lines, read).excess
    except RuntimeError:  # LineRecorderError: no free tool id, a trace function set
        return (0.0, 0.0)
    unlined = _Run(loop, plain, read).excess
    whole = max(lined - unlined, 0.0) / max(_median(hits), 1)
    return (whole / 2, whole)


def _call_events(builtins, fast):
    """Whether the profiler gets CALL events (3.12+ sys.monitoring with
    builtins; the frame evaluator of fast mode sees no call site)."""
    return builtins and not fast and sys.version_info >= (3, 12)


def measure(fast=False, clock="wall", builtins=True, lines=None, callpaths=False, memory=False):
    """{kind: (pre, whole)}: the delivery cost per event in seconds,
    measured now; *builtins* as the profiler's (on 3.12+ it makes every
    call report a CALL event, which a Python function's call then costs
    too, before its PY_START); a line's only with *lines*, a callable
    making a line recorder of a list of patterns (0 else). With
    *callpaths* every event takes the general path, whose second clock
    read leaves more outside the reads (3.12: ~6 ns a call): measured so.
    With *memory* the events take the memory-aware fast paths (their
    memory readings, the allocator hooks' owner): measured with memory
    on (not while another memory profile runs: then zeros).
    3.12+ with builtins also: ``unrecorded_call``, a class's call (its
    CALL and C_RETURN, nothing recorded), and ``call_site``, the CALL
    part of ``call`` (still in it here: see _call_site_apart)."""
    read = time.thread_time_ns if clock == "cpu" else time.perf_counter_ns
    for loop in (_loop_none, _loop_calls, _loop_resumes, _loop_c, _loop_types):
        loop(N_CALLS)  # warm: every call site specialised before timing
    make = _maker(builtins, fast, clock, callpaths, memory)
    none = _Run(_loop_none, make, read)  # the loop itself, slower profiled (<= 3.11)
    costs = {}
    calls = _Run(_loop_calls, make, read, lambda code: code is _noop.__code__)
    costs["call"], costs["return"] = _pair(calls, none, N_CALLS)
    if fast:  # the frame evaluator: generators are not recorded
        costs["resume"], costs["yield"] = costs["call"], costs["return"]
    else:
        costs["resume"], costs["yield"] = _pair(
            _Run(_loop_resumes, make, read, lambda code: code is _numbers.__code__), none, N_CALLS)
    if builtins:  # else no C function is recorded
        costs["c_call"], costs["c_return"] = _pair(
            _Run(_loop_c, _maker(True, fast, clock, callpaths, memory), read, _is_loop_c_callee), none,
            2 * N_CALLS)
    else:
        costs["c_call"] = costs["c_return"] = (0.0, 0.0)
    costs["line"] = _line_costs(fast, clock, read, lines, callpaths, memory) if lines else (0.0, 0.0)
    costs["unrecorded_call"] = costs["call_site"] = (0.0, 0.0)
    if _call_events(builtins, fast):
        types = _Run(_loop_types, _maker(True, fast, clock, callpaths, memory), read)
        costs["unrecorded_call"] = (0.0, max(types.excess - none.excess, 0.0) / N_CALLS)
        # a call site's CALL, a part of "call" (_call_site_apart): the call
        # loop with builtins less without
        unsited = _Run(_loop_calls, _maker(False, fast, clock, callpaths, memory), read,
                       lambda code: code is _noop.__code__)
        costs["call_site"] = (0.0, max(calls.excess - unsited.excess, 0.0) / N_CALLS)
    return costs


def delivery_costs(fast=False, clock="wall", builtins=True, lines=None, callpaths=False, memory=False):
    """{kind: (pre, whole)} in seconds for this kind of profiler: measured
    once per process, each kind the lowest of that and what this build
    measured before (calibration_cache); zeros if it cannot be measured now
    (another profiler or tracer is active; measured again at the next
    profiler): then only what the general path reads of its own time is
    removed."""
    key = (bool(fast), clock, bool(builtins), lines is not None, bool(callpaths), bool(memory))
    costs = _measured.get(key)
    if costs is None:
        if not _can_measure():
            return dict(ZERO)
        try:
            # twice, each kind the lower: a moment when the machine (or a
            # virtual CPU's host) slowed the profiled loops measures several
            # times the cost, and would take most of every time away
            costs = _lower(measure(fast, clock, builtins, lines, callpaths, memory),
                           measure(fast, clock, builtins, lines, callpaths, memory))
        except (RuntimeError, ValueError, OSError):
            return dict(ZERO)  # e.g. another frame evaluator: fast mode fails anyway
        # a busy machine measures too much: the fastest of this build's runs
        costs = _call_site_apart(fastest(build_key(_fastprof.__file__), repr(key), costs))
        _measured[key] = costs
    return costs


def _lower(a, b):
    """Per kind, the (pre, whole) of *a* or *b* with the lower whole."""
    return {kind: min(a[kind], b[kind], key=lambda cost: cost[1]) for kind in a}


def calibrate(prof, fast=False, clock="wall", builtins=True, lines=None, callpaths=False, memory=False):
    """Give the C profiler *prof* (disabled, compensating) its delivery
    costs, in its clock's ticks (a line's with *lines*, a line recorder
    maker: lines= is on)."""
    tps = prof.clock_info()["ticks_per_second"]
    costs = delivery_costs(fast, clock, builtins, lines, callpaths, memory)
    ticks = {kind: (round(pre * tps), round(whole * tps)) for kind, (pre, whole) in costs.items()}
    prof._set_compensation(True, 0, 0, 0, -1, ticks)
