"""One benchmark measurement, in a fresh process.  Started by ``run.py``; not for users.

    python _worker.py --probe
        print what this interpreter can profile with (fastprof, yappi, pyinstrument)

    python _worker.py '{"workload": "fib", "mode": "cprofile", "size": 30, ...}'
        import the workload, warm it up unprofiled, then time exactly
        ``profiler start -> workload -> profiler stop`` with perf_counter
        (interpreter start-up, imports, warm-up and stats export are outside
        the timed region), and print one result line.

The result is the last line of stdout, prefixed with ``RESULT_TAG``, as JSON.
fastprof is imported from wherever the environment (PYTHONPATH) points: the
harness never adds a path of its own, so a test can aim it at one build.
This file must run on every CPython the project supports (3.9+).
"""

import gc
import json
import os
import re
import sys
import time

RESULT_TAG = "@@FASTPROF-BENCH-RESULT@@ "

# Entries a profiler records about itself (its own disable() call and the
# shim's Python frames around it).  They are not part of the workload and
# differ between profilers by construction, so they are left out of event
# counts and of the cProfile/fastprof call-count comparison.
_SELF_C_SUFFIXES = ("Profiler' objects>", "'fastprof.Profile' objects>")


def _dist_version(name):
    try:
        from importlib import metadata
        return metadata.version(name)
    except Exception:
        mod = sys.modules.get(name)
        return getattr(mod, "__version__", "?")


def _clock_info(prof):
    """fastprof's clock_info() (tsc / monotonic / cpu), wherever the shim exposes it."""
    for obj in (prof, getattr(prof, "_prof", None)):
        try:
            return obj.clock_info()
        except Exception:
            pass
    return None


def probe():
    info = {
        "python": "%d.%d.%d" % sys.version_info[:3],
        "version": sys.version.replace("\n", " "),
        "executable": sys.executable,
        "implementation": sys.implementation.name,
        "pythonpath": os.environ.get("PYTHONPATH", ""),
    }
    try:
        import fastprof
        info["fastprof"] = {"file": getattr(fastprof, "__file__", None),
                            "version": getattr(fastprof, "__version__", "?")}
        try:
            import fastprof._fastprof as ext
            info["fastprof"]["extension"] = getattr(ext, "__file__", None)
        except Exception as exc:  # the shim may exist without its C part
            info["fastprof"]["extension_error"] = "%s: %s" % (type(exc).__name__, exc)
        ci = _clock_info(fastprof.Profile())
        if ci:
            info["fastprof"]["clock_info"] = ci
        try:
            fastprof.Profile(fast=True)
        except (RuntimeError, ValueError, TypeError) as exc:  # e.g. 3.13: no fast mode
            info["fast_error"] = "%s: %s" % (type(exc).__name__, exc)
    except Exception as exc:
        info["fastprof_error"] = "%s: %s" % (type(exc).__name__, exc)
    try:
        import floor_hook
        info["floor"] = floor_hook.build()
    except Exception as exc:
        info["floor_error"] = "%s: %s" % (type(exc).__name__, exc)
    for name in ("yappi", "pyinstrument", "line_profiler"):
        try:
            __import__(name)
            info[name] = _dist_version(name)
        except Exception as exc:
            info[name + "_error"] = "%s: %s" % (type(exc).__name__, exc)
    return info


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _key_str(key):
    """pstats-style text of a key; object addresses in C names (``<function
    socket.close at 0x7f..>``) differ between processes, so they are masked."""
    filename, line, name = key
    return "%s:%d(%s)" % (filename, line, _ADDRESS.sub(" at 0x?", name))


def _label(code):
    """pstats key of a getstats() entry: a code object, or a str for C functions."""
    if isinstance(code, str):
        return ("~", 0, code)
    return (code.co_filename, code.co_firstlineno, code.co_name)


def _profiler_self_keys(entries, own_files):
    """Keys of entries that belong to the profiler, not to the workload.

    Seeds: C methods of a ``...Profiler`` type (``disable``) and Python
    functions defined in the profiler's own files; then everything whose
    every caller is such an entry (what the shim's ``disable()`` calls).
    """
    callers = {}
    keys = set()
    for e in entries:
        key = _label(e.code)
        keys.add(key)
        for sub in e.calls or ():
            callers.setdefault(_label(sub.code), set()).add(key)
    own = set()
    for key in keys:
        filename, _, name = key
        if filename == "~" and name.endswith(_SELF_C_SUFFIXES):
            own.add(key)
        elif filename != "~" and os.path.abspath(filename) in own_files:
            own.add(key)
    changed = True
    while changed:
        changed = False
        for key in keys - own:
            cs = callers.get(key)
            if cs and cs <= own:
                own.add(key)
                changed = True
    return own


def stats_counts(entries, own_files):
    """{key text: [primitive calls, total calls]} from a profiler's getstats() entries.

    Built from the raw entries rather than the pstats dict: pstats keeps only
    one of several functions that share (file, line, name) -- two dataclass
    ``__init__`` made by exec ("<string>", 2), two genexprs on one line --
    and which one it keeps depends on table order, not on what was counted.
    Here such functions are added up, which is well defined for both profilers.
    """
    own = _profiler_self_keys(entries, own_files)
    counts = {}
    for e in entries:
        key = _label(e.code)
        if key in own:
            continue
        k = _key_str(key)
        old = counts.get(k, [0, 0])  # shared keys (and masked addresses) add up
        counts[k] = [old[0] + e.callcount - e.reccallcount, old[1] + e.callcount]
    return counts


def _package_files(module):
    """Absolute paths of the .py files of ``module``'s package (or the module)."""
    path = os.path.abspath(getattr(module, "__file__", "") or "")
    if not path:
        return set()
    if os.path.basename(path).startswith("__init__."):
        root = os.path.dirname(path)
        files = set()
        for dirpath, _, names in os.walk(root):
            for n in names:
                if n.endswith(".py"):
                    files.add(os.path.join(dirpath, n))
        return files
    return {path[:-1] if path.endswith(".pyc") else path}


def _hot_function(wl):
    """The workload's ``HOT`` function object (a qualified name: ``For.render``)."""
    obj = wl
    for part in wl.HOT.split("."):
        obj = getattr(obj, part)
    return obj


def _line_hits(lines):
    """Total line hits in fastprof's ``line_stats()``-style dict."""
    return sum(hits for per_line in lines.values() for hits, _ in per_line.values())


def _fastprof_kwargs(mode, wl):
    if mode == "fastprof-lines":  # line-level on the one hot function
        return {"lines": ["%s:%s" % (wl.__name__, wl.HOT)]}
    if mode == "fastprof-only":   # only the app module (its library runs unrecorded)
        return {"only": [wl.ONLY]}
    return {"fastprof-cpu": {"clock": "cpu"}, "fastprof-fast": {"fast": True}}.get(mode, {})


def _make_profiler(mode, standin, wl):
    """Return (start, stop, stats_fn, info).  stats_fn() -> stats_counts() or None.

    ``info`` may hold ``extra``: a function called after the timed region
    whose dict goes into the result (line hits recorded).
    """
    if mode == "none":
        return None, None, None, {}

    if mode == "cprofile" or (standin and mode.startswith("fastprof")):
        import cProfile
        if mode == "fastprof-cpu":
            prof = cProfile.Profile(time.process_time)
        elif mode == "fastprof-fast":
            prof = cProfile.Profile(builtins=False)
        else:
            prof = cProfile.Profile()
        files = {os.path.abspath(cProfile.__file__)}

        def stats_fn():
            return stats_counts(prof.getstats(), files)
        info = {"standin": True} if mode != "cprofile" else {}
        return prof.enable, prof.disable, stats_fn, info

    if mode in ("fastprof", "fastprof-cpu", "fastprof-fast", "fastprof-lines", "fastprof-only"):
        import fastprof
        prof = fastprof.Profile(**_fastprof_kwargs(mode, wl))
        files = _package_files(fastprof)

        def stats_fn():
            return stats_counts(prof.getstats(), files)
        info = {"fastprof_file": fastprof.__file__}
        if mode == "fastprof-lines":
            info["extra"] = lambda: {"line_hits": _line_hits(prof.line_stats())}
        ci = _clock_info(prof)
        if ci:
            info["clock_info"] = ci
        return prof.enable, prof.disable, stats_fn, info

    if mode == "floor":
        import floor_hook
        hook = floor_hook.FloorHook(floor_hook.load())  # built by the probe: cached
        return hook.enable, hook.disable, None, {}

    if mode == "yappi":
        import yappi
        # wall clock and builtins=True: the same events and clock as cProfile
        yappi.set_clock_type("wall")

        def start():
            yappi.start(builtins=True, profile_threads=False)
        return start, yappi.stop, None, {"yappi": _dist_version("yappi")}

    if mode == "pyinstrument":
        import pyinstrument
        prof = pyinstrument.Profiler()  # statistical: samples every 1 ms
        return prof.start, prof.stop, None, {"pyinstrument": _dist_version("pyinstrument")}

    if mode == "line_profiler":
        import line_profiler
        prof = line_profiler.LineProfiler()
        prof.add_function(_hot_function(wl))
        info = {"line_profiler": _dist_version("line_profiler"),
                "extra": lambda: {"line_hits": sum(
                    hits for timings in prof.get_stats().timings.values()
                    for _, hits, _ in timings)}}
        return prof.enable_by_count, prof.disable_by_count, None, info

    raise SystemExit("unknown mode %r" % mode)


def measure(spec):
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 5000))
    import workloads
    wl = workloads.load(spec["workload"])
    mode = spec["mode"]
    start, stop, stats_fn, info = _make_profiler(mode, spec.get("standin", False), wl)
    extra = info.pop("extra", None)

    # Warm-up, unprofiled: imports, caches (re, asyncio) and the specialising
    # interpreter (3.11+) settle before the timed call.
    wl.run(spec.get("warmup_size", wl.SIZES["smoke"]))
    gc.collect()

    run = wl.run
    size = spec["size"]
    perf_counter = time.perf_counter
    process_time = time.process_time
    if start is None:
        c0 = process_time()
        t0 = perf_counter()
        checksum = run(size)
        t1 = perf_counter()
        c1 = process_time()
    else:
        c0 = process_time()
        t0 = perf_counter()
        start()
        checksum = run(size)
        stop()
        t1 = perf_counter()
        c1 = process_time()

    # seconds: wall time (the headline).  cpu_seconds: CPU time of this
    # process over the same region, which a busy machine disturbs less
    # (time spent descheduled is not in it); see run.py --metric.
    result = {"seconds": t1 - t0, "cpu_seconds": c1 - c0, "checksum": repr(checksum)}
    result.update(info)
    if extra is not None:
        result.update(extra())
    if stats_fn is not None and spec.get("stats", True):
        counts = stats_fn()
        result["calls"] = sum(nc for _, nc in counts.values())
        if spec.get("counts"):
            result["counts"] = counts
    return result


def main(argv):
    if len(argv) == 2 and argv[1] == "--probe":
        out = probe()
    elif len(argv) == 2:
        spec = json.loads(argv[1])
        if spec.get("cpu") is not None and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {int(spec["cpu"])})
        out = measure(spec)
    else:
        sys.stderr.write(__doc__)
        return 2
    sys.stdout.write("\n" + RESULT_TAG + json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
