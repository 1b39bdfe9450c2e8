#!/usr/bin/env python3
"""What memory profiling costs: each workload's CPU time under
fastprof.Profile(memory=True), beside the unprofiled run, fastprof without
memory, tracemalloc and memray (default, and with
trace_python_allocators=True, which sees every small Python object), one
fresh process per measurement, modes interleaved, medians; ratios to the
unprofiled run, and memory mode to fastprof without memory.

    PYTHONPATH=build/py3.12/lib PYTHON/bin/python benchmarks/questions/memory_cost.py \\
        [--repeats 5] [--scale 1.0] [WORKLOAD ...]

The workloads: ``allocations`` (records built, dumped to JSON, loaded back,
dropped: the allocation-heavy one) and the harness's eight. memray is
measured where the interpreter can import it (``pip install memray``).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # benchmarks/: workloads/
sys.path.insert(0, HERE)
import workloads  # noqa: E402

MODES = ["none", "fastprof", "memory", "tracemalloc", "memray", "memray_py"]

CHILD = r'''
import json, os, sys, time
sys.path.insert(0, %(here)r)
mod = __import__("workloads." + %(name)r, fromlist=["run"])
n, mode, out = %(size)d, %(mode)r, %(out)r
mod.run(max(1, n // 20))  # warm: imports, caches, specialization
if mode in ("fastprof", "memory"):
    import fastprof
    prof = fastprof.Profile(memory=mode == "memory")
    start, stop = prof.enable, prof.disable
elif mode == "tracemalloc":
    import tracemalloc
    start, stop = tracemalloc.start, tracemalloc.stop
elif mode.startswith("memray"):
    import memray
    tracker = memray.Tracker(out, trace_python_allocators=mode == "memray_py")
    start, stop = tracker.__enter__, lambda: tracker.__exit__(None, None, None)
else:
    start = stop = lambda: None
t0 = time.process_time()
start()
checksum = mod.run(n)
stop()
t = time.process_time() - t0
print(json.dumps({"t": t, "checksum": checksum}))
'''


def available(mode):
    if not mode.startswith("memray"):
        return True
    probe = subprocess.run([sys.executable, "-c", "import memray"], capture_output=True)
    return probe.returncode == 0


def measure(name, size, mode, tmp):
    out = os.path.join(tmp, "%s-%s.bin" % (name, mode))
    if os.path.exists(out):
        os.unlink(out)  # memray refuses to overwrite
    code = CHILD % {"here": HERE, "name": name, "size": size, "mode": mode, "out": out}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit("%s under %s failed:\n%s" % (name, mode, res.stderr))
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5, help="measurements per mode (default 5)")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="fraction of each workload's full size (default 1.0)")
    ap.add_argument("--json", metavar="FILE", help="also write the medians as JSON")
    ap.add_argument("workloads", nargs="*", default=workloads.MEMORY_NAMES + workloads.NAMES)
    args = ap.parse_args()
    modes = [m for m in MODES if available(m)]
    print("CPU seconds, medians of %d; ratios to the unprofiled run (memory/fastprof: memory mode "
          "over fastprof without memory)" % args.repeats)
    print("%-14s %8s" % ("workload", "none") + "".join("%13s" % m for m in modes[1:])
          + "  memory/fastprof")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.workloads:
            mod = __import__("workloads." + name, fromlist=["SIZES"])
            size = max(1, int(mod.SIZES["full"] * args.scale))
            times = {m: [] for m in modes}
            checksums = set()
            for r in range(args.repeats):
                order = modes if r % 2 == 0 else modes[::-1]
                for mode in order:
                    res = measure(name, size, mode, tmp)
                    times[mode].append(res["t"])
                    checksums.add(str(res["checksum"]))
            if len(checksums) != 1:
                raise SystemExit("%s: the modes computed different results: %s" % (name, checksums))
            med = {m: statistics.median(v) for m, v in times.items()}
            results[name] = med
            base = med["none"]
            print("%-14s %7.3fs" % (name, base)
                  + "".join("%12.2fx" % (med[m] / base) for m in modes[1:])
                  + "  %14.2fx" % (med["memory"] / med["fastprof"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"python": sys.version.split()[0], "repeats": args.repeats,
                       "scale": args.scale, "medians": results}, f, indent=1)


if __name__ == "__main__":
    main()
