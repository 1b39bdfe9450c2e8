#!/usr/bin/env python3
"""Does a sampler see deep stacks fairly?  The reference of `run.py accuracy`, checked.

A program does the same loop twice per round, once called at the top of the
stack and once at the bottom of a recursion ``--depths`` deep, and times both
halves itself (perf_counter).  Unprofiled they take the same time; under a
sampler (py-spy, and on 3.15+ the standard library's ``profiling.sampling``,
both stopping the program for each sample as the accuracy mode runs them)
each half's share of the samples should stay near 50%.  A share far from it
is the sampler's bias for that depth, and bounds how closely the accuracy
mode's comparison with that sampler can judge a profile of code at that depth.

Example (3.15: both samplers):
  python3 benchmarks/questions/sampler_depth_bias.py --python /tmp/fastprof-bench-venvs/venv-3.15/bin/python

Needs ptrace rights for py-spy (root, or kernel.yama.ptrace_scope=0).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # benchmarks/

from harness.common import arg_parser  # noqa: E402
from harness.samplers import find_py_spy, sampled, sampler_command  # noqa: E402

PROGRAM = '''
import json, sys, time
sys.setrecursionlimit(10000)

def work(n):
    s = 0
    for i in range(n):
        s += i * i
    return s

def shallow(n):
    return work(n)

def deep(d, n):
    return work(n) if d == 0 else deep(d - 1, n)

def region(rounds, depth):
    times = [0.0, 0.0]
    for _ in range(rounds):
        t0 = time.perf_counter()
        shallow(20000)
        t1 = time.perf_counter()
        deep(depth, 20000)
        t2 = time.perf_counter()
        times[0] += t1 - t0
        times[1] += t2 - t1
    return times

print(json.dumps(region(int(sys.argv[1]), int(sys.argv[2]))))
'''


def deep_share(stacks):
    """(samples, the deep half's share) among the samples below ``region``."""
    halves = {"shallow": 0, "deep": 0}
    for frames, n in stacks:
        names = [name.rsplit(".", 1)[-1] for name, _, _ in frames]
        if "region" not in names:
            continue
        half = "shallow" if "shallow" in names else "deep" if "deep" in names else None
        if half:
            halves[half] += n
    total = sum(halves.values())
    return total, (halves["deep"] / total if total else None)


def run_sampled(kind, python, py_spy, script, rounds, depth):
    """(samples, the deep half's share) under sampler ``kind``."""
    def run(out):
        cmd = sampler_command(kind, python, out, 2000, py_spy)
        proc = subprocess.run(cmd + [script, str(rounds), str(depth)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=900)
        if proc.returncode != 0:
            raise SystemExit("%s failed: %s" % (kind, proc.stderr.strip().splitlines()[-1:]))
    _, stacks = sampled(kind, run)
    return deep_share(stacks)


def _depths(text):
    try:
        depths = [int(d) for d in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("not a comma-separated list of depths: %r" % text) from None
    if any(d < 0 for d in depths):
        raise argparse.ArgumentTypeError("a depth is 0 or more: %r" % text)
    return depths


def main(argv=None):
    p = arg_parser(__doc__)
    p.add_argument("--python", default=sys.executable, help="the interpreter sampled (default: this one)")
    p.add_argument("--depths", type=_depths, default=[0, 30, 100, 500],
                   help="recursion depths of the deep half, comma-separated; default 0,30,100,500")
    p.add_argument("--rounds", type=int, default=200, help="rounds of both halves per run; default 200")
    p.add_argument("--py-spy", help="py-spy executable (default: beside the interpreter, or on PATH)")
    args = p.parse_args(argv)
    if not os.access(args.python, os.X_OK):
        p.error("--python %s: no such interpreter" % args.python)
    kinds = []
    py_spy = find_py_spy(args.py_spy, args.python)
    if py_spy:
        kinds.append("py-spy")
    has_stdlib = subprocess.run([args.python, "-c", "import profiling.sampling"],
                                stderr=subprocess.DEVNULL).returncode == 0
    if has_stdlib:
        kinds.append("stdlib")
    if not kinds:
        raise SystemExit("no sampler: py-spy not found and no profiling.sampling (3.15+)")
    with tempfile.TemporaryDirectory(prefix="fastprof-depth-") as tmp:
        script = os.path.join(tmp, "halves.py")
        with open(script, "w") as f:
            f.write(PROGRAM)
        print("| depth | unprofiled: deep half's share | %s |" % " | ".join(
            "%s: deep half's share (samples)" % k for k in kinds))
        print("|---:|---:|" + "---:|" * len(kinds))
        for depth in args.depths:
            plain = json.loads(subprocess.run([args.python, script, str(args.rounds), str(depth)],
                                              stdout=subprocess.PIPE, universal_newlines=True,
                                              check=True).stdout)
            cells = []
            for kind in kinds:
                samples, share = run_sampled(kind, args.python, py_spy, script, args.rounds, depth)
                cells.append("-" if share is None else "%.1f%% (%d)" % (100 * share, samples))
            print("| %d | %.1f%% | %s |" % (depth, 100 * plain[1] / sum(plain), " | ".join(cells)),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
