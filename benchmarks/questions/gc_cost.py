#!/usr/bin/env python3
"""What recording collections as <gc> costs: each workload under
fastprof.Profile(gc=False) and Profile(gc=True), one fresh process per
measurement, modes interleaved, medians; also the collections counted.

    PYTHONPATH=python python3 benchmarks/questions/gc_cost.py [--repeats 5] [--scale 0.5]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # benchmarks/: workloads/
sys.path.insert(0, HERE)
import workloads  # noqa: E402

CHILD = r'''
import gc, json, sys, time
sys.path.insert(0, %(here)r)
import workloads, fastprof
mod = workloads.load(%(name)r) if hasattr(workloads, "load") else __import__("workloads." + %(name)r, fromlist=["run"])
n = %(size)d
mod.run(max(1, n // 20))
before = sum(s["collections"] for s in gc.get_stats())
pr = fastprof.Profile(gc=%(gc)s)
t0 = time.perf_counter()
pr.enable()
mod.run(n)
pr.disable()
t = time.perf_counter() - t0
print(json.dumps({"t": t, "collections": sum(s["collections"] for s in gc.get_stats()) - before}))
'''


def measure(name, size, gc_on):
    code = CHILD % {"here": HERE, "name": name, "size": size, "gc": gc_on}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--scale", type=float, default=0.5)
    ap.add_argument("workloads", nargs="*", default=workloads.NAMES)
    args = ap.parse_args()
    print("workload         collections   gc=False     gc=True    change")
    for name in args.workloads:
        mod = __import__("workloads." + name, fromlist=["SIZES"])
        size = max(1, int(mod.SIZES["full"] * args.scale))
        times = {False: [], True: []}
        colls = 0
        for r in range(args.repeats):
            for gc_on in ((False, True) if r % 2 == 0 else (True, False)):
                res = measure(name, size, gc_on)
                times[gc_on].append(res["t"])
                colls = res["collections"]
        off, on = statistics.median(times[False]), statistics.median(times[True])
        print("%-16s %11d %9.3f s %9.3f s %+8.1f%%" % (name, colls, off, on, 100 * (on - off) / off))


if __name__ == "__main__":
    main()
