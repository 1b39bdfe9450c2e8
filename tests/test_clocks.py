"""Clocks (issue 4): wall time from the TSC or CLOCK_MONOTONIC, or CPU time.

- ``clock="cpu"`` is each thread's own CPU time: a function that sleeps
  0.2 s costs (almost) nothing, a busy loop of 0.2 s of thread CPU time
  costs 0.2 s (within 10 %); with several threads each thread is measured
  on its own CPU clock, including the frames still open in other threads
  when ``disable()`` closes them.
- The wall clock is the invariant TSC where the CPU has one
  (``clock_info()["clock"] == "tsc"``) and CLOCK_MONOTONIC when
  ``FASTPROF_NO_TSC=1`` is set before the process starts (checked in a
  subprocess); both measure a busy-wait within 5 %.

Busy loops are measured with the clock that is being checked
(``time.thread_time()`` for CPU time, ``time.perf_counter()`` for wall
time), inside the profiled code, so a loaded machine changes the reference
and the profile alike. The reference then includes the profiler's own
cost (the loops spin on a clock until their time is up), so these
profiles keep raw times (``compensate=False``; tests/test_compensation.py
checks the compensation).
"""
import json
import os
import sys
import textwrap
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helpers  # noqa: E402

pytestmark = pytest.mark.skipif(helpers.USING_CPROFILE,
                                reason="clock= and clock_info() are fastprof-only")

BUSY = 0.2
JOIN_TIMEOUT = 120.0


def row(stats, name):
    rows = [v for k, v in stats.items() if k[2] == name]
    assert len(rows) == 1, "expected one row named %r, got %d" % (name, len(rows))
    return rows[0]


def assert_sane(stats):
    for k, (cc, nc, tt, ct, callers) in stats.items():
        assert 0 <= cc <= nc, (helpers.fmt_key(k), cc, nc)
        assert tt >= 0 and ct >= 0, (helpers.fmt_key(k), tt, ct)
        assert ct >= tt - 1e-6, (helpers.fmt_key(k), tt, ct)
        for caller, sub in callers.items():
            assert 0 <= sub[1] <= sub[0] and sub[2] >= 0 and sub[3] >= 0, (k, caller, sub)


# ---------------------------------------------------------------------------
# CPU clock


def sleeps(seconds):
    time.sleep(seconds)


def burns_cpu(seconds):
    """Busy-loops until this thread has used `seconds` of CPU; returns the
    CPU time it actually used."""
    t0 = time.thread_time()
    end = t0 + seconds
    while time.thread_time() < end:
        pass
    return time.thread_time() - t0


def sleep_then_burn(out):
    t0 = time.perf_counter()
    sleeps(BUSY)
    out["cpu"] = burns_cpu(BUSY)
    out["wall"] = time.perf_counter() - t0


def test_cpu_clock_counts_cpu_not_sleep():
    import fastprof
    prof = fastprof.Profile(clock="cpu", compensate=False)
    info = prof.clock_info()
    assert info["clock"] == "cpu", info
    assert info["ticks_per_second"] == pytest.approx(1e9)
    out = {}
    prof.runcall(sleep_then_burn, out)
    prof.create_stats()
    assert_sane(prof.stats)
    # the sleeper: 0.2 s of wall time, next to no CPU time
    assert row(prof.stats, "sleeps")[3] < 0.01, row(prof.stats, "sleeps")
    assert row(prof.stats, "<built-in method time.sleep>")[2] < 0.01
    # the busy loop: its CPU time (its loop and the clock reads it makes)
    used = out["cpu"]
    assert used >= BUSY
    ct = row(prof.stats, "burns_cpu")[3]
    assert ct == pytest.approx(used, rel=0.10), (ct, used)
    assert ct == pytest.approx(BUSY, rel=0.10), (ct, BUSY)
    # all of it is CPU time: far less than the wall time it took
    total = row(prof.stats, "sleep_then_burn")[3]
    assert total == pytest.approx(used, rel=0.10, abs=0.01), (total, used)
    assert out["wall"] >= 2 * BUSY


def _thread_burn(seconds, barrier, out, i):
    barrier.wait()
    out[i] = burns_cpu(seconds)


def _thread_sleep(seconds, barrier):
    barrier.wait()
    sleeps(seconds)


def test_cpu_clock_is_per_thread():
    """Two threads burn CPU at once (taking turns at the GIL, so each needs
    about twice its CPU time in wall time) while a third sleeps: each is
    charged its own CPU time, not the wall time, not the others'."""
    import fastprof
    prof = fastprof.Profile(clock="cpu", threads=True, compensate=False)
    barrier = threading.Barrier(3)
    out = {}
    threads = [threading.Thread(target=_thread_burn, args=(0.15, barrier, out, i), daemon=True)
               for i in (0, 1)]
    threads.append(threading.Thread(target=_thread_sleep, args=(0.3, barrier), daemon=True))
    prof.enable()
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(JOIN_TIMEOUT)
        assert not any(t.is_alive() for t in threads)
    finally:
        prof.disable()
    by_ident = {ident: stats for _id, ident, _n, stats in prof.thread_stats()}
    for i, t in enumerate(threads[:2]):
        stats = by_ident[t.ident]
        assert_sane(stats)
        ct = row(stats, "burns_cpu")[3]
        assert ct == pytest.approx(out[i], rel=0.10), (i, ct, out[i])
    stats = by_ident[threads[2].ident]
    assert_sane(stats)
    assert row(stats, "sleeps")[3] < 0.01, row(stats, "sleeps")


def _blocked(event):
    event.wait()


def _waits_in_thread(event, ready):
    ready.set()
    _blocked(event)


def test_cpu_clock_frames_open_in_other_threads_at_disable():
    """disable() closes the frames still open in every thread; with the CPU
    clock each thread's frames must end on that thread's CPU clock (a
    thread blocked all along used next to no CPU), not on the CPU clock of
    the thread that calls disable()."""
    import fastprof
    burns_cpu(0.3)  # this thread's CPU clock is now well ahead of a new thread's
    prof = fastprof.Profile(clock="cpu", threads=True, compensate=False)
    release, ready = threading.Event(), threading.Event()
    prof.enable()
    try:
        t = threading.Thread(target=_waits_in_thread, args=(release, ready), daemon=True)
        t.start()
        assert ready.wait(JOIN_TIMEOUT)
        burns_cpu(0.2)
    finally:
        prof.disable()
        release.set()
    t.join(JOIN_TIMEOUT)
    by_ident = {ident: stats for _id, ident, _n, stats in prof.thread_stats()}
    stats = by_ident[t.ident]
    assert_sane(stats)
    ct = row(stats, "_blocked")[3]
    assert ct < 0.05, (
        "a thread blocked in Event.wait() is charged %.3f s of CPU time when "
        "disable() closes its open frames (the disabling thread's CPU clock?)" % ct)
    main = by_ident[threading.get_ident()]
    assert row(main, "burns_cpu")[3] == pytest.approx(0.2, rel=0.10)


# ---------------------------------------------------------------------------
# Wall clocks: TSC and CLOCK_MONOTONIC


def cpu_has_invariant_tsc():
    """What /proc/cpuinfo says (the kernel sets both flags from CPUID
    0x80000007 EDX bit 8, the bit fastprof checks); None if unknown."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            return "constant_tsc" in flags and "nonstop_tsc" in flags
    return None


def no_tsc_requested(env):
    value = env.get("FASTPROF_NO_TSC", "")
    return bool(value) and value != "0"


def busy_wait(seconds):
    t0 = time.perf_counter()
    end = t0 + seconds
    while time.perf_counter() < end:
        pass
    return time.perf_counter() - t0


def wall_check():
    """Profile a busy-wait on the default (wall) clock; return clock_info()
    and the measured and profiled times."""
    import fastprof
    prof = fastprof.Profile(compensate=False)
    spent = prof.runcall(busy_wait, BUSY)
    prof.create_stats()
    return {"info": prof.clock_info(), "measured": spent,
            "cumtime": row(prof.stats, "busy_wait")[3]}


_CHILD = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, %r)
    import test_clocks
    print("RESULT " + json.dumps(test_clocks.wall_check()))
""") % (os.path.dirname(os.path.abspath(__file__)),)


def run_wall_check_in_child(**env):
    """wall_check() in a new interpreter, with `env` added to (a value of
    None: removed from) this environment."""
    child_env = helpers.subprocess_env()
    for name, value in env.items():
        if value is None:
            child_env.pop(name, None)
        else:
            child_env[name] = value
    proc = helpers.run_python(["-c", _CHILD], env=child_env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(lines[-1][len("RESULT "):])


def expected_default_clock():
    has = cpu_has_invariant_tsc()
    if has is None:
        pytest.skip("cannot tell whether this CPU has an invariant TSC")
    return "tsc" if has else "monotonic"


def check_busy_wait(result):
    assert result["measured"] >= BUSY
    assert result["cumtime"] == pytest.approx(result["measured"], rel=0.05), result


def test_wall_clock_in_process():
    result = wall_check()
    if no_tsc_requested(os.environ):
        assert result["info"]["clock"] == "monotonic", result
    else:
        assert result["info"]["clock"] == expected_default_clock(), result
    check_busy_wait(result)


def test_wall_clock_is_tsc_when_invariant():
    expected = expected_default_clock()
    result = run_wall_check_in_child(FASTPROF_NO_TSC=None)
    assert result["info"]["clock"] == expected, result
    if expected == "tsc":
        # a calibrated counter: somewhere between 100 MHz and 100 GHz
        assert 1e8 < result["info"]["ticks_per_second"] < 1e11, result
    check_busy_wait(result)


@pytest.mark.parametrize("value", ["1", "yes"])
def test_fastprof_no_tsc_selects_monotonic(value):
    result = run_wall_check_in_child(FASTPROF_NO_TSC=value)
    assert result["info"]["clock"] == "monotonic", result
    assert result["info"]["ticks_per_second"] == pytest.approx(1e9)
    check_busy_wait(result)


def test_fastprof_no_tsc_0_keeps_the_default():
    expected = expected_default_clock()
    result = run_wall_check_in_child(FASTPROF_NO_TSC="0")
    assert result["info"]["clock"] == expected, result
    check_busy_wait(result)


def test_cpu_clock_ignores_fastprof_no_tsc():
    import fastprof
    assert fastprof.Profile(clock="cpu").clock_info()["clock"] == "cpu"
