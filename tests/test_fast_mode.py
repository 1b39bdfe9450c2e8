"""fast=True: Python functions only, from a PEP 523 frame evaluator
(csrc/fpy_source_evalframe.c).

- The conformance corpus in fast mode (plain, callpaths=True, threads=True)
  against cProfile.Profile(builtins=False) in the same interpreter:
  identical counts and caller edges (test_conformance.py's comparisons).
- Generators (throw / close), coroutines, deep exceptions, recursion and
  generator creation against cProfile(builtins=False), here in-process.
- Times exact under a fake timer (test_timing.py's profilee).
- Threads, each with its own stack; enable inside a function.
- Good citizenship: refused while another evaluator is installed (a
  test-only pass-through one, _fastprof._test_set_dummy_evaluator) or
  another fast profiler runs; disable() restores the default evaluator
  only if it is still fastprof's.
- Failures: a failing timer and out of memory, as in the default mode.
"""
import asyncio
import gc
import marshal
import os
import pstats
import subprocess
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cProfile  # noqa: E402

import test_conformance as conf  # noqa: E402
import test_timing as timing  # noqa: E402

import helpers  # noqa: E402

if helpers.USING_CPROFILE:
    pytest.skip("fast=True is fastprof's", allow_module_level=True)

import fastprof  # noqa: E402
from fastprof import _fastprof  # noqa: E402

UNAVAILABLE = sys.version_info[:2] == (3, 13)  # test_fast_mode_availability.py

if UNAVAILABLE:
    pytest.skip("fast=True is refused on 3.13 (csrc/fpy_cpython_internals.h: FPY_EVALFRAME_UNAVAILABLE)",
                allow_module_level=True)

# The documented differences from cProfile (docs/conformance.md, "fast
# mode"), by the corpus function they concern, from the version they start:
# - "teardown" (3.12+): a function's locals are cleared inside the
#   interpreter's evaluator, before it returns to fastprof's, so calls made
#   then (finalizers, weakref callbacks, generators closed) have that
#   function as caller; cProfile, which sees the return first, has its caller.
# - "silent close" (3.14+): closing a generator suspended outside any try
#   block does not run its frame, but cProfile still counts it as a call.
TEARDOWN, SILENT_CLOSE = (3, 12), (3, 14)
KNOWN = {
    "asyncio_coro": {"_remove": TEARDOWN, "__del__": TEARDOWN},
    "generators": {"count_up": TEARDOWN},
    "dunder_classes": {"<genexpr>": SILENT_CLOSE},
}
KNOWN_COUNTS = {("generators", "count_up"): SILENT_CLOSE}


def known(program, name, edge):
    since = (KNOWN_COUNTS if not edge else {}).get((program, name)) or \
        KNOWN.get(program, {}).get(name)
    if not edge and since == TEARDOWN:
        return False  # teardown moves edges only: the counts stay exact
    return since is not None and sys.version_info[:2] >= since


def drop_known(program, funcs, edges):
    """The comparable part: functions and edges not in KNOWN for this version."""
    return ({k: v for k, v in funcs.items() if not known(program, k[2], False)},
            {k: v for k, v in edges.items() if not known(program, k[1][2], True)})

FAST_MODES = ["fast", "fast_callpaths", "fast_threads"]
_results = {}


def run_corpus_fast(program, tmp_path_factory):
    if program not in _results:
        out = str(tmp_path_factory.mktemp("fast") / (program + ".marshal"))
        proc = helpers.run_python([os.path.join(helpers.CORPUS_DIR, "_runner.py"), program, out,
                                   ",".join(FAST_MODES)], timeout=600)
        if proc.returncode != 0:
            pytest.fail("runner failed for %s (exit %d):\n%s\n%s"
                        % (program, proc.returncode, proc.stdout[-3000:], proc.stderr[-6000:]))
        with open(out, "rb") as f:
            _results[program] = marshal.load(f)
    return _results[program]


@pytest.mark.parametrize("mode", FAST_MODES)
@pytest.mark.parametrize("program", helpers.corpus_programs())
def test_corpus_same_counts_as_cprofile_without_builtins(program, mode, tmp_path_factory):
    result = run_corpus_fast(program, tmp_path_factory)
    run = result[mode]
    ref_a, ref_a_internal = helpers.strip_internal(run["ref_a"]["stats"])
    ref_b, ref_b_internal = helpers.strip_internal(run["ref_b"]["stats"])
    test, test_internal = helpers.strip_internal(run["test"]["stats"], result["fastprof_dir"])
    dups = conf.duplicate_labels(run["ref_a"]["entries"]) | conf.duplicate_labels(run["test"]["entries"])
    nondeterministic = (
        conf.compare_pstats(ref_a, ref_b, dups)
        + conf.compare_entries(run["ref_a"]["entries"], run["ref_b"]["entries"],
                               set(ref_a_internal), set(ref_b_internal)))
    assert not nondeterministic, "\n".join(nondeterministic[:40])
    assert ref_a, "cProfile saw nothing"
    ref_f, ref_e = drop_known(program, *conf.summed_pstats_counts(run["ref_a"]["entries"],
                                                                  set(ref_a_internal)))
    test_f, test_e = drop_known(program, *conf.pstats_counts(test))
    ent_ref_f, ent_ref_e = conf.entry_counts(run["ref_a"]["entries"], set(ref_a_internal))
    ent_test_f, ent_test_e = conf.entry_counts(run["test"]["entries"], set(test_internal))
    ent_ref_f, ent_ref_e = drop_known(program, ent_ref_f, ent_ref_e)
    ent_test_f, ent_test_e = drop_known(program, ent_test_f, ent_test_e)
    problems = (conf.diff(ref_f, test_f, "function", helpers.fmt_key)
                + conf.diff(ref_e, test_e, "edge", conf.fmt_edge(helpers.fmt_key))
                + conf.diff(ent_ref_f, ent_test_f, "getstats entry", conf.fmt_code)
                + conf.diff(ent_ref_e, ent_test_e, "getstats subentry",
                            conf.fmt_edge(conf.fmt_code)))
    assert not problems, "%s [%s, Python %s]: %d difference(s)\n%s" % (
        program, mode, sys.version.split()[0], len(problems), "\n".join(problems[:60]))
    c_rows = [helpers.fmt_key(k) for k in test if k[0] == "~"]
    assert not c_rows, "fast=True profiled C functions: %s" % c_rows
    for key, (cc, nc, tt, ct, _callers) in test.items():
        assert 0 <= cc <= nc and tt >= 0 and ct >= tt - 1e-6, (key, cc, nc, tt, ct)


# -- in-process comparisons with cProfile(builtins=False) ---------------------

def profile_counts(factory, func, **kwargs):
    prof = factory(builtins=False, **kwargs)
    if factory is cProfile.Profile:
        prof.enable(subcalls=True, builtins=False)  # 3.14+: see corpus/_runner.py
    else:
        prof.enable()
    func()
    prof.disable()
    stats, _ = helpers.strip_internal(pstats.Stats(prof).stats, timing.fastprof_dir())
    here = os.path.abspath(__file__)
    return {k[2]: (v[0], v[1], sorted((c[2], s[0], s[1]) for c, s in v[4].items() if c[0] == here))
            for k, v in stats.items() if k[0] == here}


def gen_simple():
    yield 1
    yield 2


def gen_guarded():
    while True:
        try:
            yield 1
        except ValueError:
            helper_leaf()


def gen_finally():
    try:
        yield 1
    finally:
        helper_leaf()


def delegating():
    yield from gen_guarded()


def helper_leaf():
    return 1


def deep_raise(n):
    if n == 0:
        raise KeyError(n)
    deep_raise(n - 1)


def recurse(n):
    return 0 if n == 0 else 1 + recurse(n - 1)


async def coro_leaf(i):
    await asyncio.sleep(0)
    return i


async def coro_main():
    return sum(await asyncio.gather(*(coro_leaf(i) for i in range(5))))


class Point:
    def __init__(self, x, y=0):
        self.x, self.y = x, y

    def norm(self):
        return abs(self.x) + abs(self.y)

    @property
    def twice(self):
        return 2 * self.x

    def __getitem__(self, i):
        return self.x + i


class Watched:
    def __getattribute__(self, name):
        return name


def kw_leaf(a, b=1, *rest, c=2):
    return a + b + c + len(rest)


def gen_range(n):
    yield from range(n)


def gen_delegate(n):
    yield from gen_range(n)


def specialized_calls_program():
    """Every kind of call site 3.11+ specializes into pushing the callee's
    frame in place (3.15's opt-in keeps them specialized under fastprof's
    evaluator, which must still see each call), each hot enough to
    specialize."""
    total = 0
    for i in range(100):
        p = Point(i)                       # class call: __init__
        total += p.norm()                  # bound method
        total += p.twice + p[i]            # property, __getitem__
        total += kw_leaf(i) + kw_leaf(i, c=3) + kw_leaf(*(i, 2, 3))
        total += len(Watched().anything)   # __getattribute__
        for v in gen_delegate(3):          # generator resumes, yield from
            total += v
    return total


def generator_program():
    list(gen_simple())
    it = gen_guarded()
    next(it)
    it.throw(ValueError)         # caught inside: calls helper_leaf
    it.throw(ValueError)
    it.close()
    it = gen_finally()
    next(it)
    it.close()                   # runs the finally block
    it = delegating()
    next(it)
    it.throw(ValueError)         # through yield from
    it.close()
    it = gen_simple()            # made, never started
    del it
    sum(1 for _ in range(5))


def exception_program():
    for _ in range(3):
        try:
            deep_raise(50)
        except KeyError:
            pass
    recurse(200)


def coroutine_program():
    asyncio.run(coro_main())


@pytest.mark.parametrize("program", [generator_program, exception_program, coroutine_program,
                                     specialized_calls_program],
                         ids=lambda f: f.__name__)
def test_same_counts_as_cprofile(program):
    program()  # warm-up: imports, caches
    expected = profile_counts(cProfile.Profile, program)
    assert expected
    assert profile_counts(fastprof.Profile, program, fast=True) == expected


def closes_silently():
    it = gen_simple()
    next(it)
    it.close()  # suspended outside any try: its frame does not run (3.12+)


def test_silent_close_is_the_documented_difference():
    closes_silently()
    expected = profile_counts(cProfile.Profile, closes_silently)
    got = profile_counts(fastprof.Profile, closes_silently, fast=True)
    if sys.version_info[:2] >= SILENT_CLOSE:  # the frame does not run: fastprof sees 1
        assert (got["gen_simple"][:2], expected["gen_simple"][:2]) == ((1, 1), (2, 2))
    else:  # the close runs the frame: a call for both
        assert got == expected and got["gen_simple"][:2] == (2, 2)


def test_generator_counts_by_hand():
    alive = []  # closing a generator is a run on some versions: none closes here

    def program():
        list(gen_simple())  # 3 runs: to each yield, then to the end
        alive.append(gen_simple())  # made: not a call
        next(alive[-1])             # 1 run
        for _ in range(2):
            alive.append(gen_guarded())
            next(alive[-1])
            alive[-1].throw(ValueError)  # 1 run (helper_leaf inside), by the throw
    counts = profile_counts(fastprof.Profile, program, fast=True)
    assert counts["gen_simple"][:2] == (4, 4)
    assert counts["gen_guarded"][:2] == (4, 4)
    assert counts["helper_leaf"][:2] == (2, 2)
    assert counts["helper_leaf"][2] == [("gen_guarded", 2, 2)]


# -- times under a fake timer -------------------------------------------------

FAST_EXPECTED = {k: v for k, v in timing.EXPECTED.items() if k not in (timing.SORTED, timing.APPEND)}
FAST_EXPECTED["keyf"] = (3, 3, 3, 3, {"top": (3, 3, 3, 3)})


@pytest.mark.parametrize("timer_id", sorted(timing.TIMERS))
def test_fake_timer_times_exact(timer_id):
    timer, timeunit, unit = timing.TIMERS[timer_id]
    prof = timing.run_fake(lambda t, u: fastprof.Profile(t, u, fast=True), timer, timeunit)
    stats = timing.named_stats(prof)
    assert set(stats) == set(FAST_EXPECTED)
    approx = lambda ticks: pytest.approx(ticks * unit, rel=1e-9, abs=1e-12)  # noqa: E731
    for name, (cc, nc, tt, ct, callers) in FAST_EXPECTED.items():
        got = stats[name]
        assert (got[0], got[1]) == (cc, nc), name
        assert got[2] == approx(tt) and got[3] == approx(ct), name
        assert set(got[4]) == set(callers), name
        for caller, (enc, ecc, ett, ect) in callers.items():
            g = got[4][caller]
            assert (g[0], g[1]) == (enc, ecc) and g[2] == approx(ett) and g[3] == approx(ect), \
                (name, caller)


def test_fake_timer_same_as_cprofile_without_builtins():
    timer, timeunit, _unit = timing.TIMERS["int-ms"]

    def cprof(t, u):
        p = cProfile.Profile(t, u, builtins=False)
        p.enable = lambda: cProfile.Profile.enable(p, subcalls=True, builtins=False)
        return p
    ref = timing.named_stats(timing.run_fake(cprof, timer, timeunit))
    got = timing.named_stats(timing.run_fake(lambda t, u: fastprof.Profile(t, u, fast=True),
                                             timer, timeunit))
    assert got.keys() == ref.keys()
    for name in ref:
        assert got[name][:2] == ref[name][:2], name
        assert got[name][2] == pytest.approx(ref[name][2]), name
        assert got[name][3] == pytest.approx(ref[name][3]), name


# -- threads, enable inside a function ----------------------------------------

def thread_work(n):
    for _ in range(n):
        helper_leaf()


def test_threads_each_with_its_own_stack():
    prof = fastprof.Profile(fast=True, threads=True)
    prof.enable()
    threads = [threading.Thread(target=thread_work, args=(100 + i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    thread_work(7)
    prof.disable()
    stats = pstats.Stats(prof).stats
    here = os.path.abspath(__file__)
    rows = {k[2]: v for k, v in stats.items() if k[0] == here}
    assert rows["helper_leaf"][1] == sum(100 + i for i in range(4)) + 7
    assert rows["thread_work"][1] == 5
    assert rows["helper_leaf"][4][(here, thread_work.__code__.co_firstlineno, "thread_work")][0] \
        == rows["helper_leaf"][1]
    assert len(prof.threads()) == 5


def test_threads_false_records_the_enabling_thread_only():
    prof = fastprof.Profile(fast=True)
    prof.enable()
    t = threading.Thread(target=thread_work, args=(50,))
    t.start()
    t.join()
    thread_work(3)
    prof.disable()
    rows = {k[2]: v for k, v in pstats.Stats(prof).stats.items()}
    assert rows["helper_leaf"][1] == 3


def enabled_inside(prof):
    prof.enable()
    helper_leaf()
    return 1  # this frame started before enable(): its return is not seen


def test_enable_inside_a_function_then_return():
    prof = fastprof.Profile(fast=True)
    enabled_inside(prof)
    helper_leaf()
    prof.disable()
    stats = pstats.Stats(prof).stats
    rows = {k[2]: v for k, v in stats.items()}
    assert rows["helper_leaf"][1] == 2
    assert "enabled_inside" not in rows
    for key, (cc, nc, tt, ct, _callers) in stats.items():
        assert cc >= 0 and nc >= 0 and tt >= 0 and ct >= 0, key


# -- options and good citizenship --------------------------------------------

def test_builtins_true_is_refused():
    with pytest.raises(ValueError, match="builtins=True"):
        fastprof.Profile(fast=True, builtins=True)
    with pytest.raises(ValueError, match="builtins=True"):
        _fastprof.Profiler(fast=True, builtins=True)
    assert fastprof.Profile(fast=True).options["builtins"] is False
    assert fastprof.Profile().options["builtins"] is True


def test_coroutines_wall_is_refused():
    with pytest.raises(ValueError, match="coroutines='call'"):
        fastprof.Profile(fast=True, coroutines="wall")
    with pytest.raises(ValueError, match="coroutines='call'"):
        _fastprof.Profiler(fast=True, coroutines="wall")


@pytest.fixture
def dummy_evaluator():
    _fastprof._test_set_dummy_evaluator(True)
    try:
        yield
    finally:
        _fastprof._test_set_dummy_evaluator(False)


def test_refused_while_another_evaluator_is_installed(dummy_evaluator):
    prof = fastprof.Profile(fast=True)
    with pytest.raises(RuntimeError, match="another tool .* has installed its own"):
        prof.enable()
    assert not prof.enabled
    # the default mode does not need the evaluator
    other = fastprof.Profile()
    other.enable()
    helper_leaf()
    other.disable()
    assert any(k[2] == "helper_leaf" for k in pstats.Stats(other).stats)


def test_disable_keeps_an_evaluator_installed_meanwhile():
    prof = fastprof.Profile(fast=True)
    prof.enable()
    try:
        # another tool replaces fastprof's evaluator while it is enabled:
        # disable() must leave it in place
        assert _fastprof._test_set_dummy_evaluator(True) is False
    finally:
        prof.disable()
    try:
        # still the dummy: a fast profiler is refused
        with pytest.raises(RuntimeError, match="has installed its own"):
            fastprof.Profile(fast=True).enable()
    finally:
        _fastprof._test_set_dummy_evaluator(False)


def test_disable_restores_the_default_evaluator():
    prof = fastprof.Profile(fast=True)
    prof.enable()
    assert _fastprof._test_set_dummy_evaluator(False) is True  # ours is installed
    prof.disable()
    assert _fastprof._test_set_dummy_evaluator(False) is False
    again = fastprof.Profile(fast=True)  # the default is back: enable works
    again.enable()
    helper_leaf()
    again.disable()
    assert any(k[2] == "helper_leaf" for k in pstats.Stats(again).stats)


def test_second_fast_profiler_is_refused():
    first = fastprof.Profile(fast=True)
    first.enable()
    try:
        second = fastprof.Profile(fast=True)
        with pytest.raises(RuntimeError, match="another profiler is already enabled"):
            second.enable()
        helper_leaf()
    finally:
        first.disable()
    assert any(k[2] == "helper_leaf" for k in pstats.Stats(first).stats)


def test_default_mode_profiler_alongside_a_fast_one():
    fast = fastprof.Profile(fast=True)
    default = fastprof.Profile(builtins=False)
    fast.enable()
    default.enable()
    thread_work(5)
    default.disable()
    fast.disable()
    for prof in (fast, default):
        rows = {k[2]: v for k, v in pstats.Stats(prof).stats.items()}
        assert rows["helper_leaf"][1] == 5


def test_freed_while_enabled():
    # gc=False: with gc=True its callback in gc.callbacks keeps it alive
    prof = fastprof.Profile(fast=True, gc=False)
    prof.enable()
    del prof  # dealloc detaches: the evaluator goes back to the default
    gc.collect()
    helper_leaf()
    assert _fastprof._test_set_dummy_evaluator(False) is False
    again = fastprof.Profile(fast=True)
    again.enable()  # not refused
    again.disable()


# -- failures -------------------------------------------------------------------

def test_failing_timer_raises_at_disable_and_keeps_stats():
    calls = [0]

    def timer():
        calls[0] += 1
        if calls[0] > 40:
            raise ZeroDivisionError("boom")
        return calls[0]

    prof = fastprof.Profile(timer, fast=True)
    prof.enable()
    thread_work(100)
    with pytest.raises(RuntimeError, match="timer failed"):
        prof.disable()
    rows = {k[2]: v for k, v in pstats.Stats(prof).stats.items()}
    assert 0 < rows["helper_leaf"][1] < 100


def test_out_of_memory_raises_at_disable_and_keeps_stats():
    prof = fastprof.Profile(fast=True)
    prof.enable()
    helper_leaf()
    _fastprof._mem_fail_after(0)
    try:
        recurse(20)
        thread_work(20)
    finally:
        _fastprof._mem_fail_after(-1)
    with pytest.raises(MemoryError):
        prof.disable()
    rows = {k[2]: v for k, v in pstats.Stats(prof).stats.items()}
    assert rows["helper_leaf"][1] >= 1


# -- command line -----------------------------------------------------------------

def test_cli_fast(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("def f(n):\n    return n if n < 2 else f(n-1) + f(n-2)\nprint(len([f(10)]))\n")
    out = tmp_path / "out.prof"
    proc = subprocess.run([sys.executable, "-m", "fastprof", "--fast", "-o", str(out), str(script)],
                          capture_output=True, text=True, env=helpers.cli_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    stats = pstats.Stats(str(out)).stats
    rows = {k[2]: v for k, v in stats.items() if k[0] == str(script)}
    assert rows["f"][:2] == (1, 177)
    # no C function (a collection, <gc>, may come: allocations since the
    # last one, which the interpreter's startup in this checkout decides)
    assert not [k for k in stats if k[0] == "~" and k[2] != "<gc>"]


def test_cli_fast_with_wall_coroutines_is_a_usage_error(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("pass\n")
    proc = subprocess.run([sys.executable, "-m", "fastprof", "--fast", "--coroutines", "wall",
                           str(script)], capture_output=True, text=True, env=helpers.cli_env(),
                          timeout=120)
    assert proc.returncode == 2
    assert "--fast supports --coroutines call only" in proc.stderr


def test_timer_that_disables_and_drops_the_profiler():
    # the evaluator holds no reference to the profiler: the general path
    # takes one, so this must not touch freed memory (the ASan run checks)
    holder, n = {}, [0]

    def timer():
        n[0] += 1
        if n[0] == 20:
            prof = holder.pop("p")
            prof.disable()
        return float(n[0])

    holder["p"] = fastprof.Profile(timer, fast=True, gc=False)
    holder["p"].enable()
    thread_work(50)
    gc.collect()
    assert "p" not in holder
    assert _fastprof._test_set_dummy_evaluator(False) is False  # default restored
