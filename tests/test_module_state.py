"""The C module keeps its state per module instance (issue 13, item 5):
importing `fastprof._fastprof` again, or in another interpreter, gives a
working module with its own types, independent of the first one.

Each scenario runs in a fresh process: re-importing the C module in the
test process would leave fastprof.Profile and the new module's types apart.
"""
import json
import sys
import textwrap

import pytest

import helpers

pytestmark = pytest.mark.skipif(helpers.USING_CPROFILE, reason="checks fastprof's own C module")

# Profiles fib(12) (465 calls) and writes what it saw to OUT as JSON.
PROFILE_FIB = textwrap.dedent("""
    import gc, json
    import fastprof._fastprof as mod
    import fastprof.recording.profiler  # Profile, built on the first module (the package face is lazy)

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    def profile_fib(cls):
        p = cls(gc=True)
        p.enable()
        fib(12)
        gc.collect()
        p.disable()
        counts = {e.code if isinstance(e.code, str) else e.code.co_name: e.callcount for e in p.getstats()}
        return {"fib": counts.get("fib"), "gc": counts.get("<gc>", 0),
                "entry_type": type(p.getstats()[0]).__name__}
""")


def run(code):
    r = helpers.run_python(["-c", code], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_reimport_gives_an_independent_working_module():
    out = run(PROFILE_FIB + textwrap.dedent("""
        import importlib, sys
        first = mod
        del sys.modules["fastprof._fastprof"]
        second = importlib.import_module("fastprof._fastprof")
        result = {
            "new_module": second is not first,
            "new_types": second.Profiler is not first.Profiler
                         and second.profiler_entry is not first.profiler_entry,
            "second": profile_fib(second.Profiler),
        }
        p2 = second.Profiler()
        # the second module's profiler lives on alone, then the first works as before
        del second, p2
        sys.modules.pop("fastprof._fastprof")
        gc.collect()
        result["first"] = profile_fib(first.Profiler)
        import fastprof
        result["profile_class_module_ok"] = fastprof.Profile.__mro__[1] is first.Profiler
        print(json.dumps(result))
    """))
    assert out["new_module"] and out["new_types"]
    for which in ("first", "second"):
        assert out[which]["fib"] == 465
        assert out[which]["gc"] >= 1
        assert out[which]["entry_type"] == "profiler_entry"
    assert out["profile_class_module_ok"]


def subinterpreter_runner():
    """A function running code in a new subinterpreter (raising on failure),
    and whether that interpreter has its own GIL; None where there is no way."""
    if sys.version_info >= (3, 14):
        from concurrent import interpreters

        def run_in(code):
            interp = interpreters.create()        # isolated: its own GIL
            try:
                interp.exec(code)
            finally:
                interp.close()
        return run_in, True
    if sys.version_info >= (3, 13):
        import _interpreters

        def run_in(code):
            interp = _interpreters.create()       # the 'isolated' config: its own GIL
            try:
                err = _interpreters.run_string(interp, code)
                if err is not None:
                    raise RuntimeError("subinterpreter failed: %r" % (err,))
            finally:
                _interpreters.destroy(interp)
        return run_in, True
    if sys.version_info >= (3, 12):
        import _xxsubinterpreters

        def run_in(code):
            interp = _xxsubinterpreters.create()  # isolated=True: its own GIL
            try:
                _xxsubinterpreters.run_string(interp, code)
            finally:
                _xxsubinterpreters.destroy(interp)
        return run_in, True
    try:
        import _testcapi
    except ImportError:
        return None, False

    def run_in(code):                             # a legacy subinterpreter, sharing the GIL
        if _testcapi.run_in_subinterp(code) != 0:
            raise RuntimeError("subinterpreter failed")
    return run_in, False


def test_subinterpreter_gets_its_own_working_module(tmp_path):
    out_file = tmp_path / "sub.json"
    sub_code = PROFILE_FIB + textwrap.dedent("""
        result = profile_fib(mod.Profiler)
        result["profiler_type_id"] = id(mod.Profiler)
        with open(%r, "w") as f:
            json.dump(result, f)
    """ % str(out_file))
    out = run(PROFILE_FIB + textwrap.dedent("""
        import sys
        sys.path.insert(0, %r)
        from test_module_state import subinterpreter_runner
        run_in, own_gil = subinterpreter_runner()
        if run_in is None:
            print(json.dumps({"skip": True}))
            raise SystemExit(0)
        sub_code = "import sys; sys.path[:] = %%r\\n" %% (sys.path,) + %r
        before = profile_fib(mod.Profiler)
        main_profiler = mod.Profiler()
        main_profiler.enable()                    # enabled here while the other interpreter profiles
        run_in(sub_code)
        main_profiler.disable()
        after = profile_fib(mod.Profiler)
        print(json.dumps({"skip": False, "own_gil": own_gil, "before": before, "after": after,
                          "profiler_type_id": id(mod.Profiler)}))
    """ % (helpers.TESTS_DIR, sub_code)))
    if out["skip"]:
        pytest.skip("no way to start a subinterpreter on this build (_testcapi missing)")
    sub = json.loads(out_file.read_text())
    assert sub["fib"] == 465 and sub["entry_type"] == "profiler_entry"
    # 3.9's gc module is single-phase: a subinterpreter's gc.callbacks is the
    # main interpreter's list, which its own collector never reads
    assert sub["gc"] >= 1 or sys.version_info < (3, 10)
    assert sub["profiler_type_id"] != out["profiler_type_id"]      # its own type objects
    assert out["before"]["fib"] == out["after"]["fib"] == 465        # the main module is untouched
    assert out["own_gil"] == (sys.version_info >= (3, 12))
