"""fastprof's Python API: cProfile.Profile parity, and the extras.

cProfile is the oracle wherever both can run the same code; a fake timer
(the code under test advances the clock itself) makes times exact.
"""

import asyncio
import cProfile
import io
import marshal
import os
import pstats
import sys
import threading
import warnings

import pytest

import fastprof
from fastprof.data.profile_file import load_profile
from fastprof.recording import profiler as fp_profiler

HERE = __file__
try:
    import _lsprof
except ImportError:  # pragma: no cover - every CPython has it
    _lsprof = None


# -- workloads ------------------------------------------------------------------

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def gen(n):
    for i in range(n):
        yield i


def helper(i):
    out = []
    out.append(len(str(i)))
    return sorted([3, 1, 2]) + out


def workload():
    for i in range(3):
        helper(i)
    fib(8)
    list(gen(5))
    return "done"


# A clock that only the profiled code moves: every time below is exact.
TICKS = [0]


def fake_timer():
    return float(TICKS[0])


def leaf():
    TICKS[0] += 10


def mid():
    TICKS[0] += 1
    leaf()
    leaf()


def top():
    mid()
    TICKS[0] += 5


def rec(n):
    TICKS[0] += 1
    if n:
        rec(n - 1)


def key(func):
    code = func.__code__
    return (code.co_filename, code.co_firstlineno, code.co_name)


def ours(stats):
    """The rows of this file's functions, and of C functions they called."""
    mine = {k for k in stats if k[0] == HERE}
    out = {}
    for k, v in stats.items():
        if k in mine or (k[0] == "~" and mine & set(v[4])):
            out[k] = v
    return out


def counts(stats):
    """{func: (cc, nc, {caller: (nc, cc)})} of ours(stats), without times.

    A C function's totals also count calls from outside this file (the
    test machinery's own), so for those only the calls from here count.
    """
    out = {}
    for k, (cc, nc, _tt, _ct, callers) in ours(stats).items():
        mine = {c: v[:2] for c, v in callers.items() if c[0] == HERE}
        if k[0] == "~":
            out[k] = mine
        else:
            out[k] = (cc, nc, mine)
    return out


def cprofile_stats(func, *args, **kw):
    pr = cProfile.Profile(*args, **kw)
    # The documented meaning of subcalls/builtins, on every version: on 3.14+
    # cProfile's enable() without arguments (as runcall calls it) sets both
    # back to True, ignoring the constructor's; given to enable() they hold.
    flags = {k: kw[k] for k in ("subcalls", "builtins") if k in kw}
    pr.enable(**flags)
    try:
        func()
    finally:
        pr.disable()
    pr.create_stats()
    return pr.stats


def fastprof_stats(func, *args, **kw):
    pr = fastprof.Profile(*args, **kw)
    pr.runcall(func)
    pr.create_stats()
    return pr.stats


def exact_profile(**kw):
    TICKS[0] = 0
    pr = fastprof.Profile(fake_timer, **kw)
    pr.runcall(top)
    return pr


# -- construction ----------------------------------------------------------------

def test_profile_is_a_cprofile_like_subclass_of_the_c_profiler():
    from fastprof import _fastprof
    assert issubclass(fastprof.Profile, _fastprof.Profiler)
    pr = fastprof.Profile()
    assert pr.enabled is False
    assert fastprof.Profile is fp_profiler.Profile
    assert set(fastprof.__all__) >= {"Profile", "run", "runctx", "profile"}


def test_positional_arguments_are_cprofiles():
    TICKS[0] = 0
    pr = fastprof.Profile(fake_timer, 0.0, False, False)
    pr.runcall(top)
    pr.create_stats()
    assert pr.options["subcalls"] is False and pr.options["builtins"] is False
    assert all(not callers for *_rest, callers in pr.stats.values())  # subcalls=False
    assert not [k for k in pr.stats if k[0] == "~" and k[2] != "<gc>"]  # builtins=False


@pytest.mark.parametrize("kwargs, exc, message", [
    ({"clock": "x"}, ValueError, "clock must be 'wall' or 'cpu', not 'x'"),
    ({"coroutines": "async"}, ValueError, "coroutines must be 'call' or 'wall', not 'async'"),
    ({"max_depth": 0}, ValueError, "max_depth must be >= 1"),
    ({"max_depth": "5"}, TypeError, "max_depth must be an int"),
    ({"timer": 42}, TypeError, "timer must be a callable"),
    ({"timeunit": -1.0}, ValueError, "timeunit must be >= 0"),
    ({"timeunit": "1"}, TypeError, "timeunit must be a number"),
    ({"threads": "yes"}, TypeError, "threads must be True or False"),
])
def test_bad_arguments_are_rejected_clearly(kwargs, exc, message):
    with pytest.raises(exc) as info:
        fastprof.Profile(**kwargs)
    assert message in str(info.value)


def test_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError):
        fastprof.Profile(colck="cpu")


def test_options_and_repr():
    pr = fastprof.Profile(threads=True, clock="cpu", coroutines="wall", callpaths=True,
                          max_depth=7)
    opts = pr.options
    assert opts["threads"] is True and opts["clock"] == "cpu"
    assert opts["coroutines"] == "wall" and opts["callpaths"] is True
    assert opts["max_depth"] == 7
    assert "disabled" in repr(pr) and "clock='cpu'" in repr(pr)


# -- stats against cProfile --------------------------------------------------------

def test_counts_and_callers_match_cprofile():
    expected = counts(cprofile_stats(workload))
    got = counts(fastprof_stats(workload))
    assert got == expected
    # the workload really was seen: recursion, generator resumes, C calls
    assert got[key(fib)][:2] == (1, 67)
    assert got[key(gen)][1] == 6
    assert got[key(helper)][2] == {key(workload): (3, 3)}
    assert ("~", 0, "<built-in method builtins.len>") in got
    assert ("~", 0, "<method 'append' of 'list' objects>") in got


def test_counts_match_cprofile_without_builtins_and_subcalls():
    for kw in ({"builtins": False}, {"subcalls": False}):
        assert counts(fastprof_stats(workload, **kw)) == counts(cprofile_stats(workload, **kw))


def test_stats_shape_is_cprofiles():
    pr = fastprof.Profile()
    pr.runcall(workload)
    pr.create_stats()
    assert isinstance(pr.stats, dict) and pr.stats
    for k, v in pr.stats.items():
        assert isinstance(k, tuple) and len(k) == 3
        assert isinstance(k[0], str) and isinstance(k[1], int) and isinstance(k[2], str)
        cc, nc, tt, ct, callers = v
        assert isinstance(cc, int) and isinstance(nc, int) and cc <= nc
        assert isinstance(tt, float) and isinstance(ct, float) and tt >= 0 and ct >= 0
        for caller, cv in callers.items():
            assert len(caller) == 3 and len(cv) == 4


def test_getstats_entries_have_lsprofs_shape():
    pr = fastprof.Profile()
    pr.runcall(workload)
    entries = pr.getstats()
    codes = {e.code for e in entries if not isinstance(e.code, str)}
    assert workload.__code__ in codes and fib.__code__ in codes
    for e in entries:
        assert isinstance(e.callcount, int) and isinstance(e.reccallcount, int)
        assert isinstance(e.totaltime, float) and isinstance(e.inlinetime, float)
        for sub in e.calls or ():
            assert isinstance(sub.callcount, int) and isinstance(sub.totaltime, float)
            assert sub.inlinetime >= 0 and sub.reccallcount >= 0


def test_exact_times_with_a_custom_float_timer():
    pr = exact_profile()
    pr.create_stats()
    st = pr.stats
    assert st[key(leaf)][:4] == (2, 2, 20.0, 20.0)
    assert st[key(mid)][:4] == (1, 1, 1.0, 21.0)
    assert st[key(top)][:4] == (1, 1, 5.0, 26.0)
    assert st[key(leaf)][4] == {key(mid): (2, 2, 20.0, 20.0)}
    assert st[key(mid)][4] == {key(top): (1, 1, 1.0, 21.0)}


def test_exact_times_with_an_integer_timer_and_timeunit():
    TICKS[0] = 0
    pr = fastprof.Profile(lambda: TICKS[0], 0.5)
    pr.runcall(top)
    pr.create_stats()
    assert pr.stats[key(leaf)][2:4] == (10.0, 10.0)
    assert pr.stats[key(top)][2:4] == (2.5, 13.0)


def test_recursion_cumtime_counts_outermost_calls_once():
    TICKS[0] = 0
    pr = fastprof.Profile(fake_timer)
    pr.runcall(rec, 4)
    pr.create_stats()
    cc, nc, tt, ct, callers = pr.stats[key(rec)]
    assert (cc, nc, tt, ct) == (1, 5, 5.0, 5.0)
    assert callers[key(rec)][0] == 4
    TICKS[0] = 0
    cp = cProfile.Profile(fake_timer)
    cp.runcall(rec, 4)
    cp.create_stats()
    assert cp.stats[key(rec)] == pr.stats[key(rec)]


def _entry(code, nc, rc, ct, tt, calls=None):
    return _lsprof.profiler_entry((code, nc, rc, ct, tt, calls))


def _sub(code, nc, rc, ct, tt):
    return _lsprof.profiler_subentry((code, nc, rc, ct, tt))


def test_snapshot_sums_duplicate_labels_and_merges_callers():
    # two distinct code objects with one label, two C functions with one
    # name (distinct str objects), and a callee called by both duplicates:
    # cProfile keeps one of each label, fastprof sums them (issue 12, as
    # pstats.Stats.add would; tests/test_name_collisions.py)
    src = "def dup():\n    pass\n"
    ns1, ns2 = {}, {}
    exec(compile(src, "dup.py", "exec"), ns1)
    exec(compile(src, "dup.py", "exec"), ns2)
    c1, c2 = ns1["dup"].__code__, ns2["dup"].__code__
    assert c1 is not c2
    s1 = "".join(["<built-in method ", "x.y>"])
    s2 = "".join(["<built-in method x", ".y>"])
    assert s1 == s2 and s1 is not s2
    callee = leaf.__code__
    entries = [
        _entry(c1, 3, 1, 0.5, 0.25, [_sub(callee, 2, 0, 0.125, 0.125), _sub(s1, 1, 0, 0.1, 0.1)]),
        _entry(c2, 2, 0, 0.75, 0.5, [_sub(callee, 1, 0, 0.0625, 0.0625)]),
        _entry(callee, 3, 0, 0.1875, 0.1875, None),
        _entry(s1, 1, 0, 0.1, 0.1, []),
        _entry(s2, 4, 0, 0.2, 0.2, [_sub(s1, 1, 0, 0.1, 0.1)]),
    ]

    dup, leafkey, xy = ("dup.py", 1, "dup"), fastprof.label(callee), ("~", 0, s1)
    expected = {
        dup: (2 + 2, 3 + 2, 0.25 + 0.5, 0.5 + 0.75, {}),
        leafkey: (3, 3, 0.1875, 0.1875, {dup: (2 + 1, 2 + 1, 0.125 + 0.0625, 0.125 + 0.0625)}),
        xy: (1 + 4, 1 + 4, 0.1 + 0.2, 0.1 + 0.2, {dup: (1, 1, 0.1, 0.1), xy: (1, 1, 0.1, 0.1)}),
    }

    class Oracle:
        stats = expected

    oracle = Oracle()
    assert fp_profiler.entries_to_stats(entries) == oracle.stats

    class Canned(fastprof.Profile):
        def getstats(self, thread=None):
            return entries

    pr = Canned()
    pr.snapshot_stats()
    assert pr.stats == oracle.stats
    pr.create_stats()
    assert pr.stats == oracle.stats


def test_label_is_cprofiles():
    # The oracle is the keys cProfile's create_stats makes (cProfile.label,
    # which gives them, was removed in 3.15).
    def calls_len():
        return len([fib(2)])
    ref = cprofile_stats(calls_len)
    assert fastprof.label(fib.__code__) in ref
    assert fastprof.label(calls_len.__code__) in ref
    assert fastprof.label("<built-in method builtins.len>") in ref
    assert fastprof.label("<built-in method builtins.len>") == ("~", 0, "<built-in method builtins.len>")


# -- enable / disable / clear ---------------------------------------------------------

def test_enable_disable_clear():
    pr = fastprof.Profile()
    pr.enable()
    assert pr.enabled
    fib(5)
    pr.disable()
    assert not pr.enabled
    fib(6)  # not profiled
    pr.create_stats()
    assert pr.stats[key(fib)][1] == 15
    pr.enable()
    fib(5)
    pr.disable()
    pr.create_stats()
    assert pr.stats[key(fib)][1] == 30  # stats accumulate over enable/disable
    pr.clear()
    pr.create_stats()
    assert key(fib) not in pr.stats


def test_create_stats_disables():
    pr = fastprof.Profile()
    pr.enable()
    fib(3)
    pr.create_stats()
    assert not pr.enabled
    assert key(fib) in pr.stats


def test_memory_and_clock_info():
    pr = fastprof.Profile()
    pr.runcall(workload)
    mem = pr.memory()
    assert isinstance(mem, int) and mem > 0
    info = pr.clock_info()
    assert info["clock"] in ("tsc", "monotonic")
    assert isinstance(info["ticks_per_second"], float) and info["ticks_per_second"] > 0
    assert fastprof.Profile(fake_timer).clock_info()["clock"] == "custom"
    assert fastprof.Profile(clock="cpu").clock_info()["clock"] == "cpu"


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is 3.12+")
def test_enable_alongside_cprofile():
    cp = cProfile.Profile()
    cp.enable()
    try:
        with fastprof.Profile() as pr:
            fib(5)
    finally:
        cp.disable()
    pr.create_stats()
    assert pr.stats[key(fib)][1] == 15


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is 3.12+")
def test_enable_fails_clearly_when_no_monitoring_tool_is_free():
    mon = sys.monitoring
    claimed = []
    for tool in range(6):
        if mon.get_tool(tool) is None:
            mon.use_tool_id(tool, "fastprof test")
            claimed.append(tool)
    try:
        pr = fastprof.Profile()
        with pytest.raises(ValueError):
            pr.enable()
        assert not pr.enabled
    finally:
        for tool in claimed:
            mon.free_tool_id(tool)


# -- pstats --------------------------------------------------------------------

def test_pstats_reads_a_live_profiler():
    pr = fastprof.Profile()
    pr.enable()
    workload()
    st = pstats.Stats(pr)  # calls create_stats(), which disables
    assert not pr.enabled
    assert key(workload) in st.stats
    assert counts(st.stats) == counts(cprofile_stats(workload))
    assert st.total_calls == sum(v[1] for v in st.stats.values())


def test_print_stats_prints_the_cprofile_table(capsys):
    pr = exact_profile()
    pr.print_stats("tottime")
    out = capsys.readouterr().out
    assert "function calls in" in out and "Ordered by: internal time" in out
    lines = [ln for ln in out.splitlines() if "test_api.py" in ln]
    # sorted by tottime: leaf (20) before top (5) before mid (1); dirs stripped
    names = [ln.rsplit("(", 1)[1].rstrip(")") for ln in lines]
    assert names == ["leaf", "top", "mid"]
    assert os.path.dirname(HERE) not in out


def test_print_stats_default_sort_and_tuple_sort(capsys):
    exact_profile().print_stats()
    assert "Ordered by: standard name" in capsys.readouterr().out
    exact_profile().print_stats(("calls", "cumulative"))
    assert "Ordered by: call count, cumulative time" in capsys.readouterr().out


def test_print_stats_of_an_empty_profile(capsys):
    fastprof.Profile().print_stats()
    assert "0 function calls" in capsys.readouterr().out


def test_print_callers(capsys):
    pr = exact_profile()
    pr.print_callers("leaf")
    out = capsys.readouterr().out
    row = [ln for ln in out.splitlines() if "(leaf)" in ln]
    assert len(row) == 1
    assert "<-" in row[0] and "(mid)" in row[0]
    assert row[0].split("<-")[1].split()[:3] == ["2", "20.000", "20.000"]
    assert "(top)" not in out  # restricted to leaf


def test_print_callees(capsys):
    pr = exact_profile()
    pr.print_callees(r"\(mid\)")
    out = capsys.readouterr().out
    row = [ln for ln in out.splitlines() if "(leaf)" in ln]
    assert len(row) == 1 and "(mid)" in out
    assert "->" in out
    assert row[0].split()[-4:-1] == ["2", "20.000", "20.000"]
    pr2 = exact_profile()
    pr2.print_callees("top", sort="tottime")
    out = capsys.readouterr().out
    assert "(top)" in out and "(mid)" in out and "(leaf)" not in out


# -- context manager, run, runctx, runcall ---------------------------------------------

def test_context_manager():
    with fastprof.Profile() as pr:
        assert pr.enabled
        fib(6)
    assert not pr.enabled
    pr.create_stats()
    assert pr.stats[key(fib)][1] == 25


def test_context_manager_keeps_the_users_exception_and_the_stats():
    mine = KeyError("mine")
    with pytest.raises(KeyError) as info:
        with fastprof.Profile() as pr:
            fib(4)
            raise mine
    assert info.value is mine
    assert not pr.enabled
    pr.create_stats()
    assert pr.stats[key(fib)][1] == 9


def _breaking_timer(after):
    state = {"n": 0}

    def timer():
        state["n"] += 1
        if state["n"] > after:
            raise RuntimeError("timer broke")
        return float(state["n"])
    return timer


def _mentions(exc, text):
    while exc is not None:
        if text in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def test_profiler_failure_does_not_replace_the_users_exception():
    pr = fastprof.Profile(_breaking_timer(12))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(KeyError, match="mine"):
            with pr:
                fib(6)
                raise KeyError("mine")
    assert pr.error is not None and _mentions(pr.error, "timer broke")
    assert any("stats are partial" in str(w.message) for w in caught)
    pr.create_stats()  # the stats collected before the failure are kept
    assert key(fib) in pr.stats


def test_profiler_failure_is_raised_by_exit_when_no_user_exception():
    pr = fastprof.Profile(_breaking_timer(12))
    with pytest.raises(Exception) as info:
        with pr:
            fib(6)
    assert _mentions(info.value, "timer broke")
    pr.create_stats()
    assert key(fib) in pr.stats


def test_runcall_returns_the_result_and_takes_func_as_a_keyword():
    pr = fastprof.Profile()

    def f(*args, **kw):
        return args, kw
    assert pr.runcall(f, 1, func=2) == ((1,), {"func": 2})
    assert pr.runcall(workload) == "done"
    pr.create_stats()
    assert key(workload) in pr.stats


def test_runcall_propagates_exceptions():
    pr = fastprof.Profile()
    with pytest.raises(ZeroDivisionError):
        pr.runcall(lambda: 1 / 0)
    assert not pr.enabled


def test_runctx_and_run():
    pr = fastprof.Profile()
    ns = {"fib": fib}
    assert pr.runctx("r = fib(7)", ns, None) is pr
    assert ns["r"] == 13
    pr.create_stats()
    assert pr.stats[key(fib)][1] == 41

    import __main__
    __main__.__dict__["_fastprof_test_fib"] = fib
    try:
        pr = fastprof.Profile()
        assert pr.run("_fastprof_test_fib(5)") is pr
    finally:
        del __main__.__dict__["_fastprof_test_fib"]
    pr.create_stats()
    assert pr.stats[key(fib)][1] == 15


def test_module_run_prints_or_dumps(tmp_path, capsys):
    import __main__
    __main__.__dict__["_fastprof_test_fib"] = fib
    try:
        assert fastprof.run("_fastprof_test_fib(5)") is None
        out = capsys.readouterr().out
        assert "function calls" in out and "(fib)" in out
        path = tmp_path / "run.prof"
        fastprof.run("_fastprof_test_fib(5)", str(path), sort="tottime")
        assert capsys.readouterr().out == ""
        assert pstats.Stats(str(path)).stats[key(fib)][1] == 15
    finally:
        del __main__.__dict__["_fastprof_test_fib"]


def test_module_runctx_swallows_system_exit_like_cprofile(tmp_path, capsys):
    path = tmp_path / "x.prof"
    fastprof.runctx("fib(4); raise SystemExit(3)", {"fib": fib}, None, str(path))
    assert pstats.Stats(str(path)).stats[key(fib)][1] == 9
    fastprof.runctx("fib(4)", {"fib": fib}, None, sort="calls")
    assert "Ordered by: call count" in capsys.readouterr().out
    with pytest.raises(ValueError):  # other exceptions propagate, stats still shown
        fastprof.runctx("raise ValueError", {}, None)
    assert "function calls" in capsys.readouterr().out


def test_module_run_passes_profile_options(tmp_path):
    path = tmp_path / "x.prof"
    fastprof.runctx("fib(4)", {"fib": fib}, None, str(path), builtins=False)
    assert not [k for k in pstats.Stats(str(path)).stats if k[0] == "~" and k[2] != "<gc>"]


# -- decorator ----------------------------------------------------------------------

def test_profile_decorator_prints_each_call(capsys):
    @fastprof.profile
    def f(n):
        return fib(n)
    assert f(6) == 8
    out = capsys.readouterr().out
    assert "function calls" in out and "(fib)" in out
    assert f.__name__ == "f"
    f.profiler.create_stats()
    assert f.profiler.stats[key(fib)][1] == 25


def test_profile_decorator_with_filename_and_options(tmp_path, capsys):
    path = tmp_path / "deco.prof"

    @fastprof.profile(filename=str(path), builtins=False)
    def f(n):
        if n:
            return f(n - 1) + 1  # recursion: profiled once, by the outer call
        return len("x")
    assert f(3) == 4
    assert capsys.readouterr().out == ""
    stats = pstats.Stats(str(path)).stats
    inner = [k for k in stats if k[2] == "f"]
    assert len(inner) == 1 and stats[inner[0]][:2] == (1, 4)
    # no C function; a collection that happens to run inside f is its <gc> row
    assert not [k for k in stats if k[0] == "~" and k[2] != "<gc>"]


def test_profile_decorator_rejects_bad_options():
    with pytest.raises(ValueError):
        fastprof.profile(clock="nope")


def test_profile_decorator_on_a_coroutine_function(tmp_path):
    path = tmp_path / "co.prof"

    @fastprof.profile(filename=str(path))
    async def f():
        await asyncio.sleep(0)
        return fib(5)
    assert asyncio.run(f()) == 5
    assert pstats.Stats(str(path)).stats[key(fib)][1] == 15


# -- files ----------------------------------------------------------------------

def test_dump_stats_round_trip(tmp_path):
    pr = fastprof.Profile(gc=False)  # cProfile's rows exactly (no <gc> from a collection)
    pr.runcall(workload)
    path = tmp_path / "out.prof"
    pr.dump_stats(str(path))
    data = load_profile(str(path))
    assert data.stats == pr.stats  # dump_stats fills .stats, as cProfile's does
    assert counts(data.stats) == counts(cprofile_stats(workload))
    assert data.clock == pr.clock_info()["clock"]
    assert data.callpaths is None and data.threads == []
    # pstats and cProfile-only readers see the first object only
    st = pstats.Stats(str(path))
    assert st.stats == pr.stats
    with open(path, "rb") as f:
        assert marshal.load(f) == pr.stats


def test_dump_stats_to_a_file_object_and_pathlike(tmp_path):
    pr = exact_profile()
    buf = io.BytesIO()
    pr.dump_stats(buf)
    buf.seek(0)
    assert marshal.load(buf)[key(leaf)][:4] == (2, 2, 20.0, 20.0)
    pr.dump_stats(tmp_path / "p.prof")
    assert load_profile(tmp_path / "p.prof").stats[key(leaf)][:4] == (2, 2, 20.0, 20.0)


def test_callpaths_to_file_dedups_functions():
    nodes = [(-1, top.__code__, 1, 5.0, 26.0),
             (0, mid.__code__, 1, 1.0, 21.0),
             (1, leaf.__code__, 2, 20.0, 20.0),
             (0, "<built-in method builtins.len>", 1, 0.5, 0.5),
             (1, "<built-in method builtins.len>", 3, 0.25, 0.25)]
    cp = fp_profiler.callpaths_to_file(nodes)
    assert cp.functions == [key(top), key(mid), key(leaf),
                            ("~", 0, "<built-in method builtins.len>")]
    assert cp.nodes == [(-1, 0, 1, 5.0, 26.0), (0, 1, 1, 1.0, 21.0), (1, 2, 2, 20.0, 20.0),
                        (0, 3, 1, 0.5, 0.5), (1, 3, 3, 0.25, 0.25)]


def _path_of(cp, i):
    out = []
    while i != -1:
        parent, func = cp.nodes[i][:2]
        out.append(cp.functions[func][2])
        i = parent
    return tuple(reversed(out))


def test_dump_stats_writes_callpaths(tmp_path):
    pr = exact_profile(callpaths=True)
    path = tmp_path / "cp.prof"
    pr.dump_stats(str(path))
    data = load_profile(str(path))
    cp = data.callpaths
    assert cp is not None
    assert len(set(cp.functions)) == len(cp.functions)
    leaves = [n for i, n in enumerate(cp.nodes)
              if cp.functions[n[1]] == key(leaf)]
    assert len(leaves) == 1
    i = cp.nodes.index(leaves[0])
    assert _path_of(cp, i)[-3:] == ("top", "mid", "leaf")
    assert leaves[0][2:] == (2, 20.0, 20.0)
    assert pstats.Stats(str(path)).stats[key(leaf)][:4] == (2, 2, 20.0, 20.0)


# -- threads --------------------------------------------------------------------

def busy():
    return fib(7)


def run_named_thread(name):
    t = threading.Thread(target=busy, name=name)
    t.start()
    t.join()
    return t


def test_threads_false_profiles_only_the_enabling_thread():
    pr = fastprof.Profile()
    with pr:
        run_named_thread("fp-ignored")
        fib(3)
    pr.create_stats()
    assert key(busy) not in pr.stats
    assert pr.stats[key(fib)][1] == 5
    assert len(pr.thread_stats()) == 1


def test_thread_stats_names_and_per_thread_views(tmp_path, capsys):
    pr = fastprof.Profile(threads=True)
    with pr:
        t = run_named_thread("fp-worker")
        fib(3)
    rows = pr.thread_stats()
    by_name = {name: (tid, ident, st) for tid, ident, name, st in rows}
    assert "MainThread" in by_name and "fp-worker" in by_name
    wid, wident, wstats = by_name["fp-worker"]
    mid_, mident, mstats = by_name["MainThread"]
    assert wident == t.ident and mident == threading.main_thread().ident
    assert wid != mid_
    assert wstats[key(busy)][1] == 1 and wstats[key(fib)][1] == 41
    assert key(busy) not in mstats and mstats[key(fib)][1] == 5
    # merged = sum of the threads
    pr.create_stats()
    assert pr.stats[key(fib)][1] == 46

    pr.print_stats("calls", thread=wid)
    out = capsys.readouterr().out
    assert "(busy)" in out and "(run_named_thread)" not in out
    pr.print_callers("fib", thread=t)  # a Thread object works too
    assert "(busy)" in capsys.readouterr().out

    one = tmp_path / "worker.prof"
    pr.dump_stats(str(one), thread=wid)
    data = load_profile(str(one))
    assert data.stats == wstats and data.threads == []

    full = tmp_path / "all.prof"
    pr.dump_stats(str(full))
    data = load_profile(str(full))
    assert data.stats == pr.stats
    threads = {th["name"]: th for th in data.threads}
    assert set(threads) >= {"MainThread", "fp-worker"}
    assert threads["fp-worker"]["stats"] == wstats
    assert threads["fp-worker"]["ident"] == wident and threads["fp-worker"]["id"] == wid


def test_threads_true_adds_no_rows_of_its_own():
    def rows(threads):
        pr = fastprof.Profile(threads=threads)
        pr.enable()
        sorted([1])
        pr.disable()
        pr.create_stats()
        return {k: v[:2] for k, v in pr.stats.items()}
    assert rows(True) == rows(False)


def test_threads_native_id_is_the_threads():
    pr = fastprof.Profile(threads=True)
    with pr:
        t = run_named_thread("fp-native")
    natives = {ident: native for _tid, ident, native in pr.threads()}
    assert natives[threading.get_ident()] == threading.get_native_id()
    assert natives[t.ident] == t.native_id


def test_unknown_thread_id_is_a_value_error():
    pr = exact_profile()
    with pytest.raises(ValueError, match="no profiled thread"):
        pr.print_stats(thread=10 ** 9)
    with pytest.raises(TypeError):
        pr.dump_stats(io.BytesIO(), thread="main")


def test_ended_thread_keeps_its_name():
    pr = fastprof.Profile(threads=True)
    with pr:
        t = run_named_thread("fp-gone")  # started and ended while profiling
    assert not t.is_alive()
    names = [name for _tid, _ident, name, _st in pr.thread_stats()]
    assert "fp-gone" in names


def test_thread_forgotten_by_threading_keeps_the_name_it_started_with():
    import gc
    pr = fastprof.Profile(threads=True)
    with pr:
        ident = run_named_thread("fp-forgotten").ident
        gc.collect()  # the Thread object is gone before disable() looks
    names = {i: name for _tid, i, name, _st in pr.thread_stats()}
    assert names[ident] == "fp-forgotten"  # written down when it started


def first_seen_after_the_failure(n):
    return fib(n)


def test_out_of_memory_raises_memory_error_and_keeps_the_stats():
    """The core's allocations fail (the testing switch _mem_fail_after):
    the program runs on, the calls that need a new table row are dropped,
    disable() raises MemoryError once, and what was collected stays."""
    from fastprof import _fastprof
    pr = fastprof.Profile(builtins=False)
    pr.enable()
    fib(5)                                   # 15 calls, rows and edges made
    _fastprof._mem_fail_after(0)
    try:
        assert first_seen_after_the_failure(5) == 5  # needs a new row: dropped
        fib(5)                               # rows exist: still counted
    finally:
        _fastprof._mem_fail_after(-1)
    with pytest.raises(MemoryError, match="out of memory"):
        pr.disable()
    assert not pr.enabled
    pr.create_stats()
    assert pr.stats[key(fib)][:2] == (2, 30)
    assert key(first_seen_after_the_failure) not in pr.stats
    pr.getstats()                            # reported once, not again
    with pr:                                 # and the profiler works on
        first_seen_after_the_failure(3)
    pr.create_stats()
    assert pr.stats[key(first_seen_after_the_failure)][:2] == (1, 1)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is 3.12+")
def test_monitoring_callbacks_called_by_hand_do_no_harm():
    """The callbacks fastprof registers are reachable from Python (the
    register_callback of another tool returns them): calling them with
    odd arguments, or after the profiler is gone, must not crash."""
    mon = sys.monitoring
    pr = fastprof.Profile()
    pr.enable()
    tool = next(t for t in range(6) if mon.get_tool(t) == "fastprof")
    event = mon.events.PY_START
    cb = mon.register_callback(tool, event, None)
    mon.register_callback(tool, event, cb)
    pr.disable()
    assert type(cb).__name__ == "_Callback"
    for args in [(), (None,), ("not code", 0), (fib.__code__, 0), (fib.__code__, 0, 1, 2, 3)]:
        assert cb(*args) is None
    pr.clear()
    with pr:
        fib(4)
    pr.create_stats()
    assert pr.stats[key(fib)][:2] == (1, 9)
    del pr
    assert cb(fib.__code__, 0) is None
