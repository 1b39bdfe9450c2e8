"""CPython's own cProfile tests, run against fastprof.

The tests come from the test package of the interpreter running pytest:
``test.test_cprofile`` (3.9-3.14) or ``test.test_profiling.test_tracing_profiler``
(3.15+), with the ``test_profile`` cases they share and ``profilee.py``.
Their ``CProfileTest`` is subclassed with ``profilerclass = fastprof.Profile``
and ``profilermodule = fastprof``; ``TestCommandLine`` runs with
``python -m fastprof`` where it says ``python -m cProfile``. Each CPython
test is one pytest test here, run by unittest.

Only tests of ``_lsprof`` internals or of the ``sys.monitoring`` tool are
excused (``EXCUSED``, each with its reason); everything else must pass.
The module skips only if this interpreter ships no test package at all
(some distributions split it out: Debian's ``libpython3.X-testsuite``).
"""
import gc
import importlib
import os
import sys
import sysconfig
import unittest

import pytest

import fastprof
from helpers import USING_CPROFILE, profiler_class, tool_missing

# The module holding CProfileTest / TestCommandLine, newest location first.
CPYTHON_TEST_MODULES = (
    ("test.test_profiling.test_tracing_profiler",
     os.path.join("test_profiling", "test_tracing_profiler.py")),
    ("test.test_cprofile", "test_cprofile.py"),
)

# test id -> why fastprof does not run it. Nothing else may be left out.
EXCUSED = {
    "CProfileTest.test_bad_counter_during_dealloc":
        "_lsprof internals: builds _lsprof.Profiler itself (bpo-3895); fastprof's "
        "failing timers are tests/test_timing.py's",
    "CProfileTest.test_evil_external_timer":
        "_lsprof internals: builds _lsprof.Profiler itself (gh-120289); fastprof's "
        "timer that disables its profiler: test_timer_that_disables_the_profiler below",
    "CProfileTest.test_enable_in_external_timer":
        "_lsprof internals: builds _lsprof.Profiler itself (gh-157639); fastprof's "
        "timer that re-enables its profiler: test_timer_that_disables_the_profiler below",
    "CProfileTest.test_crash_with_not_enough_args":
        "_lsprof internals: calls _lsprof's sys.monitoring callback methods "
        "(_pystart_callback, ...), which fastprof does not have (gh-126220)",
    "CProfileTest.test_clear_with_nested_calls":
        "_lsprof internals: builds _lsprof.Profiler itself; fastprof's clear() inside "
        "nested profiled calls is tests/test_memory.py's",
}
if sys.version_info >= (3, 12):
    EXCUSED.update({
        "CProfileTest.test_profile_enable_disable":
            "sys.monitoring tool name: asserts the PROFILER_ID tool is named 'cProfile'; "
            "fastprof's tool is 'fastprof' (test_monitoring_tool_while_enabled below)",
        "CProfileTest.test_profile_as_context_manager":
            "sys.monitoring tool name: as test_profile_enable_disable",
        "CProfileTest.test_second_profiler":
            "sys.monitoring tool id: asserts a second profiler cannot claim PROFILER_ID; "
            "fastprof claims ids 2-4 so it runs alongside cProfile or another fastprof "
            "(docs/api.md; test_second_profiler_runs_alongside below)",
    })

# test id -> the fastprof change it waits for (another branch). Such a test
# runs: while it fails it is an expected failure, once it passes this test
# fails until the entry is removed.
PENDING = {
    # (none now: an entry is a CPython test fastprof does not pass yet, with
    # why; the test fails once it passes, so the entry is removed then)
}


def _find_cpython_tests():
    """(module, None) for this interpreter's cProfile tests, or (None, why)."""
    stdlib = sysconfig.get_paths()["stdlib"]
    testdir = os.path.join(stdlib, "test")
    for name, rel in CPYTHON_TEST_MODULES:  # noqa: B007 - name is the one found, used below
        if os.path.isfile(os.path.join(testdir, rel)):
            break
    else:
        return None, ("this interpreter ships no cProfile tests in its stdlib test package "
                      "(%s has no test_cprofile.py nor test_profiling/test_tracing_profiler.py; "
                      "on Debian: install libpython%d.%d-testsuite)"
                      % (testdir, sys.version_info[0], sys.version_info[1]))
    mod = importlib.import_module(name)  # a broken import is a failure, not a skip
    import test
    where = os.path.realpath(os.path.dirname(test.__file__))
    if where != os.path.realpath(testdir):
        raise ImportError("'test' was imported from %s, not from the stdlib's %s"
                          % (where, testdir))
    return mod, None


CPYTHON, NO_TESTS_WHY = _find_cpython_tests()


def _fastprof_classes(mod):
    """CPython's test classes retargeted at fastprof (built here, not at
    module level, so pytest does not collect them on its own)."""

    class CProfileTest(mod.CProfileTest):
        profilerclass = profiler_class()
        profilermodule = importlib.import_module("cProfile" if USING_CPROFILE else "fastprof")

    class TestCommandLine(mod.TestCommandLine):
        pass

    return {"CProfileTest": CProfileTest, "TestCommandLine": TestCommandLine}


def _test_ids():
    if CPYTHON is None:
        return []
    loader = unittest.TestLoader()
    ids = []
    for cls_name, cls in _fastprof_classes(CPYTHON).items():
        ids += ["%s.%s" % (cls_name, m) for m in loader.getTestCaseNames(cls)]
    return ids


TEST_IDS = _test_ids()


def _with_fastprof_cli(run):
    """assert_python_ok/failure with ``-m cProfile`` turned into ``-m fastprof``."""
    def wrapper(*args, **kw):
        args = list(args)
        for i in range(len(args) - 1):
            if args[i] == "-m" and args[i + 1] == "cProfile":
                args[i + 1] = "fastprof"
        return run(*args, **kw)
    return wrapper


@pytest.fixture
def cpython_env(monkeypatch, tmp_path):
    """What CPython's tests need to test fastprof from this checkout."""
    from test.support import script_helper
    # Child interpreters must see PYTHONPATH (the fastprof build): without
    # this, script_helper runs them with -I.
    monkeypatch.setattr(script_helper, "interpreter_requires_environment", lambda: True)
    for name in ("assert_python_ok", "assert_python_failure"):
        if hasattr(CPYTHON, name) and not USING_CPROFILE:
            monkeypatch.setattr(CPYTHON, name, _with_fastprof_cli(getattr(CPYTHON, name)))
    monkeypatch.chdir(tmp_path)  # TESTFN and demo.py are written to the cwd


@pytest.mark.parametrize("test_id", TEST_IDS or ["none"])
def test_cpython(test_id, cpython_env):
    if CPYTHON is None:
        tool_missing(NO_TESTS_WHY)  # a failure in CI
    if test_id in EXCUSED:
        pytest.skip("excused: " + EXCUSED[test_id])
    cls_name, method = test_id.split(".")
    case = _fastprof_classes(CPYTHON)[cls_name](method)
    result = unittest.TestResult()
    # no collection inside: it would add fastprof's own <gc> row, which
    # CPython's expected output cannot hold (whether one comes depends on
    # the allocations before it: a fresh checkout on 3.9 met one)
    collecting = gc.isenabled()
    gc.disable()
    try:
        case.run(result)
    finally:
        if collecting:
            gc.enable()
    problems = result.errors + result.failures
    if test_id in PENDING and not USING_CPROFILE:
        assert problems, "%s passes now: remove it from PENDING" % test_id
        pytest.xfail("pending: " + PENDING[test_id])
    assert not problems, "\n".join(text for _case, text in problems)
    assert not result.unexpectedSuccesses
    if result.skipped:
        pytest.skip("skipped by CPython's test: %s" % result.skipped[0][1])


def test_the_cpython_tests_are_all_there():
    """A renamed or emptied test class must not make this file pass by
    running nothing; every excuse must name a test that exists."""
    if CPYTHON is None:
        tool_missing(NO_TESTS_WHY)
    must = {"CProfileTest.test_cprofile", "CProfileTest.test_calling_conventions",
            "CProfileTest.test_run", "CProfileTest.test_runctx",
            "CProfileTest.test_profile_enable_disable", "TestCommandLine.test_sort"}
    assert must <= set(TEST_IDS)
    known_elsewhere = {"CProfileTest.test_crash_with_not_enough_args",
                       "CProfileTest.test_enable_in_external_timer",
                       "CProfileTest.test_clear_with_nested_calls",
                       "CProfileTest.test_evil_external_timer",
                       "CProfileTest.test_second_profiler"}
    for test_id in EXCUSED:
        assert test_id in TEST_IDS or test_id in known_elsewhere, test_id


# -- fastprof's side of the excused tests ----------------------------------------

@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is 3.12+")
def test_monitoring_tool_while_enabled():
    mon = sys.monitoring
    before = [mon.get_tool(i) for i in range(6)]
    prof = fastprof.Profile()
    with prof as entered:
        assert entered is prof
        during = [mon.get_tool(i) for i in range(6)]
        assert during.count("fastprof") == 1
        assert during.index("fastprof") in (2, 3, 4)
    assert [mon.get_tool(i) for i in range(6)] == before


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is 3.12+")
def test_second_profiler_runs_alongside():
    def work():
        return sum(range(3))

    pr, pr2 = fastprof.Profile(), fastprof.Profile()
    pr.enable()
    try:
        pr2.enable()
        work()
        pr2.disable()
    finally:
        pr.disable()
    for p in (pr, pr2):
        p.create_stats()
        rows = [v for k, v in p.stats.items() if k[2] == "work"]
        assert [r[:2] for r in rows] == [(1, 1)]


@pytest.mark.parametrize("action", ["disable", "enable"])
def test_timer_that_disables_the_profiler(action):
    """gh-120289's and gh-157639's scenarios with fastprof: the timer
    disables (or enables) the profiler on a call event, then on a return
    event; nothing crashes and the profiler ends disabled, its tool id
    freed, with readable stats."""
    for disable_at in (1, 2):
        count = [0]

        def timer():
            count[0] += 1  # noqa: B023 - called within this iteration only
            if count[0] == disable_at:  # noqa: B023 - called within this iteration only
                try:
                    getattr(prof, action)()  # noqa: B023 - called within this iteration only
                except Exception:
                    pass
            return count[0]  # noqa: B023 - called within this iteration only

        prof = fastprof.Profile(timer)
        prof.enable()
        (lambda: None)()
        try:
            prof.disable()
        except Exception:
            pass
        assert not prof.enabled
        prof.getstats()
        prof.clear()
        if sys.version_info >= (3, 12):
            assert "fastprof" not in [sys.monitoring.get_tool(i) for i in range(6)]
        else:
            assert sys.getprofile() is None


# -- what CPython's tests found --------------------------------------------------

def _bad_descriptor_calls():
    for _ in range(3):
        try:
            bytes.find(str())  # gh-132250: a self the descriptor cannot bind
        except TypeError:
            pass
    try:
        bytes.find()  # no self at all
    except TypeError:
        pass
    b"abc".find(b"b")
    bytes.find(b"abc", b"c")  # unbound, with a self it binds: recorded
    sorted([3, 1], key=int)


def _counts(stats):
    return {k: v[:2] for k, v in stats.items() if "disable" not in k[2]}


def _edges(stats):
    return {(c, k): v[:2] for k, v in stats.items() for c, v in v[4].items()}


@pytest.mark.skipif(USING_CPROFILE, reason="cProfile 3.12.0-3.12.10, 3.13.0-3.13.3 raise "
                    "SystemError here (gh-132250)")
def test_unbindable_method_descriptor_is_not_recorded():
    """``bytes.find(str())`` under the profiler: the program sees its own
    TypeError and nothing else, ``disable()`` reports no MemoryError (it did
    on 3.12+), and the call is not recorded, as cProfile records it: the
    bound calls of the same method are, twice."""
    prof = profiler_class()()
    prof.enable()
    _bad_descriptor_calls()
    prof.disable()  # raised MemoryError: fastprof ran out of memory
    prof.create_stats()
    find = ("~", 0, "<method 'find' of 'bytes' objects>")
    assert prof.stats[find][:2] == (2, 2)
    me = [k for k in prof.stats if k[2] == "_bad_descriptor_calls"]
    assert list(prof.stats[find][4]) == me
    assert prof.stats[("~", 0, "<built-in method builtins.sorted>")][:2] == (1, 1)

    # cProfile as the oracle where it copes (3.12.0-3.12.10 and 3.13.0-3.13.3
    # raise SystemError from its callback: CPython's own gh-132250)
    import cProfile
    cp = cProfile.Profile()
    try:
        cp.enable()
        _bad_descriptor_calls()
        cp.disable()
    except SystemError:
        cp.disable()
        assert sys.version_info >= (3, 12)
        return
    cp.create_stats()
    assert _counts(prof.stats) == _counts(cp.stats)
    assert _edges(prof.stats) == _edges(cp.stats)


@pytest.mark.skipif(USING_CPROFILE, reason="as above")
def test_unbindable_method_descriptor_inside_a_recorded_call_of_it():
    """The unrecorded call's return must not close a recorded call of the
    same descriptor further out."""
    calls = []

    def key(x):
        try:
            list.sort(x)  # list.sort with an int: TypeError, not recorded
        except TypeError:
            calls.append(x)
        return x

    def work():
        data = [2, 1]
        list.sort(data, key=key)
        return data

    prof = profiler_class()()
    prof.enable()
    work()
    prof.disable()
    prof.create_stats()
    sort = ("~", 0, "<method 'sort' of 'list' objects>")
    assert prof.stats[sort][:2] == (1, 1)
    key_rows = [v for k, v in prof.stats.items() if k[2] == "key"]
    assert [r[:2] for r in key_rows] == [(2, 2)]
    assert list(key_rows[0][4]) == [sort]  # key's caller: the recorded sort
    assert calls == [2, 1]


@pytest.mark.skipif(sys.version_info >= (3, 12),
                    reason="3.12+: profilers are sys.monitoring tools, not the profile hook")
@pytest.mark.parametrize("threads", [False, True])
def test_getprofile_is_the_enabled_profiler(threads):
    """As with cProfile on 3.9-3.11 (CPython's test_profile_enable_disable):
    sys.getprofile() returns the enabled profiler, None after disable()."""
    import threading
    if threads and USING_CPROFILE:
        pytest.skip("threads=True is fastprof's")
    prof = profiler_class()(**({"threads": True} if threads else {}))
    before = sys.getprofile()
    prof.enable()
    try:
        assert sys.getprofile() is prof
        seen = []
        t = threading.Thread(target=lambda: seen.append(sys.getprofile()))
        t.start()
        t.join()
        if threads:  # another thread's hook object is fastprof's own
            assert seen[0] is not None and seen[0] is not prof
        else:
            assert seen == [before]
    finally:
        prof.disable()
    assert sys.getprofile() is before
    prof.create_stats()
    assert [v[:2] for k, v in prof.stats.items() if k[2] == "<lambda>"] == (
        [(1, 1)] if threads else [])
