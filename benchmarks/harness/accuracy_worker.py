"""One accuracy measurement, in a fresh process.  Started by the accuracy
mode (accuracy.py); not for users.

    python accuracy_worker.py '{"workload": "fib", "mode": "fastprof", "size": 30, "loops": 4}'

Imports the workload (``workloads/`` or a real program of ``programs/``),
warms it up unprofiled, then runs ``run(size)`` ``loops`` times inside
``_accuracy_region`` -- the frame a sampler's stacks are cut at -- with the
profiler of ``mode`` enabled around exactly those calls:

  none, sampler  nothing (a sampler watches from outside: py-spy, or the
                 standard library's ``profiling.sampling`` on 3.15+)
  cprofile       cProfile.Profile()
  fastprof       fastprof.Profile()                  (the default: compensated once it can)
  fastprof-raw   fastprof.Profile(compensate=False)  (only where that argument exists)
  timed          no profiler: the workload's ``timed_run(size)`` times its own
                 phases (an exact reference; only workloads that have one)

The result (last stdout line, prefixed with ``RESULT_TAG``, JSON) holds the
region's wall and CPU time and, for a profiler, every function's own time
(``self``: pstats key text -> seconds), the edges into C functions
(``c_edges``: [caller, C callee, the callee's own time under that caller]),
and the profile's total own time (worker_common.py: the result line).
accuracy.py turns that into shares.
"""

import gc
import os
import sys
import time

from worker_common import REGION, key_str, label, load_workload, package_files, profiler_self_keys, serve


def _accuracy_region(run, size, loops, start, stop):
    """Everything a profile or a sampler is compared on happens below this
    frame (its name is REGION)."""
    if start is not None:
        start()
    checksum = None
    for _ in range(loops):
        checksum = run(size)
    if stop is not None:
        stop()
    return checksum


def has_compensate():
    """True when this fastprof's Profile takes ``compensate=`` (builds before compensation do not)."""
    import fastprof
    try:
        fastprof.Profile(compensate=False)
    except TypeError:
        return False
    return True


def make_profiler(mode):
    """(profiler, files of the profiler's own Python code) for ``mode``."""
    if mode == "cprofile":
        import cProfile
        return cProfile.Profile(), {os.path.abspath(cProfile.__file__)}
    import fastprof
    kwargs = {"compensate": False} if mode == "fastprof-raw" else {}
    return fastprof.Profile(**kwargs), package_files(fastprof)


def profile_times(entries, own_files):
    """(self, c_edges, total) from a profiler's getstats() entries.

    ``self``: key text -> own time (seconds), functions sharing a key added
    up; the profiler's own entries (its ``disable`` and what that calls) and
    the region frame are left out.  ``c_edges``: [caller, callee, seconds]
    for every edge into a C function (key file ``~``), the callee's own time
    under that caller: what distance.attribute_c_time charges to callers.
    """
    own = profiler_self_keys(entries, own_files)
    self_times, edges = {}, {}
    for e in entries:
        key = label(e.code)
        if key in own or key[2] == REGION:
            continue
        k = key_str(key)
        self_times[k] = self_times.get(k, 0.0) + e.inlinetime
        for sub in e.calls or ():
            sk = label(sub.code)
            if sk[0] != "~" or sk in own:
                continue
            edge = (k, key_str(sk))
            edges[edge] = edges.get(edge, 0.0) + sub.inlinetime
    c_edges = [[a, b, t] for (a, b), t in sorted(edges.items())]
    return self_times, c_edges, sum(self_times.values())


def measure(spec):
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 5000))
    wl = load_workload(spec["workload"])
    mode = spec["mode"]
    prof = own_files = None
    if mode in ("cprofile", "fastprof", "fastprof-raw"):
        prof, own_files = make_profiler(mode)
    elif mode == "timed":
        return measure_timed(wl, spec)
    elif mode not in ("none", "sampler"):
        raise SystemExit("unknown mode %r" % mode)

    wl.run(spec.get("warmup_size", wl.SIZES["smoke"]))   # imports, caches, specialisation
    gc.collect()
    if spec.get("ready_file"):   # a sampler attached from outside starts now
        with open(spec["ready_file"], "w") as f:
            f.write(str(os.getpid()))
    start = prof.enable if prof is not None else None
    stop = prof.disable if prof is not None else None
    c0 = time.process_time()
    t0 = time.perf_counter()
    checksum = _accuracy_region(wl.run, spec["size"], spec.get("loops", 1), start, stop)
    t1 = time.perf_counter()
    c1 = time.process_time()
    out = {"seconds": t1 - t0, "cpu_seconds": c1 - c0, "checksum": repr(checksum),
           "python": "%d.%d.%d" % sys.version_info[:3]}
    if prof is not None:
        self_times, c_edges, total = profile_times(prof.getstats(), own_files)
        out.update({"self": self_times, "c_edges": c_edges, "total": total})
        if mode.startswith("fastprof"):
            import fastprof
            out["fastprof_file"] = fastprof.__file__
            # the delivery costs this run removed (ticks per event kind): a
            # run that removed too much or too little shows why
            getter = getattr(prof, "_compensation", None)
            if getter is not None:
                out["delivery_costs"] = {k: list(v) for k, v in getter()["costs"].items()}
    return out


def measure_timed(wl, spec):
    """The ``timed`` reference: own seconds per function as the workload
    ``wl``'s ``timed_run`` measures them, unprofiled, in ``counts`` (as a
    sampler's)."""
    wl.timed_run(spec.get("warmup_size", wl.SIZES["smoke"]))
    gc.collect()
    own, checksum = {}, None
    t0 = time.perf_counter()
    for _ in range(spec.get("loops", 1)):
        checksum, times = wl.timed_run(spec["size"])
        for func, seconds in times.items():
            k = key_str(label(func.__code__))
            own[k] = own.get(k, 0.0) + seconds
    return {"seconds": time.perf_counter() - t0, "cpu_seconds": None, "checksum": repr(checksum),
            "python": "%d.%d.%d" % sys.version_info[:3], "counts": own, "samples": 0,
            "rate_achieved": 0.0}


def probe():
    out = {"python": "%d.%d.%d" % sys.version_info[:3]}
    try:
        import fastprof
        out["fastprof"] = fastprof.__file__
        out["compensate"] = has_compensate()
    except Exception as exc:
        out["fastprof_error"] = "%s: %s" % (type(exc).__name__, exc)
    try:
        import profiling.sampling  # noqa: F401  (3.15+: the standard library's sampler)
        out["stdlib_sampler"] = True
    except ImportError:
        out["stdlib_sampler"] = False
    return out


if __name__ == "__main__":
    sys.exit(serve(sys.argv, probe, measure, __doc__))
