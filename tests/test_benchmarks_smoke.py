"""The benchmark harness runs, on this interpreter, against the fastprof under test.

``benchmarks/run.py timing --smoke`` runs every workload once per mode at tiny
sizes and checks that fastprof's (primitive, total) call counts per function
equal cProfile's; the line-level comparison (``--lines`` and line_profiler on
each workload's hot function) and the ``--only`` benchmark (``scoped``) run
too.  ``run.py accuracy`` and the question scripts of benchmarks/questions/
run briefly; the stored results of benchmarks/results/ still print.
This test never asserts speed: CI machines are too noisy.
"""

import json
import os
import runpy
import subprocess
import sys

import pytest

import fastprof

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "benchmarks")
RUN = os.path.join(BENCH, "run.py")
QUESTIONS = os.path.join(BENCH, "questions")
RESULTS = os.path.join(BENCH, "results")
_WORKLOADS = runpy.run_path(os.path.join(BENCH, "workloads", "__init__.py"))
NAMES = _WORKLOADS["NAMES"]                 # the eight overhead workloads
SCOPE_NAMES = _WORKLOADS["SCOPE_NAMES"]     # the --only benchmark
LINE_MODES = ("fastprof-lines", "line_profiler")


def modes_of(run, name):
    """The modes ``run.py timing`` runs on workload ``name``."""
    out = []
    for m in run["modes"]:
        if m == "fastprof-cpu" and name != "fib":
            continue
        if m in LINE_MODES and name not in NAMES:
            continue
        if m == "fastprof-only" and name not in SCOPE_NAMES:
            continue
        out.append(m)
    return out


def _env():
    """This environment, the fastprof under test first on PYTHONPATH."""
    env = dict(os.environ)
    here = os.path.dirname(os.path.dirname(os.path.abspath(fastprof.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([here] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _harness(name):
    """benchmarks/harness/NAME.py as a module (nothing runs on import)."""
    import importlib
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)
    return importlib.import_module("harness." + name)


def test_benchmark_smoke(tmp_path):
    out, raw = tmp_path / "smoke.json", tmp_path / "smoke-raw.json"
    here = os.path.dirname(os.path.dirname(os.path.abspath(fastprof.__file__)))
    proc = subprocess.run([sys.executable, RUN, "timing", "--smoke", "--json", str(out), "--raw", str(raw)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, env=_env(), timeout=600)
    assert proc.returncode == 0, proc.stdout[-6000:]

    # --json: the summaries alone; --raw: every measurement too, and the same summaries
    summary = json.loads(out.read_text())
    results = json.loads(raw.read_text())
    assert "raw" not in summary["runs"][0]
    assert summary["runs"][0]["summary"] == results["runs"][0]["summary"]
    assert summary["runs"][0]["summary_cpu"] == results["runs"][0]["summary_cpu"]
    assert results["config"]["smoke"] is True
    assert len(results["runs"]) == 1
    run = results["runs"][0]
    assert run["python"] == "%d.%d.%d" % sys.version_info[:3]
    assert run["problems"] == []
    assert not run["standin"]
    # fastprof was imported from the build under test
    ext = run["probe"]["fastprof"]["file"]
    assert os.path.realpath(ext).startswith(os.path.realpath(here)), ext

    assert len(NAMES) >= 7
    assert run["workloads"] == NAMES + SCOPE_NAMES
    for mode in ("none", "floor", "cprofile", "fastprof", "fastprof-cpu", "fastprof-lines",
                 "line_profiler", "fastprof-only"):
        assert mode in run["modes"], (mode, run["probe"].get("floor_error"),
                                      run["probe"].get("line_profiler_error"))

    _check_line_modes(run)
    _check_scope(run)

    for name in NAMES + SCOPE_NAMES:
        for mode in modes_of(run, name):
            rows = [r for r in run["raw"] if r["workload"] == name and r["mode"] == mode]
            assert len(rows) == 1, (name, mode, rows)
            row = rows[0]
            assert "error" not in row, row
            assert row["seconds"] > 0, row
        # every mode computed the same result
        assert len({r["checksum"] for r in run["raw"] if r["workload"] == name}) == 1, name
        # the cProfile / fastprof call counts were compared, function by function
        checks = [c for c in run["count_checks"] if c["workload"] == name and c["mode"] == "fastprof"]
        assert len(checks) == 1 and checks[0]["mismatches"] == 0, checks
        assert checks[0]["functions"] > 0
        s = run["summary"]["workloads"][name]
        assert s["events"] > 0
        assert s["modes"]["cprofile"]["median"] > 0
        assert s["modes"]["fastprof"]["median"] > 0
        assert s["modes"]["floor"]["median"] > 0


def _row(run, name, mode):
    rows = [r for r in run["raw"] if r["workload"] == name and r["mode"] == mode]
    assert len(rows) == 1 and "error" not in rows[0], (name, mode, rows)
    return rows[0]


def _check_line_modes(run):
    """--lines and line_profiler both ran on every workload's hot function and
    recorded its lines; the summary compares their slowdowns."""
    for name in NAMES:
        fp, lp = _row(run, name, "fastprof-lines"), _row(run, name, "line_profiler")
        assert fp["line_hits"] > 0 and lp["line_hits"] > 0, (name, fp, lp)
        s = run["summary"]["workloads"][name]["modes"]
        assert s["fastprof-lines"]["slowdown"] > 0 and s["line_profiler"]["slowdown"] > 0
    summary = run["summary"]
    assert summary["lines_below_line_profiler"][1] == len(NAMES)
    assert summary["lines_median_slowdown"] > 0 and summary["line_profiler_median_slowdown"] > 0


def _check_scope(run):
    """--only recorded exactly the app module's functions, with cProfile's
    counts (run.py compares them), and is reported apart from the medians."""
    (name,) = SCOPE_NAMES
    checks = [c for c in run["count_checks"] if c["workload"] == name and c["mode"] == "fastprof-only"]
    assert len(checks) == 1 and checks[0]["mismatches"] == 0, checks
    assert checks[0]["functions"] >= 3  # run, batch, summarize (+ comprehensions before 3.12)
    scope = run["summary"]["scope"]
    assert scope["workload"] == name and scope["none_seconds"] > 0
    for mode in ("cprofile", "fastprof", "fastprof-only"):
        assert scope[mode] > 0, scope
    # not among the overhead workloads' fractions
    assert name not in run["summary"]["ranked"]


def test_benchmark_smoke_old_spelling():
    # `run.py --smoke` (no mode), as CI called it before the modes, is `run.py timing --smoke`
    proc = subprocess.run([sys.executable, RUN, "--smoke", "--workloads", "fib", "--modes", "none,cprofile"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "smoke run: tiny sizes" in proc.stdout and "fib " in proc.stdout


def test_stored_results_are_summaries_that_print():
    """benchmarks/results/: each stored file holds summaries only (no raw rows or
    runs) and its tables print from it (--from-json)."""
    files = sorted(f for f in os.listdir(RESULTS) if f.endswith((".json", ".json.gz")))
    assert files, RESULTS
    for name in files:
        path = os.path.join(RESULTS, name)
        mode = "accuracy" if name.startswith("accuracy") else "timing"
        stored = _harness("common").read_json(path)
        assert stored["runs"]
        for record in stored["runs"]:
            assert "raw" not in record                       # timing: no raw rows
            if isinstance(record["workloads"], dict):        # accuracy: no raw runs
                assert all("runs" not in w for w in record["workloads"].values())
        proc = subprocess.run([sys.executable, RUN, mode, "--from-json", path], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
        assert proc.returncode == 0, (name, proc.stdout[-3000:])
        assert "Python " in proc.stdout and "PROBLEM" not in proc.stdout, proc.stdout[-3000:]
    assert sum(os.path.getsize(os.path.join(RESULTS, f)) for f in files) < 300 * 1024


def test_line_event_choice_runs(tmp_path):
    # questions/line_event_choice.py (docs/lines.md): both set-ups run the
    # workload to the end; 3.12+ only (sys.monitoring)
    script = os.path.join(QUESTIONS, "line_event_choice.py")
    out = tmp_path / "choice.json"
    r = subprocess.run([sys.executable, script, "--repeats", "1", "--scale", "0.001", "--json", str(out),
                        "template"], capture_output=True, text=True, timeout=300)
    if sys.version_info < (3, 12):
        assert r.returncode == 2 and "needs Python 3.12+" in r.stderr
        return
    assert r.returncode == 0, r.stderr
    result = json.loads(out.read_text())
    assert set(result) == {"template"} and set(result["template"]) == {"start", "line"}
    assert all(v > 0 for v in result["template"].values())


def test_middleware_load_in_process_runs():
    """questions/middleware_load.py --in-process (docs/performance.md's
    per-request table) still runs: every mode, a row each."""
    script = os.path.join(QUESTIONS, "middleware_load.py")
    res = subprocess.run([sys.executable, script, "--in-process", "--rounds", "1", "--requests", "5"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    for mode in ("no middleware", "trigger, not triggered", "every=100", "slow_ms, none slow",
                 "every=1 (all kept, .prof)"):
        assert mode in res.stdout, res.stdout


def test_middleware_soak_runs():
    """questions/middleware_soak.py (docs/web-services.md) still runs: in
    process, a few requests, a row per batch with the profiler's bytes."""
    script = os.path.join(QUESTIONS, "middleware_soak.py")
    res = subprocess.run([sys.executable, script, "--requests", "40", "--batch", "20"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    rows = [line.split() for line in res.stdout.splitlines()[2:]]
    assert [r[:2] for r in rows] == [["1", "20"], ["2", "40"]] and all(len(r) == 6 for r in rows)


def test_memory_cost_runs(tmp_path):
    """questions/memory_cost.py (issue 33's cost) still runs: the
    allocation-heavy workload under every mode this interpreter has, the
    same result in each, a ratio per mode."""
    script = os.path.join(QUESTIONS, "memory_cost.py")
    out = tmp_path / "cost.json"
    res = subprocess.run([sys.executable, script, "--repeats", "1", "--scale", "0.01",
                          "--json", str(out), "allocations"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    row = [line.split() for line in res.stdout.splitlines() if line.startswith("allocations")]
    assert len(row) == 1 and all(cell.endswith("x") for cell in row[0][2:]), res.stdout
    medians = json.loads(out.read_text())["medians"]["allocations"]
    assert {"none", "fastprof", "memory", "tracemalloc"} <= set(medians)


def test_threads_read_runs():
    """questions/threads_read.py (docs/threads-coroutines.md) still runs: a
    row per thread count, the records bounded; a bad count refused."""
    script = os.path.join(QUESTIONS, "threads_read.py")
    res = subprocess.run([sys.executable, script, "--threads", "50,200"], capture_output=True,
                         text=True, timeout=300, env=_env())
    assert res.returncode == 0, res.stderr
    rows = [line.split() for line in res.stdout.splitlines()[2:]]
    assert [r[0] for r in rows] == ["50", "200"] and all(int(r[-2]) <= 67 for r in rows), res.stdout
    res = subprocess.run([sys.executable, script, "--threads", "0"], capture_output=True,
                         text=True, timeout=60, env=_env())
    assert res.returncode == 2 and "thread counts must be at least 1" in res.stderr


TINY_LIBRARY = """\
def helper(x):
    if x < 0:
        raise ValueError(x)
    return x * 2


def caller(x):
    return helper(x) + 1


def other(x):
    return x + 1
"""

TINY_TESTS = """\
import pytest

from tinylib import caller, other


def test_reaches_the_edge():
    assert caller(3) == 7


def test_raises_at_the_first_call():
    with pytest.raises(ValueError):
        caller(-1)


def test_never_calls_it():
    assert other(1) == 2
"""


def test_gate_injected_regression_finds_exactly_the_tests(tmp_path):
    """questions/gate_injected_regression.py (issue 32's protocol) on a tiny
    project: of the two tests whose baseline holds caller -> helper, the one
    that makes the second call is flagged, naming the edge; the one whose
    first call raises is listed and not flagged; the third never is."""
    project = tmp_path / "tiny"
    (project / "tests").mkdir(parents=True)
    (project / "tinylib.py").write_text(TINY_LIBRARY)
    (project / "tests" / "test_tiny.py").write_text(TINY_TESTS)
    script = os.path.join(QUESTIONS, "gate_injected_regression.py")
    res = subprocess.run([sys.executable, script, str(project), "--function", "tinylib.py:caller",
                          "--helper", "helper"], capture_output=True, text=True, timeout=300, env=_env())
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    assert "tests whose baseline holds the edge: 2" in out, out
    assert "no second call: tests/test_tiny.py::test_raises_at_the_first_call" in out, out
    assert "tests that made the second call: 1; flagged: 1 (exit status 1)" in out, out
    assert "exact: every test that reaches the edge" in out, out
    assert (project / "tinylib.py").read_text() == TINY_LIBRARY   # the change went to a copy


@pytest.mark.skipif(not hasattr(sys, "remote_exec"), reason="fastprof top: 3.14+")
def test_top_thread_churn_runs():
    """questions/top_thread_churn.py (docs/top.md) still runs: a short
    session on its own thread-per-task target, the profile written."""
    script = os.path.join(QUESTIONS, "top_thread_churn.py")
    res = subprocess.run([sys.executable, script, "--seconds", "1", "--interval", "0.5",
                          "--before", "0.5", "--after", "0.5"], capture_output=True, text=True,
                         timeout=300, env=_env())
    assert res.returncode == 0, res.stderr
    assert "profile written" in res.stdout and "tasks/s: before" in res.stdout, res.stdout


# --------------------------------------------------------------------------- run.py accuracy

def test_accuracy_tvd_exact():
    acc = _harness("distance")
    assert acc.tvd({"a": 0.5, "b": 0.5}, {"a": 0.5, "b": 0.5}) == 0.0
    assert acc.tvd({"a": 1.0}, {"b": 1.0}) == 100.0
    # |0.6-0.4| + |0.4-0.4| + |0-0.2| = 0.4 -> 20 points
    assert abs(acc.tvd({"a": 0.6, "b": 0.4}, {"a": 0.4, "b": 0.4, "c": 0.2}) - 20.0) < 1e-12
    assert acc.shares({"a": 3.0, "b": 1.0, "c": -2.0, "d": 0.0}) == {"a": 0.75, "b": 0.25}
    assert acc.shares({}) == {}


def test_accuracy_c_time_goes_to_callers():
    acc = _harness("distance")
    f, g, h = "/w/m.py:1(f)", "/w/m.py:5(g)", "/w/m.py:9(h)"
    ln, srt, gc_ = "~:0(<built-in method builtins.len>)", "~:0(<built-in method builtins.sorted>)", "~:0(<gc>)"
    self_times = {f: 1.0, g: 2.0, h: 0.5, ln: 0.8, srt: 0.4, gc_: 0.3}
    edges = [
        (f, ln, 0.6), (g, ln, 0.2),       # len: 0.8 s split 3:1 -> f +0.6, g +0.2
        (g, srt, 0.1), (h, srt, 0.3),     # sorted: 0.4 s split 1:3 -> g +0.1, h +0.3
        (srt, gc_, 0.2), (f, gc_, 0.2),   # <gc>: 0.3 s, half under sorted (a C caller) -> passed on 1:3
    ]
    out = acc.attribute_c_time(self_times, edges)
    want = {f: 1.0 + 0.6 + 0.15, g: 2.0 + 0.2 + 0.1 + 0.0375, h: 0.5 + 0.3 + 0.1125}
    assert set(out) == set(want)
    for k in want:
        assert abs(out[k] - want[k]) < 1e-12, (k, out[k], want[k])
    assert abs(sum(out.values()) - sum(self_times.values())) < 1e-12
    # a C function without a recorded caller keeps its own key (a sampler never matches it)
    orphan = "~:0(<method 'disable' of 'x' objects>)"
    assert acc.attribute_c_time({f: 1.0, orphan: 0.5}, []) == {f: 1.0, orphan: 0.5}
    # a cycle of C functions cannot loop forever: what is left stays, nothing is lost
    a, b = "~:0(a)", "~:0(b)"
    out = acc.attribute_c_time({a: 1.0, b: 0.0}, [(a, b, 1.0), (b, a, 1.0)], max_passes=3)
    assert abs(sum(out.values()) - 1.0) < 1e-12


_TOP = "<module> (/w/accuracy_worker.py:1);main (/w/accuracy_worker.py:140);"
_REGION = _TOP + "_accuracy_region (/w/accuracy_worker.py:52);"
FAKE_PYSPY = "".join(line + "\n" for line in (
    _REGION + "run (/w/m.py:20);f (/w/m.py:1) 30",
    _REGION + "run (/w/m.py:20);A.f (/w/m.py:11) 10",
    _REGION + "run (/w/m.py:20) 50",
    _REGION + "run (/w/m.py:20);g.<locals>.<genexpr> (/w/m.py:7) 10",
    _REGION.rstrip(";") + " 7",
    _TOP + "measure (/w/accuracy_worker.py:100);run (/w/m.py:20) 99",
))


def test_accuracy_sampler_parsing_and_distance():
    acc, samplers = _harness("distance"), _harness("samplers")
    counts = samplers.sampler_self_counts(samplers.parse_pyspy_raw(FAKE_PYSPY))
    # below the region frame only (warm-up's 99 and the region's own 7 left out);
    # same-named functions kept apart by their first line; qualified names cut to co_name
    assert counts == {"/w/m.py:1(f)": 30, "/w/m.py:11(f)": 10, "/w/m.py:20(run)": 50,
                      "/w/m.py:7(<genexpr>)": 10}
    # a profile where run's 0.5 s are 0.3 s of its own + 0.2 s in len(): after the
    # C time goes to run, the shares equal the sampler's exactly
    ln = "~:0(<built-in method builtins.len>)"
    prof = {"/w/m.py:1(f)": 0.3, "/w/m.py:11(f)": 0.1, "/w/m.py:20(run)": 0.3, ln: 0.2,
            "/w/m.py:7(<genexpr>)": 0.1}
    assert abs(acc.compare(prof, [("/w/m.py:20(run)", ln, 0.2)], counts)) < 1e-9
    # the same profile with f's first line numbered 2 (a decorator line elsewhere): still matched
    prof2 = dict(prof)
    prof2["/w/m.py:2(f)"] = prof2.pop("/w/m.py:1(f)")
    assert acc.compare(prof2, [("/w/m.py:20(run)", ln, 0.2)], counts) < 1e-9
    # a profile that inflates f (0.3 -> 0.5 s of 1.2 s): exact distance
    prof3 = dict(prof, **{"/w/m.py:1(f)": 0.5})
    got = acc.compare(prof3, [("/w/m.py:20(run)", ln, 0.2)], counts)
    want = 50 * (abs(0.5 / 1.2 - 0.3) + abs(0.1 / 1.2 - 0.1) + abs(0.5 / 1.2 - 0.5) + abs(0.1 / 1.2 - 0.1))
    assert abs(got - want) < 1e-9, (got, want)


def test_accuracy_stdlib_sampler_format():
    acc, samplers = _harness("distance"), _harness("samplers")
    text = ("tid:1;<frozen runpy>:_run_module_as_main:201;accuracy_worker.py:_accuracy_region:58;"
            "m.py:run:23;m.py:A.f:13 4\n"
            "tid:1;accuracy_worker.py:_accuracy_region:58;m.py:run:21 6\n")
    counts = samplers.sampler_self_counts(samplers.parse_stdlib_collapsed(text))
    assert counts == {"m.py:13(f)": 4, "m.py:21(run)": 6}
    # compared by (base name, function name): lines differ, full paths in the profile
    prof = {"/w/m.py:11(f)": 0.2, "/w/m.py:1(f)": 0.2, "/w/m.py:20(run)": 0.6}
    assert abs(acc.compare(prof, [], counts, coarse_names=True)) < 1e-9


def test_accuracy_smoke(tmp_path):
    # the whole mode on one workload, for seconds; needs py-spy (benchmarks/requirements.txt)
    # or, on 3.15+, the standard library's sampler
    import shutil
    acc = _harness("accuracy")
    stdlib = sys.version_info >= (3, 15)
    if not (shutil.which("py-spy") or os.path.exists(os.path.join(os.path.dirname(sys.executable), "py-spy"))
            or stdlib):
        pytest.skip("py-spy is not installed (benchmarks/requirements.txt)")
    out = tmp_path / "acc.json"
    proc = subprocess.run([sys.executable, RUN, "accuracy", "--smoke", "--json", str(out)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, env=_env(), timeout=300)
    if "ptrace" in proc.stdout.lower() or "permission denied" in proc.stdout.lower():
        pytest.skip("the sampler may not trace here: " + proc.stdout[-300:])
    assert proc.returncode == 0, proc.stdout[-4000:]
    run = json.loads(out.read_text())["runs"][0]
    assert run["problems"] == []
    w = run["workloads"][acc.SMOKE_WORKLOAD]
    s = w["summary"]
    assert s["checksums_agree"]
    assert s["none_seconds"] > 0
    kind = run["samplers"][0]
    assert s[kind]["samples"] > 0 and 0 <= s[kind]["noise"] <= 100
    for mode in run["modes"]:
        assert 0 <= s[kind]["tvd"][mode] <= 100
        assert s["profiles"][mode]["total_over_wall"] > 0
    assert "fastprof" in run["modes"]
    assert ("fastprof-raw" in run["modes"]) == run["probe"]["compensate"]
    assert "| %s |" % acc.SMOKE_WORKLOAD in proc.stdout


def _fib_workload():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "fastprof_bench_fib", os.path.join(BENCH, "workloads", "fib.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_fib_timed_run_splits_its_phases_exactly():
    # a fake clock: fib's phase 1 s, the mutual recursion 2 s, Ackermann 4 s
    import cProfile
    import pstats
    fib = _fib_workload()
    ticks = iter([10.0, 11.0, 13.0, 17.0])
    checksum, own = fib.timed_run(12, clock=lambda: next(ticks))
    assert checksum == fib.run(12)
    assert own[fib.fib] == 1.0 and own[fib.ackermann] == 4.0
    assert abs(own[fib.is_even] + own[fib.is_odd] - 2.0) < 1e-12
    # is_even and is_odd share their phase by their calls, as cProfile counts them
    prof = cProfile.Profile()
    prof.runcall(fib.run, 12)
    calls = {k[2]: v[1] for k, v in pstats.Stats(prof).stats.items() if k[0] == fib.__file__}
    even = calls["is_even"] / (calls["is_even"] + calls["is_odd"])
    assert abs(own[fib.is_even] - 2.0 * even) < 1e-12, (own, calls)


def test_accuracy_exact_reference_smoke(tmp_path):
    # --samplers '': no sampler, fib held to its own phase timings alone
    references = _harness("accuracy_summary").references
    out, summary = tmp_path / "acc.json", tmp_path / "acc-summary.json"
    env = _env()
    proc = subprocess.run([sys.executable, RUN, "accuracy", "--smoke", "--workloads", "fib", "--samplers", "",
                           "--raw", str(out), "--json", str(summary)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:]
    run = json.loads(out.read_text())["runs"][0]
    # the summaries print the same tables without the raw runs
    assert "runs" not in json.loads(summary.read_text())["runs"][0]["workloads"]["fib"]
    again = subprocess.run([sys.executable, RUN, "accuracy", "--from-json", str(summary)], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True, env=env, timeout=300)
    assert again.returncode == 0 and "| fib | exact |" in again.stdout, again.stdout[-3000:]
    assert run["problems"] == [] and run["samplers"] == []
    s = run["workloads"]["fib"]["summary"]
    assert s["checksums_agree"]
    timed = s["timed"]
    assert {k.rsplit("(", 1)[1] for k, _ in timed["top"]} == {"fib)", "ackermann)", "is_even)", "is_odd)"}
    assert 0 <= timed["noise"] <= 100 and timed["samplers"] == {}
    for mode in run["modes"]:
        assert 0 <= timed["tvd"][mode] <= 100
    assert "the exact reference" in proc.stdout and "| fib | exact |" in proc.stdout
    # --from-json --add-timed adds it to a raw file measured without it, at the file's size
    stored = json.loads(out.read_text())
    del stored["runs"][0]["workloads"]["fib"]["runs"]["timed"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(stored))
    again = tmp_path / "again.json.gz"   # (the stored runs are compressed)
    proc = subprocess.run([sys.executable, RUN, "accuracy", "--from-json", str(old), "--add-timed",
                           "--raw", str(again)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:]
    import gzip
    with gzip.open(str(again), "rt") as f:
        redone = json.load(f)["runs"][0]["workloads"]["fib"]
    assert len(redone["runs"]["timed"]) == 2
    assert set(redone["summary"]["timed"]["tvd"]) == set(run["modes"])
    assert references({"samplers": [], "workloads": {"fib": redone}}) == ["timed"]
    # a summaries file has no runs to add to: refused in one line
    proc = subprocess.run([sys.executable, RUN, "accuracy", "--from-json", str(summary), "--add-timed"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env,
                          timeout=120)
    assert proc.returncode == 2 and "needs a --raw file" in proc.stderr.strip().splitlines()[-1], proc.stderr


def test_sampler_depth_bias_counts_the_halves():
    import importlib.util
    samplers = _harness("samplers")
    spec = importlib.util.spec_from_file_location("fastprof_bench_depth",
                                                  os.path.join(QUESTIONS, "sampler_depth_bias.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    top = "<module> (/t/halves.py:1);region (/t/halves.py:18);"
    text = "".join(line + "\n" for line in (
        top + "shallow (/t/halves.py:12);work (/t/halves.py:5) 30",
        top + "deep (/t/halves.py:15);deep (/t/halves.py:15);work (/t/halves.py:5) 10",
        top.rstrip(";") + " 5",                          # the region's own: neither half
        "<module> (/t/halves.py:1) 7",                   # start-up: not below region
    ))
    assert mod.deep_share(samplers.parse_pyspy_raw(text)) == (40, 0.25)
    stdlib = ("tid:1;halves.py:region:18;halves.py:deep:15;halves.py:work:5 3\n"
              "tid:1;halves.py:region:18;halves.py:shallow:12 1\n")
    assert mod.deep_share(samplers.parse_stdlib_collapsed(stdlib)) == (4, 0.75)
    assert mod.deep_share([]) == (0, None)


def test_asyncio_select_share_runs():
    # the unprofiled share of the event loop's select() and the profile's, printed in one line
    proc = subprocess.run([sys.executable, os.path.join(QUESTIONS, "asyncio_select_share.py"), "400"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    import re
    m = re.search(r"select\(\) takes (-?[\d.]+)% of the unprofiled run .* fastprof gives it ([\d.]+)%", proc.stdout)
    assert m, proc.stdout
    assert 0 < float(m.group(2)) < 100


@pytest.mark.parametrize("script, args, message", [
    ("questions/sampler_depth_bias.py", ["--depths", "a,b"], "not a comma-separated list of depths"),
    ("questions/sampler_depth_bias.py", ["--python", "/nonexistent/python"], "no such interpreter"),
    ("questions/between_events.py", ["0"], "ROUNDS must be at least 1"),
    ("questions/asyncio_select_share.py", ["x"], "invalid int value"),
    ("run.py", ["accuracy", "--add-timed"], "--add-timed goes with --from-json"),
    ("run.py", ["accuracy", "--from-json", "/nonexistent/acc.json.gz"], "no such file"),
    ("run.py", ["accuracy", "--samplers", "perf"], "unknown sampler(s): perf"),
    ("run.py", ["timing", "--from-json", "/nonexistent/overhead.json.gz"], "no such file"),
    ("run.py", ["timing", "--workloads", "fib,nope"], "unknown workload(s): nope"),
    ("run.py", ["speed"], "the first argument is a mode: timing or accuracy"),
    ("run.py", [], "the first argument is a mode: timing or accuracy"),
])
def test_new_benchmark_scripts_refuse_bad_input_in_one_line(script, args, message):
    proc = subprocess.run([sys.executable, os.path.join(BENCH, script)] + args,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          env=_env(), timeout=120)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert message in proc.stderr.strip().splitlines()[-1] and "Traceback" not in proc.stderr
