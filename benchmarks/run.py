#!/usr/bin/env python3
"""Measure what fastprof costs, side by side with cProfile (and yappi, pyinstrument).

Every (workload, mode) measurement runs in its own fresh process (``_worker.py``),
so no profiler leaves state behind for the next one.  Modes are interleaved:
for each repeat, for each workload, every mode runs once, in an order rotated
from one repeat to the next, so slow drift of a noisy machine hits all modes
alike.  The report gives medians over repeats.

Modes:
  none          the workload alone (baseline)
  floor         a hook that only reads the clock          (what CPython charges any
                (floor_hook.py)                          profiler for its events)
  cprofile      cProfile.Profile()                       (deterministic, the reference)
  fastprof      fastprof.Profile()                       (deterministic)
  fastprof-cpu  fastprof.Profile(clock="cpu"), fib only  (cost of the CPU clock)
  fastprof-fast fastprof.Profile(fast=True)              (Python functions only; not on 3.13)
  fastprof-lines fastprof.Profile(lines=[HOT])           (--lines on the workload's HOT function)
  line_profiler line_profiler on the same HOT function   (the reference for --lines; if importable)
  fastprof-only fastprof.Profile(only=[ONLY]), scoped    (--only on the app module of `scoped`)
  yappi         yappi, wall clock, builtins=True         (deterministic; if importable)
  pyinstrument  pyinstrument.Profiler()                  (statistical sampler; if importable)

Headline number per workload: fastprof's added time as a fraction of
cProfile's, (t_fastprof - t_none) / (t_cprofile - t_none).  The floor's
fraction, (t_floor - t_none) / (t_cprofile - t_none), is the lowest any
profiler fed by the same interpreter hooks can reach.  "ns/event" is
added time / events, events = 2 x calls (Python + C calls, as counted by
cProfile in the same workload: every call has a return).

Line level: for each workload, the slowdown (over the unprofiled run) of
fastprof-lines beside line_profiler's, both on the workload's HOT function
(goal: below line_profiler's).  Scope: the ``scoped`` workload (a call-dense
library called by an app module), reported apart from the eight overhead
workloads and out of their medians: slowdown of cProfile, fastprof and
fastprof --only (goal on 3.12+: --only <= 1.10x).

Examples:
  PYTHONPATH=python python3 benchmarks/run.py                       # current interpreter
  PYTHONPATH=python python3 benchmarks/run.py --all-versions --json results.json --plot docs/benchmark.png
  PYTHONPATH=python python3 benchmarks/run.py --smoke               # CI: tiny sizes + correctness checks
  python3 benchmarks/run.py --from-json results.json --plot out.png # re-print / re-plot only

Why not pyperf: pyperf spawns and calibrates its own workers, runs loops of a
benchmark in one process and compares *separate* result files; here one call
per fresh process, a profiler wrapped around exactly that call, an event
count taken from cProfile's stats and modes interleaved in time matter more
than pyperf's loop calibration, and the workers must run on bare
interpreters (3.9-3.13) with nothing installed.  So: plain subprocess +
statistics.median, standard library only (matplotlib only for --plot).
"""

import argparse
import datetime
import glob
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "_worker.py")
sys.path.insert(0, HERE)

import workloads  # noqa: E402  (after the path tweak, on purpose)
from _worker import RESULT_TAG  # noqa: E402

SCHEMA = "fastprof-bench/1"
OPTIONAL_MODES = ["floor", "yappi", "pyinstrument", "line_profiler"]
CPU_MODE = "fastprof-cpu"
CPU_MODE_WORKLOADS = ["fib"]
FAST_MODE = "fastprof-fast"  # Profile(fast=True): Python functions only
LINES_MODE = "fastprof-lines"  # Profile(lines=[the workload's HOT function])
LINE_PROFILER = "line_profiler"
ONLY_MODE = "fastprof-only"  # Profile(only=[the workload's ONLY]): `scoped` only
ALL_MODES = ["none", "floor", "cprofile", "fastprof", FAST_MODE, CPU_MODE, LINES_MODE,
             LINE_PROFILER, ONLY_MODE, "yappi", "pyinstrument"]
MODE_LABELS = {
    "none": "none",
    "floor": "floor (hook only)",
    "cprofile": "cProfile",
    "fastprof": "fastprof",
    "fastprof-fast": "fastprof --fast",
    "fastprof-cpu": "fastprof clock=cpu",
    "fastprof-lines": "fastprof --lines HOT",
    "line_profiler": "line_profiler HOT",
    "fastprof-only": "fastprof --only app",
    "yappi": "yappi (deterministic, wall)",
    "pyinstrument": "pyinstrument (sampling)",
}
PYENV_VERSIONS = ["3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "3.15"]
TARGET_FRACTION = 0.5
ONLY_GOAL = 1.10   # --only on 3.12+: slowdown over the unprofiled run
SMOKE_TIME_LIMIT = 60.0


# --------------------------------------------------------------------------- workers

def run_worker(python, payload, timeout, pythonpath=None):
    """Run one worker; return (result dict or None, error text or None).

    The worker inherits this process's environment (so PYTHONPATH decides
    which fastprof it imports); ``pythonpath`` is put in front of it.
    """
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join([pythonpath] + [p for p in env.get("PYTHONPATH", "")
                                                            .split(os.pathsep) if p])
    env.setdefault("PYTHONHASHSEED", "0")
    env.pop("PYTHONSTARTUP", None)
    arg = payload if isinstance(payload, str) else json.dumps(payload)
    try:
        proc = subprocess.run([python, WORKER, arg], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env, timeout=timeout,
                              universal_newlines=True)
    except subprocess.TimeoutExpired:
        return None, "timed out after %.0f s" % timeout
    except OSError as exc:
        return None, "cannot start %s: %s" % (python, exc)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_TAG):
            if proc.returncode == 0:
                return json.loads(line[len(RESULT_TAG):]), None
            break
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-15:]
    return None, "exit code %d:\n    %s" % (proc.returncode, "\n    ".join(tail))


def find_pyenv_pythons():
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    try:
        root = subprocess.run(["pyenv", "root"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, universal_newlines=True,
                              check=True).stdout.strip() or root
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    for minor in PYENV_VERSIONS:
        cands = sorted(glob.glob(os.path.join(root, "versions", minor + ".*", "bin", "python")),
                       key=lambda p: [int(x) if x.isdigit() else 0
                                      for x in p.split(os.sep)[-3].split(".")])
        cands = [c for c in cands if os.path.basename(os.path.dirname(os.path.dirname(c)))
                 .replace(".", "").isdigit()]
        if cands:
            found.append(cands[-1])
            continue
        # 3.14+: not in pyenv here; scripts/find-python.sh knows the
        # per-machine cache that scripts/install-python.sh fills.
        finder = os.path.join(os.path.dirname(HERE), "scripts", "find-python.sh")
        proc = subprocess.run([finder, minor], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              universal_newlines=True)
        if proc.returncode == 0 and proc.stdout.strip():
            found.append(proc.stdout.strip())
        else:
            print("warning: no CPython %s under %s/versions nor scripts/find-python.sh"
                  % (minor, root), file=sys.stderr)
    return found


def interpreter_minor(python):
    """'3.11' for a CPython 3.11 executable, or None if it does not run."""
    try:
        return subprocess.run([python, "-c", "import sys;print('%d.%d' % sys.version_info[:2])"],
                              stdout=subprocess.PIPE, universal_newlines=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def venv_override(pythons, venv_dir):
    """Use VENV_DIR/venv-3.X/bin/python (same base interpreter + yappi etc.) when it exists."""
    out = []
    for py in pythons:
        ver = interpreter_minor(py)
        cand = os.path.join(venv_dir, "venv-%s" % ver, "bin", "python")
        out.append(cand if ver and os.path.exists(cand) else py)
    return out


# --------------------------------------------------------------------------- one interpreter

def sizes_for(args):
    sizes = {}
    for name in args.workloads:
        mod = workloads.load(name)
        if args.smoke:
            sizes[name] = mod.SIZES["smoke"]
        elif args.scale != 1.0:
            if hasattr(mod, "size_for"):
                sizes[name] = mod.size_for(args.scale)
            else:
                sizes[name] = max(mod.SIZES["smoke"], int(round(mod.SIZES["full"] * args.scale)))
        else:
            sizes[name] = mod.SIZES["full"]
    return sizes


def modes_for(probe, args, problems):
    wanted = args.modes or ALL_MODES
    modes = []
    for mode in wanted:
        if mode.startswith("fastprof") and not args.standin and "fastprof_error" in probe:
            msg = "fastprof is not importable (%s): mode %s skipped" % (probe["fastprof_error"], mode)
            if args.smoke:
                problems.append(msg)
            else:
                print("WARNING: " + msg, file=sys.stderr)
            continue
        if mode == FAST_MODE and not args.standin and "fast_error" in probe:
            # not offered on this version (3.13): the column stays empty
            print("note: mode %s skipped: %s" % (mode, probe["fast_error"]), file=sys.stderr)
            continue
        if mode in OPTIONAL_MODES and mode not in probe:
            if args.modes:  # asked for explicitly
                problems.append("%s is not importable: %s" % (mode, probe.get(mode + "_error")))
            continue
        modes.append(mode)
    return modes


def workload_modes(workload, modes):
    """The modes that apply to ``workload``: the CPU clock on fib, the line
    modes where it names a HOT function, --only where it names its scope."""
    wl = workloads.load(workload)
    out = []
    for m in modes:
        if m == CPU_MODE and workload not in CPU_MODE_WORKLOADS:
            continue
        if m in (LINES_MODE, LINE_PROFILER) and not hasattr(wl, "HOT"):
            continue
        if m == ONLY_MODE and not hasattr(wl, "ONLY"):
            continue
        out.append(m)
    return out


def run_suite(python, args):
    """Run every (workload, mode) ``repeats`` times on one interpreter; return its record."""
    problems = []
    pythonpath = None
    if args.pythonpath:
        pythonpath = os.path.abspath(args.pythonpath.format(minor=interpreter_minor(python)))
    probe, err = run_worker(python, "--probe", 120, pythonpath)
    if probe is None:
        return {"executable": python, "problems": ["probe failed: " + err], "raw": [],
                "modes": [], "workloads": args.workloads, "sizes": {}, "summary": None}
    modes = modes_for(probe, args, problems)
    sizes = sizes_for(args)
    record = {
        "python": probe["python"], "version": probe["version"], "executable": python,
        "probe": probe, "modes": modes, "workloads": list(args.workloads), "sizes": sizes,
        "standin": bool(args.standin), "raw": [], "problems": problems,
        "pythonpath": probe.get("pythonpath", ""),
    }
    fp = probe.get("fastprof", {})
    print("\n=== Python %s  (%s)" % (probe["python"], python), flush=True)
    print("    fastprof: %s" % (("STAND-IN (cProfile), --standin" if args.standin else
                                 fp.get("extension") or fp.get("file") or "not importable")))
    print("    modes: %s" % ", ".join(modes), flush=True)
    if args.smoke:
        print("    smoke run: tiny sizes, one repeat -- the timings mean nothing, "
              "the checks do", flush=True)

    counts = {}   # (workload, mode) -> counts of the first run, for the comparison
    t_start = time.perf_counter()
    for rep in range(args.repeats):
        for name in args.workloads:
            wmodes = workload_modes(name, modes)
            k = rep % len(wmodes)
            order = wmodes[k:] + wmodes[:k]   # rotate: no mode always first / last
            for mode in order:
                spec = {"workload": name, "mode": mode, "size": sizes[name],
                        "warmup_size": workloads.load(name).SIZES["smoke"],
                        "standin": bool(args.standin), "cpu": args.pin,
                        "counts": mode in ("cprofile", "fastprof", CPU_MODE, ONLY_MODE)
                        and (name, mode) not in counts}
                res, err = run_worker(python, spec, args.timeout, pythonpath)
                row = {"workload": name, "mode": mode, "repeat": rep}
                if res is None:
                    row["error"] = err
                    problems.append("%s/%s repeat %d failed: %s" % (name, mode, rep, err))
                    print("  FAILED %s/%s: %s" % (name, mode, err), file=sys.stderr, flush=True)
                else:
                    c = res.pop("counts", None)
                    if c is not None:
                        counts[(name, mode)] = c
                    row.update(res)
                if args.verbose and res is not None:
                    print("  rep %d %-14s %-13s %8.4f s" % (rep, name, mode, res["seconds"]),
                          flush=True)
                record["raw"].append(row)
        if not args.verbose:
            print("  repeat %d/%d done (%.0f s)" % (rep + 1, args.repeats,
                                                    time.perf_counter() - t_start), flush=True)
    record["elapsed"] = time.perf_counter() - t_start
    check_results(record, counts)
    record["summary"] = summarize(record, "wall")
    record["summary_cpu"] = summarize(record, "cpu")
    return record


GC_ROW = "~:0(<gc>)"  # how stats_counts names fastprof's <gc> pseudo-function


def check_results(record, counts):
    """Same checksum in every mode; same (primitive, total) calls in cProfile and fastprof."""
    problems = record["problems"]
    for name in record["workloads"]:
        sums = {}
        for row in record["raw"]:
            if row["workload"] == name and "checksum" in row:
                sums.setdefault(row["checksum"], set()).add(row["mode"])
        if len(sums) > 1:
            problems.append("%s: workload result differs between modes: %s" % (name, sums))
        ref = counts.get((name, "cprofile"))
        for mode in ("fastprof", CPU_MODE):
            got = counts.get((name, mode))
            if ref is None or got is None:
                continue
            diff = []
            for key in sorted(set(ref) | set(got)):
                a, b = ref.get(key), got.get(key)
                if a is None and key == GC_ROW:
                    continue  # fastprof's collections (gc=True, the default): no cProfile row
                if a != b:
                    diff.append("%s: cProfile (cc, nc)=%s, %s=%s" % (key, a, mode, b))
            if diff:
                problems.append("%s: %s call counts differ from cProfile's in %d function(s):\n    %s"
                                % (name, mode, len(diff), "\n    ".join(diff[:20])))
            record.setdefault("count_checks", []).append(
                {"workload": name, "mode": mode, "functions": len(ref), "mismatches": len(diff)})
        check_scope(record, name, ref, counts.get((name, ONLY_MODE)))
        for row in record["raw"]:   # a line mode that recorded nothing measured nothing
            if (row["workload"] == name and row["mode"] in (LINES_MODE, LINE_PROFILER)
                    and row.get("line_hits") == 0):
                problems.append("%s/%s repeat %d: no line hits in %s"
                                % (name, row["mode"], row["repeat"], workloads.load(name).HOT))


def check_scope(record, name, ref, got):
    """--only: exactly the app module's Python functions, with cProfile's counts."""
    if ref is None or got is None:
        return
    prefix = os.path.abspath(workloads.load(name).__file__) + ":"
    want = {k: v for k, v in ref.items() if k.startswith(prefix)}
    python_rows = {k: v for k, v in got.items() if not k.startswith("~:")}
    diff = ["%s: cProfile %s, %s %s" % (k, want.get(k), ONLY_MODE, python_rows.get(k))
            for k in sorted(set(want) | set(python_rows)) if want.get(k) != python_rows.get(k)]
    if diff:
        record["problems"].append("%s: %s records other functions or counts than cProfile's "
                                  "for the app module:\n    %s"
                                  % (name, ONLY_MODE, "\n    ".join(diff[:20])))
    record.setdefault("count_checks", []).append(
        {"workload": name, "mode": ONLY_MODE, "functions": len(want), "mismatches": len(diff)})


# --------------------------------------------------------------------------- statistics

def _median(xs):
    return statistics.median(xs) if xs else None


METRICS = {"wall": "seconds", "cpu": "cpu_seconds"}


def summarize(record, metric="wall"):
    """Medians, slowdowns, ns/event and fractions from the raw rows, by ``metric``."""
    field = METRICS[metric]
    out = {"metric": metric, "workloads": {}}
    raw = [dict(r, seconds=r[field]) for r in record["raw"] if field in r]
    fractions, floor_fractions = {}, {}
    for name in record["workloads"]:
        rows = [r for r in raw if r["workload"] == name]
        events = _median([2 * r["calls"] for r in rows if r["mode"] == "cprofile" and "calls" in r])
        w = {"events": events, "modes": {}}
        by_mode = {}
        for r in rows:
            by_mode.setdefault(r["mode"], []).append(r)
        t_none = _median([r["seconds"] for r in by_mode.get("none", [])])
        for mode in workload_modes(name, record["modes"]):
            ts = [r["seconds"] for r in by_mode.get(mode, [])]
            if not ts:
                continue
            m = {"median": _median(ts), "min": min(ts), "max": max(ts), "n": len(ts)}
            if t_none and mode != "none":
                m["slowdown"] = m["median"] / t_none
                m["added"] = m["median"] - t_none
                if events:
                    m["ns_per_event"] = m["added"] / events * 1e9
            w["modes"][mode] = m
        out["workloads"][name] = w
        cp, fp = w["modes"].get("cprofile"), w["modes"].get("fastprof")
        if name not in workloads.NAMES:
            continue  # `scoped`: reported apart (summarize_scope), not in the medians
        if cp and fp and t_none and cp["added"] > 0:
            w["fraction"] = fp["added"] / cp["added"]
            fractions[name] = w["fraction"]
            # paired per repeat (the runs of one repeat are close in time): spread
            per = []
            for rep in sorted({r["repeat"] for r in rows}):
                t = {r["mode"]: r["seconds"] for r in rows if r["repeat"] == rep}
                if {"none", "cprofile", "fastprof"} <= set(t) and t["cprofile"] > t["none"]:
                    per.append((t["fastprof"] - t["none"]) / (t["cprofile"] - t["none"]))
            if per:
                w["fraction_per_repeat"] = per
        cpu = w["modes"].get(CPU_MODE)
        if cpu and cp and t_none and cp["added"] > 0:
            w["fraction_cpu_clock"] = cpu["added"] / cp["added"]
        floor = w["modes"].get("floor")
        if floor and cp and t_none and cp["added"] > 0:
            w["floor_fraction"] = floor["added"] / cp["added"]
            floor_fractions[name] = w["floor_fraction"]
    if fractions:
        worst = max(fractions, key=fractions.get)
        out["median_fraction"] = statistics.median(fractions.values())
        out["worst_fraction"] = fractions[worst]
        out["worst_workload"] = worst
        out["ranked"] = sorted(fractions, key=fractions.get, reverse=True)
    core = [w for n, w in out["workloads"].items() if n in workloads.NAMES]
    for mode, key in ((FAST_MODE, "fast"), ("cprofile", "cprofile"), ("fastprof", "fastprof"),
                      ("floor", "floor"), (LINES_MODE, "lines"), (LINE_PROFILER, "line_profiler")):
        xs = [w["modes"][mode]["slowdown"] for w in core if "slowdown" in w["modes"].get(mode, {})]
        if xs:  # slowdown over the unprofiled run (the goal of --fast is stated so)
            out[key + "_median_slowdown"] = statistics.median(xs)
            out[key + "_worst_slowdown"] = max(xs)
    wins = [w["modes"][LINES_MODE]["slowdown"] < w["modes"][LINE_PROFILER]["slowdown"]
            for w in core if "slowdown" in w["modes"].get(LINES_MODE, {})
            and "slowdown" in w["modes"].get(LINE_PROFILER, {})]
    if wins:
        out["lines_below_line_profiler"] = [sum(wins), len(wins)]
    scope = summarize_scope(out["workloads"])
    if scope:
        out["scope"] = scope
    if floor_fractions:
        out["median_floor_fraction"] = statistics.median(floor_fractions.values())
        out["worst_floor_fraction"] = max(floor_fractions.values())
    return out


def summarize_scope(by_workload):
    """Slowdowns of the --only benchmark (the first SCOPE_NAMES workload that ran)."""
    for name in workloads.SCOPE_NAMES:
        w = by_workload.get(name)
        if not w or "none" not in w["modes"]:
            continue
        out = {"workload": name, "none_seconds": w["modes"]["none"]["median"]}
        for mode in ("cprofile", "fastprof", FAST_MODE, ONLY_MODE):
            if "slowdown" in w["modes"].get(mode, {}):
                out[mode] = w["modes"][mode]["slowdown"]
        return out
    return None


# --------------------------------------------------------------------------- report

def _fmt_n(x):
    if x is None:
        return "-"
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= div:
            return "%.1f%s" % (x / div, unit)
    return "%d" % x


def _summary(record, metric):
    return record.get("summary" if metric == "wall" else "summary_cpu")


def print_table(record, metric="wall", out=sys.stdout):
    s = _summary(record, metric)
    py = record.get("python", record["executable"])
    if not s:
        print("\nPython %s: no results" % py, file=out)
        return
    shown = [m for m in ALL_MODES if m in record["modes"] and m not in ("none", CPU_MODE)]
    nrep = max([m["n"] for w in s["workloads"].values() for m in w["modes"].values()] or [0])
    fp_label = "fastprof" + (" [STAND-IN: cProfile]" if record.get("standin") else "")
    print("\nPython %s: median of %d run(s) per cell; s = %s seconds, x = slowdown, "
          "ns/ev = added ns per event" % (py, nrep, "wall" if metric == "wall" else "CPU"),
          file=out)
    print("fraction = fastprof added time / cProfile added time "
          "(lower is better; [min-max] over paired repeats)", file=out)
    head1 = "%-14s %7s %7s" % ("", "", "none")
    head2 = "%-14s %7s %7s" % ("workload", "events", "s")
    for m in shown:
        label = fp_label if m == "fastprof" else MODE_LABELS[m]
        head1 += " | %-22s" % label[:22]
        head2 += " | %7s %5s %7s" % ("s", "x", "ns/ev")
    with_floor = any("floor_fraction" in w for w in s["workloads"].values())
    head1 += " | fastprof / cProfile" + (" | floor / cProfile" if with_floor else "")
    head2 += " | fraction          " + (" | fraction" if with_floor else "")
    print(head1, file=out)
    print(head2, file=out)
    print("-" * len(head2) + "-" * 12, file=out)
    for name in record["workloads"]:
        w = s["workloads"].get(name)
        if not w:
            continue
        none = w["modes"].get("none", {})
        line = "%-14s %7s %7s" % (name, _fmt_n(w.get("events")),
                                   "%.3f" % none["median"] if none else "-")
        for m in shown:
            c = w["modes"].get(m)
            if not c:
                line += " | %7s %5s %7s" % ("-", "-", "-")
                continue
            line += " | %7.3f %4.1fx %7s" % (c["median"], c.get("slowdown", float("nan")),
                                            "%.0f" % c["ns_per_event"] if "ns_per_event" in c else "-")
        if "fraction" in w:
            cell = "%5.0f%%" % (100 * w["fraction"])
            per = w.get("fraction_per_repeat")
            if per and len(per) > 1:
                cell += " [%.0f-%.0f%%]" % (100 * min(per), 100 * max(per))
            line += " | %-18s" % cell
        if "floor_fraction" in w:
            line += " | %5.0f%%" % (100 * w["floor_fraction"])
        print(line.rstrip(), file=out)
    if "median_fraction" in s:
        print("fastprof added time / cProfile added time: median over workloads %.0f%%, "
              "worst %.0f%% (%s); ranked worst first: %s"
              % (100 * s["median_fraction"], 100 * s["worst_fraction"], s["worst_workload"],
                 ", ".join("%s %.0f%%" % (n, 100 * s["workloads"][n]["fraction"])
                           for n in s["ranked"])), file=out)
    if "fast_median_slowdown" in s:
        print("fastprof --fast slowdown over the unprofiled run: median %.2fx, worst %.2fx "
              "(goal: <= 1.15x median, <= 2x worst)"
              % (s["fast_median_slowdown"], s["fast_worst_slowdown"]), file=out)
    if "lines_median_slowdown" in s:
        print("--lines on each workload's HOT function, slowdown over the unprofiled run: "
              "fastprof median %.2fx, worst %.2fx%s"
              % (s["lines_median_slowdown"], s["lines_worst_slowdown"],
                 "; line_profiler median %.2fx, worst %.2fx; fastprof below line_profiler "
                 "on %d of %d workloads (goal: all)"
                 % ((s["line_profiler_median_slowdown"], s["line_profiler_worst_slowdown"])
                    + tuple(s["lines_below_line_profiler"]))
                 if "lines_below_line_profiler" in s else ""), file=out)
    if "scope" in s:
        print("--only benchmark (%s, hot loop in an out-of-scope library): %s"
              % (s["scope"]["workload"], scope_text(s["scope"])), file=out)
    if "median_floor_fraction" in s:
        print("floor (a hook that only reads the clock) / cProfile added time: median %.0f%%, "
              "highest %.0f%%: no profiler fed by the same hooks costs less"
              % (100 * s["median_floor_fraction"], 100 * s["worst_floor_fraction"]), file=out)
    for name in CPU_MODE_WORKLOADS:
        w = s["workloads"].get(name, {})
        cpu, wall = w.get("modes", {}).get(CPU_MODE), w.get("modes", {}).get("fastprof")
        if cpu and wall and "ns_per_event" in cpu and "ns_per_event" in wall:
            print('clock="cpu" on %s: %.3f s, %.0f ns/event added (clock="wall": %.0f ns/event; '
                  "%.0f%% of cProfile's added time)"
                  % (name, cpu["median"], cpu["ns_per_event"], wall["ns_per_event"],
                     100 * w.get("fraction_cpu_clock", float("nan"))), file=out)
    for p in record.get("problems", []):
        print("PROBLEM: " + p, file=out)


def scope_text(scope):
    """One line: the --only benchmark's slowdowns."""
    parts = ["unprofiled %.3f s" % scope["none_seconds"]]
    for mode in ("cprofile", "fastprof", FAST_MODE, ONLY_MODE):
        if mode in scope:
            parts.append("%s %.2fx" % (MODE_LABELS[mode], scope[mode]))
    return ", ".join(parts) + " (goal for --only on 3.12+: <= %.2fx)" % ONLY_GOAL


def print_overall(results, metric, out=sys.stdout):
    if len(results["runs"]) < 2:
        return
    print("\nSummary (%s time): fastprof added time as a fraction of cProfile's" % metric, file=out)
    for r in results["runs"]:
        s = _summary(r, metric) or {}
        if "median_fraction" in s:
            floor = ("   (floor: median %3.0f%%, highest %3.0f%%)"
                     % (100 * s["median_floor_fraction"], 100 * s["worst_floor_fraction"])
                     if "median_floor_fraction" in s else "")
            print("  Python %-8s median %4.0f%%   worst %4.0f%% (%s)%s"
                  % (r["python"], 100 * s["median_fraction"], 100 * s["worst_fraction"],
                     s["worst_workload"], floor), file=out)
        else:
            print("  Python %-8s no fraction (fastprof or cProfile missing)"
                  % r.get("python", r["executable"]), file=out)


def markdown(results, metric="wall"):
    """Markdown tables of the results (what docs/performance.md shows)."""
    runs = [r for r in results["runs"] if _summary(r, metric)]
    lines = []
    if not runs:
        return ""
    names = [n for n in runs[0]["workloads"] if n in workloads.NAMES]
    lines.append("fastprof's added time as a %% of cProfile's (%s time, median of %s runs):"
                 % (metric, results["config"].get("repeats")))
    lines.append("")
    lines.append("| workload | " + " | ".join("%s" % r["python"] for r in runs) + " |")
    lines.append("|---|" + "---:|" * len(runs))
    for n in names:
        cells = []
        for r in runs:
            f = _summary(r, metric)["workloads"].get(n, {}).get("fraction")
            cells.append("-" if f is None else "%.0f%%" % (100 * f))
        lines.append("| %s | %s |" % (n, " | ".join(cells)))
    cells = []
    for r in runs:
        s = _summary(r, metric)
        cells.append("**%.0f%%**" % (100 * s["median_fraction"]) if "median_fraction" in s else "-")
    lines.append("| **median** | %s |" % " | ".join(cells))
    cells = []
    for r in runs:
        s = _summary(r, metric)
        cells.append("%.0f%% (%s)" % (100 * s["worst_fraction"], s["worst_workload"])
                     if "worst_fraction" in s else "-")
    lines.append("| worst | %s |" % " | ".join(cells))
    if any("median_floor_fraction" in _summary(r, metric) for r in runs):
        cells = []
        for r in runs:
            s = _summary(r, metric)
            cells.append("%.0f%%" % (100 * s["median_floor_fraction"])
                         if "median_floor_fraction" in s else "-")
        lines.append("| *floor* (a hook that only reads the clock), median | %s |"
                     % " | ".join(cells))
    lines.extend(markdown_slowdowns(runs, metric))
    for r in runs:
        s = _summary(r, metric)
        shown = [m for m in ALL_MODES if m in r["modes"] and m not in ("none", CPU_MODE)]
        lines.append("")
        lines.append("Python %s: %s seconds (median), slowdown, added ns per event%s"
                     % (r["python"], metric, " [fastprof = STAND-IN]" if r.get("standin") else ""))
        lines.append("")
        lines.append("| workload | events | none s | " + " | ".join(MODE_LABELS[m] for m in shown)
                     + " | fastprof / cProfile |")
        lines.append("|---|---:|---:|" + "---:|" * len(shown) + "---:|")
        for n in r["workloads"]:  # `scoped` too
            w = s["workloads"].get(n)
            if not w:
                continue
            none = w["modes"].get("none")
            cells = [n, _fmt_n(w.get("events")), "%.3f" % none["median"] if none else "-"]
            for m in shown:
                c = w["modes"].get(m)
                if c and "ns_per_event" in c:
                    cells.append("%.3f s, %.1fx, %.0f ns" % (c["median"], c["slowdown"],
                                                             c["ns_per_event"]))
                elif c:
                    cells.append("%.3f s" % c["median"])
                else:
                    cells.append("-")
            f = w.get("fraction")
            per = w.get("fraction_per_repeat") or []
            cells.append("-" if f is None else "%.0f%%" % (100 * f) + (
                " (%.0f-%.0f%%)" % (100 * min(per), 100 * max(per)) if len(per) > 1 else ""))
            lines.append("| " + " | ".join(cells) + " |")
        w = s["workloads"].get("fib", {})
        cpu, wall = w.get("modes", {}).get(CPU_MODE), w.get("modes", {}).get("fastprof")
        if cpu and wall and "ns_per_event" in cpu and "ns_per_event" in wall:
            lines.append("")
            lines.append('`clock="cpu"` on fib: %.0f ns/event added vs %.0f ns/event with '
                         '`clock="wall"`.' % (cpu["ns_per_event"], wall["ns_per_event"]))
    return "\n".join(lines) + "\n"


def _row(label, runs, metric, fmt, missing=lambda r: "-"):
    """A markdown row: ``fmt(summary)`` per run, ``missing(run)`` where it has no value."""
    cells = []
    for r in runs:
        try:
            cells.append(fmt(_summary(r, metric)))
        except (KeyError, TypeError):
            cells.append(missing(r))
    return "| %s | %s |" % (label, " | ".join(cells))


def markdown_slowdowns(runs, metric):
    """Slowdown tables: the modes side by side, --lines vs line_profiler, --only."""
    head = ["", "| | " + " | ".join(r["python"] for r in runs) + " |",
            "|---|" + "---:|" * len(runs)]
    out = ["", "Slowdown over the unprofiled run (%s time), median over the 8 workloads "
           "(worst in brackets):" % metric] + head
    for key, label in (("floor", "floor (a hook that only reads the clock)"),
                       ("cprofile", "cProfile"), ("fastprof", "fastprof"),
                       ("fast", "fastprof `--fast` (goal: median <= 1.15x, worst <= 2x)")):
        out.append(_row(label, runs, metric, lambda s, k=key: "%.2fx (%.2fx)" % (
            s[k + "_median_slowdown"], s[k + "_worst_slowdown"]),
            lambda r, k=key: "refused" if k == "fast" and "fast_error" in r.get("probe", {}) else "-"))
    names = [n for n in runs[0]["workloads"] if n in workloads.NAMES]
    out += ["", "`--lines` on each workload's hot function vs line_profiler on the same "
            "function: slowdown over the unprofiled run, fastprof / line_profiler "
            "(goal: fastprof's below):"] + head
    for n in names:
        hot = getattr(workloads.load(n), "HOT", "?")
        out.append(_row("%s (`%s`)" % (n, hot), runs, metric, lambda s, n=n: "%.2fx / %.2fx" % (
            s["workloads"][n]["modes"][LINES_MODE]["slowdown"],
            s["workloads"][n]["modes"][LINE_PROFILER]["slowdown"])))
    out.append(_row("**median**", runs, metric, lambda s: "**%.2fx / %.2fx**" % (
        s["lines_median_slowdown"], s["line_profiler_median_slowdown"])))
    out.append(_row("fastprof below line_profiler", runs, metric,
                    lambda s: "%d of %d" % tuple(s["lines_below_line_profiler"])))
    out += ["", "`--only` benchmark (`scoped`: the hot loop is in a call-dense pure-Python "
            "library out of scope): slowdown over the unprofiled run "
            "(goal for `--only` on 3.12+: <= %.2fx):" % ONLY_GOAL] + head
    out.append(_row("unprofiled", runs, metric, lambda s: "%.3f s" % s["scope"]["none_seconds"]))
    for mode in ("cprofile", "fastprof", FAST_MODE, ONLY_MODE):
        out.append(_row(MODE_LABELS[mode], runs, metric,
                        lambda s, m=mode: "%.2fx" % s["scope"][m],
                        lambda r, m=mode: "refused" if m == FAST_MODE
                        and "fast_error" in r.get("probe", {}) else "-"))
    return out


def plot(results, path, metric="wall"):
    """Top: grouped bars of fastprof's fraction of cProfile's added time, per
    workload, one bar per version.  Bottom: median slowdown over the
    unprofiled run per version, floor / cProfile / fastprof / --fast side by side."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [r for r in results["runs"] if "median_fraction" in (_summary(r, metric) or {})]
    if not runs:
        raise SystemExit("--plot: no fastprof/cProfile fractions in the results")
    names = [n for n in runs[0]["workloads"] if n in workloads.NAMES]
    labels = names + ["median"]
    width = 0.8 / len(runs)
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(max(8, 1.1 * len(labels) + 2), 9.6),
                                  gridspec_kw={"height_ratios": [1.15, 1]})
    ymax, ymin = 0.0, 0.0
    for i, r in enumerate(runs):
        s = _summary(r, metric)
        vals = [100 * s["workloads"].get(n, {}).get("fraction", float("nan")) for n in names]
        vals.append(100 * s["median_fraction"])
        xs = [j + (i - (len(runs) - 1) / 2) * width for j in range(len(labels))]
        ax.bar(xs, vals, width * 0.95, label="Python " + r["python"])
        for x, v in zip(xs, vals):
            if v != v:  # no fraction: cProfile added nothing measurable
                ax.text(x, 1, "n/a", rotation=90, ha="center", va="bottom", fontsize=7)
        ymax = max([ymax] + [v for v in vals if v == v])
        ymin = min([ymin] + [v for v in vals if v == v])
        if "median_floor_fraction" in s:
            # the floor of each bar: what the interpreter's hooks alone cost
            fvals = [100 * s["workloads"].get(n, {}).get("floor_fraction", float("nan"))
                     for n in names] + [100 * s["median_floor_fraction"]]
            ax.plot(xs, fvals, linestyle="none", marker="_", markersize=60 * width,
                    markeredgewidth=2, color="black",
                    label="floor: a hook that only reads the clock" if i == 0 else None)
    ax.axhline(100, color="dimgray", linestyle=":", linewidth=1.0, label="= cProfile")
    ax.axhline(100 * TARGET_FRACTION, color="crimson", linestyle="--", linewidth=1.2,
               label="target: 50% of cProfile")
    ax.axvline(len(names) - 0.5, color="lightgray", linewidth=1.0)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=20, ha="right")
    ax.set_ylabel("fastprof overhead, % of cProfile's")
    ax.set_ylim(min(0, ymin * 1.1), max(110, ymax) * 1.12)
    host = results.get("host", {})
    aa = " [A/A CHECK: cProfile stands in for fastprof]" if results["config"].get("standin") else ""
    ax.set_title("fastprof added time / cProfile added time (lower is better)" + aa + "\n"
                 "%s time, median of %s runs per cell, %s, %s CPUs"
                 % (metric, results["config"].get("repeats"), host.get("machine", "?"),
                    host.get("cpus", "?")), fontsize=10)
    ax.legend(fontsize=8, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.2),
              frameon=False)
    ax.grid(axis="y", alpha=0.3)
    plot_slowdowns(ax2, runs, metric)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print("plot written to %s" % path)


def plot_slowdowns(ax, runs, metric):
    """Median slowdown over the 8 workloads per version and mode; a tick marks the worst."""
    modes = [("floor", "floor (hook only)", "lightgray"), ("cprofile", "cProfile", "tab:red"),
             ("fastprof", "fastprof", "tab:blue"), ("fast", "fastprof --fast", "tab:green")]
    width = 0.8 / len(modes)
    for i, (key, label, color) in enumerate(modes):
        xs, med, worst = [], [], []
        for j, r in enumerate(runs):
            s = _summary(r, metric)
            x = j + (i - (len(modes) - 1) / 2) * width
            if key + "_median_slowdown" in s:
                xs.append(x)
                med.append(s[key + "_median_slowdown"])
                worst.append(s[key + "_worst_slowdown"])
            elif key == "fast":  # fast mode refused on this version (3.13)
                ax.text(x, 1.02, "refused", rotation=90, ha="center", va="bottom", fontsize=7)
        ax.bar(xs, med, width * 0.95, label=label + " (median)", color=color)
        ax.plot(xs, worst, linestyle="none", marker="_", markersize=40 * width,
                markeredgewidth=2, color=color, label="ticks: worst workload" if i == 0 else None)
    ax.axhline(1.15, color="darkgreen", linestyle="--", linewidth=1.2,
               label="--fast goal: median <= 1.15x")
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels([r["python"] for r in runs])
    ax.set_xlabel("Python")
    ax.set_ylabel("slowdown over the unprofiled run (x)")
    ax.set_ylim(0.9, None)
    ax.set_title("slowdown, median over the workloads (bars) and worst workload (ticks); "
                 "lower is better", fontsize=10)
    ax.legend(fontsize=8, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
    ax.grid(axis="y", alpha=0.3)


# --------------------------------------------------------------------------- main

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--python", nargs="+", metavar="X",
                   help="interpreter(s) to benchmark (default: the one running this script)")
    p.add_argument("--all-versions", action="store_true",
                   help="benchmark CPython %s found under pyenv" % ", ".join(PYENV_VERSIONS))
    p.add_argument("--venvs", metavar="DIR",
                   help="prefer DIR/venv-3.X/bin/python (with yappi, pyinstrument) "
                        "for each interpreter; see benchmarks/make_venvs.sh")
    p.add_argument("--pythonpath", metavar="TEMPLATE",
                   help="put this in front of PYTHONPATH for the workers of each interpreter; "
                        "{minor} becomes its version, e.g. 'build/py{minor}/lib' "
                        "(the per-version builds of `make build`)")
    p.add_argument("--repeats", type=int, default=5, help="runs per (workload, mode); default 5")
    p.add_argument("--workloads", type=lambda s: s.split(","), default=list(workloads.ALL_NAMES),
                   help="comma-separated subset of: " + ",".join(workloads.ALL_NAMES))
    p.add_argument("--modes", type=lambda s: s.split(","),
                   help="comma-separated subset of: " + ",".join(ALL_MODES)
                        + " (default: all available)")
    p.add_argument("--scale", type=float, default=1.0, help="multiply the full sizes")
    p.add_argument("--smoke", action="store_true",
                   help="CI: tiny sizes, 1 repeat, all modes; fail on any worker failure, "
                        "missing fastprof, or call counts that differ from cProfile's")
    p.add_argument("--json", metavar="FILE", help="write raw timings and summaries")
    p.add_argument("--plot", metavar="FILE.png", help="grouped bar chart (needs matplotlib)")
    p.add_argument("--markdown", metavar="FILE.md",
                   help="with --from-json: write the results as markdown tables")
    p.add_argument("--from-json", metavar="FILE",
                   help="do not run: load results written by --json, print and/or --plot")
    p.add_argument("--metric", choices=sorted(METRICS), default="wall",
                   help="what the tables and plot use: wall time (perf_counter; default) or "
                        "the worker's CPU time over the same region (process_time; less "
                        "disturbed by other load). Both are always recorded.")
    p.add_argument("--pin", type=int, metavar="CPU", help="pin each worker to this CPU")
    p.add_argument("--timeout", type=float, default=600, help="seconds per worker")
    p.add_argument("--standin", action="store_true",
                   help="development only: time cProfile in place of fastprof (labelled)")
    p.add_argument("-v", "--verbose", action="store_true", help="print every measurement")
    args = p.parse_args(argv)
    unknown = [w for w in args.workloads if w not in workloads.ALL_NAMES]
    if unknown:
        p.error("unknown workload(s): %s" % ", ".join(unknown))
    if args.modes:
        bad = [m for m in args.modes if m not in ALL_MODES]
        if bad:
            p.error("unknown mode(s): %s" % ", ".join(bad))
        if "none" not in args.modes:
            args.modes.insert(0, "none")
    if args.smoke:
        args.repeats = 1
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.from_json:
        with open(args.from_json) as f:
            results = json.load(f)
        for record in results["runs"]:
            print_table(record, args.metric)
        print_overall(results, args.metric)
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(markdown(results, args.metric))
            print("markdown tables written to %s" % args.markdown)
        if args.plot:
            plot(results, args.plot, args.metric)
        return 0

    if args.python:
        pythons = list(args.python)
    elif args.all_versions:
        pythons = find_pyenv_pythons()
    else:
        pythons = [sys.executable]
    if args.venvs:
        pythons = venv_override(pythons, args.venvs)

    results = {
        "schema": SCHEMA,
        "created": datetime.datetime.now().isoformat(timespec="seconds"),
        "host": {"platform": platform.platform(), "machine": platform.machine(),
                 "processor": platform.processor(), "cpus": os.cpu_count()},
        "config": {"repeats": args.repeats, "smoke": args.smoke, "scale": args.scale,
                   "pin": args.pin, "standin": args.standin,
                   "pythonpath": os.environ.get("PYTHONPATH", "")},
        "runs": [],
    }
    failed = False
    for python in pythons:
        t0 = time.perf_counter()
        record = run_suite(python, args)
        elapsed = time.perf_counter() - t0
        if args.smoke and elapsed > SMOKE_TIME_LIMIT:
            print("WARNING: smoke run took %.0f s (> %.0f s budget)" % (elapsed, SMOKE_TIME_LIMIT),
                  file=sys.stderr)
        results["runs"].append(record)
        print_table(record, args.metric)
        failed = failed or bool(record["problems"])
        if args.json:   # after each interpreter, so a long run leaves partial results
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
    print_overall(results, args.metric)
    if args.json:
        print("results written to %s" % args.json)
    if args.plot:
        plot(results, args.plot, args.metric)
    if failed:
        print("FAILED: see PROBLEM lines above", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
