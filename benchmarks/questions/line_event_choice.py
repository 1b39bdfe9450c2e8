"""Which sys.monitoring set-up costs code that --lines did not name less
(3.12+; docs/lines.md, "How it works").

- ``start``: what fastprof does. A global ``PY_START`` whose callback
  returns ``DISABLE``: each code object is seen once; a named one would then
  get ``LINE`` as a local event (``set_local_events``).
- ``line``: a global ``LINE`` whose callback returns ``DISABLE`` for code no
  pattern names: each line location is seen once, and every code object is
  instrumented for lines.

Here no function is named, so only the cost to other code is measured (a
named function gets the same ``LINE`` callbacks either way). Each (workload,
set-up) runs in a fresh process, interleaved, median of --repeats::

    python benchmarks/questions/line_event_choice.py --repeats 5 template json_report regex
    python benchmarks/questions/line_event_choice.py --instructions --scale 0.05
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # benchmarks/: workloads/
SETUPS = ("none", "start", "line")

CHILD = r"""
import importlib, sys, time
sys.path.insert(0, %(here)r)
setup, name, scale = sys.argv[1], sys.argv[2], float(sys.argv[3])
w = importlib.import_module("workloads." + name)
n = w.size_for(scale) if hasattr(w, "size_for") else max(w.SIZES["smoke"], int(w.SIZES["full"] * scale))
if setup != "none":
    mon = sys.monitoring
    mon.use_tool_id(5, "line_event_choice")
    event = mon.events.PY_START if setup == "start" else mon.events.LINE
    mon.register_callback(5, event, lambda *args: mon.DISABLE)
    mon.set_events(5, event)
t0 = time.perf_counter()
w.run(n)
print(time.perf_counter() - t0)
"""


def measure(setup, workload, scale, instructions=False):
    """Seconds of the workload, or with *instructions* the whole process's
    instruction count under callgrind (independent of machine load)."""
    cmd = [sys.executable, "-c", CHILD % {"here": HERE}, setup, workload, str(scale)]
    if instructions:
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    if instructions:
        (line,) = [ln for ln in out.stderr.splitlines() if "Collected :" in ln]
        return float(line.split()[-1])
    return float(out.stdout.split()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workloads", nargs="*", default=["template", "json_report", "regex", "oop"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--scale", type=float, default=0.5)
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under valgrind's callgrind instead of timing (one run each)")
    parser.add_argument("--json", help="also write the medians here")
    args = parser.parse_args(argv)
    if sys.version_info < (3, 12):
        parser.error("sys.monitoring needs Python 3.12+")
    repeats = 1 if args.instructions else args.repeats
    times = {(w, s): [] for w in args.workloads for s in SETUPS}
    for _ in range(repeats):
        for w in args.workloads:
            for s in SETUPS:
                times[w, s].append(measure(s, w, args.scale, args.instructions))
    result = {}
    print("Python %s: %s over the unprofiled run, %s" % (
        sys.version.split()[0], "instructions" if args.instructions else "slowdown",
        "callgrind" if args.instructions else "median of %d" % repeats))
    print("%-14s %8s %8s" % ("workload", "start", "line"))
    for w in args.workloads:
        base = statistics.median(times[w, "none"])
        row = {s: statistics.median(times[w, s]) / base for s in SETUPS[1:]}
        result[w] = row
        print("%-14s %7.3fx %7.3fx" % (w, row["start"], row["line"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
