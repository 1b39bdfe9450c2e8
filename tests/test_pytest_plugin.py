"""The pytest plugin (issue 14, item 4): ``pytest --fastprof[=FILE]`` and
``--fastprof-per-test DIR``.

This repo's test runs put the build on PYTHONPATH without installing it, so
the ``pytest11`` entry point is not registered here: each run loads the
plugin with ``-p fastprof.modes.pytest_plugin``, in a child pytest over a small
generated test file. The entry point itself is checked on the installed
wheel (tests/test_packaging.py). cProfile, run here on the same functions,
gives the expected call counts.
"""
import cProfile
import os
import pstats
import sys
import textwrap

import pytest

from helpers import (
    TESTS_DIR,
    USING_CPROFILE,
    check_fast_like_cprofile,
    check_scoped_like_cprofile,
    run_python,
    settrace_hits,
    subprocess_env,
)

PLUGIN = ["-p", "fastprof.modes.pytest_plugin"]

# Each phase calls fib with its own n: setup fib(12), the tests fib(15),
# fib(5), a thread's fib(11), teardown fib(10); collection (the module's
# import) calls fib(3), which must not be in the profile.
TESTS = textwrap.dedent("""\
    import threading
    import pytest

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    fib(3)

    @pytest.fixture
    def data():
        fib(12)
        yield 1
        fib(10)

    def test_uses_fixture(data):
        assert fib(15) == 610

    def test_fails():
        assert fib(5) == 6

    def test_thread():
        t = threading.Thread(target=fib, args=(11,))
        t.start()
        t.join()

    @pytest.fixture
    def broken():
        fib(7)
        raise RuntimeError("fixture broke")

    def test_setup_error(broken):
        pass

    @pytest.mark.parametrize("x", ["a b", "c/d"])
    def test_param(x):
        fib(4)
""")


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def fib_calls(*ns):
    """How many calls of fib cProfile counts for fib(n) for each n, summed."""
    total = 0
    for n in ns:
        prof = cProfile.Profile()
        prof.runcall(fib, n)
        stats = pstats.Stats(prof).stats
        total += [v[1] for k, v in stats.items() if k[2] == "fib"][0]
    return total


def make_tests(tmp_path, text=TESTS, name="test_work.py"):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / name).write_text(text)
    return tmp_path / name


def run_pytest(tmp_path, *args, cwd=None):
    return run_python(["-m", "pytest", "-p", "no:cacheprovider"] + list(args),
                      cwd=str(cwd or tmp_path), env=subprocess_env(PYTEST_ADDOPTS=""),
                      timeout=300)


def fib_row(path, filename="test_work.py"):
    stats = pstats.Stats(str(path)).stats
    rows = [v for k, v in stats.items()
            if k[2] == "fib" and os.path.basename(k[0]) == filename]
    assert len(rows) == 1, sorted(stats)
    return rows[0], stats


def test_profiles_setup_call_teardown_and_threads(tmp_path):
    make_tests(tmp_path)
    out = tmp_path / "out.prof"
    r = run_pytest(tmp_path, *PLUGIN, "--fastprof=%s" % out, "test_work.py")
    assert r.returncode == 1, r.stdout + r.stderr          # one failure, one error
    assert "1 failed, 4 passed, 1 error" in r.stdout, r.stdout
    (cc, nc, tt, ct, callers), stats = fib_row(out)
    # fixture setup + teardown, the tests, the thread, the broken fixture, the
    # two parametrized tests; not the fib(3) of the module's import
    assert nc == fib_calls(12, 15, 10, 5, 11, 7, 4, 4), nc
    assert tt > 0 and ct >= tt
    names = {(os.path.basename(k[0]), k[2]) for k in stats}
    assert ("test_work.py", "<module>") not in names          # collection is not profiled
    assert ("test_work.py", "test_uses_fixture") in names
    # nor the plugin's own calls (other packages' pytest_plugin.py, anyio's, may run)
    assert not [k for k in stats if k[0].endswith(os.path.join("fastprof", "modes", "pytest_plugin.py"))]
    assert not [k for k in stats if "disable" in k[2]]
    assert not [k for k in stats if k[2] == "<built-in method time.perf_counter>"]


def test_terminal_summary(tmp_path):
    # fib(20), not fib(15), in the test: fib's own time must lead the top ten
    # even on a loaded machine (at fib(15) a thread's lock waits and pytest's
    # own functions pushed it out of the list once, on 3.14)
    assert "assert fib(15) == 610" in TESTS
    make_tests(tmp_path, TESTS.replace("assert fib(15) == 610", "assert fib(20) == 6765"))
    out = tmp_path / "out.prof"
    # raw times: with the cost taken out a noisy calibration could still
    # leave fib's tiny calls below the lock waits
    r = run_pytest(tmp_path, *PLUGIN, "--fastprof-no-compensate", "--fastprof=%s" % out)
    text = r.stdout
    summary = text[text.index("= fastprof ="):]
    assert "profiled time" in summary and "in 6 tests" in summary
    slowest = summary[summary.index("slowest tests:"):summary.index("top functions")]
    assert "test_work.py::test_uses_fixture" in slowest
    assert len([line for line in slowest.splitlines() if "test_work.py::" in line]) == 5
    top = summary[summary.index("top functions by own time:"):]
    assert "fib (test_work.py:4)" in top
    calls = fib_calls(12, 20, 10, 5, 11, 7, 4, 4)
    row = [line for line in top.splitlines() if "fib (test_work.py:4)" in line][0]
    assert row.split()[-3] == str(calls), row
    assert "profile written to %s" % out in summary


def test_default_file_goes_to_the_rootdir(tmp_path):
    make_tests(tmp_path, "def test_a():\n    pass\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    # --fastprof after the paths: nothing for it to swallow
    r = run_pytest(tmp_path, *PLUGIN, str(tmp_path / "test_work.py"), "--fastprof", cwd=sub)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "fastprof.prof").is_file()
    assert not (sub / "fastprof.prof").exists()
    assert "profile written to %s" % (tmp_path / "fastprof.prof") in r.stdout


def test_stop_at_first_failure_still_writes(tmp_path):
    make_tests(tmp_path)
    out = tmp_path / "x.prof"
    r = run_pytest(tmp_path, *PLUGIN, "-x", "--fastprof=%s" % out)
    assert r.returncode == 1 and "1 failed, 1 passed" in r.stdout, r.stdout
    (_cc, nc, _tt, _ct, _callers), _stats = fib_row(out)
    assert nc == fib_calls(12, 15, 10, 5)                     # the two tests that ran


@pytest.mark.parametrize("name,check", [
    ("out.html", lambda text: "<html" in text.lower()),
    ("out.callgrind", lambda text: "\nfn=" in text and "events:" in text),
    ("out.collapsed", lambda text: "test_uses_fixture (test_work.py:15);fib (test_work.py:4)" in text),
])
def test_format_follows_the_name(tmp_path, name, check):
    make_tests(tmp_path)
    # raw times: a collapsed line of 0 µs is dropped, and under ASan the
    # calibrated cost per event can exceed what fib's tiny calls cost
    r = run_pytest(tmp_path, *PLUGIN, "--fastprof-no-compensate", "--fastprof=%s" % name)
    path = tmp_path / name
    assert path.is_file(), r.stdout + r.stderr
    assert check(path.read_text()), path.read_text()[:500]


def test_one_profile_per_test(tmp_path):
    make_tests(tmp_path)
    per = tmp_path / "per"                 # made by the plugin
    out = tmp_path / "all.prof"
    r = run_pytest(tmp_path, *PLUGIN, "--fastprof-per-test", str(per), "--fastprof=%s" % out)
    assert r.returncode == 1, r.stdout + r.stderr
    files = sorted(p.name for p in per.iterdir())
    assert files == sorted([
        "test_work.py_test_uses_fixture.prof", "test_work.py_test_fails.prof",
        "test_work.py_test_thread.prof", "test_work.py_test_setup_error.prof",
        "test_work.py_test_param_a_b.prof", "test_work.py_test_param_c_d.prof"]), files
    expected = {"test_uses_fixture": (12, 15, 10), "test_fails": (5,), "test_thread": (11,),
                "test_setup_error": (7,), "test_param_a_b": (4,), "test_param_c_d": (4,)}
    for test, ns in expected.items():
        (_cc, nc, _tt, _ct, _c), _s = fib_row(per / ("test_work.py_%s.prof" % test))
        assert nc == fib_calls(*ns), test
    (_cc, nc, _tt, _ct, _c), _s = fib_row(out)             # the sum of them all
    assert nc == fib_calls(12, 15, 10, 5, 11, 7, 4, 4)
    assert "6 per-test profiles written to %s" % per in r.stdout


def test_works_without_the_cache_plugin(tmp_path):
    # every run here has -p no:cacheprovider; this one has nothing else
    make_tests(tmp_path, "def test_a():\n    pass\n")
    r = run_pytest(tmp_path, *PLUGIN, "--fastprof=a.prof")
    assert r.returncode == 0 and (tmp_path / "a.prof").is_file(), r.stdout + r.stderr
    assert not (tmp_path / ".pytest_cache").exists()


def test_imports_nothing_without_its_options(tmp_path):
    make_tests(tmp_path, textwrap.dedent("""\
        import sys

        def test_nothing_imported(pytestconfig):
            assert "fastprof.modes.pytest_plugin" in sys.modules      # loaded, as every plugin
            heavy = [m for m in ("fastprof._fastprof", "fastprof.recording.profiler",
                                 "fastprof.exports", "fastprof.tools.merge",
                                 "fastprof.data.profile_file", "fastprof.tools.view", "fastprof.data.names",
                                 "fastprof.recording.thread_names")
                     if m in sys.modules]
            assert heavy == []
            assert pytestconfig.pluginmanager.get_plugin("fastprof-session") is None
        """))
    r = run_pytest(tmp_path, *PLUGIN)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "= fastprof =" not in r.stdout


def test_a_test_path_taken_for_the_file_is_refused(tmp_path):
    make_tests(tmp_path, "def test_a():\n    pass\n")
    r = run_pytest(tmp_path, *PLUGIN, "--fastprof", "test_work.py")
    assert r.returncode == 4, r.stdout + r.stderr
    assert ("--fastprof took 'test_work.py' for its FILE: write --fastprof=FILE, or put "
            "--fastprof after the test paths") in r.stderr
    assert not (tmp_path / "test_work.py.prof").exists()


def test_unwritable_output_is_a_usage_error(tmp_path):
    make_tests(tmp_path, "def test_a():\n    pass\n")
    r = run_pytest(tmp_path, *PLUGIN, "--fastprof=%s" % (tmp_path / "no" / "out.prof"))
    assert r.returncode == 4, r.stdout + r.stderr
    assert "fastprof: cannot write %s: directory %s does not exist" % (
        tmp_path / "no" / "out.prof", tmp_path / "no") in r.stderr
    assert "1 passed" not in r.stdout                         # before any test ran


# -- --fastprof-lines, --fastprof-only, --fastprof-fast ---------------------------

fastprof_only = pytest.mark.skipif(USING_CPROFILE, reason="fastprof-only options")


@fastprof_only
def test_run_options_help_is_spelled_the_plugins_way():
    from fastprof.modes.pytest_plugin import _respelled
    text = "with -o FILE.prof, kept (fastprof view FILE --memory); the --lines syntax, --memory"
    assert _respelled(text) == ("with --fastprof=FILE.prof, kept (fastprof view FILE --memory); "
                                "the --fastprof-lines syntax, --fastprof-memory")


def run_pytest_with_corpus(tmp_path, *args):
    """run_pytest with tests/ importable (lines_corpus, only_app, only_lib)."""
    env = subprocess_env(PYTEST_ADDOPTS="")
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], TESTS_DIR])
    return run_python(["-m", "pytest", "-p", "no:cacheprovider"] + PLUGIN + list(args),
                      cwd=str(tmp_path), env=env, timeout=300)


def hits_of(path):
    from fastprof.data.profile_file import load_profile
    from helpers import line_hits
    return line_hits(load_profile(str(path)).lines)


@fastprof_only
def test_lines_equal_settrace_in_the_profile_and_each_tests(tmp_path):
    import lines_corpus
    make_tests(tmp_path, "import lines_corpus\n\n"
                         "def test_a():\n    lines_corpus.run_all()\n\n"
                         "def test_b():\n    lines_corpus.run_all()\n")
    out, per_test = tmp_path / "out.prof", tmp_path / "each"
    r = run_pytest_with_corpus(tmp_path, "--fastprof=%s" % out, "--fastprof-per-test",
                               str(per_test), "--fastprof-lines", "lines_corpus",
                               "--fastprof-lines", "lines_corpus:nothing_here")
    assert r.returncode == 0, r.stdout + r.stderr
    expected = settrace_hits(lines_corpus.run_all, "lines_corpus")
    assert len(expected) >= 10
    # each test's own file: one run_all; the session's: both, summed
    for name in ("test_work.py_test_a", "test_work.py_test_b"):
        assert hits_of(per_test / (name + ".prof")) == expected, name
    assert hits_of(out) == {k: {n: 2 * h for n, h in v.items()} for k, v in expected.items()}
    assert "fastprof: --fastprof-lines lines_corpus:nothing_here: no function that ran " \
           "matches it" in r.stdout
    assert "line stats of %d functions in the profile" % len(expected) in r.stdout


@fastprof_only
def test_only_keeps_the_app_with_cprofiles_counts(tmp_path):
    import only_app
    make_tests(tmp_path, "import only_app\n\ndef test_app():\n    only_app.main()\n")
    out = tmp_path / "out.prof"
    r = run_pytest_with_corpus(tmp_path, "--fastprof=%s" % out, "--fastprof-only", "only_app")
    assert r.returncode == 0, r.stdout + r.stderr
    full = cProfile.Profile()
    full.runcall(only_app.main)
    # the test function and pytest's runner are out of scope: only the app
    # (which main() is all of), with cProfile's counts and direct C calls
    check_scoped_like_cprofile(pstats.Stats(full).stats, pstats.Stats(str(out)).stats,
                               lambda key: key[0].endswith("only_app.py"))
    assert "no function that ran matches it" not in r.stdout


@fastprof_only
@pytest.mark.skipif(sys.version_info[:2] == (3, 13), reason="fast mode is refused on 3.13")
def test_fast_has_no_c_functions_and_cprofiles_counts(tmp_path):
    # only_app's deterministic parts (slow() loops on the clock)
    work = ("import only_app, only_lib\n\n"
            "def work():\n    only_app.work(20)\n    sum(only_app.gen(5))\n"
            "    only_lib.call_back(only_app.square, 4)\n")
    make_tests(tmp_path, work + "\n\ndef test_app():\n    work()\n")
    out = tmp_path / "out.prof"
    r = run_pytest_with_corpus(tmp_path, "--fastprof=%s" % out, "--fastprof-fast")
    assert r.returncode == 0, r.stdout + r.stderr
    ns = {}
    exec(work, ns)
    oracle = cProfile.Profile(builtins=False)
    oracle.runcall(ns["work"])
    expected = {k: v for k, v in pstats.Stats(oracle).stats.items()
                if os.path.basename(k[0]) in ("only_app.py", "only_lib.py")}
    assert len(expected) >= 6
    check_fast_like_cprofile(expected, pstats.Stats(str(out)).stats)


@fastprof_only
@pytest.mark.parametrize("flag, on", [(None, True), ("--fastprof-no-compensate", False)])
def test_no_compensate_is_in_the_file(tmp_path, flag, on):
    from fastprof.data.profile_file import load_profile
    make_tests(tmp_path, "def f():\n    return 1\n\ndef test_a():\n    f()\n")
    out = tmp_path / "out.prof"
    r = run_pytest_with_corpus(tmp_path, "--fastprof=%s" % out, *([flag] if flag else []))
    assert r.returncode == 0, r.stdout + r.stderr
    assert load_profile(str(out)).compensation["on"] is on


def test_no_compensate_needs_fastprof(tmp_path):
    make_tests(tmp_path, "def test_a():\n    pass\n")
    r = run_pytest(tmp_path, *PLUGIN, "--fastprof-no-compensate")
    assert r.returncode == 4, r.stdout + r.stderr
    assert "--fastprof-no-compensate needs --fastprof" in r.stderr


@fastprof_only
@pytest.mark.parametrize("args, message", [
    (["--fastprof-fast", "--fastprof-lines", "x"],
     "fastprof: --fastprof-fast cannot be combined with --fastprof-lines (not supported yet)"),
    (["--fastprof-only", "x", "--fastprof-fast"],
     "fastprof: --fastprof-fast cannot be combined with --fastprof-only (not supported yet)"),
    (["--fastprof-lines", "bad:"], "fastprof: --fastprof-lines: bad function pattern"),
    (["--fastprof-lines-from", "missing.prof"], "fastprof: --fastprof-lines-from: "),
])
def test_scope_option_errors_are_one_line(tmp_path, args, message):
    make_tests(tmp_path, "def test_a():\n    pass\n")
    r = run_pytest(tmp_path, *PLUGIN, "--fastprof=out.prof", *args)
    assert r.returncode == 4, r.stdout + r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and message in errors[0], r.stderr
    assert "1 passed" not in r.stdout


@fastprof_only
@pytest.mark.skipif(sys.version_info[:2] != (3, 13), reason="fast mode is refused on 3.13 only")
def test_fast_on_3_13_is_a_usage_error(tmp_path):
    make_tests(tmp_path, "def test_a():\n    pass\n")
    r = run_pytest(tmp_path, *PLUGIN, "--fastprof=out.prof", "--fastprof-fast")
    assert r.returncode == 4, r.stdout + r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and "not available on Python 3.13" in errors[0], r.stderr


def test_scope_options_need_fastprof(tmp_path):
    make_tests(tmp_path, "def test_a():\n    pass\n")
    r = run_pytest(tmp_path, *PLUGIN, "--fastprof-lines", "x")
    assert r.returncode == 4, r.stdout + r.stderr
    assert "fastprof: --fastprof-lines needs --fastprof[=FILE], --fastprof-per-test DIR or --fastprof-counts DIR" \
        in r.stderr


# -- pytest-xdist: the workers' profiles summed by the controller -----------------

@fastprof_only
def test_xdist_workers_profiles_are_summed(tmp_path):
    pytest.importorskip("xdist", reason="pytest-xdist (requirements-test.txt)")
    import lines_corpus
    ns = (12, 15, 10, 5, 11, 7)
    make_tests(tmp_path, "import lines_corpus\n\n"
                         "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\n"
                         "import pytest\n\n@pytest.mark.parametrize('n', %r)\n"
                         "def test_fib(n):\n    fib(n)\n    lines_corpus.run_all()\n" % (ns,))
    out, per_test, tmp = tmp_path / "out.prof", tmp_path / "each", tmp_path / "tmp"
    tmp.mkdir()
    env = subprocess_env(PYTEST_ADDOPTS="", TMPDIR=str(tmp))
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], TESTS_DIR])
    r = run_python(["-m", "pytest", "-p", "no:cacheprovider"] + PLUGIN
                   + ["-n", "2", "--fastprof=%s" % out, "--fastprof-per-test", str(per_test),
                      "--fastprof-lines", "lines_corpus"],
                   cwd=str(tmp_path), env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 workers [6 items]" in r.stdout, r.stdout
    # every worker's tests in FILE: fib's calls and run_all's line hits, summed
    (_cc, nc, _tt, _ct, _callers), _stats = fib_row(out)
    assert nc == fib_calls(*ns)
    expected = settrace_hits(lines_corpus.run_all, "lines_corpus")
    assert hits_of(out) == {k: {n: len(ns) * h for n, h in v.items()}
                            for k, v in expected.items()}
    assert len(list(per_test.iterdir())) == len(ns)
    summary = r.stdout[r.stdout.index("= fastprof ="):]
    assert "in %d tests" % len(ns) in summary and "profile written to %s" % out in summary
    assert "%d per-test profiles written" % len(ns) in summary
    # the workers' hand-over directory is gone (pytest's own tmp_path base stays)
    assert [p.name for p in tmp.iterdir() if p.name.startswith("fastprof")] == []


@fastprof_only
def test_lines_from_an_earlier_profile(tmp_path):
    import lines_corpus

    from fastprof.recording.line_profiling import top_functions
    make_tests(tmp_path, "import lines_corpus\n\n"
                         "def test_a():\n    lines_corpus.loop_branches(30000)\n"
                         "    lines_corpus.caught(1000)\n")
    old, new = tmp_path / "old.prof", tmp_path / "new.prof"
    # the earlier profile keeps lines_corpus's two functions only (a preemption
    # in one of pytest's own could put it on top); which of the two has more
    # own time is the clock's: the check holds for either
    r = run_pytest_with_corpus(tmp_path, "--fastprof=%s" % old, "--fastprof-only", "lines_corpus")
    assert r.returncode == 0, r.stdout + r.stderr
    wanted = top_functions(str(old), 1)
    assert [k[2] for k in wanted] in (["loop_branches"], ["caught"]), wanted
    r = run_pytest_with_corpus(tmp_path, "--fastprof=%s" % new,
                               "--fastprof-lines-from", "%s:1" % old)
    assert r.returncode == 0, r.stdout + r.stderr
    got = hits_of(new)
    assert list(got) == wanted
    everything = settrace_hits(lambda: (lines_corpus.loop_branches(30000), lines_corpus.caught(1000)),
                               "lines_corpus")
    assert got == {wanted[0]: everything[wanted[0]]}


# -- --fastprof-per-test's running sum (issue 23, item 5) --------------------

def test_per_test_sum_is_the_sum_of_the_per_test_files(tmp_path):
    """The session's profile is the per-test files summed: stats and the
    threads of one name as one thread (MainThread, then test_thread's thread)."""
    if USING_CPROFILE:
        pytest.skip("the plugin")
    from fastprof.data.model import merge_stats
    from fastprof.data.profile_file import load_profile
    from fastprof.tools.merge import merge_profiles
    make_tests(tmp_path)
    per, out = tmp_path / "per", tmp_path / "all.prof"
    r = run_pytest(tmp_path, *PLUGIN, "--fastprof-per-test", str(per), "--fastprof=%s" % out)
    assert r.returncode == 1, r.stdout + r.stderr
    files = [load_profile(str(p)) for p in sorted(per.iterdir())]
    total = load_profile(str(out))
    expected = merge_profiles(files).stats
    assert set(total.stats) == set(expected)
    for key, row in expected.items():
        assert total.stats[key][:2] == row[:2], key
        assert total.stats[key][2:4] == pytest.approx(row[2:4], rel=1e-9, abs=1e-12), key
    by_name = {}
    for f in files:
        for t in f.threads:
            by_name.setdefault(t["name"], []).append(t["stats"])
    got = {t["name"]: t["stats"] for t in total.threads}
    assert sorted(got) == sorted(by_name) and len(got) == 2, sorted(got)
    for name, tables in by_name.items():
        want = merge_stats(tables)
        assert {k: v[:2] for k, v in got[name].items()} == {k: v[:2] for k, v in want.items()}, name


def call_paths_of(callpaths):
    """{path from the root as function keys: (calls, own time, cumtime)}."""
    out, paths = {}, []
    for parent, func, calls, tt, ct in callpaths.nodes:
        path = (paths[parent] if parent >= 0 else ()) + (tuple(callpaths.functions[func]),)
        paths.append(path)
        prev = out.get(path, (0, 0.0, 0.0))
        out[path] = (prev[0] + calls, prev[1] + tt, prev[2] + ct)
    return out


@fastprof_only
@pytest.mark.parametrize("lines", [False, True], ids=["folded", "lines"])
def test_per_test_call_paths_sum_is_the_merge_of_the_files(tmp_path, lines):
    """With a call-path format (the general path for each file), the
    session's sum of call paths, folded in C (with line stats: merge's sum)
    is the per-test files merged."""
    from fastprof.data.profile_file import load_profile
    from fastprof.modes import run_options
    from fastprof.modes.per_test import TestProfiles
    from fastprof.modes.pytest_plugin import HiddenRows
    from fastprof.tools.merge import merge_profiles
    options = {"threads": True, "callpaths": True, "lines": ["%s:fib" % __name__] if lines else None}
    tests = TestProfiles(options, HiddenRows("<none>"))  # (nothing hidden)
    prof = run_options.new_profile(options)
    prof.paths_memo = tests.paths_memo
    files = []
    for i, work in enumerate([lambda: fib(8), lambda: (fib(5), sorted([2, 1])), lambda: fib(8)]):
        prof.enable()
        work()
        prof.disable()
        path = tmp_path / ("t%d.prof" % i)
        data = tests.write(prof, str(path))
        assert data is not None  # call paths: the general path
        tests.add(prof, data)
        prof.clear()
        files.append(load_profile(str(path)))
    total, want = tests.result(), merge_profiles(files, pair_installs=False)
    got, expected = call_paths_of(total.callpaths), call_paths_of(want.callpaths)
    assert set(got) == set(expected) and len(got) > 3
    for path, (calls, tt, ct) in expected.items():
        assert got[path][0] == calls, path
        assert got[path][1:] == pytest.approx((tt, ct), rel=1e-9, abs=1e-12), path
    assert {k: v[:2] for k, v in total.stats.items()} == {k: v[:2] for k, v in want.stats.items()}
    assert bool(total.lines) == lines


def fake_data(n_funcs, thread_names, offset=0):
    """A ProfileData of *n_funcs* functions, its threads named *thread_names*
    (each with the whole table, as a one-thread profile has)."""
    from fastprof.data.profile_file import ProfileData
    stats = {("f.py", offset + i, "f%d" % (offset + i)): (1, 1, 0.5, 0.5, {}) for i in range(n_funcs)}
    threads = [{"id": i, "ident": 100 + i, "name": name, "stats": dict(stats)}
               for i, name in enumerate(thread_names)]
    return ProfileData(stats, threads=threads)


def test_running_sum_costs_each_input_not_the_sum(monkeypatch):
    """Adding a test's profile folds it into the sum: the rows handled are
    that profile's, however big the sum (before: the sum rebuilt per test)."""
    if USING_CPROFILE:
        pytest.skip("the plugin")
    import fastprof.data.model
    from fastprof.modes import per_test
    handled = []
    real = fastprof.data.model.add_stats
    monkeypatch.setattr(fastprof.data.model, "add_stats",
                        lambda out, table, keys: (handled.append(len(table)), real(out, table, keys)))
    import fastprof.tools.merge
    monkeypatch.setattr(fastprof.tools.merge, "add_stats", fastprof.data.model.add_stats)
    total = per_test.RunningSum()
    for i in range(200):
        total.add(fake_data(5, ["MainThread"], offset=i * 5))  # 5 new functions per test
    assert sum(handled) <= 2 * 200 * 5, sum(handled)
    data = total.result()
    assert len(data.stats) == 1000
    assert [(t["name"], len(t["stats"])) for t in data.threads] == [("MainThread", 1000)]


def test_running_sum_threads_of_one_name_are_one_thread():
    """One thread per test, then a test with two (the single-thread shortcut
    ends): each name's thread sums its tests' tables."""
    if USING_CPROFILE:
        pytest.skip("the plugin")
    from fastprof.modes import per_test
    total = per_test.RunningSum()
    total.add(fake_data(3, ["MainThread"]))
    total.add(fake_data(3, ["MainThread"]))
    total.add(fake_data(2, ["MainThread", "worker"]))
    total.add(fake_data(1, ["MainThread"]))
    data = total.result()
    threads = {t["name"]: t["stats"] for t in data.threads}
    assert sorted(threads) == ["MainThread", "worker"]
    assert {k[1]: v[1] for k, v in threads["MainThread"].items()} == {0: 4, 1: 3, 2: 2}
    assert {k[1]: v[1] for k, v in threads["worker"].items()} == {0: 1, 1: 1}
    assert {k[1]: v[1] for k, v in data.stats.items()} == {0: 4, 1: 3, 2: 2}
    assert sorted(t["id"] for t in data.threads) == [0, 1]


PATHS_COUNTER = textwrap.dedent("""\
    import json, os
    from fastprof.data import portable_names

    calls = {"scans": 0, "whole_scans": 0, "memo": 0, "differ": []}
    _memo, _scan, _whole = (portable_names.PathsMemo.relative_paths,
                            portable_names._module_files_of, portable_names.relative_paths)

    def memo_paths(self, filenames):
        filenames = list(filenames)
        calls["memo"] += 1
        got = _memo(self, filenames)
        want = _whole(filenames)  # what each test's file had before: a scan of its own
        if got != want:
            calls["differ"].append([got, want])
        return got

    def scan(*args, **kwargs):
        calls["scans"] += 1
        return _scan(*args, **kwargs)

    def whole(*args, **kwargs):
        calls["whole_scans"] += 1
        return _whole(*args, **kwargs)

    portable_names.PathsMemo.relative_paths = memo_paths
    portable_names._module_files_of = scan
    portable_names.relative_paths = whole

    def pytest_sessionfinish(session):
        with open(os.environ["COUNTS_OUT"], "w") as f:
            json.dump(calls, f)
""")


def test_per_test_paths_are_taken_once_per_session(tmp_path):
    """--fastprof-per-test: the trailer's relative paths come from one
    PathsMemo for the session, which reads sys.modules again only when it
    changed (here: the first test, and test_b's import), not once per test
    -- and each file's paths are what a scan of its own would give."""
    if USING_CPROFILE:
        pytest.skip("the plugin")
    make_tests(tmp_path, textwrap.dedent("""\
        import pytest

        @pytest.mark.parametrize("n", range(40))
        def test_a(n):
            assert sum(range(n)) >= 0

        def test_b():
            import colorsys  # a module added while the session runs
            assert colorsys.rgb_to_hsv(0, 0, 0)[2] == 0
        """))
    (tmp_path / "conftest.py").write_text(PATHS_COUNTER)
    per, counts = tmp_path / "per", tmp_path / "counts.json"
    env = subprocess_env(PYTEST_ADDOPTS="", COUNTS_OUT=str(counts))
    r = run_python(["-m", "pytest", "-p", "no:cacheprovider"] + PLUGIN
                   + ["--fastprof-per-test", str(per), "-p", "no:randomly"],
                   cwd=str(tmp_path), env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(list(per.iterdir())) == 41
    import json
    calls = json.loads(counts.read_text())
    assert calls["differ"] == []
    assert calls["memo"] == 41
    assert calls["whole_scans"] == 0, calls  # no profile scanned sys.modules for itself
    # every module read: once per oracle call (41), the rest the memo's
    assert 1 <= calls["scans"] - 41 <= 5, calls


# What each per-test file held before the cost cuts of issue 23 item 5 (C
# loops, stats_of_file), written by a conftest beside the plugin's own files
# from the same profiler: the stats by the Python loop entries_to_stats was
# (for the whole table and each thread), the plugin's rows dropped by name,
# the trailer with each thread's stats spelled out.
ORACLE_CONFTEST = textwrap.dedent("""\
    import marshal, os, sys
    import fastprof.recording.profiler
    from fastprof.modes import pytest_plugin

    sys.path.insert(0, os.environ["ORACLE_TESTS_DIR"])
    from stats_oracle import py_entries_to_stats

    ORACLE = os.environ["ORACLE_DIR"]
    PLUGIN_FILE = os.path.splitext(pytest_plugin.__file__)[0]

    def without_plugin_rows(stats):
        own = {k for k in stats if os.path.splitext(k[0])[0] == PLUGIN_FILE}
        own |= {k for k, v in stats.items()
                if k[0] == "~" and "disable" in k[2] and v[4] and set(v[4]) <= own}
        return {k: v[:4] + ({c: e for c, e in v[4].items() if c not in own},)
                for k, v in stats.items() if k not in own}

    real_test_done = pytest_plugin.FastprofSession._test_done

    def test_done(self, nodeid):
        prof = self.profile
        if prof is not None:
            real = fastprof.recording.profiler.entries_to_stats
            fastprof.recording.profiler.entries_to_stats = py_entries_to_stats
            try:
                data = prof.profile_data()
            finally:
                fastprof.recording.profiler.entries_to_stats = real
            data.stats = without_plugin_rows(data.stats)
            data.qualnames = {k: q for k, q in data.qualnames.items() if k in data.stats}
            data.paths = {f: r for f, r in data.paths.items() if f in {k[0] for k in data.stats}}
            for t in data.threads:
                t["stats"] = without_plugin_rows(t["stats"])
            trailer = data.trailer()
            trailer["threads"] = [dict(t) for t in data.threads]
            n = len(os.listdir(ORACLE))
            name = "%04d-%s.prof" % (n, pytest_plugin.safe_file_name(nodeid))
            with open(os.path.join(ORACLE, name), "wb") as f:
                f.write(marshal.dumps(data.stats) + marshal.dumps(trailer))
        return real_test_done(self, nodeid)

    pytest_plugin.FastprofSession._test_done = test_done
""")


@fastprof_only
@pytest.mark.parametrize("lines", [True, False], ids=["lines", "direct"])
def test_per_test_files_and_sum_hold_what_they_held(tmp_path, lines):
    """Each per-test file (a test with a thread, and with --fastprof-lines
    every test, taking the general path; without it the one-thread tests'
    files written by C) reads as the file written the old way from the
    same profiler (stats, threads, qualnames, lines, paths, compensation...),
    its pstats table is the same marshal object, and the session's sum is
    those files summed in test order by fastprof's merge (with lines:
    exactly, the same additions; without: the sum folded in clock ticks,
    the same counts and times to 1e-9), each thread name's stats by
    merge_stats."""
    import marshal

    from fastprof.data.model import merge_stats
    from fastprof.data.profile_file import load_profile
    from fastprof.tools.merge import merge_profiles
    make_tests(tmp_path)
    (tmp_path / "conftest.py").write_text(ORACLE_CONFTEST)
    per, oracle, out = tmp_path / "per", tmp_path / "oracle", tmp_path / "all.prof"
    oracle.mkdir()
    env = subprocess_env(PYTEST_ADDOPTS="", ORACLE_DIR=str(oracle),
                         ORACLE_TESTS_DIR=os.path.dirname(os.path.abspath(__file__)))
    r = run_python(["-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly"] + PLUGIN
                   + ["--fastprof-per-test", str(per), "--fastprof=%s" % out]
                   + (["--fastprof-lines", "test_work:fib"] if lines else []),
                   cwd=str(tmp_path), env=env, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    expected = sorted(oracle.iterdir())
    assert len(expected) == 6 == len(list(per.iterdir()))
    mine = []
    for want_path in expected:
        path = per / want_path.name[5:]
        got, want = load_profile(str(path)), load_profile(str(want_path))
        assert got == want, path.name
        assert bool(got.lines) == lines and got.paths and got.compensation
        assert got.qualnames or sys.version_info < (3, 11)
        with open(str(path), "rb") as f, open(str(want_path), "rb") as g:
            assert marshal.load(f) == marshal.load(g)
        mine.append(got)
    assert [len(p.threads) for p in mine].count(2) == 1  # test_thread's
    total = load_profile(str(out))
    summed = merge_profiles([load_profile(str(p)) for p in expected], pair_installs=False)
    for field in ("qualnames", "lines", "lines_own", "paths", "clock", "only", "fast"):
        assert getattr(total, field) == getattr(summed, field), field
    by_name = {}
    for p in expected:
        for t in load_profile(str(p)).threads:
            by_name.setdefault(t["name"], []).append(t["stats"])
    threads = {t["name"]: t["stats"] for t in total.threads}
    want_threads = {name: merge_stats(tables) for name, tables in by_name.items()}
    if lines:
        assert total.stats == summed.stats and total.compensation == summed.compensation
        assert threads == want_threads
        return
    assert_same_stats(total.stats, summed.stats)
    assert sorted(threads) == sorted(want_threads)
    for name, stats in threads.items():
        assert_same_stats(stats, want_threads[name])
    assert total.compensation["events"] == summed.compensation["events"]
    assert total.compensation["removed"] == pytest.approx(summed.compensation["removed"], rel=1e-9)


def assert_same_stats(got, want):
    """Two pstats dicts: the same rows and callers, counts equal, times to 1e-9."""
    assert list(got) == list(want) or set(got) == set(want)
    for key, row in want.items():
        assert got[key][:2] == row[:2], key
        assert got[key][2:4] == pytest.approx(row[2:4], rel=1e-9, abs=1e-15), key
        assert set(got[key][4]) == set(row[4]), key
        for caller, edge in row[4].items():
            assert got[key][4][caller][:2] == edge[:2], (key, caller)
            assert got[key][4][caller][2:] == pytest.approx(edge[2:], rel=1e-9, abs=1e-15)


MEMORY_TESTS = textwrap.dedent("""\
    import pytest

    def grow(n):
        return [bytearray(1000) for _ in range(n)]

    @pytest.mark.parametrize("n", [100, 300, 600])
    def test_grow(n):
        assert len(grow(n)) == n
""")


def _grow_bytes(path):
    """grow's bytes with callees, and the file's totals."""
    from fastprof.data.profile_file import load_profile
    data = load_profile(str(path))
    (row,) = [r for k, r in data.memory.items() if k[2] == "grow"]
    return row.allocated_incl, data.memory_totals


@fastprof_only
@pytest.mark.parametrize("workers", [0, 2])
def test_memory_in_the_session_and_each_tests_file(tmp_path, workers):
    if workers:
        pytest.importorskip("xdist", reason="pytest-xdist (requirements-test.txt)")
    make_tests(tmp_path, MEMORY_TESTS)
    out, per_test = tmp_path / "out.prof", tmp_path / "each"
    r = run_pytest(tmp_path, *PLUGIN, "--fastprof=%s" % out, "--fastprof-per-test", str(per_test),
                   "--fastprof-memory", *(["-n", str(workers)] if workers else []))
    assert r.returncode == 0, r.stdout + r.stderr
    each = {}
    for f in sorted(per_test.iterdir()):
        n = int(f.name[:-len(".prof")].rsplit("_", 1)[1])  # test_work.py_test_grow_100.prof
        each[n], totals = _grow_bytes(f)
        # each test's own: its blocks of about a kilobyte, its own peak
        assert n * 1000 <= each[n] < n * 1300, (n, each[n])
        assert n * 1000 <= totals["peak"] < n * 1300 + 200_000, (n, totals)
    assert sorted(each) == [100, 300, 600]
    whole, totals = _grow_bytes(out)
    assert whole == sum(each.values())
    # the session is the sum of the tests: the peaks summed too, when the
    # tests were added file by file (the workers', or the per-test sum)
    assert totals["allocations"] == sum(_grow_bytes(f)[1]["allocations"] for f in per_test.iterdir())
