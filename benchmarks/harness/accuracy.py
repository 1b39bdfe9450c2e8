"""run.py accuracy: how far a profile's times are from the program's: each profiler against a sampler.

For each workload (benchmarks/workloads/ and the real programs of
benchmarks/programs/) and each interpreter, in fresh processes
(accuracy_worker.py), the same work -- ``run(size)`` called ``loops``
times, ``size`` chosen so that one call takes about --chunk seconds and
``loops`` so that all take about --seconds unprofiled -- runs:

  none          unprofiled, --repeats times: the wall time the profiles are held to
  py-spy        under py-spy (an out-of-process sampler, from PyPI) at --rate,
                twice: the second run gives the sampler's distance from itself
  stdlib        3.15+: under the standard library's ``profiling.sampling``, twice
  cprofile      under cProfile
  fastprof      under fastprof, as a user gets it (compensated, once it can be)
  fastprof-raw  under fastprof.Profile(compensate=False), where that exists
  timed         a workload with ``timed_run`` (fib) times its own phases,
                unprofiled, twice: an exact reference (own seconds per
                function), held against the profiles and the samplers alike
                (py-spy under-samples fib's deep recursion by 15-29 points)

and the report gives, per workload:

  TVD           total-variation distance, in points, between a profile's share of
                self time per function and the sampler's: 50 x the sum over
                functions of |share_profile - share_sampler|.  0 = same shares,
                100 = disjoint.  A sampler sees no C function, so a C function's
                own time is charged to its Python callers first, split in
                proportion to its own time under each caller (the pstats caller
                edge's tottime); C -> C edges are followed up to a Python caller.
  noise         the sampler's TVD from its own second run: the noise floor, what
                no profile can be expected to beat (the TVDs are against the first
                run; the JSON also has them against both runs pooled, tvd_pooled)
  total/wall    the profile's total own time over the unprofiled wall time
                (1.00 = the profile reports the program's real time)

Samples are cut at the worker's ``_accuracy_region`` frame: start-up, imports
and warm-up are not compared.  The sampler stops the program for each sample
(samplers.py): slower, but no torn reads (--nonblocking: a stack read while
it changes is dropped or misread; fib's deep recursion got 170 samples a
second).
Short calls (--chunk) matter too: a sampler's rate drifts when a busy
machine deschedules it, and a workload made of long phases (fib, then
Ackermann) then gets a whole phase over- or under-sampled; 20 ms calls
spread that drift over every function.  A py-spy sample's frame matches a
pstats key (file, first line, name) exactly; the stdlib sampler gives only a
file's base name and the current line, so against it functions are compared
by (base name, function name), same-named ones in one file merged.

--json FILE writes the summaries (per workload: the TVDs, noise floors,
total/wall ratios and top shares the tables are made of; FILE.gz:
gzip-compressed); --raw FILE keeps every run's samples and profile too,
which --from-json can summarize anew and --add-timed extend.

Examples:
  PYTHONPATH=build/py3.11/lib python3 benchmarks/run.py accuracy             # this interpreter
  python3 benchmarks/run.py accuracy --python /tmp/fastprof-bench-venvs/venv-3.1{1,3}/bin/python \\
      --pythonpath 'build/py{minor}/lib' --json benchmarks/results/accuracy.json.gz --raw /tmp/acc-raw.json.gz
  PYTHONPATH=python python3 benchmarks/run.py accuracy --smoke               # seconds: one workload
  python3 benchmarks/run.py accuracy --from-json benchmarks/results/accuracy.json.gz   # re-print
  python3 benchmarks/run.py accuracy --from-json /tmp/acc-raw.json.gz --add-timed      # + the exact reference

Needs ptrace rights for py-spy (root, or kernel.yama.ptrace_scope=0).
"""

import json
import math
import os
import subprocess
import sys
import time

import programs
import workloads

from harness.accuracy_report import markdown_record
from harness.accuracy_summary import has_raw_runs, summarize_record, summarize_workload, summary_only
from harness.common import (
    BENCH,
    HARNESS,
    arg_parser,
    check_names,
    comma_list,
    exit_status,
    new_results,
    open_json,
    pythonpath_for,
    read_json,
    rounded,
    run_each,
    worker_env,
)
from harness.common import run_worker as run_command
from harness.samplers import KINDS as SAMPLERS
from harness.samplers import find_py_spy, sampled, sampler_command, sampler_self_counts
from harness.worker_common import REGION, load_workload

SCHEMA = "fastprof-accuracy/1"
WORKER = os.path.join(HARNESS, "accuracy_worker.py")
PROFILE_MODES = ["cprofile", "fastprof", "fastprof-raw"]
SMOKE_WORKLOAD = "oop"

#: niceness increment for every worker (and its sampler): --nice
NICE = 0


def _renice():
    if NICE:
        os.nice(NICE)


def run_worker(python, spec, env, timeout, prefix=None):
    """Run the worker on ``spec`` (under ``prefix``, a sampler's command that
    ends where the worker's script goes): (result, error)."""
    return run_command((prefix or [python]) + [WORKER, spec], env, timeout, preexec_fn=_renice if NICE else None)


def all_names():
    return list(workloads.NAMES) + list(programs.NAMES)


def run_sampler(kind, args, python, spec, env):
    """(result with ``counts``, error): one worker run under the sampler."""
    def run(out):
        prefix = sampler_command(kind, python, out, args.rate, getattr(args, "py_spy_path", None), args.nonblocking,
                                 args.stdlib_mode)
        return run_worker(python, spec, env, args.timeout, prefix)
    (res, err), stacks = sampled(kind, run)
    if res is None:
        return None, err
    counts = sampler_self_counts(stacks)
    res["counts"] = counts
    res["samples"] = sum(counts.values())
    res["rate_achieved"] = res["samples"] / res["seconds"] if res["seconds"] > 0 else 0.0
    if not counts:
        return None, "%s recorded no sample below %s (%d stacks)" % (kind, REGION, len(stacks))
    return res, None


def probe(python, env, names):
    res, err = run_command([python, WORKER, "--probe"], env, 120)
    if res is None:
        return None, err
    avail = {}
    for name in names:
        if name in programs.NAMES:
            mod = programs.requirement(name)
            code = "import importlib.util,sys; sys.exit(importlib.util.find_spec(%r) is None)" % mod
            avail[name] = subprocess.run([python, "-c", code], env=env).returncode == 0
        else:
            avail[name] = True
    res["available"] = avail
    return res, None


def samplers_for(args, python, probe_res):
    kinds = []
    for kind in args.samplers:
        if kind == "py-spy":
            args.py_spy_path = find_py_spy(args.py_spy, python)
            if args.py_spy_path:
                kinds.append(kind)
        elif kind == "stdlib" and probe_res.get("stdlib_sampler"):
            kinds.append(kind)
    return kinds


def run_workload(python, name, args, env, kinds, modes, record):
    """Every mode on one workload; returns its entry (raw results + summary)."""
    wl = load_workload(name)
    size = wl.SIZES["smoke" if args.smoke else "full"]
    base = {"workload": name, "size": size, "warmup_size": wl.SIZES["smoke"]}
    entry = {"size": size, "runs": {}, "errors": []}

    def note(mode, res, err):
        if res is None:
            entry["errors"].append("%s: %s" % (mode, err))
            record["problems"].append("%s/%s: %s" % (name, mode, err))
            print("  FAILED %s/%s: %s" % (name, mode, err), file=sys.stderr, flush=True)
        else:
            entry["runs"].setdefault(mode, []).append(res)
        return res

    # calibrate: one unprofiled run(full size) -> the size of a --chunk call, then
    # a few of those -> loops for ~--seconds
    res = note("calibrate", *run_worker(python, dict(base, mode="none", loops=1), env, args.timeout))
    if res is None:
        return entry
    if not args.smoke:
        size = chunk_size(wl, args.chunk / max(res["seconds"], 1e-6))
        base["size"] = entry["size"] = size
        n = max(1, int(math.ceil(0.5 / args.chunk)))
        res = note("calibrate", *run_worker(python, dict(base, mode="none", loops=n), env, args.timeout))
        if res is None:
            return entry
        res = dict(res, seconds=res["seconds"] / n)
    loops = max(1, int(math.ceil(args.seconds / max(res["seconds"], 1e-6))))
    entry["loops"] = loops
    spec = dict(base, loops=loops)
    order = [("none", None)] * args.repeats
    for kind in kinds:
        order += [(kind, kind), (kind, kind)]
    if hasattr(wl, "timed_run"):   # an exact reference, held against the samplers too
        kinds = kinds + ["timed"]
        order += [("timed", None), ("timed", None)]
    order += [(m, None) for m in modes]
    entry["loadavg"] = [_loadavg()]
    for mode, kind in order:
        t0 = time.perf_counter()
        if kind and kind != "timed":
            res = note(mode, *run_sampler(kind, args, python, dict(spec, mode="sampler"), env))
        else:
            res = note(mode, *run_worker(python, dict(spec, mode=mode), env, args.timeout))
        if args.verbose and res is not None:
            print("    %-14s %-13s %7.3f s region, %5.1f s total%s"
                  % (name, mode, res["seconds"], time.perf_counter() - t0,
                     ", %d samples" % res["samples"] if kind and kind != "timed" else ""), flush=True)
    entry["loadavg"].append(_loadavg())
    entry["summary"] = summarize_workload(entry, kinds, modes)
    if not entry["summary"]["checksums_agree"]:
        record["problems"].append("%s: the workload's result differs between modes" % name)
    return entry


def _loadavg():
    """The machine's 1-minute load average (how busy it was: the noise floor follows it)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def chunk_size(wl, factor):
    """The size whose run() takes about ``factor`` times the full size's (at least the smoke size)."""
    if factor >= 1:
        return wl.SIZES["full"]
    return min(wl.SIZES["full"], workloads.scaled_size(wl, factor))


def run_python(python, args):
    env = worker_env(pythonpath_for(args.pythonpath, python))
    record = {"executable": python, "problems": [], "workloads": {}}
    pr, err = probe(python, env, args.workloads)
    if pr is None:
        record["problems"].append("probe failed: " + err)
        return record
    record["python"] = pr["python"]
    record["probe"] = pr
    if "fastprof_error" in pr:
        record["problems"].append("fastprof is not importable: " + pr["fastprof_error"])
    modes = ["cprofile"]
    if "fastprof" in pr:
        modes.append("fastprof")
        if pr.get("compensate"):
            modes.append("fastprof-raw")
    modes = [m for m in modes if m in args.profilers]
    kinds = samplers_for(args, python, pr)
    record["modes"], record["samplers"] = modes, kinds
    record["py_spy"] = getattr(args, "py_spy_path", None) if "py-spy" in kinds else None
    if record["py_spy"]:
        record["py_spy_version"] = subprocess.run([record["py_spy"], "--version"], stdout=subprocess.PIPE,
                                                  universal_newlines=True).stdout.strip()
    if not kinds and args.samplers:
        record["problems"].append("no sampler: py-spy not found (pip install py-spy, or --py-spy PATH)"
                                  + (" and no profiling.sampling" if "stdlib" in args.samplers else ""))
    print("\n=== Python %s (%s)\n    modes: %s; samplers: %s"
          % (pr["python"], python, ", ".join(modes), ", ".join(kinds) or "none"), flush=True)
    t0 = time.perf_counter()
    for name in args.workloads:
        if not pr["available"].get(name):
            print("  %s: skipped (%s is not installed for this interpreter)"
                  % (name, programs.requirement(name)), flush=True)
            record.setdefault("skipped", []).append(name)
            continue
        record["workloads"][name] = run_workload(python, name, args, env, kinds, modes, record)
        print("  %s done (%.0f s)" % (name, time.perf_counter() - t0), flush=True)
    record["elapsed"] = time.perf_counter() - t0
    record["summary"] = summarize_record(record)
    return record


_PATHS_CODE = "import json, sysconfig; p = sysconfig.get_paths(); print(json.dumps([p['purelib'], p['stdlib']]))"


def _short_paths(results):
    """{long prefix: short name}: each run's site-packages and stdlib, and benchmarks/."""
    out = {BENCH + os.sep: "{bench}/"}
    for record in results["runs"]:
        paths = record.get("paths")
        if paths is None:
            try:
                paths = json.loads(subprocess.run([record["executable"], "-c", _PATHS_CODE],
                                                  stdout=subprocess.PIPE, universal_newlines=True).stdout)
            except (OSError, ValueError):
                continue
            record["paths"] = paths
        out[paths[0] + os.sep] = "{site-%s}/" % record.get("python", "?")
        out[paths[1] + os.sep] = "{stdlib-%s}/" % record.get("python", "?")
    return out


def write_results(path, results, digits=None):
    """Long file prefixes named once (``short_paths``), floats cut to ``digits``
    significant digits if given: a smaller file."""
    short = _short_paths(results)
    results = {k: v for k, v in results.items() if k != "short_paths"}
    text = json.dumps(rounded(results, digits) if digits else results, indent=None, separators=(",", ":"))
    for long, name in sorted(short.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(json.dumps(long)[1:-1], name)
    text = text[:-1] + ',"short_paths":' + json.dumps({v: k for k, v in short.items()}) + "}"
    with open_json(path, "w") as f:
        f.write(text + "\n")


def parse_args(argv):
    p = arg_parser(__doc__, "run.py accuracy")
    p.add_argument("--python", nargs="+", metavar="X",
                   help="interpreter(s) to measure (default: the one running run.py)")
    p.add_argument("--pythonpath", metavar="TEMPLATE",
                   help="put this in front of PYTHONPATH for each interpreter's workers; {minor} "
                        "becomes its version, e.g. 'build/py{minor}/lib'")
    p.add_argument("--workloads", type=comma_list, default=None,
                   help="comma-separated subset of: " + ",".join(all_names()))
    p.add_argument("--seconds", type=float, default=3.0,
                   help="unprofiled run time to aim for per measurement (more samples, less noise); "
                        "default 3")
    p.add_argument("--chunk", type=float, default=0.02,
                   help="seconds of one run() call (its size is chosen so, then called again and again): "
                        "a workload's phases must be short against the sampler's rate drifts on a busy "
                        "machine, or the sampler over-samples whole phases; default 0.02")
    p.add_argument("--repeats", type=int, default=3,
                   help="unprofiled runs per workload (their median is the wall time); default 3")
    p.add_argument("--rate", type=int, default=2000, help="samples per second; default 2000")
    p.add_argument("--samplers", type=comma_list, default=list(SAMPLERS),
                   help="comma-separated subset of: py-spy,stdlib (stdlib: 3.15+ only); default both; "
                        "'' for none (then only a workload that times its own phases, fib, is compared)")
    p.add_argument("--profilers", type=comma_list, default=list(PROFILE_MODES),
                   help="comma-separated subset of: %s (default: all that the interpreter's fastprof has; "
                        "'' for the samplers alone)" % ",".join(PROFILE_MODES))
    p.add_argument("--py-spy", metavar="PATH",
                   help="py-spy executable (default: beside the interpreter, beside this one, or on PATH)")
    p.add_argument("--stdlib-mode", choices=["wall", "cpu"], default="wall",
                   help="profiling.sampling's --mode: cpu samples the program only while it is on a CPU "
                        "(needs --nonblocking: a stopped thread is on no CPU; default wall, as py-spy)")
    p.add_argument("--nonblocking", action="store_true",
                   help="let the sampler read the program's stacks without stopping it (less slowdown, "
                        "but torn reads, dropped or misread)")
    p.add_argument("--nice", type=int, default=0, metavar="N",
                   help="run every worker and its sampler at this niceness increment (a negative one "
                        "needs root): on a busy machine, to keep the measured process on a CPU (default 0)")
    p.add_argument("--smoke", action="store_true",
                   help="seconds: one workload (%s) at its smoke size, 1 repeat, 0.3 s per run"
                        % SMOKE_WORKLOAD)
    p.add_argument("--json", metavar="FILE",
                   help="write the summaries (the numbers the tables are made of; gzip-compressed: FILE.gz)")
    p.add_argument("--raw", metavar="FILE",
                   help="write every run's samples and profile too, with the summaries (for --from-json, --add-timed)")
    p.add_argument("--markdown", metavar="FILE.md", help="also write the tables to this file")
    p.add_argument("--from-json", metavar="FILE",
                   help="do not run: print the tables of a --json or --raw file; a --raw file's runs are "
                        "summarized anew (with --json / --raw: write the new summaries / all)")
    p.add_argument("--add-timed", action="store_true",
                   help="with --from-json on a --raw file: first measure the exact reference (a workload "
                        "that times its own phases: fib) at each stored run's size, where the file lacks it")
    p.add_argument("--timeout", type=float, default=900, help="seconds per worker")
    p.add_argument("-v", "--verbose", action="store_true", help="print every measurement")
    args = p.parse_args(argv)
    if args.workloads is None:
        args.workloads = [SMOKE_WORKLOAD] if args.smoke else all_names()
    check_names(p, "workload", args.workloads, all_names())
    check_names(p, "sampler", args.samplers, SAMPLERS)
    check_names(p, "profiler", args.profilers, PROFILE_MODES)
    if args.add_timed and not args.from_json:
        p.error("--add-timed goes with --from-json")
    if args.from_json and not os.path.isfile(args.from_json):
        p.error("--from-json %s: no such file" % args.from_json)
    if args.add_timed and not has_raw_runs(read_json(args.from_json)):
        p.error("--add-timed: %s holds summaries only; it needs a --raw file" % args.from_json)
    if args.smoke:
        args.repeats = 1
        args.seconds = 0.3
    return args


def add_timed(results, timeout):
    """--add-timed: measure the exact reference now, at each run's size, for
    the stored workloads that have one (``timed_run``) and lack it."""
    short = dict(results.get("short_paths", {}), **{"{bench}/": BENCH + os.sep})   # (this checkout's)
    for record in results["runs"]:
        for name, entry in record.get("workloads", {}).items():
            if name in programs.NAMES:   # (importing one needs its package here)
                continue
            wl = load_workload(name)
            if "loops" not in entry or "timed" in entry["runs"] or not hasattr(wl, "timed_run"):
                continue
            spec = {"workload": name, "mode": "timed", "size": entry["size"], "loops": entry["loops"],
                    "warmup_size": wl.SIZES["smoke"]}
            for _ in range(2):   # the second run gives its noise
                res, err = run_worker(record["executable"], spec, worker_env(None), timeout)
                if res is None:
                    record["problems"].append("%s/timed: %s" % (name, err))
                    break
                counts = {}
                for key, seconds in res["counts"].items():   # the stored file's short names
                    for short_name, long in sorted(short.items(), key=lambda kv: -len(kv[1])):
                        key = key.replace(long, short_name)
                    counts[key] = seconds
                res["counts"] = counts
                entry["runs"].setdefault("timed", []).append(res)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.from_json:
        results = read_json(args.from_json)
        if args.add_timed:
            add_timed(results, args.timeout)
        for record in results["runs"]:   # summaries anew from the raw runs: this version's arithmetic
            for entry in record.get("workloads", {}).values():
                if "runs" in entry and "loops" in entry:
                    kinds = record["samplers"] + (["timed"] if "timed" in entry["runs"] else [])
                    entry["summary"] = summarize_workload(entry, kinds, record["modes"])
            record["summary"] = summarize_record(record)
        save(args, results)
        text = "\n\n".join(markdown_record(r) for r in results["runs"])
        print(text)
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(text + "\n")
        return 0
    global NICE
    NICE = args.nice
    pythons = list(args.python) if args.python else [sys.executable]
    results = new_results(SCHEMA, {"seconds": args.seconds, "repeats": args.repeats, "rate": args.rate,
                                   "nonblocking": args.nonblocking, "nice": args.nice, "chunk": args.chunk,
                                   "stdlib_mode": args.stdlib_mode,
                                   "smoke": args.smoke, "samplers": args.samplers})
    texts = []

    def show(record):
        texts.append(markdown_record(record))
        print("\n" + texts[-1], flush=True)

    ok = run_each(pythons, results, lambda python: run_python(python, args), show, lambda r: save(args, r))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n\n".join(texts) + "\n")
    return exit_status(ok)


def save(args, results):
    """--json: the summaries; --raw: everything, floats cut to 5 digits (the
    summaries are made anew from them)."""
    if args.json:
        write_results(args.json, summary_only(results))
    if args.raw:
        write_results(args.raw, results, digits=5)
