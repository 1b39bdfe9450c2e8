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

N_CALLS = 500
RUNS = 15

# (fast, clock, builtins) -> (py, c, line, resume) delivery costs in seconds
_measured = {}


def _noop():
    pass


def _numbers(n):
    for i in range(n):
        yield i


def _loop_py(n, f=_noop):
    # a call and a generator's resume and yield each round: 4 Python events
    # (before 3.12 a call and a resume are the same event to the profiler)
    for _ in _numbers(n):
        f()


def _loop_calls(n, f=_noop):
    for _ in range(n):
        f()


def _loop_resumes(n):
    for _ in _numbers(n):
        pass


# 3.12+: a call reports PY_START (and CALL with builtins), a resume
# PY_RESUME: they are measured, and charged, apart
CALLS_APART = sys.version_info >= (3, 12)


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


def _cost(loop, events, builtins, fast, clock, read):
    base = _unprofiled(loop, read)
    return max((_profiled(loop, builtins, fast, clock) - base) / events, 0.0)


def measure(fast=False, clock="wall", builtins=True):
    """(py, c, line, resume): the delivery cost per event in seconds,
    measured now (resume: a generator's resume or yield on 3.12+, else
    py). *builtins* as the profiler's: on 3.12+ it makes every call report
    a CALL event, which a Python function's call then costs too."""
    read = time.thread_time_ns if clock == "cpu" else time.perf_counter_ns
    for loop in (_loop_py, _loop_calls, _loop_resumes, _loop_c):
        loop(N_CALLS)  # warm: every call site specialised before timing
    if CALLS_APART and not fast:
        py = _cost(_loop_calls, 2 * N_CALLS, builtins, fast, clock, read)
        resume = _cost(_loop_resumes, 2 * N_CALLS, builtins, fast, clock, read)
    else:
        py = resume = _cost(_loop_py, 4 * N_CALLS, builtins, fast, clock, read)
    c = 0.0
    if builtins:  # else no C function is recorded
        c = _cost(_loop_c, 4 * N_CALLS, True, fast, clock, read)
    return py, c, 0.0, resume


def delivery_costs(fast=False, clock="wall", builtins=True):
    """(py, c, line, resume) in seconds for this kind of profiler: measured once per
    process; zeros if it cannot be measured now (another profiler or tracer
    is active; measured again at the next profiler): then only what the
    general path reads of its own time is removed."""
    key = (bool(fast), clock, bool(builtins))
    costs = _measured.get(key)
    if costs is None:
        if not _can_measure():
            return (0.0, 0.0, 0.0, 0.0)
        try:
            costs = measure(fast, clock, builtins)
        except (RuntimeError, ValueError, OSError):
            return (0.0, 0.0, 0.0, 0.0)  # e.g. another frame evaluator: fast mode fails anyway
        _measured[key] = costs
    return costs


def calibrate(prof, fast=False, clock="wall", builtins=True):
    """Give the C profiler *prof* (disabled, compensating) its delivery
    costs, in its clock's ticks."""
    tps = prof.clock_info()["ticks_per_second"]
    py, c, line, resume = delivery_costs(fast, clock, builtins)
    prof._set_compensation(True, int(py * tps), int(c * tps), int(line * tps), int(resume * tps))
