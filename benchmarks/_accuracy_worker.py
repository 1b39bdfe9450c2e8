"""One accuracy measurement, in a fresh process.  Started by ``accuracy.py``; not for users.

    python _accuracy_worker.py '{"workload": "fib", "mode": "fastprof", "size": 30, "loops": 4}'

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
and the profile's total own time.  accuracy.py turns that into shares.
Must run on every CPython the project supports (3.9+).
"""

import gc
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _worker import (  # noqa: E402  (after the path tweak, on purpose)
    RESULT_TAG,
    _key_str,
    _label,
    _package_files,
    _profiler_self_keys,
)

REGION = "_accuracy_region"   # the frame a sampler's stacks are cut at (accuracy.py)


def load(name):
    """The workload module ``name``: one of workloads/ or of programs/."""
    import programs
    import workloads
    if name in programs.NAMES:
        return programs.load(name)
    return workloads.load(name)


def _accuracy_region(run, size, loops, start, stop):
    """Everything a profile or a sampler is compared on happens below this frame."""
    if start is not None:
        start()
    checksum = None
    for _ in range(loops):
        checksum = run(size)
    if stop is not None:
        stop()
    return checksum


def has_compensate():
    """True when this fastprof's Profile takes ``compensate=`` (issue 21)."""
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
    return fastprof.Profile(**kwargs), _package_files(fastprof)


def profile_times(entries, own_files):
    """(self, c_edges, total) from a profiler's getstats() entries.

    ``self``: key text -> own time (seconds), functions sharing a key added
    up; the profiler's own entries (its ``disable`` and what that calls) and
    the region frame are left out.  ``c_edges``: [caller, callee, seconds]
    for every edge into a C function (key file ``~``), the callee's own time
    under that caller: what accuracy.attribute_c_time charges to callers.
    """
    own = _profiler_self_keys(entries, own_files)
    self_times, edges = {}, {}
    for e in entries:
        key = _label(e.code)
        if key in own or key[2] == REGION:
            continue
        k = _key_str(key)
        self_times[k] = self_times.get(k, 0.0) + e.inlinetime
        for sub in e.calls or ():
            sk = _label(sub.code)
            if sk[0] != "~" or sk in own:
                continue
            edge = (k, _key_str(sk))
            edges[edge] = edges.get(edge, 0.0) + sub.inlinetime
    c_edges = [[a, b, t] for (a, b), t in sorted(edges.items())]
    return self_times, c_edges, sum(self_times.values())


def measure(spec):
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 5000))
    wl = load(spec["workload"])
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
            k = _key_str(_label(func.__code__))
            own[k] = own.get(k, 0.0) + seconds
    return {"seconds": time.perf_counter() - t0, "cpu_seconds": None, "checksum": repr(checksum),
            "python": "%d.%d.%d" % sys.version_info[:3], "counts": own, "samples": 0,
            "rate_achieved": 0.0}


def main(argv):
    if len(argv) == 2 and argv[1] == "--probe":
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
    elif len(argv) == 2:
        out = measure(json.loads(argv[1]))
    else:
        sys.stderr.write(__doc__)
        return 2
    sys.stdout.write("\n" + RESULT_TAG + json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
