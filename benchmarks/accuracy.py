#!/usr/bin/env python3
"""How far a profile's times are from the program's: each profiler against a sampler.

For each workload (benchmarks/workloads/ and the real programs of
benchmarks/programs/) and each interpreter, in fresh processes
(``_accuracy_worker.py``), the same work -- ``run(size)`` called ``loops``
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
(py-spy's default, profiling.sampling's --blocking): slower, but no torn
reads (--nonblocking: a stack read while it changes is dropped or misread;
fib's deep recursion got 170 samples a second).
Short calls (--chunk) matter too: a sampler's rate drifts when a busy
machine deschedules it, and a workload made of long phases (fib, then
Ackermann) then gets a whole phase over- or under-sampled; 20 ms calls
spread that drift over every function.  py-spy runs with --function (a
frame's line is the function's first line, as in a pstats key) and
--full-filenames, so a
sample's frame matches a pstats key (file, first line, name) exactly; the
stdlib sampler gives only a file's base name and the current line, so against
it functions are compared by (base name, function name), same-named ones in
one file merged.

Examples:
  PYTHONPATH=build/py3.11/lib python3 benchmarks/accuracy.py                 # this interpreter
  python3 benchmarks/accuracy.py --python /tmp/fastprof-bench-venvs/venv-3.1{1,3}/bin/python \\
      --pythonpath 'build/py{minor}/lib' --json benchmarks/accuracy.json.gz
  PYTHONPATH=python python3 benchmarks/accuracy.py --smoke                   # seconds: one workload
  python3 benchmarks/accuracy.py --from-json benchmarks/accuracy.json.gz     # re-summarize, re-print
  python3 benchmarks/accuracy.py --from-json benchmarks/accuracy.json.gz --add-timed   # + the exact reference

Needs ptrace rights for py-spy (root, or kernel.yama.ptrace_scope=0).
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "_accuracy_worker.py")
sys.path.insert(0, HERE)

import programs  # noqa: E402  (after the path tweak, on purpose)
import workloads  # noqa: E402
from _accuracy_worker import REGION  # noqa: E402
from _worker import RESULT_TAG  # noqa: E402

SCHEMA = "fastprof-accuracy/1"
PROFILE_MODES = ["cprofile", "fastprof", "fastprof-raw"]
MODE_LABELS = {"cprofile": "cProfile", "fastprof": "fastprof",
               "fastprof-raw": "fastprof compensate=False"}
SAMPLERS = ["py-spy", "stdlib"]
SMOKE_WORKLOAD = "oop"

# --------------------------------------------------------------------------- the arithmetic


def key_text(filename, line, name):
    """A function's key as the workers write pstats keys: ``file:line(name)``."""
    return "%s:%d(%s)" % (filename, line, name)


_KEY = re.compile(r"^(.*):(\d+)\((.*)\)$")


def split_key(key):
    """(filename, line, name) of a key text."""
    m = _KEY.match(key)
    if not m:
        raise ValueError("not a key: %r" % (key,))
    return m.group(1), int(m.group(2)), m.group(3)


def is_c_key(key):
    """A C function (pstats file ``~``), which no sampler sees."""
    return key.startswith("~:")


def short_name(qualname):
    """The code object's name in a sampler's qualified name: ``A.<locals>.f`` -> ``f``."""
    return qualname.rsplit(".", 1)[-1]


_PYSPY_FRAME = re.compile(r"^(.*) \((.*):(\d+)\)$")


def parse_pyspy_raw(text):
    """py-spy ``--format raw`` (collapsed stacks, root first): [(frames, count)],
    a frame being (qualified name, file, line)."""
    out = []
    for line in text.splitlines():
        line = line.rstrip()
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        frames = []
        for part in stack.split(";"):
            m = _PYSPY_FRAME.match(part)
            if m:
                frames.append((m.group(1), m.group(2), int(m.group(3))))
            else:   # a thread or process label (-t / -s): not a frame
                frames.append((part, "", 0))
        out.append((frames, int(count)))
    return out


def parse_stdlib_collapsed(text):
    """``python -m profiling.sampling run --collapsed`` (3.15+): lines
    ``tid:N;file:qualname:line;... count``; frames as in parse_pyspy_raw."""
    out = []
    for line in text.splitlines():
        line = line.rstrip()
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        frames = []
        for part in stack.split(";"):
            if part.startswith("tid:"):
                continue
            bits = part.rsplit(":", 2)
            if len(bits) != 3 or not bits[2].isdigit():
                frames.append((part, "", 0))   # not a frame
                continue
            filename, name, lineno = bits
            frames.append((name, filename, int(lineno)))
        out.append((frames, int(count)))
    return out


def sampler_self_counts(stacks, region=REGION):
    """Own samples per function below the ``region`` frame: {key: count}.

    Only samples whose stack holds ``region`` count; the leaf (the last frame)
    gets the sample.  A sample whose leaf is ``region`` itself (the loop around
    the workload, the profiler's enable/disable) counts for no function.
    """
    counts = {}
    for frames, n in stacks:
        idx = None
        for i, (name, _, _) in enumerate(frames):
            if short_name(name) == region:
                idx = i
        if idx is None or idx == len(frames) - 1:
            continue
        name, filename, line = frames[-1]
        k = key_text(filename, line, short_name(name))
        counts[k] = counts.get(k, 0) + n
    return counts


def attribute_c_time(self_times, c_edges, max_passes=64):
    """Charge every C function's own time to its Python callers.

    ``self_times``: {key: own seconds}; ``c_edges``: [(caller, C callee,
    the callee's own seconds under that caller)].  A C function's own time
    is split among its callers in proportion to those edge times; a share
    landing on a C caller is passed on the same way (up to ``max_passes``
    hops: a cycle of C functions keeps what is left).  A C function with no
    recorded caller (or only zero-time edges) keeps its time under its own
    key.  Returns a new {key: seconds}; the total is unchanged.
    """
    into = {}
    for caller, callee, t in c_edges:
        into.setdefault(callee, []).append((caller, t))
    out = {k: t for k, t in self_times.items() if not is_c_key(k)}
    pending = {k: t for k, t in self_times.items() if is_c_key(k)}
    for _ in range(max_passes):
        moved = False
        nxt = {}
        for key, t in pending.items():
            edges = into.get(key, ())
            total = sum(et for _, et in edges if et > 0)
            if t == 0:
                continue
            if total <= 0:
                out[key] = out.get(key, 0.0) + t
                continue
            moved = True
            for caller, et in edges:
                if et <= 0:
                    continue
                share = t * et / total
                if is_c_key(caller):
                    nxt[caller] = nxt.get(caller, 0.0) + share
                else:
                    out[caller] = out.get(caller, 0.0) + share
        pending = nxt
        if not moved or not pending:
            break
    for key, t in pending.items():   # a C cycle: what is left stays where it is
        out[key] = out.get(key, 0.0) + t
    return out


def shares(times):
    """{key: fraction of the total}; negative times count as 0."""
    total = sum(max(t, 0.0) for t in times.values())
    if total <= 0:
        return {}
    return {k: max(t, 0.0) / total for k, t in times.items() if t > 0}


def tvd(a, b):
    """Total-variation distance between two share dicts, in points (0-100)."""
    return 50.0 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


def match_sampler_keys(sampler, profile_keys):
    """Rename a sampler's keys to the profile's where they differ only by line.

    A key whose (file, name) names exactly one of ``profile_keys`` with
    another first line (a decorated function, a build that numbers differently),
    among those no sampler key names exactly, takes that key; any other stays
    as it is (and counts as a difference).
    """
    by_name = {}
    for k in profile_keys:
        if is_c_key(k) or k in sampler:
            continue
        f, _, n = split_key(k)
        by_name.setdefault((f, n), []).append(k)
    out = {}
    for k, v in sampler.items():
        if k not in profile_keys:
            f, _, n = split_key(k)
            cands = by_name.get((f, n), [])
            if len(cands) == 1:
                k = cands[0]
        out[k] = out.get(k, 0) + v
    return out


def coarse(times):
    """Merge keys to (file base name, function name): how the stdlib sampler names frames."""
    out = {}
    for k, v in times.items():
        f, _, n = split_key(k)
        ck = "%s(%s)" % (os.path.basename(f), n)
        out[ck] = out.get(ck, 0) + v
    return out


def compare(profile_self, c_edges, sampler_counts, coarse_names=False):
    """TVD (points) between a profile's own times and a sampler's own counts.

    The profile's C time goes to its Python callers first (attribute_c_time);
    the sampler's keys are matched to the profile's (match_sampler_keys) or,
    with ``coarse_names``, both sides are merged by (base name, function name).
    """
    prof = attribute_c_time(profile_self, c_edges)
    if coarse_names:
        return tvd(shares(coarse(prof)), shares(coarse(sampler_counts)))
    samp = match_sampler_keys(sampler_counts, set(prof))
    return tvd(shares(prof), shares(samp))


def top_shares(times, n=8):
    """The ``n`` biggest shares, in percent, biggest first: [[key, percent]]."""
    s = shares(times)
    return [[k, round(100 * v, 2)] for k, v in sorted(s.items(), key=lambda kv: -kv[1])[:n]]


# --------------------------------------------------------------------------- running

def load(name):
    if name in programs.NAMES:
        return programs.load(name)
    return workloads.load(name)


def all_names():
    return list(workloads.NAMES) + list(programs.NAMES)


def worker_env(pythonpath):
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join([pythonpath] + [p for p in env.get("PYTHONPATH", "")
                                                            .split(os.pathsep) if p])
    env.setdefault("PYTHONHASHSEED", "0")
    env.pop("PYTHONSTARTUP", None)
    return env


def _result(proc):
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_TAG):
            if proc.returncode == 0:
                return json.loads(line[len(RESULT_TAG):]), None
            break
    tail = ((proc.stderr or "") + (proc.stdout or "")).strip().splitlines()[-12:]
    return None, "exit code %d:\n    %s" % (proc.returncode, "\n    ".join(tail))


#: niceness increment for every worker (and its sampler): --nice
NICE = 0


def _renice():
    if NICE:
        os.nice(NICE)


def run_worker(python, arg, env, timeout, prefix=(), script_only=False):
    """Run the worker (under ``prefix``, a sampler's command, which gets the
    worker's script alone with ``script_only``); (result, error)."""
    cmd = list(prefix) + ([] if script_only else [python]) \
        + [WORKER, arg if isinstance(arg, str) else json.dumps(arg)]
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                              timeout=timeout, universal_newlines=True,
                              preexec_fn=_renice if NICE else None)
    except subprocess.TimeoutExpired:
        return None, "timed out after %.0f s" % timeout
    except OSError as exc:
        return None, "cannot start %s: %s" % (cmd[0], exc)
    return _result(proc)


def find_py_spy(explicit, python):
    """py-spy: --py-spy, else beside ``python`` (its venv), beside this interpreter, or on PATH."""
    if explicit:
        return explicit
    for d in (os.path.dirname(python), os.path.dirname(sys.executable)):
        cand = os.path.join(d, "py-spy")
        if os.path.exists(cand):
            return cand
    return shutil.which("py-spy")


def sampler_prefix(kind, args, python, out):
    """The command that runs the worker under sampler ``kind``, writing its stacks to ``out``."""
    if kind == "py-spy":
        cmd = [args.py_spy_path, "record", "--rate", str(args.rate), "--format", "raw", "--function",
               "--full-filenames", "-o", out]
        if args.nonblocking:
            cmd.append("--nonblocking")
        return cmd + ["--"]
    cmd = [python, "-m", "profiling.sampling", "run", "-r", str(args.rate), "--no-gc",
           "--collapsed", "-o", out]
    if not args.nonblocking:
        cmd.append("--blocking")
    if args.stdlib_mode != "wall":
        cmd += ["--mode", args.stdlib_mode]
    return cmd


def run_sampler(kind, args, python, spec, env):
    """(result with ``counts``, error): one worker run under the sampler."""
    fd, out = tempfile.mkstemp(prefix="fastprof-acc-", suffix=".txt")
    os.close(fd)
    try:
        res, err = run_worker(python, spec, env, args.timeout, sampler_prefix(kind, args, python, out),
                              script_only=kind == "stdlib")   # `profiling.sampling run SCRIPT ARGS`
        if res is None:
            return None, err
        with open(out, encoding="utf-8", errors="replace") as f:
            text = f.read()
    finally:
        os.unlink(out)
    stacks = parse_pyspy_raw(text) if kind == "py-spy" else parse_stdlib_collapsed(text)
    counts = sampler_self_counts(stacks)
    res["counts"] = counts
    res["samples"] = sum(counts.values())
    res["rate_achieved"] = res["samples"] / res["seconds"] if res["seconds"] > 0 else 0.0
    if not counts:
        return None, "%s recorded no sample below %s (%d stacks)" % (kind, REGION, len(stacks))
    return res, None


def probe(python, env, names):
    res, err = run_worker(python, "--probe", env, 120)
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
    wl = load(name)
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
    if hasattr(wl, "size_for"):   # not linear (fib)
        return min(wl.SIZES["full"], wl.size_for(factor))
    return max(wl.SIZES["smoke"], int(round(wl.SIZES["full"] * factor)))


def summarize_workload(entry, kinds, modes):
    """TVDs, noise floors and total/wall ratios of one workload's runs."""
    runs = entry["runs"]
    s = {}
    walls = [r["seconds"] for r in runs.get("none", [])]
    cpus = [r["cpu_seconds"] for r in runs.get("none", [])]
    if walls:
        s["none_seconds"] = statistics.median(walls)
        s["none_cpu_seconds"] = statistics.median(cpus)
    sums = {r["checksum"] for mode, rs in runs.items() if mode != "calibrate" for r in rs}
    s["checksums_agree"] = len(sums) <= 1
    for kind in kinds:
        rs = runs.get(kind, [])
        if not rs:
            continue
        coarse_names = kind == "stdlib"
        ref = rs[0]["counts"]
        k = {"samples": rs[0]["samples"], "rate_achieved": round(rs[0]["rate_achieved"], 1),
             "top": top_shares(coarse(ref) if coarse_names else ref), "tvd": {}}
        if len(rs) > 1:
            a, b = (coarse(r["counts"]) if coarse_names else r["counts"] for r in rs[:2])
            k["noise"] = tvd(shares(a), shares(b))
            k["sampled_over_none"] = rs[0]["seconds"] / s["none_seconds"] if walls else None
        pooled = {}
        for r in rs[:2]:
            for key, n in r["counts"].items():
                pooled[key] = pooled.get(key, 0) + n
        k["tvd_pooled"] = {}
        for mode in modes:
            prs = runs.get(mode, [])
            if prs:
                k["tvd"][mode] = compare(prs[0]["self"], prs[0]["c_edges"], ref, coarse_names)
                k["tvd_pooled"][mode] = compare(prs[0]["self"], prs[0]["c_edges"], pooled, coarse_names)
        s[kind] = k
    if "timed" in s:   # how far each sampler is from the exact reference
        exact = shares(runs["timed"][0]["counts"])
        s["timed"]["samplers"] = {
            kind: tvd(shares(coarse(exact)), shares(coarse(runs[kind][0]["counts"]))) if kind == "stdlib"
            else tvd(exact, shares(match_sampler_keys(runs[kind][0]["counts"], set(exact))))
            for kind in kinds if kind != "timed" and runs.get(kind)}
    for mode in modes:
        prs = runs.get(mode, [])
        if prs and walls:
            p = prs[0]
            s.setdefault("profiles", {})[mode] = {
                "total_over_wall": p["total"] / s["none_seconds"],
                "region_over_wall": p["seconds"] / s["none_seconds"],
                "top": top_shares(attribute_c_time(p["self"], p["c_edges"])),
            }
    return s


def run_python(python, args):
    pythonpath = None
    if args.pythonpath:
        ver = subprocess.run([python, "-c", "import sys;print('%d.%d' % sys.version_info[:2])"],
                             stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()
        pythonpath = os.path.abspath(args.pythonpath.format(minor=ver))
    env = worker_env(pythonpath)
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


def references(record):
    """What the profiles were held to: the samplers, then ``timed`` where a
    workload timed its own phases (``timed_run``)."""
    timed = any("timed" in w.get("summary", {}) for w in record.get("workloads", {}).values())
    return record.get("samplers", []) + (["timed"] if timed else [])


def summarize_record(record):
    """Median and worst over the workloads, per sampler and mode."""
    out = {}
    for kind in references(record):
        rows = [w["summary"][kind] for w in record["workloads"].values()
                if kind in w.get("summary", {})]
        k = {}
        noise = [r["noise"] for r in rows if "noise" in r]
        if noise:
            k["noise_median"], k["noise_worst"] = statistics.median(noise), max(noise)
        for mode in record.get("modes", []):
            d = [r["tvd"][mode] for r in rows if mode in r["tvd"]]
            ex = [r["tvd"][mode] - r["noise"] for r in rows if mode in r["tvd"] and "noise" in r]
            if d:
                k[mode] = {"median": statistics.median(d), "worst": max(d)}
            if ex:
                k[mode]["excess_median"] = statistics.median(ex)
                k[mode]["excess_worst"] = max(ex)
        out[kind] = k
    for mode in record.get("modes", []):
        ratios = [w["summary"]["profiles"][mode]["total_over_wall"] for w in record["workloads"].values()
                  if mode in w.get("summary", {}).get("profiles", {})]
        if ratios:
            out.setdefault("total_over_wall", {})[mode] = {"median": statistics.median(ratios),
                                                           "min": min(ratios), "max": max(ratios)}
    return out


# --------------------------------------------------------------------------- report

def markdown_record(record):
    """One markdown table per sampler for one interpreter."""
    lines = []
    modes = record.get("modes", [])
    for kind in references(record):
        if kind == "timed":
            lines.append("Python %s, the exact reference (the workload's phases timed unprofiled, "
                         "timed_run; noise = its own second run): TVD in points" % record["python"])
        else:
            lines.append("Python %s, sampler %s%s: TVD in points (noise = the sampler against its "
                         "own second run); total/wall = the profile's total over the unprofiled run"
                         % (record["python"], kind, " (" + record["py_spy_version"] + ")"
                            if kind == "py-spy" and record.get("py_spy_version") else ""))
        lines.append("")
        head = ["workload", "samples", "noise"] + ["TVD %s" % MODE_LABELS[m] for m in modes] \
            + ["total/wall %s" % MODE_LABELS[m] for m in modes]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for name, w in record["workloads"].items():
            s = w.get("summary", {})
            k = s.get(kind)
            if not k and kind == "timed":   # (only the workloads that time their phases)
                continue
            if not k:
                lines.append("| %s | failed |%s" % (name, " |" * (len(head) - 2)))
                continue
            row = [name, "exact" if kind == "timed" else str(k["samples"]), _pts(k.get("noise"))]
            row += [_pts(k["tvd"].get(m)) for m in modes]
            row += ["%.2fx" % s["profiles"][m]["total_over_wall"] if m in s.get("profiles", {}) else "-"
                    for m in modes]
            lines.append("| " + " | ".join(row) + " |")
        sm = record.get("summary", {}).get(kind, {})
        tw = record.get("summary", {}).get("total_over_wall", {})
        for label, key, twkey in (("**median**", "median", "median"), ("**worst**", "worst", "max")):
            row = [label, "", _pts(sm.get("noise_" + key))]
            row += [_pts(sm.get(m, {}).get(key)) for m in modes]
            row += ["%.2fx" % tw[m][twkey] if m in tw and kind != "timed" else "-" for m in modes]
            lines.append("| " + " | ".join(row) + " |")
        row = ["**excess over noise** (median / worst)", "", ""]
        row += ["%s / %s" % (_pts(sm.get(m, {}).get("excess_median")), _pts(sm.get(m, {}).get("excess_worst")))
                for m in modes]
        row += [""] * len(modes)
        lines.append("| " + " | ".join(row) + " |")
        if kind == "timed":
            for name, w in record["workloads"].items():
                far = w.get("summary", {}).get("timed", {}).get("samplers")
                if far:
                    lines.append("")
                    lines.append("%s: the samplers against the exact reference: %s" % (
                        name, ", ".join("%s %s" % (k, _pts(v)) for k, v in sorted(far.items()))))
        lines.append("")
    for p in record.get("problems", []):
        lines.append("PROBLEM: " + p)
    return "\n".join(lines)


def _pts(x):
    return "-" if x is None else "%.1f" % x


def _rounded(obj, digits=5):
    """``obj`` with every float cut to ``digits`` significant digits (a smaller --json)."""
    if isinstance(obj, float):
        return float("%.*g" % (digits, obj))
    if isinstance(obj, dict):
        return {k: _rounded(v, digits) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rounded(v, digits) for v in obj]
    return obj


_PATHS_CODE = "import json, sysconfig; p = sysconfig.get_paths(); print(json.dumps([p['purelib'], p['stdlib']]))"


def _short_paths(results):
    """{long prefix: short name}: each run's site-packages and stdlib, and benchmarks/."""
    out = {HERE + os.sep: "{bench}/"}
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


def write_json(path, results):
    """Floats cut to 5 digits, long file prefixes named once (``short_paths``): a smaller file."""
    short = _short_paths(results)
    results = {k: v for k, v in results.items() if k != "short_paths"}
    text = json.dumps(_rounded(results), indent=None, separators=(",", ":"))
    for long, name in sorted(short.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(json.dumps(long)[1:-1], name)
    text = text[:-1] + ',"short_paths":' + json.dumps({v: k for k, v in short.items()}) + "}"
    with _open_json(path, "w") as f:
        f.write(text + "\n")


def _open_json(path, mode="r"):
    """A results file, gzip-compressed when its name ends in .gz (the stored runs are)."""
    if path.endswith(".gz"):
        import gzip
        return gzip.open(path, mode + "t", encoding="utf-8")
    return open(path, mode, encoding="utf-8")


# --------------------------------------------------------------------------- main

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--python", nargs="+", metavar="X",
                   help="interpreter(s) to measure (default: the one running this script)")
    p.add_argument("--pythonpath", metavar="TEMPLATE",
                   help="put this in front of PYTHONPATH for each interpreter's workers; {minor} "
                        "becomes its version, e.g. 'build/py{minor}/lib'")
    p.add_argument("--workloads", type=lambda s: s.split(","), default=None,
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
    p.add_argument("--samplers", type=lambda s: [k for k in s.split(",") if k], default=list(SAMPLERS),
                   help="comma-separated subset of: py-spy,stdlib (stdlib: 3.15+ only); default both; "
                        "'' for none (then only a workload that times its own phases, fib, is compared)")
    p.add_argument("--profilers", type=lambda s: [m for m in s.split(",") if m], default=list(PROFILE_MODES),
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
    p.add_argument("--json", metavar="FILE", help="write raw results and summaries (gzip-compressed: FILE.gz)")
    p.add_argument("--markdown", metavar="FILE.md", help="also write the tables to this file")
    p.add_argument("--from-json", metavar="FILE",
                   help="do not run: summarize the raw runs of a --json file anew and print the tables "
                        "(with --json: write the new summaries)")
    p.add_argument("--add-timed", action="store_true",
                   help="with --from-json: first measure the exact reference (a workload that times "
                        "its own phases: fib) at each stored run's size, where the file lacks it")
    p.add_argument("--timeout", type=float, default=900, help="seconds per worker")
    p.add_argument("-v", "--verbose", action="store_true", help="print every measurement")
    args = p.parse_args(argv)
    if args.workloads is None:
        args.workloads = [SMOKE_WORKLOAD] if args.smoke else all_names()
    unknown = [w for w in args.workloads if w not in all_names()]
    if unknown:
        p.error("unknown workload(s): %s" % ", ".join(unknown))
    bad = [s for s in args.samplers if s not in SAMPLERS]
    if bad:
        p.error("unknown sampler(s): %s" % ", ".join(bad))
    if args.add_timed and not args.from_json:
        p.error("--add-timed goes with --from-json")
    if args.from_json and not os.path.isfile(args.from_json):
        p.error("--from-json %s: no such file" % args.from_json)
    if args.smoke:
        args.repeats = 1
        args.seconds = 0.3
    return args


def add_timed(results, timeout):
    """--add-timed: measure the exact reference now, at each run's size, for
    the stored workloads that have one (``timed_run``) and lack it."""
    short = dict(results.get("short_paths", {}), **{"{bench}/": HERE + os.sep})   # (this checkout's)
    for record in results["runs"]:
        for name, entry in record.get("workloads", {}).items():
            if name in programs.NAMES:   # (importing one needs its package here)
                continue
            wl = load(name)
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
        with _open_json(args.from_json) as f:
            results = json.load(f)
        if args.add_timed:
            add_timed(results, args.timeout)
        for record in results["runs"]:   # summaries anew from the raw runs: this version's arithmetic
            for entry in record.get("workloads", {}).values():
                if "runs" in entry and "loops" in entry:
                    kinds = record["samplers"] + (["timed"] if "timed" in entry["runs"] else [])
                    entry["summary"] = summarize_workload(entry, kinds, record["modes"])
            record["summary"] = summarize_record(record)
        if args.json:
            write_json(args.json, results)
        text = "\n\n".join(markdown_record(r) for r in results["runs"])
        print(text)
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(text + "\n")
        return 0
    global NICE
    NICE = args.nice
    pythons = list(args.python) if args.python else [sys.executable]
    results = {
        "schema": SCHEMA,
        "created": datetime.datetime.now().isoformat(timespec="seconds"),
        "host": {"platform": platform.platform(), "machine": platform.machine(), "cpus": os.cpu_count()},
        "config": {"seconds": args.seconds, "repeats": args.repeats, "rate": args.rate,
                   "nonblocking": args.nonblocking, "nice": args.nice, "chunk": args.chunk,
                   "stdlib_mode": args.stdlib_mode,
                   "smoke": args.smoke, "samplers": args.samplers},
        "runs": [],
    }
    failed = False
    texts = []
    for python in pythons:
        record = run_python(python, args)
        results["runs"].append(record)
        text = markdown_record(record)
        texts.append(text)
        print("\n" + text, flush=True)
        failed = failed or bool(record["problems"])
        if args.json:   # after each interpreter: a long run leaves partial results
            write_json(args.json, results)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n\n".join(texts) + "\n")
    if failed:
        print("FAILED: see PROBLEM lines above", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
