"""The benchmark harness runs, on this interpreter, against the fastprof under test.

``benchmarks/run.py --smoke`` runs every workload once per mode at tiny sizes
and checks that fastprof's (primitive, total) call counts per function equal
cProfile's.  This test never asserts speed: CI machines are too noisy.
"""

import json
import os
import runpy
import subprocess
import sys

import fastprof

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = os.path.join(ROOT, "benchmarks", "run.py")
NAMES = runpy.run_path(os.path.join(ROOT, "benchmarks", "workloads", "__init__.py"))["NAMES"]


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
    assert run["workloads"] == NAMES
    for mode in ("none", "floor", "cprofile", "fastprof", "fastprof-cpu"):
        assert mode in run["modes"], (mode, run["probe"].get("floor_error"))

    for name in NAMES:
        modes = [m for m in run["modes"] if m != "fastprof-cpu" or name == "fib"]
        for mode in modes:
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
