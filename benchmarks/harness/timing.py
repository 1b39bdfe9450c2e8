"""run.py timing: what fastprof costs, side by side with cProfile (and yappi, pyinstrument).

Every (workload, mode) measurement runs in its own fresh process (timing_worker.py),
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

--json FILE writes the summaries (per workload and mode: medians, slowdowns,
ns/event, fractions; what the tables and the plot are made of); --raw FILE
keeps every measurement too.  --from-json reads either.

Examples:
  PYTHONPATH=python python3 benchmarks/run.py timing                # current interpreter
  PYTHONPATH=python python3 benchmarks/run.py timing --all-versions \
      --json benchmarks/results/overhead.json --plot docs/benchmark.png
  PYTHONPATH=python python3 benchmarks/run.py timing --smoke        # CI: tiny sizes + correctness checks
  python3 benchmarks/run.py timing --from-json benchmarks/results/overhead.json --plot out.png
                                                                    # re-print / re-plot only

Why not pyperf: pyperf spawns and calibrates its own workers, runs loops of a
benchmark in one process and compares *separate* result files; here one call
per fresh process, a profiler wrapped around exactly that call, an event
count taken from cProfile's stats and modes interleaved in time matter more
than pyperf's loop calibration, and the workers must run on bare
interpreters (3.9+) with nothing installed.  So: plain subprocess +
statistics.median, standard library only (matplotlib only for --plot).
"""

import os
import sys
import time

import workloads

from harness.common import (
    HARNESS,
    PYENV_VERSIONS,
    arg_parser,
    check_names,
    comma_list,
    exit_status,
    find_pyenv_pythons,
    new_results,
    pythonpath_for,
    read_json,
    run_each,
    run_worker,
    venv_override,
    worker_env,
    write_json,
)
from harness.timing_modes import (
    ALL_MODES,
    CPU_MODE,
    FAST_MODE,
    LINE_PROFILER,
    LINES_MODE,
    METRICS,
    ONLY_MODE,
    OPTIONAL_MODES,
    workload_modes,
)
from harness.timing_plot import plot
from harness.timing_report import markdown, print_overall, print_table
from harness.timing_summary import summarize, summary_only

SCHEMA = "fastprof-bench/1"
WORKER = os.path.join(HARNESS, "timing_worker.py")
SMOKE_TIME_LIMIT = 60.0


def sizes_for(args):
    sizes = {}
    for name in args.workloads:
        mod = workloads.load(name)
        if args.smoke:
            sizes[name] = mod.SIZES["smoke"]
        elif args.scale != 1.0:
            sizes[name] = workloads.scaled_size(mod, args.scale)
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


def run_suite(python, args):
    """Run every (workload, mode) ``repeats`` times on one interpreter; return its record."""
    problems = []
    env = worker_env(pythonpath_for(args.pythonpath, python))
    probe, err = run_worker([python, WORKER, "--probe"], env, 120)
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
                res, err = run_worker([python, WORKER, spec], env, args.timeout)
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


def parse_args(argv):
    p = arg_parser(__doc__, "run.py timing")
    p.add_argument("--python", nargs="+", metavar="X",
                   help="interpreter(s) to benchmark (default: the one running run.py)")
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
    p.add_argument("--workloads", type=comma_list, default=list(workloads.ALL_NAMES),
                   help="comma-separated subset of: " + ",".join(workloads.ALL_NAMES))
    p.add_argument("--modes", type=comma_list,
                   help="comma-separated subset of: " + ",".join(ALL_MODES)
                        + " (default: all available)")
    p.add_argument("--scale", type=float, default=1.0, help="multiply the full sizes")
    p.add_argument("--smoke", action="store_true",
                   help="CI: tiny sizes, 1 repeat, all modes; fail on any worker failure, "
                        "missing fastprof, or call counts that differ from cProfile's")
    p.add_argument("--json", metavar="FILE",
                   help="write the summaries (medians, slowdowns, fractions: what the tables and the plot "
                        "use; FILE.gz: gzip-compressed); with --from-json: those of the file read")
    p.add_argument("--raw", metavar="FILE", help="write every measurement too, with the summaries")
    p.add_argument("--plot", metavar="FILE.png", help="grouped bar chart (needs matplotlib)")
    p.add_argument("--markdown", metavar="FILE.md",
                   help="with --from-json: write the results as markdown tables")
    p.add_argument("--from-json", metavar="FILE",
                   help="do not run: load results written by --json or --raw, print and/or --plot")
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
    check_names(p, "workload", args.workloads, workloads.ALL_NAMES)
    if args.modes:
        check_names(p, "mode", args.modes, ALL_MODES)
        if "none" not in args.modes:
            args.modes.insert(0, "none")
    if args.from_json and not os.path.isfile(args.from_json):
        p.error("--from-json %s: no such file" % args.from_json)
    if args.from_json and args.raw:
        p.error("--raw goes with a run: --from-json has no new measurements")
    if args.smoke:
        args.repeats = 1
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.from_json:
        results = read_json(args.from_json)
        for record in results["runs"]:
            print_table(record, args.metric)
        print_overall(results, args.metric)
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(markdown(results, args.metric))
            print("markdown tables written to %s" % args.markdown)
        if args.json:
            write_json(args.json, summary_only(results))
            print("summaries written to %s" % args.json)
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

    results = new_results(SCHEMA, {"repeats": args.repeats, "smoke": args.smoke, "scale": args.scale,
                                   "pin": args.pin, "standin": args.standin,
                                   "pythonpath": os.environ.get("PYTHONPATH", "")})

    def measure(python):
        t0 = time.perf_counter()
        record = run_suite(python, args)
        elapsed = time.perf_counter() - t0
        if args.smoke and elapsed > SMOKE_TIME_LIMIT:
            print("WARNING: smoke run took %.0f s (> %.0f s budget)" % (elapsed, SMOKE_TIME_LIMIT),
                  file=sys.stderr)
        return record

    def save(results):
        if args.json:
            write_json(args.json, summary_only(results))
        if args.raw:
            write_json(args.raw, results, compact=False)

    ok = run_each(pythons, results, measure, lambda record: print_table(record, args.metric), save)
    print_overall(results, args.metric)
    if args.json:
        print("results written to %s" % args.json)
    if args.raw:
        print("raw results written to %s" % args.raw)
    if args.plot:
        plot(results, args.plot, args.metric)
    return exit_status(ok)
