"""A Ctrl-C handled inside Python code the profiler runs from C is the
program's, never lost.

The interpreter runs a signal's handler at whatever bytecode comes next,
also inside Python code that the C profiler calls: a custom timer, the
``only=`` decider, the naming of a thread, ``threading.setprofile`` before
3.12.  The profiler drops the errors of that code (they are not the
program's), but a KeyboardInterrupt is: before the fix it vanished there
(a Ctrl-C that did nothing; from a timer, profiling stopped with "the
timer failed").  Here SIGINT is raised inside each such call, and the
program must get its KeyboardInterrupt right after, with profiling going
on and nothing lost.
"""
import signal
import sys
import threading
import time

import pytest

import fastprof


@pytest.fixture(autouse=True)
def default_sigint():
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


class OneCtrlC:
    """Called inside the profiler's Python callback: SIGINT, the first time."""

    def __init__(self):
        self.sent = 0

    def __call__(self):
        if not self.sent:
            self.sent = 1
            signal.raise_signal(signal.SIGINT)  # its handler runs before this returns


def work(n):
    return sum(range(n))


def run_until_interrupted(arm=None, n=20000):
    """arm(), then calls work() until the KeyboardInterrupt comes; the
    calls made."""
    done = 0
    try:
        if arm is not None:
            arm()
        for _ in range(n):
            work(10)
            done += 1
    except KeyboardInterrupt:
        return done
    raise AssertionError("no KeyboardInterrupt in %d calls" % n)


def calls_named(prof, name):
    import pstats
    return sum(v[1] for k, v in pstats.Stats(prof).stats.items() if k[2] == name)


def test_ctrl_c_in_a_custom_timer():
    ctrl_c = OneCtrlC()
    armed = []

    def timer():
        if armed:
            ctrl_c()
        return time.perf_counter()

    prof = fastprof.Profile(timer)
    prof.enable()
    done = run_until_interrupted(lambda: armed.append(1))
    prof.disable()              # before: "the profiler's timer failed; profiling stopped"
    assert ctrl_c.sent
    assert done < 5             # the next bytecode, not some later one
    # profiling went on after it: one more call recorded
    prof.enable()
    work(5)
    prof.disable()
    assert calls_named(prof, "work") == done + 1


def test_ctrl_c_in_the_only_decider():
    ctrl_c = OneCtrlC()
    prof = fastprof.Profile(only=[__name__ + ":work"])
    matches = prof._only.matches

    def deciding(code, module):
        if code.co_name == "work":
            ctrl_c()
        return matches(code, module)

    prof._only.matches = deciding
    prof.enable()
    done = run_until_interrupted()
    prof.disable()
    assert ctrl_c.sent and done < 5
    # the decision the Ctrl-C interrupted is made again (before: work was
    # remembered as out of scope, never recorded)
    prof.enable()
    work(5)
    prof.disable()
    assert calls_named(prof, "work") == done + 1


@pytest.mark.skipif(sys.version_info < (3, 12),
                    reason="before 3.12 only threads started after enable() are named, in "
                           "themselves, where no signal handler runs")
def test_ctrl_c_while_a_thread_is_named(monkeypatch):
    # the main thread's first event under threads=True names it
    from fastprof.recording import thread_names
    ctrl_c = OneCtrlC()
    real = thread_names.starting_thread_name

    def naming():
        if threading.current_thread() is threading.main_thread():
            ctrl_c()
        return real()

    monkeypatch.setattr(thread_names, "starting_thread_name", naming)
    prof = fastprof.Profile(threads=True)
    try:
        done = run_until_interrupted(prof.enable)
    finally:
        prof.disable()
    assert ctrl_c.sent and done < 5
    assert calls_named(prof, "work") == done


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12+ hooks threads with sys.monitoring")
def test_ctrl_c_in_threading_setprofile_at_disable(monkeypatch):
    ctrl_c = OneCtrlC()
    real = threading.setprofile

    def setprofile(func):
        if func is None:
            ctrl_c()
        return real(func)

    monkeypatch.setattr(threading, "setprofile", setprofile)
    prof = fastprof.Profile(threads=True)
    prof.enable()
    work(5)
    with pytest.raises(KeyboardInterrupt):
        prof.disable()
        for _ in range(1000):   # its handler runs at the next bytecode
            pass
    assert ctrl_c.sent
    assert calls_named(prof, "work") == 1


def test_ctrl_c_while_a_c_function_is_named():
    # A C function's first call names it by repr(), and PyObject_Repr runs
    # the pending signal handlers first: a Ctrl-C coming then raised its
    # KeyboardInterrupt inside the naming, which dropped it and named the
    # function "<built-in method append>" instead of cProfile's name.  The
    # SIGINT is made pending (PyErr_SetInterrupt, as the C signal handler
    # does) from inside the profiler's K-th clock reading, through a timer
    # made of C callables only (no Python code runs the handler early), for
    # every K up to past the last first call.
    import ctypes
    import functools
    import itertools
    import pstats
    trip = ctypes.pythonapi.PyErr_SetInterrupt
    trip.restype, trip.argtypes = None, []
    expected = {"<method 'append' of 'list' objects>", "<method 'get' of 'dict' objects>",
                "<method 'upper' of 'str' objects>", "<method 'disable' of 'fastprof.Profile' objects>"}
    where = {}
    for k in range(12):
        ticks = itertools.chain(itertools.repeat(0, k), filter(None, itertools.starmap(trip, [()])),
                                itertools.count(1))
        prof = fastprof.Profile(functools.partial(next, ticks), 1e-9, gc=False)
        got, lst, d = None, [], {}
        try:
            prof.enable()
            for _ in range(2):
                lst.append(1)
                d.get(1)
                "a".upper()
        except KeyboardInterrupt:
            got = "in the program"
        try:
            prof.disable()
            for _ in range(1000):   # a trip in disable()'s own events lands here
                pass
        except KeyboardInterrupt:
            got = got or "after disable"
        where[k] = got
        names = {key[2] for key in pstats.Stats(prof).stats if key[0] == "~"}
        assert names <= expected, (k, sorted(names - expected))
    assert None not in where.values(), where        # before: lost where the trip named a function
    assert list(where.values()).count("in the program") >= 6, where
