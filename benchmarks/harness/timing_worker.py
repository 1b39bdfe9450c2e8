"""One timing measurement, in a fresh process.  Started by the timing mode
(timing.py); not for users.

    python timing_worker.py --probe
        print what this interpreter can profile with (fastprof, yappi, pyinstrument)

    python timing_worker.py '{"workload": "fib", "mode": "cprofile", "size": 30, ...}'
        import the workload, warm it up unprofiled, then time exactly
        ``profiler start -> workload -> profiler stop`` with perf_counter
        (interpreter start-up, imports, warm-up and stats export are outside
        the timed region), and print one result line (worker_common.py).
"""

import gc
import os
import sys
import time

from worker_common import key_str, label, package_files, profiler_self_keys, serve


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


def stats_counts(entries, own_files):
    """{key text: [primitive calls, total calls]} from a profiler's getstats() entries.

    Built from the raw entries rather than the pstats dict: pstats keeps only
    one of several functions that share (file, line, name) -- two dataclass
    ``__init__`` made by exec ("<string>", 2), two genexprs on one line --
    and which one it keeps depends on table order, not on what was counted.
    Here such functions are added up, which is well defined for both profilers.
    """
    own = profiler_self_keys(entries, own_files)
    counts = {}
    for e in entries:
        key = label(e.code)
        if key in own:
            continue
        k = key_str(key)
        old = counts.get(k, [0, 0])  # shared keys (and masked addresses) add up
        counts[k] = [old[0] + e.callcount - e.reccallcount, old[1] + e.callcount]
    return counts


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
        files = package_files(fastprof)

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
    if spec.get("cpu") is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(spec["cpu"])})
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
    # (time spent descheduled is not in it); see `run.py timing --metric`.
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


if __name__ == "__main__":
    sys.exit(serve(sys.argv, probe, measure, __doc__))
