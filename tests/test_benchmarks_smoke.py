"""The benchmark harness runs, on this interpreter, against the fastprof under test.

``benchmarks/run.py --smoke`` runs every workload once per mode at tiny sizes
and checks that fastprof's (primitive, total) call counts per function equal
cProfile's; the line-level comparison (``--lines`` and line_profiler on each
workload's hot function) and the ``--only`` benchmark (``scoped``) run too.
This test never asserts speed: CI machines are too noisy.
"""

import json
import os
import runpy
import subprocess
import sys

import fastprof

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = os.path.join(ROOT, "benchmarks", "run.py")
_WORKLOADS = runpy.run_path(os.path.join(ROOT, "benchmarks", "workloads", "__init__.py"))
NAMES = _WORKLOADS["NAMES"]                 # the eight overhead workloads
SCOPE_NAMES = _WORKLOADS["SCOPE_NAMES"]     # the --only benchmark
LINE_MODES = ("fastprof-lines", "line_profiler")


def modes_of(run, name):
    """The modes run.py runs on workload ``name``."""
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


def test_benchmark_smoke(tmp_path):
    out = tmp_path / "smoke.json"
    env = dict(os.environ)
    here = os.path.dirname(os.path.dirname(os.path.abspath(fastprof.__file__)))
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([here] + rest)
    proc = subprocess.run([sys.executable, RUN, "--smoke", "--json", str(out)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-6000:]

    results = json.loads(out.read_text())
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


def test_line_event_choice_runs(tmp_path):
    # benchmarks/line_event_choice.py (docs/lines.md): both set-ups run the
    # workload to the end; 3.12+ only (sys.monitoring)
    script = os.path.join(ROOT, "benchmarks", "line_event_choice.py")
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
    """benchmarks/middleware_load.py --in-process (docs/performance.md's
    per-request table) still runs: every mode, a row each."""
    script = os.path.join(ROOT, "benchmarks", "middleware_load.py")
    res = subprocess.run([sys.executable, script, "--in-process", "--rounds", "1", "--requests", "5"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    for mode in ("no middleware", "trigger, not triggered", "every=100", "slow_ms, none slow",
                 "every=1 (all kept, .prof)"):
        assert mode in res.stdout, res.stdout
