#!/usr/bin/env python3
"""What reading a profile costs after N short threads, and what the
profiler holds meanwhile: a thread-per-request server's profile.

    PYTHONPATH=build/py3.12/lib python3 benchmarks/questions/threads_read.py \
        [--threads 1000,10000,100000] [--kind threading|_thread]

For each N, a fresh process profiles (threads=True) N threads started one
after the other, each making a few calls, then reads the profile: the
seconds of ``thread_stats()`` and of ``dump_stats()``, ``Profile.memory()``
after the N threads, the records ``thread_stats()`` lists, the process's
peak RSS, and the time the N threads took profiled and unprofiled.
``--kind _thread`` starts them with ``_thread.start_new_thread`` (cheaper
to start; 3.12+ only, since before that the profile hook follows
threading's threads only).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r'''
import _thread, json, os, resource, sys, threading, time
import fastprof

def task(k, done):
    done.release()
    return sum(range(k %% 7))

def run(n, kind):
    for k in range(n):
        done = _thread.allocate_lock()
        done.acquire()
        if kind == "_thread":
            _thread.start_new_thread(task, (k, done))
        else:
            threading.Thread(target=task, args=(k, done)).start()
        done.acquire()

n, kind, out = %(n)d, %(kind)r, %(out)r
t0 = time.perf_counter()
run(min(n, 2000), kind)
plain = (time.perf_counter() - t0) * n / min(n, 2000)
prof = fastprof.Profile(threads=True)
prof.enable()
t0 = time.perf_counter()
run(n, kind)
profiled = time.perf_counter() - t0
prof.disable()
memory = prof.memory()
import fastprof.data.profile_file  # (its import is not the read's cost)
t0 = time.perf_counter()
records = prof.thread_stats()
stats_s = time.perf_counter() - t0
t0 = time.perf_counter()
prof.dump_stats(out)
dump_s = time.perf_counter() - t0
print(json.dumps({"n": n, "plain": plain, "profiled": profiled, "thread_stats": stats_s,
                  "dump_stats": dump_s, "memory": memory, "records": len(records),
                  "rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
'''


def counts(text):
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            "not a comma-separated list of thread counts: %r" % text) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("thread counts must be at least 1: %r" % text)
    return values


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=counts, default=counts("1000,10000,100000"),
                    metavar="N,N,...", help="thread counts (default 1000,10000,100000)")
    ap.add_argument("--kind", choices=("threading", "_thread"), default="threading",
                    help="how the threads start (default threading)")
    args = ap.parse_args()
    if args.kind == "_thread" and sys.version_info < (3, 12):
        ap.error("--kind _thread needs 3.12+: before, the profile hook follows threading's threads only")
    print("python %d.%d, %s threads started one after the other" % (sys.version_info[:2] + (args.kind,)))
    print("%9s %10s %10s %13s %12s %11s %8s %9s" % (
        "threads", "plain s", "profiled s", "thread_stats", "dump_stats", "memory KB", "records",
        "RSS MB"))
    with tempfile.TemporaryDirectory(prefix="fastprof-threads-read-") as tmp:
        for n in args.threads:
            code = CHILD % {"n": n, "kind": args.kind, "out": os.path.join(tmp, "%d.prof" % n)}
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit("threads_read: the run of %d threads failed:\n%s" % (n, proc.stderr[-3000:]))
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            print("%9d %10.2f %10.2f %11.3f s %10.3f s %11d %8d %9.1f" % (
                n, r["plain"], r["profiled"], r["thread_stats"], r["dump_stats"],
                r["memory"] // 1024, r["records"], r["rss_kb"] / 1024))


if __name__ == "__main__":
    main()
