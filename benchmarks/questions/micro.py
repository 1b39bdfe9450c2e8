#!/usr/bin/env python3
"""Per-event-kind cost of fastprof vs cProfile: a diagnostic, not the headline benchmark.

Each case makes about N events of one kind (Python call, builtin call, C method
call, C calling back into Python, generator resume, regex iterator, raise),
so when a workload of `run.py timing` is slow this tells which kind of event to
look at.  All in one process, min of --repeats runs, CPU time (process_time):
quick to run while tuning; `run.py timing` remains the measurement of record.

The "floor" column is a hook that reads the clock once per event and records
nothing (benchmarks/harness/floor_hook.py, compiled on the fly with cc; the
column is left out when that fails): what CPython charges any profiler for
delivering the events, through the same mechanism fastprof uses
(PyEval_SetProfile up to 3.11, sys.monitoring C callbacks from 3.12). The
last column is fastprof's cost above that floor as a fraction of cProfile's.

    PYTHONPATH=python python3 benchmarks/questions/micro.py [--n 200000] [--repeats 5]
"""

import argparse
import cProfile
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # benchmarks/
from harness import floor_hook  # noqa: E402

N = 200000


def f():
    pass


def py_calls():
    for _ in range(N):
        f()


def builtin_calls():
    lst = []
    for _ in range(N):
        len(lst)


def c_methods():
    lst = []
    for _ in range(N):
        lst.append(1)


PAT = re.compile(r"(a)")


def _cb(m):
    return "b"


def c_calls_python():
    s = "a"
    for _ in range(N // 2):
        PAT.sub(_cb, s)


def generator_resumes():
    def g():
        for i in range(N):
            yield i
    for _ in g():
        pass


def regex_iter():
    s = "a" * 10
    for _ in range(N // 10):
        for m in PAT.finditer(s):
            m.group()


def _raise():
    raise ValueError


def exceptions():
    for _ in range(N // 4):
        try:
            _raise()
        except ValueError:
            pass


CASES = [py_calls, builtin_calls, c_methods, c_calls_python, generator_resumes, regex_iter,
         exceptions]


def best_time(fn, make, repeats):
    best = float("inf")
    for _ in range(repeats):
        prof = make() if make else None
        c0 = time.process_time()
        if prof:
            prof.enable()
        fn()
        if prof:
            prof.disable()
        best = min(best, time.process_time() - c0)
    return best


def main():
    global N
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=N)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    N = args.n
    import fastprof
    print("Python %s, fastprof from %s" % (sys.version.split()[0], fastprof.__file__))
    try:
        floor_module = floor_hook.load()
    except RuntimeError as exc:
        floor_module = None
        print("floor column left out: %s" % exc)
    print("added CPU ns per call (min of %d runs)" % args.repeats)
    print("%-18s %8s %8s %10s %10s %8s %8s %13s" % (
        "case", "calls", "floor", "cProfile", "fastprof", "fp/cP", "floor/cP",
        "above floor"))
    for fn in CASES:
        p = cProfile.Profile()
        p.enable()
        fn()
        p.disable()
        calls = sum(e.callcount for e in p.getstats())
        base = best_time(fn, None, args.repeats)
        cp = best_time(fn, cProfile.Profile, args.repeats) - base
        fp = best_time(fn, fastprof.Profile, args.repeats) - base
        row = "%-18s %8d" % (fn.__name__, calls)
        if floor_module:
            floor = best_time(fn, lambda: floor_hook.FloorHook(floor_module), args.repeats) - base
            row += " %8.0f" % (floor / calls * 1e9)
        else:
            floor = None
            row += " %8s" % "-"
        row += " %10.0f %10.0f %7.0f%%" % (cp / calls * 1e9, fp / calls * 1e9, _pct(fp, cp))
        if floor is not None:
            row += " %7.0f%% %12.0f%%" % (_pct(floor, cp), _pct(fp - floor, cp - floor))
        print(row)


def _pct(part, whole):
    return 100.0 * part / whole if whole > 0 else float("nan")


if __name__ == "__main__":
    main()
