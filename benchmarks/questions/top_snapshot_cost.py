#!/usr/bin/env python3
"""What one ``fastprof top`` snapshot costs the watched process: the
helper's work each interval (getstats per thread, the rows, the JSON, the
atomic write), timed in-process with the profiler on, as in the target.

    PYTHONPATH=build/py3.14/lib python3.14 benchmarks/questions/top_snapshot_cost.py \
        [--functions 5000] [--threads 4] [--repeats 20]

A program with FUNCTIONS distinct Python functions, each called from every
one of THREADS threads (so FUNCTIONS x THREADS rows, plus the builtins),
then snapshots taken back to back: the median wall and CPU time of one,
the first one (which also appends every function's name), and the
snapshot's size.
"""
import argparse
import os
import statistics
import sys
import tempfile
import threading
import time


def make_functions(n):
    ns = {}
    src = "\n".join("def f%d(x):\n    return len(str(x)) + %d\n" % (i, i) for i in range(n))
    exec(compile(src, "<many functions>", "exec"), ns)
    return [ns["f%d" % i] for i in range(n)]


def main():
    import shutil
    directory = tempfile.mkdtemp(prefix="fastprof-top-bench-")
    try:
        measure(directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def measure(directory):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--functions", type=int, default=5000)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    from fastprof.modes.top_agent import TopSession

    funcs = make_functions(args.functions)
    options = {"builtins": None, "threads": True, "clock": "wall", "coroutines": "call",
               "callpaths": False, "max_depth": 128, "gc": True, "lines": None, "only": None,
               "fast": False, "line_keys": [], "duration": None, "attacher_pid": os.getpid(),
               "interval": 1.0}
    session = TopSession(directory, options, None, set(sys.modules))
    session.helper_ident = threading.get_ident()
    session.prof.enable()
    session.started_at = time.monotonic()

    def work():
        for f in funcs:
            f(1)

    threads = [threading.Thread(target=work) for _ in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    session.prof.disable(this_thread=True)  # as the helper does (TopSession.tick)
    c0, t0 = time.thread_time(), time.perf_counter()
    session.snapshot()
    first = (time.perf_counter() - t0, time.thread_time() - c0)
    print("python %d.%d, %d functions called in each of %d threads"
          % (sys.version_info[:2] + (args.functions, args.threads)))
    print("  the first snapshot (every name too): %.2f ms wall, %.2f ms CPU"
          % (first[0] * 1e3, first[1] * 1e3))
    for shown in ("all threads", "one thread shown"):
        if shown != "all threads":
            with open(os.path.join(directory, "thread"), "w") as f:
                f.write(str(session.prof.threads()[1][0]))
        walls, cpus = [], []
        for _ in range(args.repeats):
            c0, t0 = time.thread_time(), time.perf_counter()
            session.snapshot()
            walls.append(time.perf_counter() - t0)
            cpus.append(time.thread_time() - c0)
        size = os.path.getsize(os.path.join(directory, "snapshot"))
        print("  one snapshot, %s: median %.2f ms wall, %.2f ms CPU (of %d); %d KB"
              % (shown, statistics.median(walls) * 1e3, statistics.median(cpus) * 1e3,
                 args.repeats, size // 1024))
    session.prof.disable()

if __name__ == "__main__":
    main()
