"""The cost of an event that the profiler's clock does not read.

The profiler's own time is taken out of every time in C (each thread's
account, docs/architecture.md "One event, end to end"). The general path
reads it: from its callback's first clock read to its last. What happens
outside those reads (the interpreter delivering the event, the callback's
entry and exit) and the whole of a fast-path event (whose cost hardly
varies, so it is charged as a constant rather than read with a second TSC
read per event) is measured here, once per process for each kind of
profiler (event source, clock, builtins), and handed to the C profiler with
``_set_compensation``:

    a loop of N calls of an empty function and resumes of a generator
    (then of C functions, for C events) runs unprofiled, then under a
    profiler that removes only what the general path reads; the profiled
    loop's cumtime less the unprofiled time, over its events, is what is
    left per event.  The fastest of a few runs of each is kept (the least
    disturbed by other processes).

It takes a few milliseconds, when the first compensating profiler of a
kind is made (docs/performance.md, "Profiler cost removed").
"""
import sys
import time

from . import _fastprof

N_CALLS = 2000
RUNS = 7

# (fast, clock, builtins) -> (py, c, line) delivery costs in seconds
_measured = {}


def _noop():
    pass


def _numbers(n):
    for i in range(n):
        yield i


def _loop_py(n, f=_noop):
    # a call and a generator's resume and yield each round: 4 Python events
    for _ in _numbers(n):
        f()


_ARG = ()


def _loop_c(n, f=len, arg=_ARG):
    # a builtin function and a method called on its object (a method
    # descriptor on 3.12+, whose key costs more to find): 4 C events
    for _ in range(n):
        f(arg)
        arg.count(0)


def _unprofiled(loop, read):
    best = None
    for _ in range(RUNS):
        t0 = read()
        loop(N_CALLS)
        took = read() - t0
        best = took if best is None else min(best, took)
    return best / 1e9


def _profiled(loop, builtins, fast, clock):
    """The fastest cumtime of *loop* over the runs, in seconds, under a
    profiler that removes its in-callback time only."""
    best = None
    for _ in range(RUNS):
        prof = _fastprof.Profiler(builtins=builtins, fast=fast, clock=clock)
        prof._set_compensation(True)
        prof.enable()
        loop(N_CALLS)
        prof.disable()
        code = loop.__code__
        took = [e.totaltime for e in prof.getstats() if e.code is code]
        if took:
            best = took[0] if best is None else min(best, took[0])
    return best


def _can_measure():
    # a profile or trace hook of this thread would be replaced (<= 3.11), or
    # another tool's events (3.12+: any tool registered with sys.monitoring,
    # another profiler, a debugger, coverage) would be in the loops' times
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return False
    monitoring = getattr(sys, "monitoring", None)
    return monitoring is None or all(monitoring.get_tool(i) is None for i in range(6))


def measure(fast=False, clock="wall", builtins=True):
    """(py, c, line): the delivery cost per event in seconds, measured now.
    *builtins* as the profiler's: on 3.12+ it makes every call report a
    CALL event, which a Python function's call then costs too."""
    read = time.thread_time_ns if clock == "cpu" else time.perf_counter_ns
    _loop_py(N_CALLS)  # warm: every call site specialised before timing
    _loop_c(N_CALLS)
    base_py = _unprofiled(_loop_py, read)
    py = (_profiled(_loop_py, builtins, fast, clock) - base_py) / (4 * N_CALLS)
    c = 0.0
    if builtins:  # else no C function is recorded
        base_c = _unprofiled(_loop_c, read)
        c = (_profiled(_loop_c, True, fast, clock) - base_c) / (4 * N_CALLS)
    return max(py, 0.0), max(c, 0.0), 0.0


def delivery_costs(fast=False, clock="wall", builtins=True):
    """(py, c, line) in seconds for this kind of profiler: measured once per
    process; zeros if it cannot be measured now (another profiler or tracer
    is active; measured again at the next profiler): then only what the
    general path reads of its own time is removed."""
    key = (bool(fast), clock, bool(builtins))
    costs = _measured.get(key)
    if costs is None:
        if not _can_measure():
            return (0.0, 0.0, 0.0)
        try:
            costs = measure(fast, clock, builtins)
        except (RuntimeError, ValueError, OSError):
            return (0.0, 0.0, 0.0)  # e.g. another frame evaluator: fast mode fails anyway
        _measured[key] = costs
    return costs


def calibrate(prof, fast=False, clock="wall", builtins=True):
    """Give the C profiler *prof* (disabled, compensating) its delivery
    costs, in its clock's ticks."""
    tps = prof.clock_info()["ticks_per_second"]
    py, c, line = delivery_costs(fast, clock, builtins)
    prof._set_compensation(True, int(py * tps), int(c * tps), int(line * tps))
