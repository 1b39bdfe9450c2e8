"""Times are right.

(a) A fake timer that only the profiled code advances (in the spirit of
    CPython's Lib/test/profilee.py): every tottime / cumtime of a known call
    tree, recursion included, is known exactly.  The expectations below are
    worked out by hand; cProfile is held to them too, so they are the oracle's
    numbers as well.  Both timer forms: float seconds (timeunit=0) and integer
    ticks (timeunit>0).
(b) The real clock: busy-waits of known length are reported within 5 %, and
    the tottimes add up to the wall time around the profiled region.
(c) A timer that raises (or returns garbage) surfaces as a Python exception
    from disable() / getstats(), and what was collected before stays.
"""
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cProfile  # noqa: E402
import pstats  # noqa: E402

import helpers  # noqa: E402

# ---------------------------------------------------------------------------
# (a) the fake-timer profilee.  T is simulated time in ticks; only the profiled
# code moves it, with plain statements (a helper function would show up in the
# profile and take the time itself).  Each comment gives the ticks spent in the
# function's own body, and with callees.

T = 0
SINK = []


def top():
    # 1 call; own 10+4+6+3+2 = 25 ticks; with callees 25+6+9+10+12+11+3 = 76
    global T
    T += 10
    leaf()                          # 3
    T += 4
    fact(3)                         # 9
    T += 6
    ping(3)                         # 10
    for _ in gen(3):                # 12 in gen
        T += 1                      # 3 x 1 here
    catcher()                       # 11
    sorted([3, 1, 2], key=keyf)     # 3, all in keyf
    leaf()                          # 3
    T += 2


def leaf():
    # 2 calls, 3 ticks each; list.append costs nothing
    global T
    T += 3
    SINK.append(T)


def fact(n):
    # fact(3) -> fact(2) -> fact(1): 3 calls, 1 primitive, 3 ticks own each
    global T
    T += 2
    if n <= 1:
        T += 1
        return 1
    r = n * fact(n - 1)
    T += 1
    return r


def ping(n):
    # mutual recursion ping(3) -> pong(2) -> ping(1) -> pong(0); 2 ticks own
    global T
    T += 1
    if n > 0:
        pong(n - 1)
    T += 1


def pong(n):
    # 3 ticks own
    global T
    T += 3
    if n > 0:
        ping(n - 1)


def gen(n):
    # 4 resumes, each a call: 1+2, 2, 2, 5 ticks
    global T
    T += 1
    for i in range(n):
        T += 2
        yield i
    T += 5


def catcher():
    # own 1 + 4 = 5; thrower's 6 under it
    global T
    T += 1
    try:
        thrower(2)
    except ValueError:
        T += 4


def thrower(n):
    # thrower(2) -> thrower(1) -> thrower(0) raises; 2 ticks own each
    global T
    T += 2
    if n == 0:
        raise ValueError(n)
    thrower(n - 1)


def keyf(x):
    # called 3 times by sorted(), 1 tick each
    global T
    T += 1
    return x


SORTED = "<built-in method builtins.sorted>"
APPEND = "<method 'append' of 'list' objects>"

# name: (cc, nc, tottime, cumtime, {caller: (nc, cc, tottime, cumtime)}) in ticks.
# Caller edges: tottime is the callee's own time under that caller, cumtime
# counts the outermost activation along that edge only (as _lsprof does).
EXPECTED = {
    "top": (1, 1, 25, 76, {}),
    "leaf": (2, 2, 6, 6, {"top": (2, 2, 6, 6)}),
    APPEND: (2, 2, 0, 0, {"leaf": (2, 2, 0, 0)}),
    "fact": (1, 3, 9, 9, {"top": (1, 1, 3, 9), "fact": (2, 1, 6, 6)}),
    "ping": (1, 2, 4, 10, {"top": (1, 1, 2, 10), "pong": (1, 1, 2, 5)}),
    "pong": (1, 2, 6, 8, {"ping": (2, 1, 6, 8)}),
    "gen": (4, 4, 12, 12, {"top": (4, 4, 12, 12)}),
    "catcher": (1, 1, 5, 11, {"top": (1, 1, 5, 11)}),
    "thrower": (1, 3, 6, 6, {"catcher": (1, 1, 2, 6), "thrower": (2, 1, 4, 4)}),
    SORTED: (1, 1, 0, 3, {"top": (1, 1, 0, 3)}),
    "keyf": (3, 3, 3, 3, {SORTED: (3, 3, 3, 3)}),
}
TOTAL_TICKS = 76


def test_expectations_add_up():
    assert sum(v[2] for v in EXPECTED.values()) == TOTAL_TICKS == EXPECTED["top"][3]
    for _name, (_cc, nc, tt, _ct, callers) in EXPECTED.items():
        assert sum(c[0] for c in callers.values()) in (nc, 0)
        assert sum(c[2] for c in callers.values()) in (tt, 0)


def short_name(key):
    filename, _line, name = key
    if filename == "~":
        return name
    assert os.path.basename(filename).startswith("test_timing"), key
    return name


def named_stats(prof):
    """pstats dict of `prof` keyed by short names, internal rows dropped."""
    stats, _ = helpers.strip_internal(pstats.Stats(prof).stats, fastprof_dir())
    out = {}
    for key, (cc, nc, tt, ct, callers) in stats.items():
        out[short_name(key)] = (cc, nc, tt, ct, {short_name(c): v for c, v in callers.items()})
    return out


def fastprof_dir():
    if helpers.USING_CPROFILE:
        return None
    import fastprof
    return os.path.dirname(os.path.abspath(fastprof.__file__))


def run_fake(profiler_cls, timer, timeunit):
    global T
    T = 1000
    del SINK[:]
    prof = profiler_cls(timer, timeunit)
    prof.enable()
    top()
    prof.disable()
    assert T == 1000 + TOTAL_TICKS
    return prof


TIMERS = {
    # id: (timer, timeunit, seconds per tick)
    "int-ms": (lambda: T, 0.001, 0.001),
    "int-quarter": (lambda: T, 0.25, 0.25),
    "float-seconds": (lambda: float(T), 0.0, 1.0),
    "float-halves": (lambda: T * 0.5, 0.0, 0.5),
}


def check_against_expected(stats, unit):
    approx = lambda ticks: pytest.approx(ticks * unit, rel=1e-9, abs=1e-12)  # noqa: E731
    assert set(stats) == set(EXPECTED), (sorted(set(stats) ^ set(EXPECTED)))
    for name, (cc, nc, tt, ct, callers) in EXPECTED.items():
        got = stats[name]
        assert (got[0], got[1]) == (cc, nc), (name, got[:2])
        assert got[2] == approx(tt), (name, "tottime", got[2], tt * unit)
        assert got[3] == approx(ct), (name, "cumtime", got[3], ct * unit)
        assert set(got[4]) == set(callers), (name, got[4])
        for caller, (enc, ecc, ett, ect) in callers.items():
            gnc, gcc, gtt, gct = got[4][caller]
            assert (gnc, gcc) == (enc, ecc), (caller, "->", name, got[4][caller])
            assert gtt == approx(ett), (caller, "->", name, "tottime", gtt, ett * unit)
            assert gct == approx(ect), (caller, "->", name, "cumtime", gct, ect * unit)


@pytest.mark.parametrize("timer_id", sorted(TIMERS))
@pytest.mark.parametrize("impl", ["cProfile", "tested"])
def test_fake_timer_exact(impl, timer_id):
    timer, timeunit, unit = TIMERS[timer_id]
    cls = cProfile.Profile if impl == "cProfile" else helpers.profiler_class()
    prof = run_fake(cls, timer, timeunit)
    check_against_expected(named_stats(prof), unit)
    st = pstats.Stats(prof)
    assert st.total_tt == pytest.approx(TOTAL_TICKS * unit, rel=1e-9)


def test_fake_timer_keywords_and_runcall():
    """Same numbers through the keyword form and runcall()."""
    global T
    T = 0
    del SINK[:]
    prof = helpers.profiler_class()(timer=lambda: T, timeunit=0.5)
    prof.runcall(top)
    check_against_expected(named_stats(prof), 0.5)


def test_fake_timer_getstats_shape():
    """getstats(): _lsprof's profiler_entry / profiler_subentry, in seconds."""
    prof = run_fake(helpers.profiler_class(), lambda: T, 0.001)
    entries = prof.getstats()
    by_name = {}
    for e in entries:
        name = e.code if isinstance(e.code, str) else e.code.co_name
        by_name[name] = e
    top_entry = by_name["top"]
    assert (top_entry.callcount, top_entry.reccallcount) == (1, 0)
    assert top_entry.totaltime == pytest.approx(0.076)
    assert top_entry.inlinetime == pytest.approx(0.025)
    fact_entry = by_name["fact"]
    assert (fact_entry.callcount, fact_entry.reccallcount) == (3, 2)
    subs = {(s.code if isinstance(s.code, str) else s.code.co_name): s for s in top_entry.calls}
    assert subs["fact"].callcount == 1 and subs["fact"].totaltime == pytest.approx(0.009)
    assert subs[SORTED].totaltime == pytest.approx(0.003)
    assert subs[SORTED].inlinetime == pytest.approx(0.0)


# ---------------------------------------------------------------------------
# (b) the real clock.

def spin_50ms(log):
    start = time.perf_counter()
    end = start + 0.05
    now = start
    while now < end:
        now = time.perf_counter()
    log["spin_50ms"] = now - start


def spin_100ms(log):
    start = time.perf_counter()
    end = start + 0.1
    now = start
    while now < end:
        now = time.perf_counter()
    log["spin_100ms"] = now - start


def spin_200ms(log):
    start = time.perf_counter()
    end = start + 0.2
    now = start
    while now < end:
        now = time.perf_counter()
    log["spin_200ms"] = now - start


def spin_all(log):
    spin_50ms(log)
    spin_100ms(log)
    spin_200ms(log)


SPINNERS = ("spin_50ms", "spin_100ms", "spin_200ms")
NOMINAL = {"spin_50ms": 0.05, "spin_100ms": 0.1, "spin_200ms": 0.2}


def profile_spin(**kwargs):
    log = {}
    if not helpers.USING_CPROFILE:
        # the spinners' own clock reads include the profiler's cost (they spin
        # on time.perf_counter until their time is up): raw times match them
        kwargs["compensate"] = False
    prof = helpers.profiler_class()(**kwargs)
    t0 = time.perf_counter()
    prof.enable()
    spin_all(log)
    prof.disable()
    wall = time.perf_counter() - t0
    return named_stats(prof), log, wall


def within(value, truth, rel=0.05):
    return abs(value - truth) <= rel * truth


SANITIZED = pytest.mark.skipif(os.environ.get("FASTPROF_SANITIZED") == "1",
                               reason="real-clock accuracy is not measured under ASan")


@SANITIZED
@pytest.mark.parametrize("builtins", [False, True], ids=["nobuiltins", "builtins"])
def test_real_clock_busy_wait(builtins):
    for _attempt in range(3):  # a loaded machine may stall us; the clock must still agree
        stats, log, wall = profile_spin(builtins=builtins)
        problems = []
        for name in SPINNERS:
            truth = log[name]
            # now >= start + d, yet now - start may round to just under d
            assert truth >= NOMINAL[name] - 1e-9
            cc, nc, tt, ct, _ = stats[name]
            assert (cc, nc) == (1, 1)
            # without builtins all of the loop is the spinner's own time; with
            # them, time.perf_counter takes its share and cumtime is the truth
            measured = tt if not builtins else ct
            if not within(measured, truth):
                problems.append("%s: reported %.4f s, took %.4f s" % (name, measured, truth))
            if not within(ct, truth):
                problems.append("%s: cumtime %.4f s, took %.4f s" % (name, ct, truth))
        total_tt = sum(v[2] for v in stats.values())
        if not within(total_tt, wall):
            problems.append("sum of tottime %.4f s, wall %.4f s" % (total_tt, wall))
        if not within(stats["spin_all"][3], sum(log.values())):
            problems.append("spin_all cumtime %.4f s, spinners took %.4f s"
                            % (stats["spin_all"][3], sum(log.values())))
        if not problems:
            return
    pytest.fail("; ".join(problems))


def sleeper():
    time.sleep(0.1)


def cpu_spinner(log):
    start = time.thread_time()
    end = time.perf_counter() + 0.1
    while time.perf_counter() < end:
        pass
    log["cpu"] = time.thread_time() - start


@SANITIZED
@pytest.mark.skipif(helpers.USING_CPROFILE, reason="clock= is a fastprof option")
def test_cpu_clock():
    log = {}
    prof = helpers.profiler_class()(clock="cpu", builtins=False)
    prof.enable()
    sleeper()
    cpu_spinner(log)
    prof.disable()
    stats = named_stats(prof)
    assert stats["sleeper"][3] < 0.02, stats["sleeper"]
    assert abs(stats["cpu_spinner"][3] - log["cpu"]) <= 0.05 * log["cpu"] + 0.002, (stats["cpu_spinner"], log)


# ---------------------------------------------------------------------------
# (c) a timer that fails.

class TimerBroke(Exception):
    pass


class FlakyTimer:
    """Counts up until armed; then raises (or returns garbage)."""

    def __init__(self, failure="raise"):
        self.now = 0
        self.armed = False
        self.failure = failure

    def __call__(self):
        if self.armed:
            if self.failure == "raise":
                raise TimerBroke("the clock broke")
            return "not a number"
        self.now += 1
        return self.now


def before():
    return 1


def arm(timer):
    timer.armed = True


def after():
    return 2


def raises_and_catches():
    try:
        {}["missing"]
    except KeyError as exc:
        return str(exc)


def exception_chain(exc):
    seen = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def expected_type(failure):
    return TimerBroke if failure == "raise" else TypeError


def force_disable(prof):
    """Leave no profiler hooked whatever happened (a test that failed half
    way must not keep the hook: on 3.12+ the next enable() would fail)."""
    for _ in range(3):
        try:
            prof.disable()
            return
        except Exception:
            pass


@pytest.fixture
def profilers():
    made = []
    yield made
    for prof in made:
        force_disable(prof)


def broken_run(failure, profilers):
    timer = FlakyTimer(failure)
    prof = helpers.profiler_class()(timer, 0.001)
    profilers.append(prof)
    prof.enable()
    for _ in range(5):
        before()
    arm(timer)
    # profiled code keeps working even though the profiler broke under it,
    # including an exception raised and caught after the failure
    assert after() == 2
    assert raises_and_catches() == "'missing'"
    return prof


pytestmark_fastprof_only = pytest.mark.skipif(
    helpers.USING_CPROFILE, reason="cProfile reports timer errors as unraisable and goes on")


@pytestmark_fastprof_only
@pytest.mark.parametrize("failure", ["raise", "garbage"])
def test_failing_timer_raises_from_disable(failure, profilers):
    prof = broken_run(failure, profilers)
    with pytest.raises(Exception) as info:
        prof.disable()
    assert any(isinstance(e, expected_type(failure)) for e in exception_chain(info.value)), \
        repr(exception_chain(info.value))
    # the profiler stopped: this call is not counted
    before()
    prof.disable()
    prof.create_stats()
    stats = named_stats(prof)
    assert stats["before"][:2] == (5, 5), stats.get("before")
    prof.clear()


@pytestmark_fastprof_only
@pytest.mark.parametrize("failure", ["raise", "garbage"])
def test_failing_timer_raises_from_getstats(failure, profilers):
    prof = broken_run(failure, profilers)
    with pytest.raises(Exception) as info:
        prof.getstats()
    assert any(isinstance(e, expected_type(failure)) for e in exception_chain(info.value))
    # reported once; the stats are still there
    entries = prof.getstats()
    counts = {e.code.co_name: e.callcount for e in entries if not isinstance(e.code, str)}
    assert counts.get("before") == 5, counts
    prof.disable()


@pytestmark_fastprof_only
def test_timer_failing_from_the_start(profilers):
    def timer():
        raise TimerBroke("never works")
    prof = helpers.profiler_class()(timer, 0.001)
    profilers.append(prof)
    try:
        prof.enable()
        before()
        prof.disable()
    except Exception as exc:
        assert any(isinstance(e, TimerBroke) for e in exception_chain(exc)), repr(exc)
    else:
        pytest.fail("a timer that always raises went unreported")
    finally:
        force_disable(prof)
    prof.getstats()
